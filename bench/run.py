"""pyint benchmarks, one command: ./dev.sh bench  (bench/run.py [--quick] [--only SECTION ...]).

Sections (each prints a table and writes bench/results/<section>.nc; figures
are reported, never asserted: this is a benchmark, not a test):

chain     steps/s and wall time of pyint's generalized-alpha on the planar
          N-link chain, N = 2, 8, 32, 128, 512, 1024, h = 1e-3, T = 10 (fewer
          steps for N >= 512), beside Exudyn 1.13.6's generalized-alpha with its
          dense and sparse solvers; the fitted exponent of pyint's cost per
          step against N (32..1024).  pyint's rate counts the whole call
          (validation, start, kernel, residuals); "kernel" counts the Fortran
          call only (Result.cpu_time).  Exudyn's counts SolveDynamic only.
paths     the same chain through the other pyint paths: the Fortran kernel
          with the model in Python (callback: the items of one evaluation
          point in one Python call; lean: the same with items written for
          the callback, bench/lean_chain.py, what the path itself costs;
          per item: Model.callback_bundle = False, one Python call per item)
          and the NumPy step; Python callbacks per step.
solvers   the Newton-matrix solvers (dense / banded / sparse KLU) with and
          without Jacobian reuse, kernel steps/s.
wp        work-precision on the 2-link chain (problem chain2, T = 1): final
          error against the tight reference against CPU time, for every pyint
          method that handles holonomic constraints, Exudyn, and IDA on the
          GGL form (when pyint.reference is importable); the time each needs
          for errors 1e-4 and 1e-6 (log-log interpolation).  Also drawn to
          bench/results/wp.png from the NetCDF file.
batch     batched trajectories (integrate_batch) with 1 and 2 OpenMP threads
          against one-by-one integrate calls: trajectories per second.
symbolic  user models as SymbolicModels (tests/symbolic_models.py): generalized-
          alpha steps/s of the compiled chain (N = 2, 8, 32) and snakeboard
          beside their built-in twins and the same model through the Python
          callback; the 8-link chain's first compile and cached load, each in
          a fresh process (SymbolicModel(...) timed apart from the compile/load).

Exudyn is installed by dev.sh into build/bench-deps only (never a pyint dependency).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the NumPy baseline is the test oracle of generalized-alpha (tests/genalpha_numpy.py)
sys.path.insert(1, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

import pyint.methods  # noqa: E402,F401  (registers every method)
from genalpha_numpy import genalpha_numpy  # noqa: E402
from pyint.methods.genalpha import GeneralizedAlpha  # noqa: E402
from pyint.errors import IntegrationError  # noqa: E402
from pyint.integrator import METHODS  # noqa: E402
from pyint.models import PendulumChain  # noqa: E402
from pyint.problems import PROBLEMS  # noqa: E402
from pyint.models.structured import sparse_solver_available  # noqa: E402

H = 1e-3
RHO = 0.9
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
SECTIONS = ("chain", "paths", "solvers", "wp", "batch", "symbolic")


def exudyn_version():
    try:
        import exudyn
        from exudyn_chain import exudyn_chain  # noqa: F401
        return exudyn.__version__
    except ImportError:
        return None


def best(fn, repeats):
    """(best wall time, last return value) over `repeats` calls of fn()."""
    tbest, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        tbest = min(tbest, time.perf_counter() - t0)
    return tbest, out


def write(ds, name):
    """NetCDF to a temporary name, then rename (a crash never leaves half a file)."""
    os.makedirs(OUT, exist_ok=True)
    ds.attrs.update({"h": H, "rho_inf": RHO, "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
                     "exudyn_version": exudyn_version() or "not installed",
                     "klu": int(sparse_solver_available()), "cpus": os.cpu_count() or 0})
    path = os.path.join(OUT, f"{name}.nc")
    tmp = path + f".tmp-{os.getpid()}"
    ds.to_netcdf(tmp)
    os.replace(tmp, path)
    print(f"wrote {path}\n", flush=True)
    return path


def fmt(x, spec=".0f"):
    return "-" if x is None or not np.isfinite(x) else format(x, spec)


# --- chain scaling ----------------------------------------------------------------
def chain_cases(quick):
    """N -> (pyint steps, Exudyn dense steps, Exudyn sparse steps); 0 = not run."""
    full = {2: (10000, 10000, 10000), 8: (10000, 10000, 10000), 32: (10000, 2000, 10000),
            128: (10000, 300, 10000), 512: (2000, 0, 1000), 1024: (1000, 0, 500)}
    if quick:
        return {n: tuple(max(s // 10, 20) if s else 0 for s in v) for n, v in full.items()}
    return full


def section_chain(args):
    import xarray as xr
    exu = exudyn_version()
    if exu:
        from exudyn_chain import exudyn_chain
    ga = GeneralizedAlpha(rho_inf=RHO)
    rows = []
    print(f"generalized-alpha on the N-link chain, h = {H:g}, rho_inf = {RHO}; steps/s; Exudyn {exu or 'not installed'}")
    hdr = (f"{'N':>5}{'steps':>7}{'pyint':>10}{'kernel':>10}{'wall s':>8}{'solver':>8}{'exu dense':>10}"
           f"{'exu sparse':>11}{'/dense':>8}{'/sparse':>8}")
    print(hdr)
    for nl, (ns, nd, nsp) in chain_cases(args.quick).items():
        m = PendulumChain(nl)
        q0, v0 = m.initial_state()
        reps = (2 * args.repeats if nl <= 8 else args.repeats) if nl <= 128 else 1  # short runs: more repeats vs noise
        wall, r = best(lambda: ga.integrate(m, q0, v0, ns * H, H, every=ns), reps)
        row = dict(N=nl, steps=ns, pyint=ns / wall, kernel=ns / r.cpu_time, wall=wall,
                   solver=r.stats["linear_solver"], exu_dense=np.nan, exu_sparse=np.nan,
                   exu_dense_steps=nd, exu_sparse_steps=nsp)
        if exu and nd:
            row["exu_dense"] = max(exudyn_chain(nl, H, nd * H, rho_inf=RHO)[0] for _ in range(reps if nd >= 2000 else 1))
        if exu and nsp:
            row["exu_sparse"] = max(exudyn_chain(nl, H, nsp * H, rho_inf=RHO, sparse=True)[0]
                                    for _ in range(reps if nsp >= 2000 else 1))
        rows.append(row)
        print(f"{nl:>5}{ns:>7}{fmt(row['pyint']):>10}{fmt(row['kernel']):>10}{wall:>8.2f}{row['solver']:>8}"
              f"{fmt(row['exu_dense']):>10}{fmt(row['exu_sparse']):>11}{fmt(row['pyint'] / row['exu_dense'], '.1f'):>8}"
              f"{fmt(row['pyint'] / row['exu_sparse'], '.1f'):>8}", flush=True)
    ns_ = np.array([r["N"] for r in rows], dtype=float)
    cost = np.array([1 / r["kernel"] for r in rows])
    sel = ns_ >= 32
    expo = float(np.polyfit(np.log(ns_[sel]), np.log(cost[sel]), 1)[0]) if sel.sum() >= 2 else np.nan
    cost_wall = np.array([1 / r["pyint"] for r in rows])
    expo_wall = float(np.polyfit(np.log(ns_[sel]), np.log(cost_wall[sel]), 1)[0]) if sel.sum() >= 2 else np.nan
    print(f"cost per step ~ N^{expo:.2f} (kernel, N = 32..1024); whole call ~ N^{expo_wall:.2f} "
          "(validation, the start with its rank check in the driver, kernel)")
    if exu:
        for nl, key in ((2, "exu_dense"), (2, "exu_sparse"), (128, "exu_sparse")):
            r = next((r for r in rows if r["N"] == nl), None)
            if r:
                print(f"acceptance: N = {nl}: pyint / {key} = {r['pyint'] / r[key]:.1f}")
    ds = xr.Dataset(
        {"pyint_steps_per_second": ("N", [r["pyint"] for r in rows],
                                    {"units": "1/s", "long_name": "pyint generalized-alpha steps/s (whole call)"}),
         "pyint_kernel_steps_per_second": ("N", [r["kernel"] for r in rows],
                                           {"units": "1/s", "long_name": "pyint steps/s (Fortran call, CPU time)"}),
         "pyint_wall_time": ("N", [r["wall"] for r in rows], {"units": "s", "long_name": "pyint wall time"}),
         "pyint_steps": ("N", [r["steps"] for r in rows], {"units": "1", "long_name": "pyint steps timed"}),
         "exudyn_dense_steps_per_second": ("N", [r["exu_dense"] for r in rows],
                                           {"units": "1/s", "long_name": "Exudyn generalized-alpha, dense solver"}),
         "exudyn_sparse_steps_per_second": ("N", [r["exu_sparse"] for r in rows],
                                            {"units": "1/s", "long_name": "Exudyn generalized-alpha, sparse solver"}),
         "exudyn_dense_steps": ("N", [r["exu_dense_steps"] for r in rows], {"units": "1", "long_name": "steps timed"}),
         "exudyn_sparse_steps": ("N", [r["exu_sparse_steps"] for r in rows], {"units": "1", "long_name": "steps timed"}),
         "linear_solver": ("N", [r["solver"] for r in rows], {"long_name": "solver picked by linear_solver='auto'"}),
         "cost_exponent": ((), expo, {"units": "1", "long_name": "fitted exponent of kernel cost per step vs N, N>=32"}),
         "cost_exponent_whole_call": ((), expo_wall, {"units": "1", "long_name": "same, whole call"})},
        coords={"N": ("N", [r["N"] for r in rows], {"units": "1", "long_name": "number of links"})})
    write(ds, "chain")


# --- the other pyint paths ----------------------------------------------------------
def callbacks_per_step(model, q0, v0, nsteps, ga):
    """Python callbacks per step of a callback run (counted in an untimed run)."""
    import copy
    counted, calls = copy.copy(model), [0]
    inner = model.fortran_callback()

    def counting(req, t, q, v, w, out):   # f2py reads the callback's signature: explicit arguments
        calls[0] += 1
        inner(req, t, q, v, w, out)
    counted.fortran_callback = lambda: counting
    ga.integrate(counted, q0, v0, nsteps * H, H, every=nsteps, backend="callback")
    return calls[0] / nsteps


def section_paths(args):
    import copy
    import xarray as xr
    from lean_chain import LeanChain, lean_items_agree
    ga = GeneralizedAlpha(rho_inf=RHO)
    rows = []
    print("pyint paths on the chain, steps/s: Fortran kernel with the built-in model / with the model "
          "in Python (callback: the items of a point in one Python call; lean: the same through items "
          "written for the callback, bench/lean_chain.py; per item: one call per item) / the NumPy step")
    print(f"{'N':>5}{'fortran':>11}{'callback':>10}{'lean':>9}{'per item':>10}{'numpy':>9}{'cb/step':>9}"
          f"{'F/cb':>7}{'F/lean':>8}{'F/item':>8}{'F/numpy':>9}")
    for nl in (2, 8, 32):
        m = PendulumChain(nl)
        lean = LeanChain(nl)
        agree = lean_items_agree(nl)
        if agree > 1e-13:
            raise RuntimeError(f"bench/lean_chain.py: LeanChain({nl})'s items differ from PendulumChain's by {agree:.1e}")
        per_item = copy.copy(m)
        per_item.callback_bundle = False
        q0, v0 = m.initial_state()
        ns = 1000 if args.quick else 10000
        wall, _ = best(lambda: ga.integrate(m, q0, v0, ns * H, H, every=ns), args.repeats)
        ncb = max(ns // 10, 20)      # the callback paths: enough steps that the call's start is small
        nsmall = max(ns // 50, 20)
        wcb, _ = best(lambda: ga.integrate(m, q0, v0, ncb * H, H, every=ncb, backend="callback"), args.repeats)
        wln, _ = best(lambda: ga.integrate(lean, q0, v0, ncb * H, H, every=ncb, backend="callback"), args.repeats)
        wpi, _ = best(lambda: ga.integrate(per_item, q0, v0, nsmall * H, H, every=nsmall, backend="callback"),
                      args.repeats)
        wnp, _ = best(lambda: genalpha_numpy(m, q0, v0, H, nsmall, rho_inf=RHO), 1)
        row = dict(N=nl, fortran=ns / wall, callback=ncb / wcb, callback_lean=ncb / wln,
                   callback_per_item=nsmall / wpi, numpy=nsmall / wnp,
                   callbacks_per_step=callbacks_per_step(m, q0, v0, nsmall, ga))
        rows.append(row)
        print(f"{nl:>5}{row['fortran']:>11.0f}{row['callback']:>10.0f}{row['callback_lean']:>9.0f}"
              f"{row['callback_per_item']:>10.0f}{row['numpy']:>9.0f}{row['callbacks_per_step']:>9.2f}"
              f"{row['fortran'] / row['callback']:>7.0f}{row['fortran'] / row['callback_lean']:>8.0f}"
              f"{row['fortran'] / row['callback_per_item']:>8.0f}{row['fortran'] / row['numpy']:>9.0f}", flush=True)
    r2 = rows[0]
    print(f"acceptance: N = 2: built-in / callback = {r2['fortran'] / r2['callback']:.1f} "
          f"(lean items: {r2['fortran'] / r2['callback_lean']:.1f}; target <= 20)")
    impl = ["fortran", "callback", "callback_lean", "callback_per_item", "numpy"]
    ds = xr.Dataset({"steps_per_second": (("N", "path"), [[r[k] for k in impl] for r in rows],
                                          {"units": "1/s", "long_name": "generalized-alpha steps/s"}),
                     "callbacks_per_step": ("N", [r["callbacks_per_step"] for r in rows],
                                            {"units": "1", "long_name": "Python callbacks per step (callback path)"})},
                    coords={"N": ("N", [r["N"] for r in rows], {"units": "1", "long_name": "number of links"}),
                            "path": ("path", impl, {"long_name": "model evaluation path"})})
    write(ds, "paths")


# --- Newton-matrix solvers ----------------------------------------------------------
def section_solvers(args):
    import xarray as xr
    solvers = ["dense", "banded"] + (["sparse"] if sparse_solver_available() else [])
    sizes = {2: 5000, 8: 5000, 32: 2000, 128: 500, 512: 200}
    if args.quick:
        sizes = {k: max(v // 10, 20) for k, v in sizes.items()}
    data = np.full((len(sizes), len(solvers), 2), np.nan)
    print("Newton-matrix solvers on the chain: kernel steps/s without / with Jacobian reuse")
    print(f"{'N':>5}" + "".join(f"{s + ' ' + r:>16}" for s in solvers for r in ("newton", "reuse")))
    for i, (nl, ns) in enumerate(sizes.items()):
        m = PendulumChain(nl)
        q0, v0 = m.initial_state()
        for j, s in enumerate(solvers):
            if s == "dense" and nl > 128:
                continue
            for k, reuse in enumerate((False, True)):
                meth = GeneralizedAlpha(rho_inf=RHO, linear_solver=s, jacobian_reuse=reuse)
                _, r = best(lambda: meth.integrate(m, q0, v0, ns * H, H, every=ns), 2 if nl <= 32 else 1)
                data[i, j, k] = ns / r.cpu_time
        print(f"{nl:>5}" + "".join(f"{fmt(data[i, j, k]):>16}" for j in range(len(solvers)) for k in range(2)),
              flush=True)
    ds = xr.Dataset({"kernel_steps_per_second": (("N", "linear_solver", "jacobian_reuse"), data,
                                                 {"units": "1/s", "long_name": "steps/s of the Fortran call"})},
                    coords={"N": ("N", list(sizes), {"units": "1", "long_name": "number of links"}),
                            "linear_solver": ("linear_solver", solvers, {"long_name": "Newton-matrix solver"}),
                            "jacobian_reuse": ("jacobian_reuse", [0, 1], {"units": "1",
                                                                          "long_name": "simplified Newton"})})
    write(ds, "solvers")


# --- work-precision -------------------------------------------------------------------
def time_at_error(errs, times, target):
    """CPU time at which the error reaches `target`: log-log interpolation between the
    two runs that bracket it (runs ordered by time); NaN when never reached."""
    order = np.argsort(times)
    e, t = np.log(np.asarray(errs)[order]), np.log(np.asarray(times)[order])
    lt = np.log(target)
    for i in range(len(e) - 1):
        if e[i] >= lt >= e[i + 1] and e[i] != e[i + 1]:
            return float(np.exp(t[i] + (lt - e[i]) * (t[i + 1] - t[i]) / (e[i + 1] - e[i])))
    return float(np.exp(t[0])) if len(e) and e[0] <= lt else float("nan")


def ida_runner():
    """IDA on the GGL form through pyint.reference, or None when it is not importable.
    Adapt here if pyint.reference's signature changes."""
    try:
        from pyint import reference
        reference.integrate  # noqa: B018
    except (ImportError, AttributeError):
        return None

    def run(model, q0, v0, t_end, rtol):
        r = reference.integrate(model, [0.0, t_end], q0, v0, form="ggl", rtol=rtol, atol=rtol)
        return r.q[-1]
    return run


