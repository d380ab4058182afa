"""pyint benchmarks, one command: ./dev.sh bench  (bench/run.py [--quick] [--only SECTION ...]).

Sections (each prints a table and writes bench/results/<section>.nc; figures
are reported, never asserted: this is a benchmark, not a test):

chain     steps/s and CPU time of pyint's generalized-alpha on the planar
          N-link chain, N = 2, 8, 32, 128, 512, 1024, h = 1e-3, T = 10 (fewer
          steps for N >= 512), beside Exudyn 1.13.6's generalized-alpha with its
          dense and sparse solvers; the fitted exponent of pyint's cost per
          step against N (32..1024).  pyint's rate counts the whole call
          (validation, start, kernel, residuals); "kernel" counts the Fortran
          call only (Result.cpu_time).  Exudyn's counts SolveDynamic only.
          Both in CPU time (time.process_time; the machine may be shared).
paths     the same chain through the other pyint paths: the Fortran kernel
          with the model in Python (callback: the items of one evaluation
          point in one Python call; lean: the same with items written for
          the callback, bench/lean_chain.py, what the path itself costs;
          per item: Model.callback_bundle = False, one Python call per item);
          Python callbacks per step.
solvers   the Newton-matrix solvers (dense / banded / sparse KLU) with and
          without Jacobian reuse, kernel steps/s.
wp        work-precision on the 2-link chain (problem chain2, T = 1): final
          error against the tight reference against CPU time, for every pyint
          method that handles holonomic constraints, Exudyn, and IDA on the
          GGL form (when pyint.reference is importable); the time each needs
          for errors 1e-4 and 1e-6 (log-log interpolation).  Also drawn to
          bench/results/wp.png from the NetCDF file.
adaptive  issue 18's work-precision: adaptive generalized-alpha (rtol sweep)
          against the fixed step (h sweep) and IDA on the dummy-derivative form,
          on stiff_fast, on the snakeboard over T = 1.2 (up to its singular
          configuration at t = 1.2534, past which round-off decides the motion:
          printed first) and on a problem with bursts (the magnet pendulum of
          pyint/models/symbolic_examples.py, error the maximum over 64 samples); the time each needs for errors 1e-4
          and 1e-6 and their ratios; bench/results/adaptive_*.png.
batch     batched trajectories (integrate_batch) with 1 and 2 OpenMP threads
          against one-by-one integrate calls: trajectories per second.
versus    side by side, interleaved in one run: this build's generalized-alpha
          on the chain (N = 2, 32, 128, 512, 1024; whole call) against
          another build of pyint (--baseline PYTHON: the python of a venv that
          holds it, e.g. a checkout of ca04593) and Exudyn (dense at N = 2,
          sparse at N >= 128).  Each contender runs once per round, rounds
          rotate the order; reported: best of the rounds, the ratios of issue
          16 (pyint / Exudyn) for both builds with their spread over rounds,
          and the whole call's log-log slope N = 32..1024.  Not part of the
          default sections (it needs --baseline).
methods   every registered method at h = 1e-3, default options, on the chains N = 2, 8, 128, the
          natural-coordinate IFToMM A02 (5 bars, n = 30, m = 29) and the snakeboard: CPU time per
          step and its ratio to generalized-alpha on the same model ("-" with the reason where a
          method cannot run a model); then every method with rtol on stiff_fast and the magnet
          pendulum: CPU time per accepted step against the same method's fixed step at the mean h.
          --steady: the steady state instead, 1000 steps timed with the output only at the end
          (results/methods_steady.nc, no variable-step rows); --models LABEL ...: only those models
          (./dev.sh bench --only methods --steady --models snakeboard).
versus_iftomm  the IFToMM benchmarks A02 (N = 2, 4) and A04 (Bricard) of the study
          iftomm_benchmarks: Exudyn's generalized-alpha (SolveDynamic; bench/exudyn_iftomm.py)
          beside pyint's (whole integrate call) and pyint's RK4 on the index-1 form, plain
          and projected after every step, interleaved in one run over a sweep of h: the
          benchmark error against the study's reference and the CPU time of each run; at
          equal accuracy, the CPU time of the cheapest run within the benchmark's tolerance
          1e-3 (and log-log interpolated at 1e-3), and the ratios Exudyn / pyint for the
          same method and for pyint's cheapest (issue 26: >= 3), summed up in one acceptance
          table (acceptance_ratio; --quick: the study's short T, else its full T).  Run only when named.
symbolic  user models as SymbolicModels (pyint/models/symbolic_examples.py): generalized-
          alpha steps/s of the compiled chain (N = 2, 8, 32) and snakeboard
          beside their built-in twins and the same model through the Python
          callback; the 8-link chain's and SymPy's four-bar linkage's (through
          SymbolicModel.from_system) first compile and cached load, each in
          a fresh process (the model's construction timed apart from the compile/load).
overhead  the whole call of short runs (generalized-alpha and RK4 on the 3-link chain: 10 fixed
          steps, and rtol = 1e-6 with 11 outputs at t_eval): CPU time of one integrate call, what a
          run costs beyond its steps; run with another build's python for the side by side.
study_file  issue 28: peak RSS and time of writing a study's file from its case store of 10^4,
          10^5, 10^6 cases (10^6 left out with --quick), by blocks against the in-memory combine
          of 9a3a956 (bench/study_file.py, which says how the store is fabricated).  Run only
          when named.

Exudyn is installed by dev.sh into build/bench-deps only (never a pyint dependency).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pyint  # noqa: E402
import pyint.methods  # noqa: E402,F401  (registers every method)
from pyint.methods.genalpha import GeneralizedAlpha  # noqa: E402
from pyint.errors import IntegrationError  # noqa: E402
from pyint.integrator import METHODS  # noqa: E402
from pyint.models import PendulumChain  # noqa: E402
from pyint.problems import PROBLEMS  # noqa: E402
from pyint.models.structured import sparse_solver_available  # noqa: E402

H = 1e-3
RHO = 0.9
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
SECTIONS = ("chain", "paths", "solvers", "wp", "adaptive", "batch", "symbolic", "methods", "overhead")
EXTRA_SECTIONS = ("versus", "versus_iftomm", "study_file")   # run only when named with --only


def exudyn_version():
    try:
        import exudyn
        from exudyn_chain import exudyn_chain  # noqa: F401
        return exudyn.__version__
    except ImportError:
        return None


def best(fn, repeats, clock=time.perf_counter):
    """(best time by clock, wall by default, last return value) over `repeats` calls of fn()."""
    tbest, out = np.inf, None
    for _ in range(repeats):
        t0 = clock()
        out = fn()
        tbest = min(tbest, clock() - t0)
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


def section_study_file(args):
    import subprocess
    sizes = ["10000", "100000"] + ([] if args.quick else ["1000000"])
    subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "study_file.py"),
                    "--sizes", *sizes], check=True)


def section_chain(args):
    import xarray as xr
    exu = exudyn_version()
    if exu:
        from exudyn_chain import exudyn_chain
    ga = GeneralizedAlpha(rho_inf=RHO)
    rows = []
    # CPU time for both (time.process_time; Exudyn runs one thread): on a shared machine a wall clock
    # counts the other processes' time slices into a run of milliseconds (the 2-link chain's whole
    # call: 0.8 ms CPU, 1.5 ms wall at load 4 on 2 cores), into both contenders unequally
    print(f"generalized-alpha on the N-link chain, h = {H:g}, rho_inf = {RHO}; steps/s of CPU time; "
          f"Exudyn {exu or 'not installed'}")
    hdr = (f"{'N':>5}{'steps':>7}{'pyint':>10}{'kernel':>10}{'wall s':>8}{'solver':>8}{'exu dense':>10}"
           f"{'exu sparse':>11}{'/dense':>8}{'/sparse':>8}")
    print(hdr)
    for nl, (ns, nd, nsp) in chain_cases(args.quick).items():
        m = PendulumChain(nl)
        q0, v0 = m.initial_state()
        reps = (2 * args.repeats if nl <= 8 else args.repeats) if nl <= 128 else 1  # short runs: more repeats vs noise
        wall, r = best(lambda: ga.integrate(m, q0, v0, ns * H, H, every=ns), reps, clock=time.process_time)
        row = dict(N=nl, steps=ns, pyint=ns / wall, kernel=ns / r.cpu_time, wall=wall,
                   solver=r.stats["linear_solver"], exu_dense=np.nan, exu_sparse=np.nan,
                   exu_dense_steps=nd, exu_sparse_steps=nsp)
        if exu and nd:
            row["exu_dense"] = max(exudyn_chain(nl, H, nd * H, rho_inf=RHO, clock=time.process_time)[0]
                                   for _ in range(reps if nd >= 2000 else 1))
        if exu and nsp:
            row["exu_sparse"] = max(exudyn_chain(nl, H, nsp * H, rho_inf=RHO, sparse=True, clock=time.process_time)[0]
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
                                    {"units": "1/s", "long_name": "pyint generalized-alpha steps/s (whole call, CPU time)"}),
         "pyint_kernel_steps_per_second": ("N", [r["kernel"] for r in rows],
                                           {"units": "1/s", "long_name": "pyint steps/s (Fortran call, CPU time)"}),
         "pyint_wall_time": ("N", [r["wall"] for r in rows], {"units": "s", "long_name": "pyint whole call, CPU time"}),
         "pyint_steps": ("N", [r["steps"] for r in rows], {"units": "1", "long_name": "pyint steps timed"}),
         "exudyn_dense_steps_per_second": ("N", [r["exu_dense"] for r in rows],
                                           {"units": "1/s", "long_name": "Exudyn generalized-alpha, dense solver (CPU time)"}),
         "exudyn_sparse_steps_per_second": ("N", [r["exu_sparse"] for r in rows],
                                            {"units": "1/s", "long_name": "Exudyn generalized-alpha, sparse solver (CPU time)"}),
         "exudyn_dense_steps": ("N", [r["exu_dense_steps"] for r in rows], {"units": "1", "long_name": "steps timed"}),
         "exudyn_sparse_steps": ("N", [r["exu_sparse_steps"] for r in rows], {"units": "1", "long_name": "steps timed"}),
         "linear_solver": ("N", [r["solver"] for r in rows], {"long_name": "solver picked by linear_solver='auto'"}),
         "cost_exponent": ((), expo, {"units": "1", "long_name": "fitted exponent of kernel cost per step vs N, N>=32"}),
         "cost_exponent_whole_call": ((), expo_wall, {"units": "1", "long_name": "same, whole call"})},
        coords={"N": ("N", [r["N"] for r in rows], {"units": "1", "long_name": "number of links"})})
    write(ds, "chain")


# --- side by side: this build, another build of pyint, Exudyn -----------------------
class Worker:
    """A chain_worker.py process: times pyint's whole integrate call in its own Python."""

    def __init__(self, python):
        import json
        import subprocess
        self.json = json
        here = os.path.dirname(os.path.abspath(__file__))
        # cwd = bench/: the source tree's pyint/ never shadows the worker's installed pyint
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        # one BLAS thread: OpenBLAS's idle server threads otherwise spin beside the timed call
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        self.proc = subprocess.Popen([python, os.path.join(here, "chain_worker.py")], cwd=here, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.pyint = json.loads(self.proc.stdout.readline())["pyint"]

    def time(self, n_links, steps, reps=1):
        self.proc.stdin.write(self.json.dumps({"n_links": n_links, "steps": steps, "reps": reps}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"benchmark worker ({self.pyint}) died")
        return self.json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def loglog_slope(ns, times):
    return float(np.polyfit(np.log(ns), np.log(times), 1)[0])


def section_versus(args):
    import xarray as xr
    if not args.baseline:
        raise SystemExit("versus needs --baseline PYTHON (the python of a venv holding the other pyint build)")
    exu = exudyn_version()
    if exu:
        from exudyn_chain import exudyn_chain
    sizes = [2, 32, 128, 512, 1024]
    steps = {n: c for n, c in chain_cases(args.quick).items() if n in sizes}
    inner = {n: (2 * args.repeats if n <= 8 else 1) for n in sizes}   # short calls: best of several per round
    exu_runs = {(2, "dense"), (2, "sparse"), (128, "sparse"), (512, "sparse"), (1024, "sparse")} if exu else set()
    workers = {"pyint": Worker(sys.executable), "baseline": Worker(args.baseline)}
    for w in workers.values():   # first calls (imports, model set-up) outside the timing
        for n in sizes:
            w.time(n, 10)
    contenders = list(workers) + sorted(f"exudyn_{s}" for s in {s for _, s in exu_runs})
    rounds = args.repeats
    rate = np.full((len(contenders), len(sizes), rounds), np.nan)   # steps/s of each call
    kernel = np.full((len(workers), len(sizes), rounds), np.nan)    # pyint's Fortran call, CPU time
    print(f"side by side, {rounds} interleaved rounds: this build ({workers['pyint'].pyint}) vs baseline "
          f"({workers['baseline'].pyint}) vs Exudyn {exu or 'not installed'}; generalized-alpha on the "
          f"N-link chain, h = {H:g}, rho_inf = {RHO}; pyint: whole integrate call", flush=True)
    try:
        for r in range(rounds):
            order = contenders[r % len(contenders):] + contenders[:r % len(contenders)]
            for j, n in enumerate(sizes):
                ns, nd, nsp = steps[n]
                for name in order:
                    c = contenders.index(name)
                    if name in workers:
                        out = workers[name].time(n, ns, inner[n])
                        rate[c, j, r] = ns / out["wall"]
                        kernel[list(workers).index(name), j, r] = ns / out["cpu"]
                    elif (n, name[7:]) in exu_runs:
                        nx = nd if name == "exudyn_dense" else nsp
                        rate[c, j, r] = max(exudyn_chain(n, H, nx * H, rho_inf=RHO, sparse=name == "exudyn_sparse")[0]
                                            for _ in range(inner[n]))
            print(f"round {r + 1}/{rounds} done", flush=True)
    finally:
        for w in workers.values():
            w.close()
    warnings.filterwarnings("ignore", "All-NaN slice", RuntimeWarning)   # sizes a contender does not run
    best_rate = np.nanmax(rate, axis=2)
    print(f"{'N':>5}" + "".join(f"{c:>16}" for c in contenders) + "   (best steps/s; min..max over rounds)")
    for j, n in enumerate(sizes):
        print(f"{n:>5}" + "".join(f"{fmt(best_rate[c, j]):>16}" for c in range(len(contenders))))
        print(f"{'':>5}" + "".join(f"{fmt(np.nanmin(rate[c, j])) + '..' + fmt(np.nanmax(rate[c, j])):>16}"
                                   for c in range(len(contenders))))
    ratios = {}
    for n, peer in ((2, "exudyn_dense"), (2, "exudyn_sparse"), (128, "exudyn_sparse"), (512, "exudyn_sparse"),
                    (1024, "exudyn_sparse")):
        if peer not in contenders:
            continue
        j, p = sizes.index(n), contenders.index(peer)
        for build in workers:
            b = contenders.index(build)
            per_round = rate[b, j] / rate[p, j]
            ratios[(n, peer, build)] = (best_rate[b, j] / best_rate[p, j], np.nanmin(per_round), np.nanmax(per_round))
        new, old = ratios[(n, peer, "pyint")], ratios[(n, peer, "baseline")]
        print(f"N = {n:>4}: pyint / {peer}: this build {new[0]:.1f} (rounds {new[1]:.1f}..{new[2]:.1f}), "
              f"baseline {old[0]:.1f} (rounds {old[1]:.1f}..{old[2]:.1f}); this / baseline {new[0] / old[0]:.2f}")
    best_kernel = np.nanmax(kernel, axis=2)
    print("this build / baseline, steps/s of the Fortran call (CPU time, less sensitive to a loaded machine "
          "than the wall time): " + ", ".join(f"N = {n}: {best_kernel[0, j] / best_kernel[1, j]:.2f}"
                                               for j, n in enumerate(sizes)))
    sel = [j for j, n in enumerate(sizes) if n >= 32]
    nsel = np.array([sizes[j] for j in sel], dtype=float)
    for build in workers:
        b = contenders.index(build)
        per_round = [loglog_slope(nsel, 1 / rate[b, sel, r]) for r in range(rounds)]
        print(f"whole call per step ~ N^{loglog_slope(nsel, 1 / best_rate[b, sel]):.2f} ({build}, N = 32..1024, "
              f"best of rounds; rounds {min(per_round):.2f}..{max(per_round):.2f})")
    ds = xr.Dataset(
        {"steps_per_second": (("contender", "N", "round"), rate,
                              {"units": "1/s", "long_name": "steps/s (pyint: whole integrate call; Exudyn: "
                                                            "SolveDynamic)"}),
         "kernel_steps_per_second": (("build", "N", "round"), kernel,
                                     {"units": "1/s", "long_name": "pyint steps/s of the Fortran call (CPU time)"}),
         "steps": (("N", "kind"), [list(steps[n]) for n in sizes], {"units": "1", "long_name": "steps per call"})},
        coords={"contender": ("contender", contenders, {"long_name": "integrator build"}),
                "N": ("N", sizes, {"units": "1", "long_name": "number of links"}),
                "round": ("round", np.arange(rounds), {"long_name": "interleaved round"}),
                "build": ("build", list(workers), {"long_name": "pyint build"}),
                "kind": ("kind", ["pyint", "exudyn_dense", "exudyn_sparse"], {"long_name": "whose step count"})},
        attrs={"pyint": workers["pyint"].pyint, "baseline": workers["baseline"].pyint})
    write(ds, "versus")


# --- the IFToMM benchmarks side by side with Exudyn ----------------------------------------
#: benchmark of the study -> (final time, quick final time)
IFTOMM_CASES = {"A02_N2": (20.0, 4.0), "A02_N4": (10.0, 2.0), "A04": (5.0, 1.0)}
IFTOMM_STEPS = (5e-2, 2.5e-2, 1e-2, 5e-3, 2.5e-3, 2e-3, 1.25e-3, 1e-3, 5e-4)   # each divides the output step 0.05 s
#: the contenders: Exudyn's generalized-alpha, pyint's (the same method), and pyint's cheapest ones
#: elsewhere: RK4 on the index-1 form (stops at A02's singular positions) and with the projection
#: onto the constraints after every step (passes them)
IFTOMM_CONTENDERS = ("exudyn_genalpha", "pyint_genalpha", "pyint_rk4_index1", "pyint_rk4_index1_steps")


def section_versus_iftomm(args):
    """pyint and Exudyn on A02 and A04 over a sweep of h, interleaved in one run.
    Error: the study's benchmark error (reported point, position and velocity, at the output steps)
    against its reference (A02: the reduced 1-DOF equation; A04: the non-redundant twin by DOP853).
    Cost: CPU time (time.process_time: the machine may be shared) of pyint's whole integrate call
    and of Exudyn's SolveDynamic (its model assembly not timed), best of the rounds.  Equal accuracy:
    each contender's cheapest run with error <= the benchmark's 1e-3, and the log-log interpolated
    time at error 1e-3 (between the runs around it); the ratios Exudyn / pyint for the same method
    (generalized-alpha) and for pyint's cheapest contender."""
    import xarray as xr
    from pyint.studies import iftomm_benchmarks as S
    exu = exudyn_version()
    if not exu:
        raise SystemExit("versus_iftomm needs Exudyn (./dev.sh bench installs it into build/bench-deps)")
    from exudyn_iftomm import exudyn_a02, exudyn_bricard
    names = list(IFTOMM_CASES)
    hs = IFTOMM_STEPS[:-1] if args.quick else IFTOMM_STEPS
    contenders = list(IFTOMM_CONTENDERS)
    methods = {"pyint_genalpha": GeneralizedAlpha(rho_inf=RHO), "pyint_rk4_index1": METHODS["rk4_index1"](),
               "pyint_rk4_index1_steps": METHODS["rk4_index1"](projection="steps")}
    rounds = args.repeats
    err = np.full((len(names), len(contenders), len(hs)), np.nan)
    cpu = np.full((len(names), len(contenders), len(hs), rounds), np.nan)
    newton = np.full((len(names), len(hs)), np.nan)               # pyint generalized-alpha's iterations per step
    t_ends = [IFTOMM_CASES[b][1] if args.quick else IFTOMM_CASES[b][0] for b in names]
    print(f"IFToMM A02 / A04 side by side, {rounds} interleaved rounds: pyint {pyint.__version__} (whole call) vs "
          f"Exudyn {exu} generalized-alpha (SolveDynamic), rho_inf = {RHO}; CPU time", flush=True)

    def run(b, who, h, t_end):
        kind, n, dt, _ = S.BENCHMARKS[b]
        t_ref, p_ref, v_ref, _ = S.reference(b, t_end)
        nit = np.nan
        c0 = time.process_time()
        if who in methods:
            model, q0, v0 = S.benchmark_model(b)
            try:
                r = methods[who].integrate(model, q0, v0, t_end, h, every=int(round(dt / h)))
            except IntegrationError:                           # stopped (a singular position, Newton)
                return time.process_time() - c0, np.nan, nit
            c = time.process_time() - c0
            t, (p, v) = r.t, S.reported(b, model, r.q, r.v)
            if "newton_iterations" in r.stats:
                nit = r.stats["newton_iterations"] / r.stats["steps"]
        else:
            try:
                c, _, t, p, v = (exudyn_a02(n, h, t_end, dt, RHO) if kind == "A02"
                                 else exudyn_bricard(h, t_end, dt, RHO))
            except Exception:                                  # SolveDynamic did not converge
                return time.process_time() - c0, np.nan, nit
        if len(t) != len(t_ref) or not np.allclose(t, t_ref, rtol=0, atol=1e-9 * t_end):
            return c, np.nan, nit                              # stopped early: no error at the output steps
        return c, S.benchmark_error(np.c_[p, v], np.c_[p_ref, v_ref]), nit

    for i, b in enumerate(names):                              # references and first calls outside the timing
        S.reference(b, t_ends[i])
        for who in methods:
            run(b, who, hs[0], 0.1)
    for r in range(rounds):
        order = contenders[r % len(contenders):] + contenders[:r % len(contenders)]
        for i, b in enumerate(names):
            for k, h in enumerate(hs):
                for who in order:
                    c = contenders.index(who)
                    cpu[i, c, k, r], err[i, c, k], nit = run(b, who, h, t_ends[i])
                    if who == "pyint_genalpha":
                        newton[i, k] = nit
        print(f"round {r + 1}/{rounds} done", flush=True)
    best_cpu = np.min(cpu, axis=3)
    tol = S.TOL_HIGH
    at_tol = np.full((len(names), len(contenders)), np.nan)      # cheapest run within the tolerance
    h_at_tol = np.full((len(names), len(contenders)), np.nan)
    interp = np.full((len(names), len(contenders)), np.nan)      # log-log interpolated at error = tol
    accept = np.full((len(names), 4), np.nan)     # Exudyn / pyint: genalpha, interpolated, cheapest, interpolated
    short = {"exudyn_genalpha": "exu ga", "pyint_genalpha": "pyint ga", "pyint_rk4_index1": "pyint rk4",
             "pyint_rk4_index1_steps": "rk4 steps"}
    for i, b in enumerate(names):
        print(f"{b} over {t_ends[i]:g} s: benchmark error, CPU time [s] (best of {rounds} rounds); it/step: pyint "
              "generalized-alpha's Newton iterations per step")
        print(f"{'h':>9}" + "".join(f"{short[c] + ' err':>16}{'cpu':>8}" for c in contenders) + f"{'it/step':>8}")
        for k, h in enumerate(hs):
            cells = "".join(f"{err[i, c, k]:>16.2e}{best_cpu[i, c, k]:>8.3f}" for c in range(len(contenders)))
            print(f"{h:>9.2e}{cells}{newton[i, k]:>8.2f}")
        for c in range(len(contenders)):
            ok = np.where(err[i, c] <= tol)[0]
            if len(ok):
                k = ok[np.argmin(best_cpu[i, c, ok])]
                at_tol[i, c], h_at_tol[i, c] = best_cpu[i, c, k], hs[k]
            e, t_ = err[i, c], best_cpu[i, c]
            for k in range(len(hs) - 1):                         # errors fall as h falls: first bracket of tol
                if np.isfinite(e[k]) and np.isfinite(e[k + 1]) and e[k] > tol >= e[k + 1]:
                    w = np.log(tol / e[k]) / np.log(e[k + 1] / e[k])
                    interp[i, c] = float(np.exp(np.log(t_[k]) + w * np.log(t_[k + 1] / t_[k])))
                    break
        print(f"at error <= {tol:g} (cheapest passing run; interpolated at {tol:g}):")
        ex = contenders.index("exudyn_genalpha")
        for c, who in enumerate(contenders):
            ratio = "" if c == ex else (f"; Exudyn / this = {fmt(at_tol[i, ex] / at_tol[i, c], '.2f')} "
                                        f"(interpolated {fmt(interp[i, ex] / interp[i, c], '.2f')})")
            print(f"  {who:>24}: {fmt(at_tol[i, c], '.3f')} s at h = {h_at_tol[i, c]:.3g} "
                  f"({fmt(interp[i, c], '.3f')} s){ratio}")
        pyint_best = np.nanmin(at_tol[i, 1:]) if np.any(np.isfinite(at_tol[i, 1:])) else np.nan
        best_interp = np.nanmin(interp[i, 1:]) if np.any(np.isfinite(interp[i, 1:])) else np.nan
        accept[i] = (at_tol[i, ex] / at_tol[i, 1], interp[i, ex] / interp[i, 1], at_tol[i, ex] / pyint_best,
                     interp[i, ex] / best_interp)
        print(f"  issue 26 (pyint >= 3x Exudyn): same method {fmt(accept[i, 0], '.2f')}, "
              f"pyint's cheapest {fmt(accept[i, 2], '.2f')}\n", flush=True)
    print(f"issue 26 acceptance, Exudyn / pyint CPU time at error <= {tol:g} (target >= 3; cheapest passing run, "
          f"log-log interpolated at {tol:g}):")
    print(f"{'benchmark':>10}{'T s':>6}{'genalpha':>10}{'interp':>8}{'cheapest':>10}{'interp':>8}  met")
    for i, b in enumerate(names):
        met = "yes" if accept[i, 0] >= 3 else ("cheapest only" if accept[i, 2] >= 3 else "no")
        print(f"{b:>10}{t_ends[i]:>6g}{fmt(accept[i, 0], '.2f'):>10}{fmt(accept[i, 1], '.2f'):>8}"
              f"{fmt(accept[i, 2], '.2f'):>10}{fmt(accept[i, 3], '.2f'):>8}  {met}")
    print(flush=True)
    ds = xr.Dataset(
        {"error": (("benchmark", "contender", "h"), err,
                   {"units": "1", "long_name": "benchmark error of the reported point (study iftomm_benchmarks)"}),
         "cpu_time": (("benchmark", "contender", "h", "round"), cpu,
                      {"units": "s", "long_name": "CPU time (pyint: whole integrate call; Exudyn: SolveDynamic)"}),
         "pyint_newton_per_step": (("benchmark", "h"), newton,
                                   {"units": "1", "long_name": "pyint generalized-alpha's Newton iterations per step"}),
         "cpu_at_tolerance": (("benchmark", "contender"), at_tol,
                              {"units": "s", "long_name": f"CPU time of the cheapest run with error <= {tol:g}"}),
         "h_at_tolerance": (("benchmark", "contender"), h_at_tol, {"units": "s", "long_name": "its step size"}),
         "cpu_interpolated_at_tolerance": (("benchmark", "contender"), interp,
                                           {"units": "s", "long_name": f"CPU time log-log interpolated at "
                                                                       f"error {tol:g}"}),
         "acceptance_ratio": (("benchmark", "ratio"), accept,
                              {"units": "1", "long_name": f"Exudyn / pyint CPU time at error <= {tol:g} (issue 26: >= 3)"}),
         "t_end": ("benchmark", t_ends, {"units": "s", "long_name": "final time"})},
        coords={"benchmark": ("benchmark", names, {"long_name": "IFToMM benchmark (study iftomm_benchmarks)"}),
                "contender": ("contender", contenders, {"long_name": "integrator"}),
                "h": ("h", list(hs), {"units": "s", "long_name": "step size"}),
                "round": ("round", np.arange(rounds), {"long_name": "interleaved round"}),
                "ratio": ("ratio", ["genalpha", "genalpha_interpolated", "cheapest", "cheapest_interpolated"],
                          {"long_name": "pyint contender of the ratio (cheapest passing run, or interpolated)"})},
        attrs={"tolerance": tol, "pyint": pyint.__version__})
    write(ds, "versus_iftomm")


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
          "written for the callback, bench/lean_chain.py; per item: one call per item)")
    print(f"{'N':>5}{'fortran':>11}{'callback':>10}{'lean':>9}{'per item':>10}{'cb/step':>9}"
          f"{'F/cb':>7}{'F/lean':>8}{'F/item':>8}")
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
        row = dict(N=nl, fortran=ns / wall, callback=ncb / wcb, callback_lean=ncb / wln,
                   callback_per_item=nsmall / wpi,
                   callbacks_per_step=callbacks_per_step(m, q0, v0, nsmall, ga))
        rows.append(row)
        print(f"{nl:>5}{row['fortran']:>11.0f}{row['callback']:>10.0f}{row['callback_lean']:>9.0f}"
              f"{row['callback_per_item']:>10.0f}{row['callbacks_per_step']:>9.2f}"
              f"{row['fortran'] / row['callback']:>7.0f}{row['fortran'] / row['callback_lean']:>8.0f}"
              f"{row['fortran'] / row['callback_per_item']:>8.0f}", flush=True)
    r2 = rows[0]
    print(f"acceptance: N = 2: built-in / callback = {r2['fortran'] / r2['callback']:.1f} "
          f"(lean items: {r2['fortran'] / r2['callback_lean']:.1f}; target <= 20)")
    impl = ["fortran", "callback", "callback_lean", "callback_per_item"]
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
    # the stabilized index-2 variant (every variable-step run with holonomic rows): its dense Newton
    # matrix (linear_solver="dense") against the structured form "auto" takes above 60 unknowns
    print("adaptive generalized-alpha (stabilized index 2) on the chain, rtol 1e-6, t in [0, 0.2]: "
          "wall ms of the call per accepted step (accepted steps)")
    print(f"{'N':>5}{'dense':>16}{'auto':>16}")
    for nl in (32, 64) if args.quick else (32, 64, 128):
        m = PendulumChain(nl)
        q0, v0 = m.initial_state()
        cells = []
        for s in ("dense", "auto"):
            wall, r = best(lambda: GeneralizedAlpha(rho_inf=RHO, linear_solver=s).integrate(m, q0, v0, 0.2, rtol=1e-6),
                           1 if s == "dense" else 2)
            cells.append(f"{1e3 * wall / r.stats['accepted']:.3f} ({r.stats['accepted']})")
        print(f"{nl:>5}" + "".join(f"{c:>16}" for c in cells), flush=True)


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


def ida_runner(form="ggl", times=None):
    """IDA on the named form of pyint.reference, or None when it is not importable: run(model, q0,
    v0, t_end, rtol) gives q at t_end, or at times[1:] when `times` (from 0) are given.
    Adapt here if pyint.reference's signature changes."""
    try:
        from pyint import reference
        reference.integrate  # noqa: B018
    except (ImportError, AttributeError):
        return None

    def run(model, q0, v0, t_end, rtol):
        r = reference.integrate(model, [0.0, t_end] if times is None else times, q0, v0, form=form, rtol=rtol,
                                atol=rtol)
        return r.q[-1] if times is None else r.q[1:]
    return run


def sweep(label, run, knobs, qref, repeats):
    """[(knob, max |q(T) - qref|, best wall time)] of run(knob) over knobs; a failed run is
    reported and left out (never hidden as a point)."""
    pts = []
    for k in knobs:
        try:
            wall, qf = best(lambda: run(k), repeats)
        except Exception as exc:  # noqa: BLE001  report, do not hide, go on
            print(f"{label} at {k:g} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
            continue
        pts.append((k, float(np.max(np.abs(qf - qref))), wall))
    return pts


def report_wp(name, T, curves, attrs, knob_name="step size h (rtol for IDA and adaptive runs)"):
    """Print the times at errors 1e-4 and 1e-6 of each curve, write <name>.nc and its figure;
    returns {label: (t(1e-4), t(1e-6))}."""
    import xarray as xr
    print(f"work-precision on {attrs['problem']} (T = {T}): wall time of the call")
    print(f"{'method':<42}{'t(err=1e-4) s':>15}{'t(err=1e-6) s':>15}{'smallest err':>14}")
    summary = {}
    for label, pts in curves.items():
        e = [p[1] for p in pts]
        t = [p[2] for p in pts]
        summary[label] = (time_at_error(e, t, 1e-4), time_at_error(e, t, 1e-6))
        print(f"{label:<42}{fmt(summary[label][0], '.2e'):>15}{fmt(summary[label][1], '.2e'):>15}"
              f"{min(e, default=np.nan):>14.1e}")
    labels = list(curves)
    npts = max((len(p) for p in curves.values()), default=0)
    arr = np.full((len(labels), npts, 3), np.nan)
    for i, lab in enumerate(labels):
        if curves[lab]:
            arr[i, :len(curves[lab])] = curves[lab]
    ds = xr.Dataset(
        {"knob": (("method", "run"), arr[:, :, 0], {"units": "s or 1", "long_name": knob_name}),
         "error": (("method", "run"), arr[:, :, 1], {"units": "m", "long_name": "max |q(T) - q_ref(T)|"}),
         "time": (("method", "run"), arr[:, :, 2], {"units": "s", "long_name": "wall time of the call"}),
         "time_at_1e-4": ("method", [summary[k][0] for k in labels], {"units": "s", "long_name": "time for error 1e-4"}),
         "time_at_1e-6": ("method", [summary[k][1] for k in labels], {"units": "s", "long_name": "time for error 1e-6"})},
        coords={"method": ("method", labels, {"long_name": "integrator"}),
                "run": ("run", np.arange(npts), {"long_name": "run index"})},
        attrs={"t_end": T, **attrs})
    plot_wp(write(ds, name))
    return summary


def section_wp(args):
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
            curves[label] = sweep(label, lambda h: meth.integrate(m, q0, v0, T, h, every=int(round(T / h))).q[-1],
                                  hs, qref, args.repeats)
    exu = exudyn_version()
    if exu:
        from exudyn_chain import exudyn_chain
        angles = [np.pi / 3, np.pi / 2]

        def run_exudyn(h):
            return exudyn_chain(2, h, T, rho_inf=RHO, angles=angles, mass=m.m, length=m.l, grav=m.grav)[1].ravel()
        curves[f"exudyn {exu} (SolveDynamic + assembly)"] = sweep("exudyn", run_exudyn, hs, qref, args.repeats)
    ida = ida_runner()
    if ida is not None:
        curves["IDA (GGL form)"] = sweep("IDA", lambda rtol: ida(m, q0, v0, T, rtol), 10.0 ** -np.arange(3, 12),
                                         qref, args.repeats)
    else:
        print("IDA: pyint.reference is not importable on this branch: no IDA curve")
    summary = report_wp("wp", T, curves, {"problem": prob.name, "reference": prob.source})
    pyint_best = [min((summary[k][i] for k in methods if np.isfinite(summary[k][i])), default=np.nan) for i in (0, 1)]
    for other in [k for k in curves if k.startswith("exudyn") or k.startswith("IDA")]:
        print(f"acceptance: best pyint method / {other}: "
              f"{pyint_best[0] / summary[other][0]:.2f} at 1e-4, {pyint_best[1] / summary[other][1]:.2f} at 1e-6")


#: issue 18's work-precision problems: (problem of pyint.problems, T).  The snakeboard over its violent
#: phase up to T = 1.2: at t = 1.2534 it passes its singular configuration (phi_b = phi_f, where the
#: nonholonomic Jacobian loses rank) and past it round-off decides the motion (snakeboard_sensitivity).
ADAPTIVE_CASES = (("stiff_fast", None), ("snakeboard", 1.2))
#: a problem with bursts (pyint/models/symbolic_examples.py: symbolic_magnet_pendulum): errors are the maximum
#: over these samples
MAGNET_T, MAGNET_SAMPLES = 3.0, 64


def magnet_case():
    """(name, model, q0, v0, T, sample times from 0, q_ref at them after 0, source, IDA's rtols) of the
    magnet pendulum (pyint/models/symbolic_examples.py: a SymbolicModel, its reference the angle ODE)."""
    from pyint.models.symbolic_examples import (magnet_pendulum_reference, magnet_pendulum_state,
                                                symbolic_magnet_pendulum)
    times = np.linspace(0.0, MAGNET_T, MAGNET_SAMPLES + 1)
    qref = magnet_pendulum_reference(times)[1:]
    print(f"magnet_pendulum: reference DOP853 rtol 1e-13 vs 1e-12: "
          f"{np.max(np.abs(magnet_pendulum_reference(times, 1e-12)[1:] - qref)):.1e}")
    # IDA's error here is ~1e3 rtol (1.2e-3 at rtol 1e-6, 1.2e-7 at 1e-10): its sweep goes to 1e-10
    return ("magnet_pendulum", symbolic_magnet_pendulum(), *magnet_pendulum_state(), MAGNET_T, times, qref,
            "angle ODE by DOP853, rtol = atol = 1e-13; error: max over 64 equally spaced samples",
            10.0 ** -np.arange(4, 11))


def snakeboard_sensitivity(T=2.0, k=18):
    """Why the snakeboard's work-precision stops at t = 1.2: fixed-step generalized-alpha (h = T/2^k)
    from theta0 and from theta0 + d (d = 1e-15, 1e-13, 1e-11, projected onto the constraints), their
    distance max |q - q'| before and after t = 1.2534, and the smallest singular value of A M^(-1/2)
    along the run (the nonholonomic Jacobian's rank loss at phi_b = phi_f)."""
    from pyint.methods.genalpha import GeneralizedAlpha as GA
    prob = PROBLEMS["snakeboard"]
    m = prob.model
    q0, v0 = prob.initial_state
    every = 2 ** k // 2048
    base = GA().integrate(m, q0, v0, T, T * 2.0 ** -k, every=every)
    marks = [np.searchsorted(base.t, x) for x in (1.0, 1.25, 1.256, 1.3, 2.0)]
    print(f"snakeboard, generalized-alpha h = T/2^{k}: max |q - q'| when theta0 is moved by d")
    for d in (1e-15, 1e-13, 1e-11):
        qp = q0.copy()
        qp[2] += d
        r = GA().integrate(m, qp, v0, T, T * 2.0 ** -k, every=every, project=True)
        dif = np.max(np.abs(r.q - base.q), axis=1)
        print(f"  d = {d:.0e}: " + "  ".join(f"t = {base.t[i]:.3f}: {dif[i]:.1e}" for i in marks))
    sig = []
    for t, q in zip(base.t, base.q):
        L = np.linalg.cholesky(m.mass(q))
        sig.append(np.linalg.svd(np.linalg.solve(L, m.nh_A(t, q).T), compute_uv=False).min())
    i = int(np.argmin(sig))
    print(f"  smallest singular value of A M^(-1/2): {sig[i]:.1e} at t = {base.t[i]:.4f} (phi_b - phi_f = "
          f"{base.q[i, 4] - base.q[i, 5]:.1e}); before t = 1.2 at least {min(s for s, t in zip(sig, base.t) if t < 1.2):.2f}")


def adaptive_supported(meth, m, q0, v0):
    """Does this pyint take rtol= (variable steps) for `meth`?"""
    try:
        meth.integrate(m, q0, v0, 1e-6, rtol=1e-3)
    except TypeError:
        return False
    return True


def section_adaptive(args):
    """Issue 18: adaptive generalized-alpha (rtol sweep) against the fixed step (h sweep) and
    IDA on the dummy-derivative form (rtol sweep), final error against a reference at T.
    stiff_fast: the problem's reference (DOP853, pyint.problems).  snakeboard over T = 1.2 (the
    violent phase up to its singular configuration, snakeboard_sensitivity): DOP853 does not get
    through it (it stops near t = 1) and IDA at rtol 1e-11 takes minutes, so the reference is
    fixed-step generalized-alpha at h = T / 2^20; its distance to h = T / 2^19 is printed: errors
    below it mean nothing.  magnet_pendulum (magnet_case): a problem with bursts, its error the
    maximum over 64 sample times."""
    from pyint.methods.genalpha import GeneralizedAlpha as GA
    snakeboard_sensitivity()
    cases = [adaptive_case(pname, T) for pname, T in ADAPTIVE_CASES] + [magnet_case()]
    for pname, m, q0, v0, T, times, qref, source, ida_rtols in cases:
        meth = GA()
        per = len(times) - 1   # samples after t = 0; the fixed steps are T / 2^k, k >= 6: every divides

        def fixed(h):
            return meth.integrate(m, q0, v0, T, h, every=int(round(T / h)) // per).q[1:]
        kmax = 14 if args.quick else 18
        hs = [T * 2.0 ** -k for k in range(6, kmax)]
        curves = {"genalpha, fixed h": sweep("genalpha fixed", fixed, hs, qref, args.repeats)}
        rtols = 10.0 ** -np.arange(3, 9 if args.quick else 10)
        if adaptive_supported(meth, m, q0, v0):
            # from rtol 1e-2: generalized-alpha's error is ~0.04 rtol on stiff_fast, a sweep from 1e-3
            # starts below 1e-4 and time_at_error would read the 1e-3 run's time (an upper bound)
            curves["genalpha, adaptive (rtol)"] = sweep("genalpha adaptive", lambda r: meth.integrate(
                m, q0, v0, T, rtol=r, atol=r, max_steps=2_000_000, t_eval=times[1:]).q, np.concatenate([[1e-2], rtols]),
                qref, args.repeats)
        else:
            print("adaptive generalized-alpha: integrate(..., rtol=) is not available on this branch")
        ida = ida_runner("dummy_derivative", times)
        if ida is not None:
            curves["IDA (dummy-derivative form)"] = sweep("IDA", lambda r: ida(m, q0, v0, T, r),
                                                          rtols[:5] if ida_rtols is None else ida_rtols, qref,
                                                          args.repeats)
        summary = report_wp(f"adaptive_{pname}", T, curves, {"problem": pname, "reference": source})
        ad = summary.get("genalpha, adaptive (rtol)")
        if ad:
            for other in ("genalpha, fixed h", "IDA (dummy-derivative form)"):
                if other in summary:
                    print(f"acceptance ({pname}): adaptive / {other}: {ad[0] / summary[other][0]:.2f} at 1e-4, "
                          f"{ad[1] / summary[other][1]:.2f} at 1e-6 (issue 18: <= 0.5 fixed, <= 0.2 IDA)")


def adaptive_case(pname, T):
    """(name, model, q0, v0, T, sample times [0, T], q_ref at T, source, None) of a problem of pyint.problems
    over [0, T] (T None: the problem's t_end and reference; else a fixed-step reference at T / 2^20)."""
    from pyint.methods.genalpha import GeneralizedAlpha as GA
    prob = PROBLEMS[pname]
    m = prob.model
    q0, v0 = prob.initial_state
    if T is None:
        return pname, m, q0, v0, prob.t_end, np.array([0.0, prob.t_end]), prob.reference[0][-1:], prob.source, None

    def fixed(h):
        return GA().integrate(m, q0, v0, T, h, every=int(round(T / h))).q[-1:]
    qref = fixed(T * 2.0 ** -20)
    print(f"{pname}: reference h = T/2^20 vs h = T/2^19: {np.max(np.abs(fixed(T * 2.0 ** -19) - qref)):.2e}")
    return (pname, m, q0, v0, T, np.array([0.0, T]), qref,
            "generalized-alpha (rho_inf = 0.9), fixed h = T / 2^20", None)


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
#: Models timed by _compile_time: the 8-link chain (pyint/models/symbolic_examples.py) and SymPy's four-bar linkage
#: through SymbolicModel.from_system (pyint/models/sympy_tutorials.py; SymPy's System built before the timing).
COMPILE_CASES = {
    "chain 8": ("from pyint.models.symbolic_examples import symbolic_chain", "m = symbolic_chain(8)"),
    "four-bar (from_system)": ("from pyint.models.sympy_tutorials import four_bar\n"
                               "from pyint.models import SymbolicModel\ns, p = four_bar()",
                               "m = SymbolicModel.from_system(s, params=p)"),
}


def _compile_time(case, cache):
    """(seconds to write the model, seconds to compile or load it) in a fresh process with sympy imported:
    SymbolicModel(...) from the user's expressions (or the bridge from SymPy's System), then compiled_ipar()
    (cache miss: derivation, code generation, gfortran; hit: the cache's index and dlopen)."""
    import subprocess
    setup, build = COMPILE_CASES[case]
    code = ("import time, sympy\n%s\n"
            "t0 = time.perf_counter(); %s; t1 = time.perf_counter()\n"
            "m.compiled_ipar(); print(t1 - t0, time.perf_counter() - t1)" % (setup, build))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYINT_MODEL_CACHE": cache})
    return tuple(float(x) for x in out.stdout.split()[-2:])


def section_symbolic(args):
    import tempfile
    import xarray as xr
    from pyint.models import Snakeboard
    from pyint.models.symbolic_examples import symbolic_chain, symbolic_snakeboard
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
    times = {}
    for case in COMPILE_CASES:
        with tempfile.TemporaryDirectory() as cache:
            write_first, first = _compile_time(case, cache)
            runs = [_compile_time(case, cache) for _ in range(args.repeats)]
            times[case] = (write_first, first, min(r[0] for r in runs), min(r[1] for r in runs))
        print(f"{case}, fresh process: model {write_first:.2f} s, then first compile (derivation, code "
              f"generation, gfortran) {first:.2f} s; cached: model {times[case][2]:.2f} s, load "
              f"{times[case][3]:.3f} s")
    _, first, write_cached, cached = times["chain 8"]
    _, bridge_first, bridge_write, bridge_cached = times["four-bar (from_system)"]
    impl = ["builtin", "compiled", "callback"]
    ds = xr.Dataset(
        {"steps_per_second": (("case", "path"), [[r[k] for k in impl] for r in rows],
                              {"units": "1/s", "long_name": "generalized-alpha steps/s"}),
         "model": ("case", [r["model"] for r in rows], {"long_name": "model"}),
         "first_compile_seconds": ((), first, {"units": "s", "long_name": "8-link chain: first compile"}),
         "model_setup_seconds": ((), write_cached, {"units": "s", "long_name": "8-link chain: SymbolicModel(...)"}),
         "cached_load_seconds": ((), cached, {"units": "s", "long_name": "8-link chain: cached load"}),
         "bridge_first_compile_seconds": ((), bridge_first, {"units": "s",
                                                             "long_name": "four-bar from_system: first compile"}),
         "bridge_setup_seconds": ((), bridge_write, {"units": "s",
                                                     "long_name": "four-bar: SymbolicModel.from_system(...)"}),
         "bridge_cached_load_seconds": ((), bridge_cached, {"units": "s",
                                                            "long_name": "four-bar from_system: cached load"})},
        coords={"case": ("case", np.arange(len(rows)), {"long_name": "case"}),
                "path": ("path", impl, {"long_name": "model evaluation path"})})
    write(ds, "symbolic")



# --- every method on the same models ----------------------------------------------------
#: the per-method table's models: (label, constructor of (model, q0, v0)); the natural-coordinate
#: mechanism is IFToMM A02 with two windows (5 bars: n = 30, m = 29) at its benchmark start
def _methods_models():
    from pyint.models.iftomm import n_four_bar, n_four_bar_state

    def chain(nl):
        def make():
            m = PendulumChain(nl)
            return (m, *m.initial_state())
        return make

    def a02():
        m = n_four_bar(2)
        return (m, *n_four_bar_state(m, 0.0, 1.0 / m.params["length"]))

    def snakeboard():
        prob = PROBLEMS["snakeboard"]
        return (prob.model, *prob.initial_state)
    return (("chain N=2", chain(2)), ("chain N=8", chain(8)), ("chain N=128", chain(128)),
            ("A02 n=30 m=29", a02), ("snakeboard", snakeboard))


def _method_cost(meth, m, q0, v0, steps, repeats, budget):
    """(CPU seconds per step, steps timed, "") of meth at h = H from (q0, v0), default options; a run that
    would take longer than `budget` seconds is shortened (its steps say so, never fewer than 3); a
    method that cannot run the model: (nan, 0, the reason, from the named error it raised)."""
    try:
        probe = meth.integrate(m, q0, v0, 3 * H, H, every=3)      # refusals come first, and the rate
        per = probe.cpu_time / 3
        n = int(min(steps, max(3, budget / max(per, 1e-9))))
        cpu = min(meth.integrate(m, q0, v0, n * H, H, every=n).cpu_time
                  for _ in range(repeats if per * n < budget / 4 else 1))
    except (TypeError, ValueError, IntegrationError) as exc:
        return np.nan, 0, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    return cpu / n, n, ""


def _adaptive_cost_rows(args):
    """Variable steps against the fixed step, per step: every method that takes rtol on stiff_fast and on the
    magnet pendulum (section adaptive's problems): the CPU time of an rtol run per accepted step, and of a
    fixed-step run of the same method at the run's mean step T / accepted (its default options: for
    generalized-alpha index 3 at a fixed step, the stabilized index-2 variant with rtol) and of the
    stabilized variant at that fixed step.  The alpha methods also with a fresh Newton matrix at every
    new h (jacobian_reuse="per_h", where this build has it; before it the default).  Both sides store
    every step (the fixed run every=1): an rtol run's outputs are its accepted steps (every is a
    fixed-step option), and a fixed run that kept only its last state would not pay the stored
    samples (stiff_fast, rtol 1e-6: 0.45 k of 11 k instructions per step).  The repeats interleave
    the runs (a shared machine's load then falls on all of them alike)."""
    prob = PROBLEMS["stiff_fast"]
    # over 10 times the problem's 0.02 s: at 0.02 s a block method takes 24-122 blocks at these rtols, and
    # the start (two RK4 blocks, the first step's estimate) outweighs them (rk4_index1, with no Newton
    # matrix to keep, measured 1.37 there at rtol 1e-4); over 0.2 s the rows are per-step costs
    cases = [("stiff_fast", prob.model, *prob.initial_state, 10 * prob.t_end)]
    name, m, q0, v0, T, *_ = magnet_case()
    cases.append((name, m, q0, v0, T))
    rtols = (1e-4,) if args.quick else (1e-4, 1e-6)
    rows = []
    print("variable steps: CPU time per accepted step against the same method's fixed step at the mean h "
          f"(best of {args.repeats})")
    print(f"{'method':<27}{'problem':<17}{'rtol':>7}{'steps':>8}{'adaptive us':>12}{'fixed us':>10}{'ratio':>7}"
          f"{'stab. fixed us':>15}{'ratio':>7}{'it/step':>8}{'fact/step':>10}")
    variants = []
    for mname, cls in sorted(METHODS.items()):
        variants.append((mname, cls, cls()))
        if mname in ("genalpha", "alpha_rattle"):
            try:
                variants.append((mname + " (per_h)", cls, cls(jacobian_reuse="per_h")))
            except TypeError:
                pass        # a build without the option
    for label, cls, meth in variants:
        mname = label.split()[0]
        for pname, m, q0, v0, T in cases:
            for rtol in rtols:
                try:
                    ra = meth.integrate(m, q0, v0, T, rtol=rtol, atol=rtol, max_steps=500_000)
                except (TypeError, ValueError, IntegrationError):
                    break       # no variable steps for this method (or model): not in the table
                n = len(ra.h)
                fixed = [cls()]
                if mname == "genalpha":
                    fixed.append(cls(stabilized=True))
                cf = []
                for f in fixed:
                    try:
                        cf.append(f.integrate(m, q0, v0, T, T / n, every=1).cpu_time)
                    except IntegrationError as exc:      # the mean step may be too long for a fixed step
                        print(f"{mname} on {pname}, fixed h = {T / n:.3g}: {type(exc).__name__}")
                        cf.append(np.nan)
                for _ in range(args.repeats - 1):
                    ra = min(ra, meth.integrate(m, q0, v0, T, rtol=rtol, atol=rtol, max_steps=500_000),
                             key=lambda r: r.cpu_time)
                    cf = [c if np.isnan(c) else min(c, f.integrate(m, q0, v0, T, T / n, every=1).cpu_time)
                          for f, c in zip(fixed, cf)]
                cf += [np.nan] * (2 - len(cf))
                it = ra.stats.get("newton_iterations", np.nan) / n
                fa = ra.stats.get("jacobian_factorizations", np.nan) / n
                rows.append(dict(method=label, problem=pname, rtol=rtol, steps=n, adaptive=ra.cpu_time / n,
                                 fixed=cf[0] / n, fixed_stab=cf[1] / n, iters=it, facts=fa))
                r = rows[-1]
                print(f"{label:<27}{pname:<17}{rtol:>7.0e}{n:>8}{1e6 * r['adaptive']:>12.2f}{1e6 * r['fixed']:>10.2f}"
                      f"{r['adaptive'] / r['fixed']:>7.2f}{fmt(1e6 * r['fixed_stab'], '.2f'):>15}"
                      f"{fmt(r['adaptive'] / r['fixed_stab'], '.2f'):>7}{fmt(it, '.2f'):>8}{fmt(fa, '.2f'):>10}",
                      flush=True)
    return rows


def section_methods(args):
    """Every registered method on the same models at h = H, default options: CPU time per step (the
    Fortran call, Result.cpu_time, best of --repeats) and its ratio to generalized-alpha on the same model,
    side by side in one run; "-" where a method cannot run a model, with the reason.  Then variable
    against fixed steps per step (_adaptive_cost_rows)."""
    import xarray as xr
    steps = 1000 if args.steady else 60 if args.quick else 300
    budget = 5.0 if args.quick else 30.0     # CPU seconds per run: the slowest cases time fewer steps
    models = [mm for mm in _methods_models() if not args.models or any(k in mm[0] for k in args.models)]
    names = sorted(METHODS)
    cost = np.full((len(models), len(names)), np.nan)
    nsteps = np.zeros((len(models), len(names)), dtype=int)
    reason = np.full((len(models), len(names)), "", dtype=object)
    print(f"every method, default options, h = {H:g}, {steps} steps (fewer where a run would exceed "
          f"{budget:g} s CPU): CPU time per step [us] (ratio to genalpha)")
    for i, (label, make) in enumerate(models):
        m, q0, v0 = make()
        for j, name in enumerate(names):
            cost[i, j], nsteps[i, j], reason[i, j] = _method_cost(METHODS[name](), m, q0, v0, steps, args.repeats,
                                                                   budget)
        print(f"  {label}: done", flush=True)
    ga = cost[:, names.index("genalpha")]
    ratio = cost / ga[:, None]
    width = 21
    print(f"{'method':<18}" + "".join(f"{label:>{width}}" for label, _ in models))
    notes = {}
    for j, name in enumerate(names):
        cells = []
        for i in range(len(models)):
            if np.isfinite(cost[i, j]):
                mark = "*" if nsteps[i, j] < steps else ""
                cells.append(f"{1e6 * cost[i, j]:.0f}{mark} ({ratio[i, j]:.{1 if ratio[i, j] < 100 else 0}f}x)")
            else:      # one note per reason, whatever the model
                key = notes.setdefault(re.sub(r" \(model [^)]*\)|, got \w+", "", reason[i, j]), len(notes) + 1)
                cells.append(f"- [{key}]")
        print(f"{name:<18}" + "".join(f"{c:>{width}}" for c in cells))
    print("* fewer steps timed (the run would have exceeded the budget): "
          + ", ".join(f"{names[j]} on {models[i][0]}: {nsteps[i, j]}" for i, j in zip(*np.nonzero(
              (nsteps > 0) & (nsteps < steps)))))
    for text, key in notes.items():
        print(f"[{key}] {text[:200]}")
    rows = [] if args.steady else _adaptive_cost_rows(args)
    ds = xr.Dataset(
        {"cpu_per_step": (("model", "method"), cost, {"units": "s", "long_name": "CPU time per step (Fortran call)"}),
         "ratio_to_genalpha": (("model", "method"), ratio,
                               {"units": "1", "long_name": "CPU time per step / generalized-alpha's on the model"}),
         "steps": (("model", "method"), nsteps, {"units": "1", "long_name": "steps timed (0: not run)"}),
         "reason": (("model", "method"), reason.astype(str), {"long_name": "why the method did not run the model"}),
         "adaptive_cpu_per_step": ("case", [r["adaptive"] for r in rows],
                                   {"units": "s", "long_name": "rtol run: CPU time per accepted step"}),
         "fixed_cpu_per_step": ("case", [r["fixed"] for r in rows],
                                {"units": "s", "long_name": "fixed step at the rtol run's mean h, default options"}),
         "fixed_stabilized_cpu_per_step": ("case", [r["fixed_stab"] for r in rows],
                                           {"units": "s", "long_name": "the same, stabilized index-2 variant"}),
         "adaptive_steps": ("case", [r["steps"] for r in rows], {"units": "1", "long_name": "accepted steps"}),
         "adaptive_iterations_per_step": ("case", [r["iters"] for r in rows],
                                          {"units": "1", "long_name": "Newton iterations per accepted step"}),
         "adaptive_factorizations_per_step": ("case", [r["facts"] for r in rows],
                                              {"units": "1", "long_name": "factorizations per accepted step"})},
        coords={"model": ("model", [label for label, _ in models], {"long_name": "model"}),
                "method": ("method", names, {"long_name": "registered method"}),
                "case": ("case", np.arange(len(rows)), {"long_name": "variable-step case"}),
                "case_method": ("case", [r["method"] for r in rows], {"long_name": "method"}),
                "case_problem": ("case", [r["problem"] for r in rows], {"long_name": "problem"}),
                "case_rtol": ("case", [r["rtol"] for r in rows], {"units": "1", "long_name": "rtol = atol"})},
        attrs={"steps": steps, "budget_cpu_seconds": budget, "repeats": args.repeats})
    write(ds, "methods_steady" if args.steady else "methods")


def section_overhead(args):
    """The whole call of short runs (CPU time of ``integrate``, best of 7 x 50 calls): what a run
    costs beyond its steps (checks, buffers, the calls into the extension, the result); run it with
    another build's python for the side by side (``python bench/run.py --only overhead``)."""
    import xarray as xr
    from pyint.methods.rk4_index1 import RK4Index1
    m = PendulumChain(n_links=3)
    q0, v0 = m.initial_state([0.4, 0.2, -0.1])
    te = np.linspace(0.0, 0.5, 11)
    cases = {"genalpha h=1e-2, 10 steps": lambda: GeneralizedAlpha().integrate(m, q0, v0, 0.1, 1e-2),
             "rk4_index1 h=1e-2, 10 steps": lambda: RK4Index1().integrate(m, q0, v0, 0.1, 1e-2),
             "genalpha rtol=1e-6, t_eval (11)": lambda: GeneralizedAlpha().integrate(m, q0, v0, 0.5, rtol=1e-6,
                                                                                      t_eval=te),
             "rk4_index1 rtol=1e-6, t_eval (11)": lambda: RK4Index1().integrate(m, q0, v0, 0.5, rtol=1e-6, t_eval=te)}
    best = []
    print(f"the whole call of integrate ({pyint.__file__}): CPU time per call [us], best of 7 x 50")
    for label, run in cases.items():
        run()
        times = []
        for _ in range(7):
            t = time.process_time()
            for _ in range(50):
                run()
            times.append((time.process_time() - t) / 50)
        best.append(min(times))
        print(f"  {label:<36}{1e6 * best[-1]:8.0f}")
    write(xr.Dataset({"cpu_per_call": ("case", best, {"units": "s", "long_name": "CPU time of one integrate call"})},
                     coords={"case": ("case", list(cases), {"long_name": "run"})}), "overhead")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps (smoke run)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steady", action="store_true",
                    help="methods: the steady state, 1000 steps timed (output only at the end), no variable steps")
    ap.add_argument("--models", nargs="+", metavar="LABEL",
                    help="methods: only the models whose label contains one of these (e.g. snakeboard)")
    ap.add_argument("--only", nargs="+", choices=SECTIONS + EXTRA_SECTIONS, help="run only these sections")
    ap.add_argument("--baseline", metavar="PYTHON",
                    help="versus: the python of another venv with pyint installed (e.g. ca04593's)")
    args = ap.parse_args(argv)
    for name in args.only or SECTIONS:
        globals()[f"section_{name}"](args)


if __name__ == "__main__":
    main()
