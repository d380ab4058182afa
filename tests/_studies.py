"""Test-only studies for the runner tests (importable by forked pool workers).

Dask workers are separate interpreters that cannot import this module: the
Dask tests use the installed selftest study (pyint._selftest_study) instead.
"""
import os
import time

import numpy as np
import xarray as xr

from pyint._selftest_study import STUDY as SELFTEST, run_case as pendulum_case
from pyint.runner import Study


def slow_case(p):
    """The selftest pendulum case after a pause (a sweep slow enough to kill midway)."""
    time.sleep(p["delay"])
    return pendulum_case(p)


SLOW = Study(name="slowtest", description="selftest cases with a pause each", grid=SELFTEST.grid,
             fixed={**SELFTEST.fixed, "delay": 0.1}, run_case=slow_case, post=SELFTEST.post)


def toy_case(p):
    """Cheap case: a decaying exponential sampled with step h; misbehaves on request."""
    if p["k"] == p["crash_k"]:
        os._exit(3)  # the worker process dies: no exception, no result
    if p["k"] == p["nounits_k"]:
        return xr.Dataset({"mystery": ((), 1.0)})
    if p["k"] == p["notds_k"]:
        return {"error": 1.0}
    t = np.arange(0.0, 1.0 + p["h"] / 2, p["h"])
    y = np.exp(-p["k"] * t)
    err = float(np.max(np.abs((1 - p["k"] * p["h"]) ** np.arange(t.size) - y)))  # explicit Euler
    return xr.Dataset({"y": ("time", y, {"units": "m", "long_name": "exact solution"}),
                       "error": ((), err, {"units": "m"}),
                       "n_steps": ((), np.int64(t.size - 1))},
                      coords={"time": t})


def toy_study(crash_k=-1.0, nounits_k=-1.0, notds_k=-1.0, **kw):
    return Study(name="toy", description="exponential decay, explicit Euler",
                 grid={"k": [0.5, 1.0, 2.0], "h": [0.1, 0.05]},
                 fixed={"crash_k": crash_k, "nounits_k": nounits_k, "notds_k": notds_k},
                 meta={"k": ("1/s", "decay rate")}, run_case=toy_case, **kw)
