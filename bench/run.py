"""pyint benchmarks: steps per second of generalized-alpha, side by side in one run.

    ./dev.sh bench                 # full size
    ./dev.sh bench --quick         # fewer steps (smoke run)

For the snakeboard and the planar N-link chain (N = 2, 8, 32, 128) at
h = 1e-3 it times, interleaved so that machine noise hits all alike:

* pyint's Fortran generalized-alpha on the built-in model (whole loop in Fortran),
* the same Fortran kernel with the model evaluated in Python (user-callback path),
* the readable NumPy implementation of the same step (pyint.genalpha_numpy),
* Exudyn 1.13.6's generalized-alpha on the same chain (dense and sparse solver),
  when Exudyn is importable (dev.sh installs it into build/bench-deps only).

Prints a table with the ratios and writes bench/results/genalpha_steps.nc.
Figures are reported, never asserted: this is a benchmark, not a test.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pyint.genalpha import GeneralizedAlpha  # noqa: E402
from pyint.genalpha_numpy import genalpha_numpy  # noqa: E402
from pyint.models import BUILTIN_MODELS, PendulumChain  # noqa: E402

H = 1e-3
RHO = 0.9


def best_rate(fn, nsteps, repeats):
    """Best steps/s over `repeats` runs of fn() (each doing nsteps steps)."""
    best = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best = max(best, nsteps / dt)
    return best


def cases(quick):
    scale = 0.1 if quick else 1.0
    chain_steps = {2: 10000, 8: 10000, 32: 2000, 128: 200}
    out = []
    if "snakeboard" in BUILTIN_MODELS:
        sb = BUILTIN_MODELS["snakeboard"]()
        out.append(("snakeboard", sb, sb.initial_state(), int(10000 * scale)))
    for n, steps in chain_steps.items():
        m = PendulumChain(n)
        out.append((f"chain{n}", m, m.initial_state(), max(int(steps * scale), 20)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = ap.parse_args(argv)

    try:
        from exudyn_chain import exudyn_chain
        import exudyn
        have_exudyn = exudyn.__version__
    except ImportError:
        have_exudyn = None

    ga = GeneralizedAlpha(rho_inf=RHO)
    rows = []
    for name, model, (q0, v0), nsteps in cases(args.quick):
        t_end = nsteps * H
        row = {"case": name, "n": model.n, "steps": nsteps}
        row["fortran"] = best_rate(lambda: ga.integrate(model, q0, v0, t_end, H, every=nsteps), nsteps, args.repeats)
        ncb = max(nsteps // 20, 10)
        row["callback"] = best_rate(lambda: ga.integrate(model, q0, v0, ncb * H, H, every=ncb, backend="callback"),
                                    ncb, 1)
        nnp = max(nsteps // 20, 10)
        row["numpy"] = best_rate(lambda: genalpha_numpy(model, q0, v0, H, nnp, rho_inf=RHO), nnp, 1)
        if have_exudyn and name.startswith("chain"):
            nl = model.n_links
            row["exudyn_dense"] = best_rate(lambda: exudyn_chain(nl, H, t_end, rho_inf=RHO), nsteps, args.repeats)
            row["exudyn_sparse"] = best_rate(lambda: exudyn_chain(nl, H, t_end, rho_inf=RHO, sparse=True),
                                             nsteps, args.repeats)
        rows.append(row)
        print(_fmt(row), flush=True)

    print()
    print(f"generalized-alpha, h = {H:g}, rho_inf = {RHO}; steps/s (best of {args.repeats}); "
          f"Exudyn {have_exudyn or 'not installed'}")
    hdr = f"{'case':<11}{'n':>5}{'fortran':>12}{'callback':>11}{'numpy':>10}{'exu dense':>11}{'exu sparse':>11}" \
          f"{'F/numpy':>9}{'F/cb':>7}{'F/exu':>7}{'F/exu-sp':>9}"
    print(hdr)
    for r in rows:
        print(_fmt(r))
    _write(rows, args.out, have_exudyn)


def _fmt(r):
    def g(k):
        return r.get(k, np.nan)

    return (f"{r['case']:<11}{r['n']:>5}{g('fortran'):>12.0f}{g('callback'):>11.0f}{g('numpy'):>10.0f}"
            f"{g('exudyn_dense'):>11.0f}{g('exudyn_sparse'):>11.0f}{g('fortran') / g('numpy'):>9.0f}"
            f"{g('fortran') / g('callback'):>7.0f}{g('fortran') / g('exudyn_dense'):>7.1f}"
            f"{g('fortran') / g('exudyn_sparse'):>9.1f}")


def _write(rows, outdir, exu_version):
    import xarray as xr

    os.makedirs(outdir, exist_ok=True)
    impls = ["fortran", "callback", "numpy", "exudyn_dense", "exudyn_sparse"]
    data = np.array([[r.get(k, np.nan) for k in impls] for r in rows])
    ds = xr.Dataset(
        {"steps_per_second": (("case", "implementation"), data,
                              {"units": "1/s", "long_name": "generalized-alpha steps per second"}),
         "n_coordinates": ("case", [r["n"] for r in rows], {"units": "1", "long_name": "coordinates"})},
        coords={"case": [r["case"] for r in rows], "implementation": impls},
        attrs={"h": H, "rho_inf": RHO, "exudyn_version": exu_version or "not installed",
               "created": time.strftime("%Y-%m-%dT%H:%M:%S")})
    path = os.path.join(outdir, "genalpha_steps.nc")
    tmp = path + f".tmp-{os.getpid()}"
    ds.to_netcdf(tmp)
    os.replace(tmp, path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
