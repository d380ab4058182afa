"""
SymPy's rolling disc, through ``SymbolicModel.from_kanes_method``
=================================================================

The rolling disc of SymPy's ``sympy.physics.mechanics`` tutorial (KanesMethod):
yaw q1, lean q2 and spin q3, with the generalized speeds u chosen as the
disc's angular rates in the lean frame. pyint integrates q' = v, and the
tutorial's kinematic equations say q' = N(q) u with N ≠ I, so
:meth:`pyint.models.SymbolicModel.from_kanes_method` refuses the model by
name, quoting the equations and how to choose u = q'. The same disc with
u = q' goes through, gravity becomes the potential m g r cos(q2), and the
result agrees with the tutorial's own equations (body rates, SymPy's
``mass_matrix_full`` and ``forcing_full``) integrated by SciPy's DOP853 at
``rtol = 1e-12``.
"""
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from sympy.physics.mechanics import (KanesMethod, Point, ReferenceFrame, RigidBody, dot, dynamicsymbols,
                                     inertia)

from pyint import LobattoIIIAB, RK4Index1
from pyint.models import SymbolicModel
from pyint.models.sympy_tutorials import sympy_reference

# %%
# The disc in SymPy
# -----------------

t = dynamicsymbols._t
q1, q2, q3, u1, u2, u3 = dynamicsymbols("q1 q2 q3 u1 u2 u3")
r, m, g = sp.symbols("r m g")
params = {m: 1.0, g: 9.81, r: 0.5}


def rolling_disc(body_rates):
    """The tutorial's disc; body_rates=False: the same disc with u = q'."""
    N = ReferenceFrame("N")
    Y = N.orientnew("Y", "Axis", [q1, N.z])
    L = Y.orientnew("L", "Axis", [q2, Y.x])
    R = L.orientnew("R", "Axis", [q3, L.y])
    w_R_N_qd = R.ang_vel_in(N)
    if body_rates:                                     # the tutorial: u are the rates in L
        R.set_ang_vel(N, u1 * L.x + u2 * L.y + u3 * L.z)
        kd = [dot(R.ang_vel_in(N) - w_R_N_qd, uv) for uv in L]
    else:                                              # u = q': R's rate stays the orientations'
        kd = [q1.diff(t) - u1, q2.diff(t) - u2, q3.diff(t) - u3]
    C = Point("C")                                     # the contact point
    C.set_vel(N, 0)
    Dmc = C.locatenew("Dmc", r * L.z)
    Dmc.v2pt_theory(C, N, R)
    disc = RigidBody("disc", Dmc, R, m, (inertia(L, m / 4 * r**2, m / 2 * r**2, m / 4 * r**2), Dmc))
    km = KanesMethod(N, q_ind=[q1, q2, q3], u_ind=[u1, u2, u3], kd_eqs=kd)
    km.kanes_equations([disc], [(Dmc, -m * g * Y.z)])
    return km


tutorial = rolling_disc(body_rates=True)
try:
    SymbolicModel.from_kanes_method(tutorial, params=params)
except ValueError as err:
    refusal = str(err)
    print("refused:\n" + textwrap.fill(refusal, 100))

# %%
# Integration
# -----------
#
# The disc with u = q': accepted, and conservative (gravity became a potential).
model = SymbolicModel.from_kanes_method(rolling_disc(body_rates=False), params=params, name="rolling_disc")
print(f"coordinates {model.coord_names}, conservative: {model.conservative}")

q0 = np.array([0.0, 0.3, 0.0])          # yaw, lean, spin
v0 = np.array([1.0, 0.5, -8.0])          # their rates
T, h = 3.0, 2e-3
runs = {"RK4 index-1": RK4Index1().integrate(model, q0, v0, t_end=T, h=h, every=5),
        "Lobatto IIIA-IIIB": LobattoIIIAB().integrate(model, q0, v0, t_end=T, h=h, every=5)}

# %%
# The truth
# ---------
#
# The truth: the tutorial's own body-rate equations, x = (q, u), by DOP853; the initial body rates from
# the tutorial's kinematic equations (u1 = q2', u2 = sin(q2) q1' + q3', u3 = cos(q2) q1').
u0 = np.array([v0[1], np.sin(q0[1]) * v0[0] + v0[2], np.cos(q0[1]) * v0[0]])
times = runs["RK4 index-1"].t
q_ref = np.vstack([q0, sympy_reference(tutorial, params, q0, u0, times[1:])[0]])
errors = {name: float(np.max(np.abs(r.q - q_ref))) for name, r in runs.items()}
for name, r in runs.items():
    print(f"{name:18s} max |q - tutorial| = {errors[name]:.1e}  relative energy drift = {r.energy_drift:.1e}")

# %%
# Lean, yaw and the distance to the truth
# ---------------------------------------
#
# Lean and yaw of the disc, and the distance to the tutorial's solution.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
rr = runs["Lobatto IIIA-IIIB"]
ax1.plot(rr.t, rr.q[:, 1], label="lean q2")
ax1.plot(rr.t, rr.q[:, 0], label="yaw q1")
ax1.plot(times, q_ref[:, 1], "k:", label="tutorial (DOP853)")
ax1.set_xlabel("t [s]")
ax1.set_ylabel("angle [rad]")
ax1.legend()
for name, r in runs.items():
    ax2.semilogy(r.t[1:], np.max(np.abs(r.q - q_ref), axis=1)[1:], label=name)
ax2.set_xlabel("t [s]")
ax2.set_ylabel("max |q - q_tutorial|")
ax2.legend()
plt.show()
