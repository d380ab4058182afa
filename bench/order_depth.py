"""How deep does each method keep its claimed order?  (a measurement, never asserted)

For every registered method and every shared problem it supports (the pairs of
tests/test_methods.py), halve the step from the coarsest one of the shared order
test (problem.h0 for orders <= 2, the sample spacing for higher orders) until the
relative error (max over the problem's sample times of |q - q_ref|, divided by
max(1, max |q_ref|)) is below 1e-10, the reference's floor (1e-12) is reached, or
the run would exceed MAX_STEPS steps.  Prints, per pair, the errors and the local
slopes log2(e_h / e_{h/2}) in q and v, and the slope fitted over the last three
halvings above the floor: the figure "order down to 1e-10 or the round-off floor".

    python bench/order_depth.py [--only METHOD ...] [--problems NAME ...] [--out FILE.nc]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import xarray as xr

import pyint.methods  # noqa: F401  (registers every method)
from pyint.convergence import fit_order
from pyint.errors import IntegrationError
from pyint.integrator import METHODS
from pyint.problems import PROBLEMS

TARGET = 1e-10      # relative error to reach
FLOOR = 1e-12       # the references' accuracy (relative): errors below are not fitted
MAX_STEPS = 2 ** 22


def depth(cls, prob):
    method = cls()
    q0, v0 = prob.initial_state
    qr, vr, _ = prob.reference
    scale_q, scale_v = max(1.0, np.max(np.abs(qr))), max(1.0, np.max(np.abs(vr)))
    dt = prob.t_end / prob.n_samples
    h = prob.h0 if cls.order <= 2 else dt
    rows = []
    while True:
        every = max(1, int(round(dt / h)))
        if prob.t_end / h > MAX_STEPS:
            break
        try:
            r = method.integrate(prob.model, q0, v0, prob.t_end, h, every=every)
            eq = np.max(np.abs(r.q[1:] - qr)) / scale_q
            ev = np.max(np.abs(r.v[1:] - vr)) / scale_v
            rows.append((h, eq, ev, ""))
        except IntegrationError as err:
            rows.append((h, np.nan, np.nan, str(err)))
        if rows[-1][1] <= TARGET and rows[-1][2] <= TARGET or rows[-1][1] < FLOOR:
            break
        h /= 2
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="method names")
    ap.add_argument("--problems", nargs="*", default=None, help="problem names")
    ap.add_argument("--out", default=None, help="NetCDF file for the error tables")
    args = ap.parse_args(argv)
    records = []
    for mname, cls in sorted(METHODS.items()):
        if args.only and mname not in args.only:
            continue
        for pname, prob in sorted(PROBLEMS.items()):
            if args.problems and pname not in args.problems or not cls.accepts(prob.model):
                continue
            t = time.perf_counter()
            rows = depth(cls, prob)
            hs = np.array([r[0] for r in rows])
            err = np.array([[r[1], r[2]] for r in rows])
            ok = np.all(np.isfinite(err) & (err >= FLOOR), axis=1)
            local = np.log2(err[:-1] / err[1:])
            fit = [np.nan, np.nan]
            idx = np.flatnonzero(ok)
            if idx.size >= 4:
                w = idx[-4:]
                fit = list(fit_order(hs[w], err[w]))
            fails = [f"h={r[0]:.3g}: {r[3]}" for r in rows if r[3]]
            print(f"{mname:18s} {pname:18s} claim {cls.order}  fit(q, v) {fit[0]:5.2f} {fit[1]:5.2f}  "
                  f"finest h {hs[-1]:.3g}  err(q, v) {err[-1, 0]:.2e} {err[-1, 1]:.2e}  "
                  f"{time.perf_counter() - t:5.1f} s")
            print("    local slopes q:", " ".join(f"{x:5.2f}" for x in local[:, 0]))
            print("    local slopes v:", " ".join(f"{x:5.2f}" for x in local[:, 1]))
            for f in fails:
                print("    failed:", f)
            records.append(xr.Dataset(
                {"error_q": ("h", err[:, 0]), "error_v": ("h", err[:, 1])},
                coords={"h": hs}).sortby("h").expand_dims(method=[mname], problem=[pname]))
    if args.out and records:
        ds = xr.merge(records, join="outer", combine_attrs="drop_conflicts")   # the union of the h axes
        ds.to_netcdf(args.out)
        print("wrote", args.out)


if __name__ == "__main__":
    main()
