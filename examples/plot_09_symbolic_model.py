"""
A model written in SymPy, compiled to Fortran
=============================================

:class:`pyint.models.SymbolicModel` takes the model as SymPy expressions,
derives every item exactly (Jacobians, time and acceleration terms, the
curvature terms of the Newton matrix), compiles them once with gfortran
(cached in ``$PYINT_MODEL_CACHE``) and then runs the whole time loop in
Fortran, at the speed of a built-in model. Parameters are runtime inputs:
changing them does not recompile.

A spherical pendulum in Cartesian coordinates, on the Earth and on the Moon.
"""
import time

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp

from pyint import GeneralizedAlpha
from pyint.models import SymbolicModel

# %%
# The model from SymPy
# --------------------

x, y, z, vx, vy, vz, m, l, g = sp.symbols("x y z vx vy vz m l g")
t0 = time.perf_counter()
earth = SymbolicModel([x, y, z], [vx, vy, vz], mass=sp.diag(m, m, m), potential=m * g * z,
                      hol=[(x**2 + y**2 + z**2 - l**2) / 2], params={m: 1.0, l: 1.0, g: 9.81})
moon = earth.with_params(g=1.62)                   # same compiled library

q0 = np.array([np.sin(0.8), 0.0, -np.cos(0.8)])    # 0.8 rad from the vertical ...
v0 = np.array([0.0, 1.5, 0.0])                     # ... pushed sideways
runs = {}
for name, model in (("Earth, g = 9.81", earth), ("Moon, g = 1.62", moon)):
    runs[name] = GeneralizedAlpha().integrate(model, q0, v0, t_end=6.0, h=1e-3, every=5)
print(f"compile (or load from the cache) and both runs: {time.perf_counter() - t0:.2f} s")
for name, r in runs.items():
    print(f"{name:16s} max|g| = {r.eps_pos:.1e}  relative energy drift = {r.energy_drift:.1e}")

# %%
# The path
# --------
#
# The path of the bob seen from above.
fig, ax = plt.subplots(figsize=(5.5, 5), layout="constrained")
for name, r in runs.items():
    ax.plot(r.q[:, 0], r.q[:, 1], lw=1, label=name)
ax.set_aspect("equal")
ax.set_xlabel("x [m]")
ax.set_ylabel("y [m]")
ax.legend()
plt.show()
