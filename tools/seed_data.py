"""Regenerate the stored default-size results of the site's studies (``docs/seed_data/*.nc``).

The seed pages (docs/seeds/) and the IFToMM page (docs/iftomm.md) quote their tables at the size
that reproduces them: each study's *default* grid, not the ``--quick`` smoke size (whose tables
are mostly empty).  Those runs take minutes (the five seed studies: ~5 min on 2 cores;
iftomm_benchmarks: 110 runs, 175 s of integration CPU, 9.4 min of wall time with two workers on
the shared 2-core machine), too long for every build of the site, so their results are stored, thinned to what the page needs, and the build draws the figures and prints
the summary from the stored file (docs/conf.py):

    ./dev.sh setup && .venv/bin/python tools/seed_data.py [NAME ...]     # default: every stored study

runs ``pyint study run NAME`` at its default size into ``results/`` (cached cases are not rerun)
and writes ``docs/seed_data/NAME.nc``: the study's file with every time series thinned to at most
``KEEP`` samples (evenly spaced, after the first ``HEAD`` samples kept whole; the per-case maxima of the tables are computed over every step
by the runs themselves, so thinning changes no table), time series no figure of the study or of
pyint.study.plotting draws dropped, and zlib compression.  It refuses to write a file whose
summary differs from the full file's: the page's tables are the run's tables.  Rerun it when a
study or a method it runs changes (the page prints the pyint version and commit of the stored run).
"""
from __future__ import annotations

import argparse
import inspect
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "docs" / "seed_data"
#: The seed pages' studies, in the order of the pages (docs/conf.py reads the same list from here).
SEED_STUDIES = ("snakeboard_alpha", "lie_group_manipulator", "triple_pendulum_symplectic",
                "direction_vector_block", "galerkin_nonholonomic")
#: Every study whose default-size run the site shows from a stored file: the seed pages' and the
#: IFToMM page's (its default run: 175 s of integration CPU, A01 over 2000 s, A05 with Lobatto IIIA-IIIB).
STORED_STUDIES = SEED_STUDIES + ("iftomm_benchmarks",)
#: The time-like dimensions that are thinned, and the samples each keeps.
TIME_DIMS = ("sample", "time", "time_long", "step")
KEEP = 250
#: Studies whose figures draw the start of a long run at full resolution: the first HEAD samples of
#: each time dimension are kept whole, the rest thinned to KEEP (iftomm_benchmarks'
#: reported_points.png draws A01's first 20 s of 2000 s, sampled every 0.01 s).
HEAD = {"iftomm_benchmarks": 2001}
#: Time series stored in float64 (a figure draws their differences, e.g. H(t) - H(0)); the others
#: in float32 (7 digits: the figures' resolution, half the bytes).
FULL_PRECISION = ("energy", "kinetic", "potential", "hamiltonian")
#: The per-sample variables the standard figures (pyint.study.plotting) draw.
STANDARD = {"time", "q", "violation", "energy_error", "status", "message"}
#: Studies whose q(t) is not stored: direction_vector_block has 60 series (method x formulation x T)
#: of 14 natural coordinates, no readable trajectories.png; its Fig. 3 draws the link ends instead.
NO_TRAJECTORIES = {"direction_vector_block"}


def _uses(study, name: str) -> bool:
    """Whether the modules of the study's figures, summary or post name the variable (``"name"`` or
    ``x.name``): then a figure or the summary may read it (the whole module: a figure may be drawn
    by a helper of it, as iftomm_benchmarks' lazy figures are)."""
    fns = [f for f in (study.figures, study.summary, study.post) if f is not None]
    src = "".join(inspect.getsource(m) for m in {inspect.getmodule(f) for f in fns} if m is not None)
    return re.search(rf"""["']{name}["']|\.{name}\b""", src) is not None


def thin(ds, study):
    """``ds`` with its time dimensions thinned to KEEP samples and the unused time series dropped."""
    out = ds
    head = HEAD.get(study.name, 0)
    for dim in TIME_DIMS:
        if dim in out.dims and out.sizes[dim] > head + KEEP:
            idx = np.unique(np.concatenate([np.arange(head),
                                            np.round(np.linspace(head, out.sizes[dim] - 1, KEEP)).astype(int)]))
            out = out.isel({dim: idx})
    drop = [v for v in out.data_vars if set(out[v].dims) & set(TIME_DIMS)
            and (v not in STANDARD or (v == "q" and study.name in NO_TRAJECTORIES)) and not _uses(study, v)]
    out = out.drop_vars(drop)
    for v in out.variables:
        x = out[v]
        if set(x.dims) & set(TIME_DIMS) and x.dtype == np.float64 and not any(e in v for e in FULL_PRECISION):
            with np.errstate(over="ignore"):                    # a blown-up run's 1e300 becomes inf
                out[v] = x.astype(np.float32)
    return out


def store(name: str, results: Path, workers: int | None, run: bool = True) -> Path:
    from pyint.cli import get_study
    from pyint.study.datasets import load_netcdf
    study = get_study(name)
    cmd = [str(Path(sys.executable).with_name("pyint")), "study", "run", name, "--out", str(results)]
    if workers:
        cmd += ["--workers", str(workers)]
    if run:
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    full = load_netcdf(results / f"{name}.nc")
    if full.attrs.get("quick") not in (0, False, "0", "False", "false"):
        raise RuntimeError(f"{results / name}.nc is a --quick run; the seed pages need the default size")
    small = thin(full, study)
    summarize = study.summary
    if summarize is not None and summarize(small) != summarize(full):
        raise RuntimeError(f"{name}: the summary of the thinned file differs from the full run's; "
                           "keep more (KEEP, or the variables its summary reads)")
    STORE.mkdir(parents=True, exist_ok=True)
    path = STORE / f"{name}.nc"
    # every numeric variable compressed, coordinates too: a grid's time coordinate (benchmark x
    # method x stepping x sample, mostly NaN padding) is the largest array of iftomm_benchmarks
    enc = {v: {"zlib": True, "complevel": 9, "shuffle": True} for v in small.variables
           if small[v].dtype.kind in "fiu" and small[v].dims}
    tmp = path.with_suffix(".nc.tmp")
    small.to_netcdf(tmp, encoding=enc)
    tmp.replace(path)
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size / 1e3:.0f} kB "
          f"(full run {(results / f'{name}.nc').stat().st_size / 1e6:.1f} MB)")
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", default=list(STORED_STUDIES),
                        help="studies (default: the seed pages' and the IFToMM page's)")
    parser.add_argument("--results", type=Path, default=ROOT / "results", help="where the full runs go")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--no-run", action="store_true", help="use the files already in --results")
    args = parser.parse_args(argv)
    for name in args.names:
        store(name, args.results, args.workers, run=not args.no_run)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
