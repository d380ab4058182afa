"""The seed-002 study's default size (studies/triple_pendulum_symplectic.py), whole and by part (issue 27).

Two builds side by side, interleaved, ``--repeats`` times: this one (the Python running this script)
and ``--base`` (another worktree's .venv, e.g. the build the issue was filed against, caf1ada).

* ``whole``: ``<venv>/bin/pyint study run triple_pendulum_symplectic --out DIR`` as CI runs it
  (``./dev.sh studies``: default workers, one per core, figures drawn), in a fresh output directory
  (the case store would otherwise serve every case): wall seconds, and CPU seconds (user + system)
  of the command and every process it waited for (its workers); the integration CPU is the sum of the
  ``cpu_time*`` variables of the file it wrote (the Fortran calls' own clocks).
* ``parts``: the same study with ``--workers 1`` in one process (so every part is on one clock),
  the CPU seconds of: the interpreter and the imports until the study runs; the SymbolicModel
  (SymPy's import, the expressions, the compiled library's cache lookup or its compilation);
  each case (one per method) and, from the file, its integration; the combine and the NetCDF
  write (the rest of the command: the study's lookup, the case store, the summary); the figures
  (matplotlib's import, the standard figures of ``pyint.study.plotting.plot_file``, the study's own).

A benchmark: it reports, it asserts nothing but that both builds wrote the same methods.  On a
shared machine compare CPU seconds, and only within one run.

    .venv/bin/python bench/study_seed002.py --base /work/wt-base [--repeats 2] [--only whole|parts]
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STUDY = "triple_pendulum_symplectic"

# Run by each build's Python: the study with --workers 1, its parts timed by wrapping the functions
# that run them (names present in caf1ada and in this build); prints one JSON line.
PARTS = r'''
import json, sys, time
clock = time.process_time
T = {"imports": 0.0, "model": 0.0, "cases": {}, "figures_standard": 0.0, "figures_own": 0.0}
T["startup"] = clock()          # the interpreter's start
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot        # first, on its own clock (pyint.study.plotting imports it)
T["matplotlib_import"] = clock() - T["startup"]
import pyint.cli as cli
import pyint.study.plotting as plotting
import pyint.studies.%(study)s as S
T["imports"] = clock() - T["matplotlib_import"]   # from the interpreter's start, without matplotlib

def timed(fn, key):
    def wrapper(*a, **k):
        t = clock()
        try:
            return fn(*a, **k)
        finally:
            T[key] += clock() - t
    return wrapper

S.triple_pendulum_model = timed(S.triple_pendulum_model, "model")
run_case = S.STUDY.run_case
def case(params):
    t = clock()
    try:
        return run_case(params)
    finally:
        T["cases"][params["method"]] = clock() - t
object.__setattr__(S.STUDY, "run_case", case)      # Study is a frozen dataclass
plotting.plot_file = timed(plotting.plot_file, "figures_standard")
own = S.STUDY.figures
def figures(*a, **k):
    t = clock()
    try:
        return own(*a, **k)
    finally:
        T["figures_own"] += clock() - t
object.__setattr__(S.STUDY, "figures", figures)
t0 = clock()
rc = cli.main(["study", "run", "%(study)s", "--out", sys.argv[1], "--workers", "1"])
T["run_study"] = clock() - t0
T["total"] = clock()
print(json.dumps(T))
sys.exit(rc)
'''


def integration_cpu(nc):
    """{method: CPU seconds of its integrations} from the study's file."""
    import numpy as np
    import xarray as xr
    with xr.open_dataset(nc) as ds:
        out = {}
        for m in ds.method.values:
            d = ds.sel({"method": m})
            out[str(m)] = float(d.cpu_time) + float(d.cpu_time_long) + float(np.nansum(d.cpu_time_sweep.values))
        return out


def run_whole(venv, out):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([str(venv / "bin" / "pyint"), "study", "run", STUDY, "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "integration": integration_cpu(out / f"{STUDY}.nc")}


def run_parts(venv, out):
    # cwd: not a source tree, whose pyint/ would shadow the installed package
    r = subprocess.run([str(venv / "bin" / "python"), "-c", PARTS % {"study": STUDY}, str(out)], check=True,
                       capture_output=True, text=True, cwd=out.parent)
    parts = json.loads(r.stdout.strip().splitlines()[-1])
    parts["integration"] = integration_cpu(out / f"{STUDY}.nc")
    return parts


def show_whole(name, r):
    integ = sum(r["integration"].values())
    print(f"  {name:6s} wall {r['wall']:6.2f} s   CPU {r['cpu']:6.2f} s   integration CPU {integ:5.2f} s")


def show_parts(name, p):
    cases = sum(p["cases"].values())
    integ = sum(p["integration"].values())
    figs = p["figures_own"] + p["figures_standard"]
    rest = p["run_study"] - cases - figs      # matplotlib was imported before the run (PARTS)
    print(f"  {name:6s} total {p['total']:5.2f}  imports {p['imports']:4.2f}  model {p['model']:4.2f}  "
          f"cases {cases:4.2f} (integration {integ:4.2f}, the rest {cases - integ - p['model']:4.2f})  "
          f"combine+write {rest:4.2f}  figures {figs + p['matplotlib_import']:4.2f} (matplotlib import "
          f"{p['matplotlib_import']:4.2f}, own {p['figures_own']:4.2f}, standard {p['figures_standard']:4.2f})")
    print("         per method (case CPU / its integration): " + ", ".join(
        f"{m} {p['cases'][m]:.2f}/{p['integration'][m]:.2f}" for m in p["integration"]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", type=Path, required=True, help="the other build's worktree (with its .venv)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--only", choices=("whole", "parts"))
    args = ap.parse_args(argv)
    builds = {"base": args.base.resolve() / ".venv", "this": Path(sys.prefix)}
    if not (builds["base"] / "bin" / "pyint").exists():
        raise SystemExit(f"no pyint in {builds['base']}")
    with tempfile.TemporaryDirectory(prefix="seed002-") as tmp:
        for k in range(args.repeats):
            if args.only in (None, "whole"):
                print(f"whole study, `pyint study run {STUDY}` (default workers), run {k + 1}:")
                res = {name: run_whole(venv, Path(tmp) / f"w{k}-{name}") for name, venv in builds.items()}
                for name, r in res.items():
                    show_whole(name, r)
                assert set(res["base"]["integration"]) == set(res["this"]["integration"])
                print(f"  base / this: wall {res['base']['wall'] / res['this']['wall']:.1f}x, CPU "
                      f"{res['base']['cpu'] / res['this']['cpu']:.1f}x, integration CPU "
                      f"{sum(res['base']['integration'].values()) / sum(res['this']['integration'].values()):.1f}x")
            if args.only in (None, "parts"):
                print(f"parts (CPU s, --workers 1, one process), run {k + 1}:")
                for name, venv in builds.items():
                    show_parts(name, run_parts(venv, Path(tmp) / f"p{k}-{name}"))


if __name__ == "__main__":
    main()
