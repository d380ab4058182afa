"""
Your first mechanism: a four-bar linkage
========================================

A closed loop of joints, from nothing to an animation in five steps:
build the mechanism from bodies and revolute joints
(:class:`pyint.models.NaturalSystem`), find a consistent start, integrate it with
three methods, compare how well each keeps the loop closed, and draw it moving
(:func:`pyint.plotting.animate`).

The four-bar: ground pivots A = (0, 0) and D = (2, 0), a crank AB of length 1,
a rocker DC of length 2 and a coupler BC of 2.18, under gravity. Shortest plus
longest bar (3.18) is less than the other two (4): a Grashof crank-rocker, whose
crank can turn all the way round without passing a singular (toggle) position.
Each bar is a body in natural coordinates: its centre r and its direction
vector e₁ along the bar (and e₂ across it, in the plane).
"""
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from pyint import GeneralizedAlpha, Rattle, RK4Index1
from pyint.models import NaturalSystem
from pyint.plotting import animate

# %%
# 1. The mechanism
# ----------------
#
# A bar of length :math:`L` and mass :math:`m` about its centre has
# :math:`\Pi_1 = \int \rho x_1^2\,dV = m L^2/12` along it (and a small :math:`\Pi_2` across it).
A, B, C, D = map(np.array, ([0.0, 0.0], [0.0, 1.0], [2.0 + 2.0 * np.cos(1.6), 2.0 * np.sin(1.6)], [2.0, 0.0]))
# C is chosen on the rocker's circle; the coupler's length follows from B and C
s = NaturalSystem(dim=2, gravity=(0.0, -9.81))
bars = []
for (p, q), mass in zip(((A, B), (B, C), (D, C)), (1.0, 2.0, 1.5)):
    L = np.linalg.norm(q - p)
    bar = s.add_body(mass, pi=(mass * L**2 / 12, mass * L**2 / 1200))
    s.set_pose(bar, (p + q) / 2, np.arctan2(*(q - p)[::-1]))   # r at the centre, e1 along p -> q
    bars.append((bar, L))
(crank, l1), (coupler, l2), (rocker, l3) = bars
s.revolute(s.ground, tuple(A), crank, (-l1 / 2, 0.0))          # A: ground - crank
s.revolute(crank, (l1 / 2, 0.0), coupler, (-l2 / 2, 0.0))       # B: crank - coupler
s.revolute(s.ground, tuple(D), rocker, (-l3 / 2, 0.0))          # D: ground - rocker
s.revolute(rocker, (l3 / 2, 0.0), coupler, (l2 / 2, 0.0))       # C: rocker - coupler
model = s.build()
print(f"{model.n} coordinates, {model.n_hol} constraints, {model.n - model.n_hol} degree of freedom")

# %%
# 2. A consistent start
# ----------------------
#
# The poses above close the loop (:math:`g(q_0) = 0` to round-off);
# spin the crank at 3 rad/s and let ``project=True`` make :math:`v_0` satisfy :math:`G v_0 = 0`.
q0, v0 = model.initial_state()
v0[crank.offset:crank.offset + 2] = 0.5 * l1 * 3.0 * np.array([-1.0, 0.0])    # the centre of AB
print(f"|g(q0)| = {np.max(np.abs(model.hol(0.0, q0))):.1e}")

# %%
# 3. Three methods
# -----------------
#
# The same start, T = 3 s, h = 1 ms: generalized-α (index 3,
# numerical damping), RATTLE (symplectic, both constraint levels) and RK4 on the
# index-1 form (only the acceleration level kept: the loop drifts open).
kw = dict(t_end=3.0, h=1e-3, every=10, project=True)
results = [meth.integrate(model, q0, v0, **kw) for meth in (GeneralizedAlpha(), Rattle(), RK4Index1())]
for r in results:
    print(f"{r.method:14s} max|g| = {r.eps_pos:.1e}  max|G v| = {r.eps_vel:.1e}  "
          f"energy drift = {r.energy_drift:.1e}  cpu = {r.cpu_time * 1e3:.1f} ms")

# %%
# 4. The loop closure and the energy
# -----------------------------------
#
# How each method keeps the loop closed, and the energy, sample by sample.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.4), layout="constrained")
# one short label and one style per method (colour, line and marker differ, so the curves stay
# apart where they cross and in grey print); one legend for both panels, outside them
styles = {"genalpha": ("generalized-α", dict(color="C0", ls="-", marker="o")),
          "rattle": ("RATTLE", dict(color="C1", ls="--", marker="s")),
          "rk4_index1": ("RK4, index 1", dict(color="C2", ls=":", marker="^"))}
for r in results:
    label, style = styles[r.method]
    style = dict(style, lw=1.2, ms=4, markevery=max(1, len(r.t) // 12))
    ax1.semilogy(r.t, np.maximum(r.level_residuals[:, 0], 1e-17), label=label, **style)
    ax2.semilogy(r.t[1:], np.maximum(np.abs(r.energy[1:] - r.energy[0]) / abs(r.energy[0]), 1e-17), **style)
ax1.set(xlabel="t [s]", ylabel="max |g(q)| [m]", title="position constraints")
ax2.set(xlabel="t [s]", ylabel="|H(t) - H(0)| / |H(0)|", title="energy")
fig.legend(loc="outside lower center", ncols=3, frameon=False)
plt.show()

# %%
# 5. The motion
# -------------
#
# :func:`pyint.plotting.animate` writes it as a GIF (or an MP4
# with ffmpeg); here every fifth frame is also overlaid in one picture.
gif = animate(results[1], Path(tempfile.mkdtemp()) / "four_bar.gif")   # your own path in your script
print(f"wrote {gif.name}")
fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
for k in range(0, len(results[1].t), 15):
    for line in model.drawing(results[1].q[k]):
        ground = len(line) == 1
        ax.plot(*line.T, marker="^" if ground else "o", ls="-", lw=1, ms=3,
                color="k" if ground else plt.cm.viridis(k / len(results[1].t)))
ax.set(aspect="equal", xlabel="x [m]", ylabel="y [m]", title="RATTLE, t = 0 (purple) to 3 s (yellow)")
plt.show()
