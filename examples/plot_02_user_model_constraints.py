"""
Your own model: holonomic and nonholonomic constraints
======================================================

A model of your own is a subclass of :class:`pyint.models.Model`: define the
mass matrix, the forces and the constraints, nothing else. Here a skate (a
knife edge on an inclined plane, coordinates x₁, y₁, θ) tows a point mass
(x₂, y₂) on a rigid rod of length L:

- nonholonomic: the skate moves along its blade, −sin θ ẋ₁ + cos θ ẏ₁ = 0;
- holonomic: the rod, ½((x₂ − x₁)² + (y₂ − y₁)² − L²) = 0.

Every derivative the integrators need (the curvature terms, force Jacobians,
the time derivatives) comes from finite-difference fallbacks, so the model
runs at once; the Fortran kernels call it back in Python. The one derivative
written here, ``hol_jac``, is optional: it only makes the run faster (each
fallback costs a few evaluations of ``hol``).
"""
import matplotlib.pyplot as plt
import numpy as np

from pyint import GeneralizedAlpha, RK4Index1
from pyint.models import Model
from pyint.reference import solve

# %%
# The model
# ---------


class TowedSkate(Model):
    name = "towed_skate"
    n, n_hol, n_nonhol = 5, 1, 1
    coord_names = ("x1", "y1", "theta", "x2", "y2")
    coord_units = ("m", "m", "rad", "m", "m")
    scleronomic = True            # nothing depends on t explicitly
    conservative = True           # ideal constraints, gravity only: energy is conserved

    def __init__(self, m1=1.0, inertia=0.1, m2=0.5, length=1.0, g=9.81 * np.sin(0.3)):
        self.m1, self.inertia, self.m2, self.length, self.g = m1, inertia, m2, length, g

    def mass(self, q):
        return np.diag([self.m1, self.m1, self.inertia, self.m2, self.m2])

    def force(self, t, q, v):
        return np.array([0.0, -self.m1 * self.g, 0.0, 0.0, -self.m2 * self.g])

    def hol(self, t, q):
        dx, dy = q[3] - q[0], q[4] - q[1]
        return np.array([0.5 * (dx * dx + dy * dy - self.length ** 2)])

    def hol_jac(self, t, q):      # optional: the one derivative worth writing (speed)
        dx, dy = q[3] - q[0], q[4] - q[1]
        return np.array([[-dx, -dy, 0.0, dx, dy]])

    def nh_A(self, t, q):
        return np.array([[-np.sin(q[2]), np.cos(q[2]), 0.0, 0.0, 0.0]])

    def energy(self, t, q, v):
        return 0.5 * v @ self.mass(q) @ v + self.g * (self.m1 * q[1] + self.m2 * q[4])


model = TowedSkate()
q0 = np.array([0.0, 0.0, 0.0, 1.0, 0.0])
v0 = np.array([2.0, 0.0, 1.5, 2.0, 0.8])       # consistent: G v0 = 0 and A v0 = 0
T, h = 3.0, 2e-3

ga = GeneralizedAlpha().integrate(model, q0, v0, t_end=T, h=h, every=5)
rk = RK4Index1().integrate(model, q0, v0, t_end=T, h=h, every=5)
ref = solve(model, ga.t, q0, v0, rtol=1e-9, cache_dir=False)     # SUNDIALS IDA

for r in (ga, rk):
    err = np.max(np.abs(r.q - ref.q))
    print(f"{r.method:10s} max|q - q_IDA| = {err:.1e}  max|g| = {r.eps_pos:.1e}  "
          f"max|A v| = {np.max(r.residual[:, 3]):.1e}  energy drift = {r.energy_drift:.1e}")

# %%
# Path and constraint residuals
# -----------------------------
#
# The skate's path and the towed mass, and the constraint residuals:
# generalized-α keeps the rod length (position level) and the blade condition
# (velocity level) at round-off; RK4 on the index-1 form keeps the
# acceleration level and lets both drift with its O(h⁴) error.
fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
ax.plot(ref.q[:, 0], ref.q[:, 1], "k-", lw=3, alpha=0.3, label="skate (IDA)")
ax.plot(ga.q[:, 0], ga.q[:, 1], label="skate (generalized-α)")
ax.plot(ga.q[:, 3], ga.q[:, 4], label="towed mass (generalized-α)")
for k in range(0, len(ga.t), 80):
    ax.plot(ga.q[k, [0, 3]], ga.q[k, [1, 4]], "0.6", lw=0.8)
ax.set_aspect("equal")
ax.set_xlabel("x [m]")
ax.set_ylabel("y [m] (up the slope)")
ax.legend(fontsize=8)
for r, ls in ((ga, "-"), (rk, "--")):
    ax2.semilogy(r.t, np.maximum(r.residual[:, 0], 1e-18), ls, label=f"{r.method}: |g|")
    ax2.semilogy(r.t, np.maximum(r.residual[:, 3], 1e-18), ls, label=f"{r.method}: |A v|")
ax2.set_xlabel("t [s]")
ax2.set_ylabel("constraint residual")
ax2.legend(fontsize=8)
plt.show()
