"""Peak memory and time of writing a study's NetCDF file from its case store (issue 28).

The study of docs/guide/million_cases.md (chainsweep: the 2-link chain, four scalars per case, a grid
of 10 rho_inf x N/10 theta).  Its store is fabricated, not computed: every case is a synthetic
dataset of the same schema (the four scalars from a seeded generator, the variables, units, status
and message of one case through the runner's own ``_prepare_case``), written in batches of 100
with the real ``write_shard``
and recorded in the store's index, under the keys the run computes.  Then ``run_study`` with every
case cached -- the store's record, the combine and the write of ``chainsweep.nc``, no case run -- in
a fresh process per (size, mode), the two modes side by side in one invocation:

* ``blocks``: this build, the file written block by block (``pyint.study.combine.write_combined``);
* ``memory``: the combine of commit 9a3a956 (before blocks: every case into one in-memory Dataset,
  then ``to_netcdf``), through the same runner (a ``post`` that returns its input takes that path).

Reported per run: the RSS before ``run_study`` (imports only), when the combine starts (the store's
record and the case keys loaded) and its peak while the combine and the write run (sampled every
5 ms: ``ru_maxrss`` cannot tell it from the peak of what ran before, and a child inherits its
parent's at fork), the wall and CPU seconds of ``run_study`` and of the combine and write within
it (on a shared machine the CPU seconds are the steadier figure).  A benchmark: it reports, and
asserts only that both modes wrote the same file (data and attributes, the creation date aside).

    python bench/study_file.py [--sizes 10000 100000 1000000] [--dir DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BEFORE = "9a3a956"   # the last commit that combined in memory only

STUDY = '''\
# chainsweep.py (docs/guide/million_cases.md)
import os, time
import numpy as np
import xarray as xr
from pyint.methods.genalpha import GeneralizedAlpha
from pyint.models import PendulumChain
from pyint.study import Study, study_main

def run_case(p):
    model = PendulumChain(n_links=2)
    q0, v0 = model.initial_state([p["theta"], 1.5])
    t0 = time.process_time()
    res = GeneralizedAlpha(rho_inf=p["rho_inf"]).integrate(model, q0, v0, t_end=0.25, h=1e-3, every=250)
    cpu = time.process_time() - t0
    return xr.Dataset({"eps_pos": ((), float(np.max(res.residual[:, 0]))),
                       "eps_vel": ((), float(np.max(res.residual[:, 1]))),
                       "energy_drift": ((), float(np.max(np.abs(res.energy - res.energy[0])) / abs(res.energy[0]))),
                       "cpu_time": ((), cpu)})

N = int(os.environ.get("CHAINSWEEP_N", "1000"))
STUDY = Study(name="chainsweep", description="2-link chain, 250 generalized-alpha steps per case",
              grid={"rho_inf": [round(0.5 + 0.05 * i, 2) for i in range(10)],
                    "theta": [round(0.1 + 1e-5 * i, 5) for i in range(N // 10)]},
              run_case=run_case, meta={"theta": ("rad", "initial angle of the first link")})

if __name__ == "__main__":
    raise SystemExit(study_main(STUDY))
'''


def _study(directory: Path, n: int):
    os.environ["CHAINSWEEP_N"] = str(n)
    sys.modules.pop("chainsweep", None)   # its grid is read from the environment at import
    from pyint.cli import get_study
    return get_study(str(directory / "chainsweep.py"))


def fabricate(directory: Path, n: int) -> Path:
    """The store of ``n`` cases under ``directory/out_<n>`` (kept: a later invocation reuses it)."""
    import numpy as np
    import xarray as xr
    from pyint.study.cache import CaseGrid, CaseStore, ScalarCase, _Scalar, write_shard
    from pyint.study.workers import _prepare_case
    study = _study(directory, n)
    grid, fixed = study.resolve(None, False)
    out = directory / f"out_{n}"
    cases = CaseGrid(study, grid, fixed)
    store = CaseStore(out / ".cache" / study.name).open()
    shard_of, _ = store.lookup(cases.keys)
    todo = np.flatnonzero(shard_of < 0)
    # one case through _prepare_case gives the schema (variables, dtypes, units, status, message); the
    # others are that case with new values, as the light ScalarCase write_shard also packs (a Dataset
    # per case would cost a tenth of a millisecond each)
    names = ("eps_pos", "eps_vel", "energy_drift", "cpu_time")
    template = _prepare_case(xr.Dataset({name: ((), 0.0) for name in names}), cases.params(0), study.meta)
    rng = np.random.default_rng(n)
    for start in range(0, len(todo), 100):
        batch = []
        for i in todo[start:start + 100]:
            values = dict(zip(names, rng.random(4) * [1e-15, 1e-13, 1e-6, 1e-3]))
            variables = {name: _Scalar(np.array(values.get(name, var.values)), var.attrs)
                         for name, var in template.variables.items()}
            batch.append((cases.keys[i].decode(), cases.params(int(i)), ScalarCase(variables, set(), {})))
        store.record(*write_shard(store.shards, batch))
    return out


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def child(mode: str, n: int, directory: Path):
    """One run_study from the full cache; prints one JSON line."""
    import xarray as xr  # noqa: F401  (imported before the baseline RSS: run_study needs it)
    from pyint.study import runner
    study = _study(directory, n)
    spent = {"write": 0.0, "write_cpu": 0.0, "entry_mb": None, "write_peak_mb": 0.0}

    def measured(func):
        """``func`` timed, and the process's RSS sampled every 5 ms while it runs."""
        def wrapper(*args, **kwargs):
            if spent["entry_mb"] is None:
                spent["entry_mb"] = _rss_mb()
            done = threading.Event()

            def sample():
                while not done.is_set():
                    spent["write_peak_mb"] = max(spent["write_peak_mb"], _rss_mb())
                    done.wait(0.005)
            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                return func(*args, **kwargs)
            finally:
                spent["write"] += time.perf_counter() - t0
                spent["write_cpu"] += time.process_time() - c0
                done.set()
                sampler.join()
                spent["write_peak_mb"] = max(spent["write_peak_mb"], _rss_mb())
        return wrapper

    if mode == "memory":
        import dataclasses
        import types
        source = subprocess.run(["git", "-C", str(HERE.parent), "show", f"{BEFORE}:pyint/study/combine.py"],
                                capture_output=True, text=True, check=True).stdout
        before = types.ModuleType("pyint.study._combine_before")
        before.__package__ = "pyint.study"
        exec(compile(source, f"{BEFORE}:pyint/study/combine.py", "exec"), before.__dict__)
        runner.combine_cases = measured(before.combine_cases)
        runner.write_netcdf = measured(runner.write_netcdf)
        study = dataclasses.replace(study, post=lambda ds: ds)
    else:
        runner.write_combined = measured(runner.write_combined)
    start_mb = _rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    run = runner.run_study(study, out=directory / f"out_{n}", workers=1, figures=False, verbose=False,
                           progress=False)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert run.n_run == 0, "the store was not complete"
    os.replace(run.path, directory / f"{mode}_{n}.nc")
    print(json.dumps({"mode": mode, "n": n, "start_mb": start_mb, "seconds": seconds,
                      "cpu": cpu, **spent}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--dir", type=Path, default=HERE.parent / "build" / "bench-study-file")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    if args.child:
        child(args.child[0], int(args.child[1]), args.dir)
        return
    (args.dir / "chainsweep.py").write_text(STUDY)
    import xarray as xr
    rows = []
    for n in args.sizes:
        t0 = time.perf_counter()
        fabricate(args.dir, n)
        print(f"store of {n} cases: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        for mode in ("blocks", "memory"):
            out = subprocess.run([sys.executable, __file__, "--dir", str(args.dir), "--child", mode, str(n)],
                                 capture_output=True, text=True)
            if out.returncode:
                raise SystemExit(out.stderr)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(rows[-1], file=sys.stderr, flush=True)
        files = [xr.load_dataset(args.dir / f"{mode}_{n}.nc", engine="netcdf4") for mode in ("blocks", "memory")]
        for ds in files:
            ds.attrs.pop("created")
        xr.testing.assert_identical(*files)
    print(f"load average {os.getloadavg()[0]:.1f} at the end; RSS in MB; wall (CPU) seconds")
    print(f"{'cases':>9}  {'mode':6}  {'start':>5}  {'combine from':>12}  {'to':>5}  "
          f"{'run_study':>15}  {'combine+write':>15}")
    for r in rows:
        print(f"{r['n']:>9}  {r['mode']:6}  {r['start_mb']:5.0f}  {r['entry_mb']:12.0f}  "
              f"{r['write_peak_mb']:5.0f}  {r['seconds']:6.1f} ({r['cpu']:5.1f})  "
              f"{r['write']:6.1f} ({r['write_cpu']:5.1f})")


if __name__ == "__main__":
    main()