def section_wp(args):
    import xarray as xr
    prob = PROBLEMS["chain2"]
    m = prob.model
    q0, v0 = prob.initial_state
    qref = prob.reference[0][-1]      # the reference at t_end (the last sample time)
    T = prob.t_end
    curves = {}   # label -> list of (knob, error, time)
    hs = [2.0 ** -k for k in range(4, 13 if args.quick else 15)]
    methods = {name: cls for name, cls in sorted(METHODS.items()) if cls.accepts(m)}
    for name, cls in methods.items():
        variants = {name: cls()}
        if name == "genalpha":
            variants["genalpha (Newton, dense)"] = cls(jacobian_reuse=False, linear_solver="dense")
        for label, meth in variants.items():
            pts = []
            for h in hs:
                try:
                    wall, r = best(lambda: meth.integrate(m, q0, v0, T, h, every=int(round(T / h))), args.repeats)
                except IntegrationError as exc:  # report the point, do not hide it, go on
                    print(f"{label} h={h:g} failed: {exc}")
                    continue
                pts.append((h, float(np.max(np.abs(r.q[-1] - qref))), wall))
            curves[label] = pts
    exu = exudyn_version()
    if exu:
        from exudyn_chain import exudyn_chain
        pts = []
        angles = [np.pi / 3, np.pi / 2]
        for h in hs:
            def run():
                return exudyn_chain(2, h, T, rho_inf=RHO, angles=angles, mass=m.m, length=m.l, grav=m.grav)
            wall, (_, final) = best(run, args.repeats)
            pts.append((h, float(np.max(np.abs(final.ravel() - qref))), wall))
        curves[f"exudyn {exu} (SolveDynamic + assembly)"] = pts
    ida = ida_runner()
    if ida is not None:
        pts = []
        for rtol in 10.0 ** -np.arange(3, 12):
            try:
                wall, qf = best(lambda: ida(m, q0, v0, T, rtol), args.repeats)
            except Exception as exc:  # report, do not hide
                print(f"IDA rtol={rtol:g} failed: {exc}")
                continue
            pts.append((rtol, float(np.max(np.abs(qf - qref))), wall))
        curves["IDA (GGL form)"] = pts
    else:
        print("IDA: pyint.reference is not importable on this branch: no IDA curve")
    print(f"work-precision on {prob.name} (T = {T}): wall time of the call (best of {args.repeats})")
    print(f"{'method':<38}{'t(err=1e-4) s':>15}{'t(err=1e-6) s':>15}{'smallest err':>14}")
    summary = {}
    for label, pts in curves.items():
        e = [p[1] for p in pts]
        t = [p[2] for p in pts]
        summary[label] = (time_at_error(e, t, 1e-4), time_at_error(e, t, 1e-6))
        print(f"{label:<38}{fmt(summary[label][0], '.2e'):>15}{fmt(summary[label][1], '.2e'):>15}{min(e):>14.1e}")
    pyint_best = [min((summary[k][i] for k in methods if np.isfinite(summary[k][i])), default=np.nan) for i in (0, 1)]
    for other in [k for k in curves if k.startswith("exudyn") or k.startswith("IDA")]:
        print(f"acceptance: best pyint method / {other}: "
              f"{pyint_best[0] / summary[other][0]:.2f} at 1e-4, {pyint_best[1] / summary[other][1]:.2f} at 1e-6")
    labels = list(curves)
    npts = max(len(p) for p in curves.values())
    arr = np.full((len(labels), npts, 3), np.nan)
    for i, lab in enumerate(labels):
        arr[i, :len(curves[lab])] = curves[lab]
    ds = xr.Dataset(
        {"knob": (("method", "run"), arr[:, :, 0], {"units": "s or 1", "long_name": "step size h (rtol for IDA)"}),
         "error": (("method", "run"), arr[:, :, 1], {"units": "m", "long_name": "max |q(T) - q_ref(T)|"}),
         "time": (("method", "run"), arr[:, :, 2], {"units": "s", "long_name": "wall time of the call"}),
         "time_at_1e-4": ("method", [summary[k][0] for k in labels], {"units": "s", "long_name": "time for error 1e-4"}),
         "time_at_1e-6": ("method", [summary[k][1] for k in labels], {"units": "s", "long_name": "time for error 1e-6"})},
        coords={"method": ("method", labels, {"long_name": "integrator"}),
                "run": ("run", np.arange(npts), {"long_name": "run index"})},
        attrs={"problem": prob.name, "t_end": T, "reference": prob.source})
    path = write(ds, "wp")
    plot_wp(path)


