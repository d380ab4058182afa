"""selftest: the runner's smoke study (``pyint study run selftest --quick``).

A real, cheap computation that exercises everything a study uses: the planar
pendulum (``PendulumChain(1)``: one point mass in Cartesian coordinates,
holonomic constraint g = (x^2 + y^2 - l^2)/2), written in index-1 form
(q' = v, v' = a(q, v) from the KKT system of
:meth:`Model.consistent_acceleration`) and integrated with fixed-step explicit
Runge-Kutta methods of orders 1, 2 and 4 over a grid of step sizes.

Reference: the closed form for release from rest at angle theta0 from the
downward vertical, sin(theta/2) = k sn(K - w t | k^2), k = sin(theta0/2),
w = sqrt(g/l), K = K(k^2) (energy conservation integrated with Jacobi
elliptic functions); x = l sin(theta), y = -l cos(theta).

What it shows: measured orders 1, 2, 4 (``order``), the drift of the position
and velocity constraints of the index-1 form (``eps_pos``, ``eps_vel``; the
acceleration level holds to round-off by construction), energy drift, error
against h and against CPU time.  A smoke test (``smoke=True``): not part of
``pyint study run --all``.
"""
from __future__ import annotations

import math
import time

import numpy as np
import xarray as xr

from pyint.study.datasets import measured_order, trajectory_dataset
from pyint.models import PendulumChain
from pyint.study import Study, study_main


def _tableau(a, b):
    """Explicit Butcher tableau (A, b, c) with c = A 1, checked: strictly lower A, sum(b) = 1."""
    a = np.array(a, dtype=float)
    b = np.array(b, dtype=float)
    assert np.allclose(np.triu(a), 0.0) and math.isclose(b.sum(), 1.0)
    return a, b, a.sum(axis=1)


#: Explicit Runge-Kutta methods: name -> (tableau, classical order).
METHODS = {
    "euler": (_tableau([[0.0]], [1.0]), 1),
    "midpoint": (_tableau([[0.0, 0.0], [0.5, 0.0]], [0.0, 1.0]), 2),
    "rk4": (_tableau([[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1, 0]],
                     [1 / 6, 1 / 3, 1 / 3, 1 / 6]), 4),
}


def exact_position(t, theta0, length, grav):
    """Closed-form (x, y) of the pendulum released from rest at theta0, shape (len(t), 2)."""
    # imported here: `pyint study run NAME` imports every study module to find NAME
    from scipy.special import ellipj, ellipk

    k = math.sin(theta0 / 2)
    m = k * k
    sn, _, _, _ = ellipj(ellipk(m) - math.sqrt(grav / length) * np.asarray(t, dtype=float), m)
    theta = 2 * np.arcsin(k * sn)
    return np.stack([length * np.sin(theta), -length * np.cos(theta)], axis=1)


def run_case(p):
    """One trajectory: p has method, h, T, theta0, length, grav."""
    if p["method"] not in METHODS:
        raise ValueError(f"unknown method {p['method']!r}; known: {sorted(METHODS)}")
    h, T = float(p["h"]), float(p["T"])
    if not (h > 0 and math.isfinite(h)) or not (T > 0 and math.isfinite(T)):
        raise ValueError(f"h and T must be positive and finite, got h={h}, T={T}")
    n_steps = round(T / h)
    if n_steps < 1 or abs(n_steps * h - T) > 1e-9 * T:
        raise ValueError(f"h={h} does not divide T={T} into whole steps")
    if not 0 < p["theta0"] < math.pi:
        raise ValueError(f"theta0 must be in (0, pi), got {p['theta0']}")
    model = PendulumChain(1, length=p["length"], grav=p["grav"])
    (a_tab, b_tab, c_tab), _ = METHODS[p["method"]]
    n = model.n

    def rhs(t, y):
        acc = model.consistent_acceleration(t, y[:n], y[n:])[0]
        return np.concatenate([y[n:], acc])

    q0, v0 = model.initial_state([p["theta0"]])
    y = np.concatenate([q0, v0])
    ys = np.empty((n_steps + 1, 2 * n))
    ys[0] = y
    stages = np.empty((len(b_tab), 2 * n))
    start = time.process_time()
    for step in range(n_steps):
        t = step * h
        for i in range(len(b_tab)):
            stages[i] = rhs(t + c_tab[i] * h, y + h * (a_tab[i, :i] @ stages[:i]))
        y = y + h * (b_tab @ stages)
        ys[step + 1] = y
    cpu = time.process_time() - start

    t = h * np.arange(n_steps + 1)
    acc = np.array([rhs(tk, yk)[n:] for tk, yk in zip(t, ys)])
    ds = trajectory_dataset(model, t, ys[:, :n], ys[:, n:], a=acc)
    err = np.max(np.abs(ys[:, :n] - exact_position(t, p["theta0"], p["length"], p["grav"])))
    ds["error"] = ((), float(err), {"units": "m", "long_name": "max position error against the closed form"})
    ds["cpu_time"] = ((), cpu)
    ds["n_steps"] = ((), np.int64(n_steps))
    ds["rhs_evaluations"] = ((), np.int64(n_steps * len(b_tab)))
    for name, units in (("eps_pos", "m^2"), ("eps_vel", "m^2/s"), ("eps_acc", "m^2/s^2"), ("violation", "m^2/s^k")):
        ds[name].attrs["units"] = units  # g = (x^2 + y^2 - l^2)/2 is in m^2
    return ds


def add_order(ds):
    """Measured order of the position error over the h grid, per method."""
    return ds.assign(order=measured_order(ds["error"], "h"))


STUDY = Study(
    name="selftest",
    description="runner smoke test: pendulum in index-1 form, explicit RK of orders 1, 2, 4 against h",
    grid={"method": list(METHODS), "h": [0.04, 0.02, 0.01, 0.005]},
    fixed={"T": 2.0, "theta0": 1.0, "length": 1.0, "grav": 9.81},
    quick_grid={"h": [0.04, 0.02], "T": 1.0},
    run_case=run_case,
    post=add_order,
    smoke=True,
)

if __name__ == "__main__":
    raise SystemExit(study_main(STUDY))
