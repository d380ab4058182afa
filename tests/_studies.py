"""Test-only studies for the runner tests (importable by forked pool workers).

Dask workers are separate interpreters that cannot import this module: the
Dask tests use the installed selftest study (pyint.studies.selftest) instead.
"""
import os
import time

import numpy as np
import xarray as xr

from pyint.study import Study
from pyint.studies.selftest import STUDY as SELFTEST, run_case as pendulum_case


def slow_case(p):
    """The selftest pendulum case after a pause (a sweep slow enough to kill midway)."""
    time.sleep(p["delay"])
    return pendulum_case(p)


SLOW = Study(name="slowtest", description="selftest cases with a pause each", grid=SELFTEST.grid,
             fixed={**SELFTEST.fixed, "delay": 0.1}, run_case=slow_case, post=SELFTEST.post)


def stored_cases(out, name):
    """{case key: (shard file, its inode and mtime)} of the case store of study ``name`` under ``out``,
    read from the shard files themselves (not the study process's index)."""
    found = {}
    for shard in sorted((out / ".cache" / name / "shards").glob("*.nc")):
        stamp = (shard.name, shard.stat().st_ino, shard.stat().st_mtime_ns)
        with xr.open_dataset(shard, engine="netcdf4") as ds:
            for key in ds["case_key"].values.tolist():
                found.setdefault(key, stamp)
    return found


def counted_case(p):
    """A cheap case that first appends one line to the file $PYINT_TEST_CASE_LOG (when set): the number
    of lines counts the cases executed, by any process."""
    log = os.environ.get("PYINT_TEST_CASE_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(f"{p['k']}\n")
    time.sleep(p["delay"])
    t = np.linspace(0.0, 1.0, 3 + p["k"] % 4)  # time axes of different lengths: the sample padding
    return xr.Dataset({"y": ("time", np.exp(-p["k"] * t), {"units": "m", "long_name": "y"}),
                       "error": ((), float(p["k"]) ** 0.5, {"units": "m"}),
                       "n_steps": ((), np.int64(p["k"]))}, coords={"time": t})


COUNTED = Study(name="counted", description="cheap cases that count their executions",
                grid={"k": list(range(40))}, fixed={"delay": 0.05}, run_case=counted_case,
                meta={"k": ("1", "case index")})


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


def rolling_case(p):
    """Synthetic nonholonomic-looking output (velocity and acceleration levels only, mixed units),
    with errors C h^p of a known order p = 2 (method a) or 1 (method b): exercises the figures."""
    if p["method"] == "b" and p["rho_inf"] == 0.5:
        raise RuntimeError("Newton did not converge")
    order = 2 if p["method"] == "a" else 1
    h = p["h"]
    t = np.arange(0.0, 1.0 + h / 2, h)
    q = np.stack([np.cos(t), np.sin(t), (1 + p["rho_inf"]) * t], axis=1)
    viol = np.stack([np.full(t.size, np.nan), h**order * np.abs(np.sin(5 * t)), 1e-15 * (1 + t)], axis=1)
    return xr.Dataset(
        {"q": (("time", "coord"), q), "violation": (("time", "constraint_level"), viol),
         "energy_error": ("time", h**order * t), "error": ((), 3.0 * h**order, {"units": "m"}),
         "eps_vel": ((), float(np.nanmax(viol[:, 1]))), "cpu_time": ((), 0.01 / h)},
        coords={"time": t, "coord": ["x", "y", "theta"], "coord_units": ("coord", ["m", "m", "rad"]),
                "constraint_level": ["position", "velocity", "acceleration"]})


ROLLING = Study(name="rolling", description="synthetic nonholonomic-like output",
                grid={"method": ["a", "b"], "rho_inf": [0.0, 0.5], "h": [0.1, 0.05, 0.025]},
                run_case=rolling_case, meta={})


def sleepy_case(p):
    """Quick for k < n_quick; else blocks for ``block`` seconds ignoring SIGINT, as a case inside a
    compiled kernel does (Ctrl-C cannot interrupt it: only killing its process stops it)."""
    import signal
    if p["k"] >= p["n_quick"]:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        time.sleep(p["block"])
    return xr.Dataset({"error": ((), float(p["k"]), {"units": "m"})})


SLEEPY = Study(name="sleepy", description="quick cases, then cases that block", grid={"k": list(range(6))},
               fixed={"n_quick": 3, "block": 120.0}, run_case=sleepy_case, meta={"k": ("1", "case index")})


def soft_case(p):
    """k = 1 records a soft failure itself (a result: partial data, status and message)."""
    ds = xr.Dataset({"error": ((), float(p["k"]), {"units": "m"})})
    if p["k"] == 1:
        ds["status"] = ((), "diverged")
        ds["message"] = ((), "the method diverged at t = 0.5 (expected beyond its stability limit)")
    return ds


SOFT = Study(name="soft", description="a recorded soft failure", grid={"k": [0, 1]}, run_case=soft_case,
             meta={"k": ("1", "case index")})