def plot_wp(path):
    """The work-precision diagram, drawn from the NetCDF file."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import xarray as xr
    ds = xr.open_dataset(path)
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for lab in ds.method.values:
        d = ds.sel({"method": lab})  # (sel(method=...) is the interpolation keyword)
        ok = np.isfinite(d.error.values)
        ax.loglog(d.time.values[ok], d.error.values[ok], "o-", ms=3, label=str(lab))
    for e in (1e-4, 1e-6):
        ax.axhline(e, color="0.8", lw=0.8)
    ax.set_xlabel("wall time of the call [s]")
    ax.set_ylabel("max |q(T) - q_ref(T)| [m]")
    ax.set_title(f"work-precision, {ds.attrs['problem']} (T = {ds.attrs['t_end']:g} s)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    png = path.replace(".nc", ".png")
    fig.savefig(png, dpi=120)
    ds.close()
    print(f"wrote {png}\n")


# --- batches ----------------------------------------------------------------------------
def section_batch(args):
    import xarray as xr
    rng = np.random.default_rng(9)
    rows = []
    print("batched trajectories (GeneralizedAlpha.integrate_batch), h = 1e-3, T = 1: trajectories/s")
    print(f"{'N':>5}{'nb':>5}{'one by one':>12}{'1 thread':>10}{'2 threads':>11}{'cpu/wall(2)':>12}")
    for nl, nb in ((2, 64), (8, 64), (32, 16)):
        if args.quick:
            nb //= 4
        m = PendulumChain(nl)
        states = [m.initial_state(rng.uniform(0.3, 2.0, nl)) for _ in range(nb)]
        q0s = np.array([s[0] for s in states])
        v0s = np.array([s[1] for s in states])
        ga = GeneralizedAlpha(rho_inf=RHO)
        t_one, _ = best(lambda: [ga.integrate(m, q, v, 1.0, H, every=1000) for q, v in zip(q0s, v0s)], 1)
        row = dict(N=nl, nb=nb, one=nb / t_one)
        for th in (1, 2):
            c0 = time.process_time()
            tb, _ = best(lambda: ga.integrate_batch(m, q0s, v0s, 1.0, H, every=1000, threads=th), 1)
            row[f"t{th}"] = nb / tb
            row[f"cpu{th}"] = (time.process_time() - c0) / tb
        rows.append(row)
        print(f"{nl:>5}{nb:>5}{row['one']:>12.1f}{row['t1']:>10.1f}{row['t2']:>11.1f}{row['cpu2']:>12.2f}", flush=True)
    ds = xr.Dataset(
        {"trajectories_per_second": (("case", "mode"), [[r["one"], r["t1"], r["t2"]] for r in rows],
                                     {"units": "1/s", "long_name": "trajectories per second (1000 steps each)"}),
         "cpu_over_wall_2_threads": ("case", [r["cpu2"] for r in rows],
                                     {"units": "1", "long_name": "CPU time / wall time with 2 threads"}),
         "n_links": ("case", [r["N"] for r in rows], {"units": "1", "long_name": "number of links"}),
         "batch_size": ("case", [r["nb"] for r in rows], {"units": "1", "long_name": "trajectories"})},
        coords={"case": ("case", np.arange(len(rows)), {"long_name": "case"}),
                "mode": ("mode", ["one_by_one", "batch_1_thread", "batch_2_threads"], {"long_name": "how run"})})
    write(ds, "batch")


# --- user models compiled from SymPy -------------------------------------------------
def _compile_time(n_links, cache):
    """(seconds to write the model, seconds to compile or load it) in a fresh process with sympy imported:
    SymbolicModel(...) from the user's expressions, then compiled_ipar() (cache miss: derivation, code
    generation, gfortran; hit: the cache's index and dlopen)."""
    import subprocess
    code = ("import sys, time, sympy; sys.path.insert(0, %r)\n"
            "from symbolic_models import symbolic_chain\n"
            "t0 = time.perf_counter(); m = symbolic_chain(%d); t1 = time.perf_counter()\n"
            "m.compiled_ipar(); print(t1 - t0, time.perf_counter() - t1)"
            % (os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"), n_links))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYINT_MODEL_CACHE": cache})
    return tuple(float(x) for x in out.stdout.split()[-2:])


