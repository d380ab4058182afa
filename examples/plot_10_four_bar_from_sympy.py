"""
SymPy's four-bar linkage, through ``SymbolicModel.from_system``
===============================================================

The four-bar linkage of SymPy's ``sympy.physics.mechanics`` tutorial: three
links on :class:`~sympy.physics.mechanics.PinJoint` joints in a
:class:`~sympy.physics.mechanics.System`, the loop closed by two holonomic
constraints, here with gravity added as loads on the links' mass centres.
:meth:`pyint.models.SymbolicModel.from_system` reads the coordinates, the
joints' speeds (u = q', the PinJoint default), the loop closure (g) and the
loads; gravity becomes a potential, so the energy is monitored. The result
is checked against SymPy's own equations of motion (``mass_matrix_full``,
``forcing_full`` of the same System) integrated by SciPy's DOP853 at
``rtol = 1e-12``.
"""
import time

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp
from scipy.optimize import fsolve
from sympy.physics.mechanics import PinJoint, RigidBody, System, dynamicsymbols, inertia

from pyint import GeneralizedAlpha, RK4Index1
from pyint.models import SymbolicModel

# %%
# The mechanism in SymPy
# ----------------------

q1, q2, q3, u1, u2, u3 = dynamicsymbols("q1:4 u1:4")
l1, l2, l3, l4, rho, g = sp.symbols("l1:5 rho g")
link1 = RigidBody("Link1")                       # the ground
links = [link1]
for name, l in (("Link2", l2), ("Link3", l3), ("Link4", l4)):
    link = RigidBody(name, mass=rho * l)
    link.central_inertia = inertia(link.frame, 0, 0, rho * l**3 / 12)
    links.append(link)
_, link2, link3, link4 = links
joint1 = PinJoint("J1", link1, link2, coordinates=q1, speeds=u1, parent_point=l1 / 2 * link1.x,
                  child_point=-l2 / 2 * link2.x, joint_axis=link1.z)
joint2 = PinJoint("J2", link2, link3, coordinates=q2, speeds=u2, parent_point=l2 / 2 * link2.x,
                  child_point=-l3 / 2 * link3.x, joint_axis=link2.z)
joint3 = PinJoint("J3", link3, link4, coordinates=q3, speeds=u3, parent_point=l3 / 2 * link3.x,
                  child_point=-l4 / 2 * link4.x, joint_axis=link3.z)
loop = link4.masscenter.pos_from(link1.masscenter) + l1 / 2 * link1.x + l4 / 2 * link4.x
system = System.from_newtonian(link1)
system.add_joints(joint1, joint2, joint3)
system.add_holonomic_constraints(loop.dot(link1.x), loop.dot(link1.y))
system.add_loads(*[(link.masscenter, -link.mass * g * link1.y) for link in (link2, link3, link4)])
system.q_ind, system.q_dep = [q1], [q2, q3]
system.u_ind, system.u_dep = [u1], [u2, u3]
params = {l1: 2.0, l2: 0.8, l3: 2.0, l4: 1.0, rho: 1.0, g: 9.81}

t0 = time.perf_counter()
model = SymbolicModel.from_system(system, params=params, name="four_bar")
model.compiled_ipar()                            # compile (or load from the cache) now, to time it
print(f"model built and compiled in {time.perf_counter() - t0:.2f} s: coordinates {model.coord_names}, "
      f"{model.n_hol} holonomic constraints, conservative: {model.conservative}")

# %%
# A consistent start
# ------------------
#
# A consistent initial state: the crank at 0.7 rad, the other two angles closing the loop, at rest.
qa = 0.7
q0 = np.array([qa, *fsolve(lambda x: model.hol(0.0, np.array([qa, *x])), [1.5, 1.5], xtol=1e-13)])
v0 = np.zeros(3)
T, h = 3.0, 1e-3
runs = {"generalized-α": GeneralizedAlpha().integrate(model, q0, v0, t_end=T, h=h, every=10),
        "RK4 index-1": RK4Index1().integrate(model, q0, v0, t_end=T, h=h, every=10)}

# %%
# SymPy's own solution
# --------------------
#
# SymPy's own equations of the same System, x = (q, u): M_full(x) x' = F_full(x), by DOP853.
system.form_eoms()
qs, us = sp.symbols("x0:3"), sp.symbols("y0:3")
rep = {**dict(zip(system.q, qs)), **dict(zip(system.u, us))}
mm = sp.lambdify([qs, us], system.mass_matrix_full.xreplace(params).xreplace(rep), cse=True)
ff = sp.lambdify([qs, us], system.forcing_full.xreplace(params).xreplace(rep), cse=True)
times = runs["RK4 index-1"].t
sol = solve_ivp(lambda _, x: np.linalg.solve(mm(x[:3], x[3:]), np.ravel(ff(x[:3], x[3:]))), (0.0, T),
                np.concatenate([q0, v0]), method="DOP853", rtol=1e-12, atol=1e-14, t_eval=times)
errors = {name: float(np.max(np.abs(r.q - sol.y[:3].T))) for name, r in runs.items()}
for name, r in runs.items():
    print(f"{name:14s} max |q - SymPy| = {errors[name]:.1e}  max |g| = {r.eps_pos:.1e}  "
          f"relative energy drift = {r.energy_drift:.1e}")

# %%
# Angles and the distance to SymPy's
# ----------------------------------
#
# The three angles and the distance to SymPy's solution.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
r = runs["generalized-α"]
for k, name in enumerate(model.coord_names):
    ax1.plot(r.t, r.q[:, k], label=name)
ax1.set_xlabel("t [s]")
ax1.set_ylabel("angle [rad]")
ax1.legend()
for name, r in runs.items():
    ax2.semilogy(r.t[1:], np.max(np.abs(r.q - sol.y[:3].T), axis=1)[1:], label=name)
ax2.set_xlabel("t [s]")
ax2.set_ylabel("max |q - q_SymPy|")
ax2.legend()
plt.show()
