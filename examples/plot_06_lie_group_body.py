"""
A rigid body on a Lie group: the heavy top
==========================================

Seed 001 integrates rigid bodies whose configuration is (x, R) ∈ R³ × SO(3),
updated multiplicatively (R ← R exp(hΩ̃)), so R stays a rotation to round-off
whatever the step. A heavy symmetric top, one point fixed at the origin,
tilted by 0.3 rad and spinning at 20 rad/s about its axis; integrated by the
seed's backward-difference DAE3 method (first order) and by Lie-group
generalized-α (second order).
"""
import matplotlib.pyplot as plt
import numpy as np

from pyint import LieDAE3, LieGeneralizedAlpha
from pyint.models.rigid_bodies import RigidBodySystem
from pyint.models.so3 import expm

# %%
# The heavy top
# -------------

top = RigidBodySystem.heavy_top(mass=1.0, inertia=(0.6, 0.6, 0.2), arm=0.5)
R0 = expm([0.3, 0.0, 0.0])                     # tilted about x
x0 = R0 @ np.array([0.0, 0.0, 0.5])            # centre of mass; the point (0, 0, -0.5) is at the origin
omega = np.array([0.0, 0.0, 20.0])             # body angular velocity
v0 = np.concatenate([R0 @ np.cross(omega, [0.0, 0.0, 0.5]), omega])
q0 = (x0[None], R0[None])
T = 2.0

runs = {
    "lie_dae3, h = 1e-3": LieDAE3().integrate(top, q0, v0, t_end=T, h=1e-3, every=5),
    "lie_genalpha, h = 1e-3": LieGeneralizedAlpha().integrate(top, q0, v0, t_end=T, h=1e-3, every=5),
    "lie_genalpha, h = 2e-4": LieGeneralizedAlpha().integrate(top, q0, v0, t_end=T, h=2e-4, every=25),
}
for name, r in runs.items():
    print(f"{name:24s} max|Φ| = {r.eps_pos:.1e}  max‖RᵀR − I‖ = {r.orthogonality:.1e}  "
          f"energy drift = {r.energy_drift:.1e}")

# %%
# Nutation and energy
# -------------------
#
# Nutation (the height of the centre of mass) and the energy error: the
# first-order DAE3 loses energy steadily and its nutation falls behind;
# generalized-α's energy error stays bounded and falls as h² (25 times
# smaller for a step 5 times smaller).
fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
for name, r in runs.items():
    ax.plot(r.t, r.x[:, 0, 2], lw=1, label=name)
    ax2.semilogy(r.t[1:], np.abs(r.energy[1:] - r.energy[0]) + 1e-16, lw=1, label=name)
ax.set_xlabel("t [s]")
ax.set_ylabel("height of the centre of mass [m]")
ax2.set_xlabel("t [s]")
ax2.set_ylabel("|H(t) − H(0)| [J]")
ax.legend(fontsize=8)
plt.show()