def section_symbolic(args):
    import tempfile
    import xarray as xr
    from pyint.models import Snakeboard
    from symbolic_models import symbolic_chain, symbolic_snakeboard
    ga = GeneralizedAlpha(rho_inf=RHO)
    rows = []
    print("SymbolicModel (compiled) vs the built-in twin vs the same model through the Python callback: "
          "generalized-alpha steps/s, h = 1e-3, T = 10 (snakeboard T = 1)")
    print(f"{'model':>12}{'built-in':>11}{'compiled':>11}{'callback':>10}{'comp/blt':>10}{'comp/cb':>9}")
    cases = [(f"chain {nl}", PendulumChain(nl), symbolic_chain(nl), 10000) for nl in (2, 8, 32)]
    # the thrust-driven snakeboard is well posed to t ~ 1.2 s only: there trajectories computed with
    # roundoff-level differences (built-in, compiled, callback) part by O(1) and Newton fails near t = 4
    cases.append(("snakeboard", Snakeboard(), symbolic_snakeboard(), 1000))
    for label, ref, sym, ns in cases:
        q0, v0 = ref.initial_state()
        ns = ns // 10 if args.quick else ns
        for backend in ("fortran", "callback"):  # compile (or load) and lambdify outside the timing
            ga.integrate(sym, q0, v0, 10 * H, H, backend=backend)
        wb, _ = best(lambda: ga.integrate(ref, q0, v0, ns * H, H, every=ns), args.repeats)
        wc, _ = best(lambda: ga.integrate(sym, q0, v0, ns * H, H, every=ns), args.repeats)
        nsmall = max(ns // 50, 20)
        wcb, _ = best(lambda: ga.integrate(sym, q0, v0, nsmall * H, H, every=nsmall, backend="callback"), 1)
        row = dict(model=label, builtin=ns / wb, compiled=ns / wc, callback=nsmall / wcb)
        rows.append(row)
        print(f"{label:>12}{row['builtin']:>11.0f}{row['compiled']:>11.0f}{row['callback']:>10.0f}"
              f"{row['compiled'] / row['builtin']:>10.2f}{row['compiled'] / row['callback']:>9.0f}", flush=True)
    with tempfile.TemporaryDirectory() as cache:
        write_first, first = _compile_time(8, cache)
        runs = [_compile_time(8, cache) for _ in range(args.repeats)]
        write_cached, cached = min(r[0] for r in runs), min(r[1] for r in runs)
    print(f"8-link chain, fresh process: SymbolicModel(...) {write_first:.2f} s, then first compile "
          f"(derivation, code generation, gfortran) {first:.2f} s; cached: SymbolicModel(...) {write_cached:.2f} s, "
          f"load {cached:.3f} s")
    impl = ["builtin", "compiled", "callback"]
    ds = xr.Dataset(
        {"steps_per_second": (("case", "path"), [[r[k] for k in impl] for r in rows],
                              {"units": "1/s", "long_name": "generalized-alpha steps/s"}),
         "model": ("case", [r["model"] for r in rows], {"long_name": "model"}),
         "first_compile_seconds": ((), first, {"units": "s", "long_name": "8-link chain: first compile"}),
         "model_setup_seconds": ((), write_cached, {"units": "s", "long_name": "8-link chain: SymbolicModel(...)"}),
         "cached_load_seconds": ((), cached, {"units": "s", "long_name": "8-link chain: cached load"})},
        coords={"case": ("case", np.arange(len(rows)), {"long_name": "case"}),
                "path": ("path", impl, {"long_name": "model evaluation path"})})
    write(ds, "symbolic")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps (smoke run)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", nargs="+", choices=SECTIONS, help="run only these sections")
    args = ap.parse_args(argv)
    for name in args.only or SECTIONS:
        globals()[f"section_{name}"](args)


if __name__ == "__main__":
    main()
