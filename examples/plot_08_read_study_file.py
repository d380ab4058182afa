"""
Reading and plotting a study file
=================================

Every study writes one NetCDF file whose names, units and provenance are
fixed (see :doc:`/datasets`): anyone can open it with :mod:`xarray` and
redraw it, without pyint's code. Here a small study (the double pendulum by
generalized-α at three steps) is run in this process, then its file is read
back: grid dimensions, the per-case status, the trajectories with units, and
the provenance attributes.
"""
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from pyint import GeneralizedAlpha
from pyint.models import PendulumChain
from pyint.study import Study, run_study

# %%
# The study
# ---------


def run_case(p):
    model = PendulumChain(n_links=2)
    q0, v0 = model.initial_state([1.0, 1.5])
    return GeneralizedAlpha(rho_inf=0.9).integrate(model, q0, v0, t_end=p["T"], h=p["h"], every=p["every"]).to_xarray()


STUDY = Study(name="mychain", description="my double pendulum against h",
              grid={"h": [0.01, 0.005, 0.0025]}, fixed={"T": 2.0, "every": 1}, run_case=run_case)
out = Path(tempfile.mkdtemp())
run_study(STUDY, out=out, workers=1, verbose=False)

# %%
# The file
# --------
#
# The file: one dimension per grid parameter, the case's own dimensions
# (``sample``, ``coord``, ...; ``time`` is a coordinate per case, padded with
# NaN where a case has fewer samples), a ``status`` per case, units on every
# variable.
ds = xr.open_dataset(out / "mychain.nc")
print(ds)
print("\nprovenance:", {k: ds.attrs[k] for k in list(ds.attrs)[:6]})
print("status per case:", ds["status"].values)

# %%
# Plotting from the file
# ----------------------
#
# Plotting from the file alone: the first coordinate for each h, and the
# position-level constraint violation.
fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
for h in ds["h"].values:
    case = ds.sel(h=h)
    ax.plot(case["time"], case["q"].isel(coord=0), label=f"h = {h:g} s")
ax.set_xlabel(f"time [{ds['time'].attrs.get('units', '')}]")
ax.set_ylabel(f"{ds['coord'].values[0]} [{ds['q'].attrs['units'].split(',')[0]}]")
ax.legend()
name = "violation" if "violation" in ds else "residual"      # the position-level residual |g(q)|
for h in ds["h"].values:
    case = ds.sel(h=h)
    ax2.semilogy(case["time"], np.maximum(case[name].sel(constraint_level="position"), 1e-18), label=f"h = {h:g} s")
ax2.set_xlabel("time [s]")
ax2.set_ylabel(f"{ds[name].attrs.get('long_name', name)} (position level)")
ax2.legend()
plt.show()

# %%
# The standard figures
# --------------------
#
# The runner also drew its standard figures from the same file, as
# ``pyint plot results/mychain.nc`` does:
print(sorted(p.name for p in (out / "mychain").glob("*.png")))
