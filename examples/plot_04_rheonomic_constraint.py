"""
A rheonomic constraint: a pendulum whose rod changes length
===========================================================

A constraint may depend on time, g(t, q) = 0. Here a point mass on a rod
whose length is driven, L(t) = L₀ (1 + ε sin ωt), written as a user model
with ``scleronomic = False``: the time derivatives g_t, G_t and g_tt that the
velocity and acceleration levels need come from finite-difference fallbacks.
The built-in :class:`~pyint.models.DrivenPendulum` (a moving support) is the
compiled counterpart.
"""
import matplotlib.pyplot as plt
import numpy as np

from pyint import GeneralizedAlpha, RK4Index1
from pyint.models import Model
from pyint.reference import solve

# %%
# The model
# ---------


class VariableLengthPendulum(Model):
    name = "variable_length_pendulum"
    n, n_hol = 2, 1
    coord_names, coord_units = ("x", "y"), ("m", "m")
    scleronomic = False           # g depends on t

    def __init__(self, m=1.0, L0=1.0, eps=0.2, omega=3.0, g=9.81):
        self.m, self.L0, self.eps, self.omega, self.g = m, L0, eps, omega, g

    def length(self, t):
        return self.L0 * (1.0 + self.eps * np.sin(self.omega * t))

    def mass(self, q):
        return self.m * np.eye(2)

    def force(self, t, q, v):
        return np.array([0.0, -self.m * self.g])

    def hol(self, t, q):
        return np.array([0.5 * (q @ q - self.length(t) ** 2)])

    def hol_jac(self, t, q):
        return q[None, :]


model = VariableLengthPendulum()
# at t = 0: L = L0, the rod at 60 degrees, growing at L0 eps omega along the rod
th = np.pi / 3
e = np.array([np.sin(th), -np.cos(th)])
q0 = model.L0 * e
v0 = model.L0 * model.eps * model.omega * e + 1.0 * np.array([np.cos(th), np.sin(th)])
T, h = 5.0, 1e-3

ga = GeneralizedAlpha().integrate(model, q0, v0, t_end=T, h=h, every=10)
rk = RK4Index1().integrate(model, q0, v0, t_end=T, h=h, every=10)
ref = solve(model, ga.t, q0, v0, rtol=1e-9, cache_dir=False)
for r in (ga, rk):
    print(f"{r.method:14s} max|q - q_IDA| = {np.max(np.abs(r.q - ref.q)):.1e}   max|g(t, q)| = {r.eps_pos:.1e}"
          f"   max|G v + g_t| = {r.eps_vel:.1e}")

# %%
# Path and rod length
# -------------------
#
# The path of the mass, and the rod length it keeps.
fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
ax.plot(ref.q[:, 0], ref.q[:, 1], "k", lw=4, alpha=0.25, label="IDA")
ax.plot(ga.q[:, 0], ga.q[:, 1], lw=1, label="generalized-α")
ax.plot(0, 0, "ko")
ax.set_aspect("equal")
ax.set_xlabel("x [m]")
ax.set_ylabel("y [m]")
ax.legend()
ax2.plot(ga.t, np.hypot(ga.q[:, 0], ga.q[:, 1]), label="|q| (generalized-α)")
ax2.plot(ga.t, model.length(ga.t), "--", label="L(t)")
ax2.set_xlabel("t [s]")
ax2.set_ylabel("rod length [m]")
ax2.legend()
plt.show()
