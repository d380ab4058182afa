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
from scipy.optimize import fsolve

from pyint import GeneralizedAlpha, RK4Index1
from pyint.models import SymbolicModel
from pyint.models.sympy_tutorials import four_bar, sympy_reference

# %%
# The mechanism in SymPy
# ----------------------
#
# The System as SymPy's tutorial writes it (RigidBody links, PinJoints, the loop closure as holonomic
# constraints, gravity as loads): pyint/models/sympy_tutorials.py, ``four_bar``.
system, params = four_bar()

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
times = runs["RK4 index-1"].t
q_ref = np.vstack([q0, sympy_reference(system, params, q0, v0, times[1:])[0]])
errors = {name: float(np.max(np.abs(r.q - q_ref))) for name, r in runs.items()}
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
    ax2.semilogy(r.t[1:], np.max(np.abs(r.q - q_ref), axis=1)[1:], label=name)
ax2.set_xlabel("t [s]")
ax2.set_ylabel("max |q - q_SymPy|")
ax2.legend()
plt.show()
