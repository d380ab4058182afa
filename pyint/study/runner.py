"""The execution of a study: its cases run anywhere (this process, local processes, a Dask cluster),
cached (:mod:`pyint.study.cache`), combined (:mod:`pyint.study.combine`), written and drawn.
How to write a study: :mod:`pyint.study.declaration`.

Running and files
-----------------
:func:`run_study` (``pyint study run``) writes, under ``out``:

* ``<out>/.cache/<study>/``: the case store (:mod:`pyint.study.cache`): finished cases (failed
  ones too) in batches, one NetCDF shard per batch written by whoever ran it, and the study
  process's index of them.  A case's key hashes the study name and version, the case
  parameters, the pyint version and the code that computes it (``run_case`` and the functions,
  classes and constants of its module it uses: editing them recomputes its cases, editing the
  study's ``meta``, ``description`` or figures does not; code imported from other modules is
  not tracked, bump ``version`` for that).  A rerun (interrupted, killed, or with more grid
  values) runs only the cases no shard holds; ``rerun_failed`` reruns failed ones too.
* ``<out>/<study>.nc``: the combined dataset, written from the store block by block
  (:func:`pyint.study.combine.write_combined`: the study process never holds it whole; a study
  with ``post`` combines in memory, post() taking the Dataset); atomic: a crash or Ctrl-C
  never leaves a half-written file; a ``<study>.nc.tmp-<pid>`` left by a
  killed run is removed at the next write;
* ``<out>/<study>/*.png``: the figures.

A run with failed cases still writes every case (status and message; if
``post`` cannot handle the gaps it is skipped and ``post_error`` says why),
and ``pyint study run`` prints a table of the cases that did not end ok; it
exits with status 1 when a case raised or crashed (:data:`ERROR_STATUSES`),
not for a status a case returned itself (a recorded soft failure).

Cases run in batches (``batch_size``, default :func:`batch_size_for`) in local processes
(``workers``, default all cores; 1 runs them in this process) or on a Dask distributed cluster
(``scheduler="tcp://host:8786"``), with at most two batches per worker slot in flight; the
study process keeps one line per batch, never a file or an object per case.  Everything that
can be checked before the first case is (:func:`check_before_running`).  Where batches run (this
process, local processes, Dask) and what a case must return: :mod:`pyint.study.workers`.
A case that raises is recorded and the sweep goes on; a case that kills its
worker process is retried once, then run alone, and recorded as ``crashed``.
Local workers die with the study process (Linux parent-death signal, and a
watchdog thread elsewhere); on Ctrl-C the study process kills its workers at
once, records every batch already written and exits (status 130); its own writes hold Ctrl-C
until they are complete (:func:`held_interrupt`).  A lost Dask scheduler stops the run with an
error and marks nothing failed: a rerun resumes.

"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import itertools
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Mapping

import numpy as np
import xarray as xr

from .._files import held_interrupt
from .._progress import Progress, _clock  # noqa: F401  (Progress: the runner's line, imported from here too)
from .cache import CaseGrid, CaseStore, read_shard, unpack_cases
from .combine import combine_cases, write_combined
from .datasets import annotate, attr_value, load_netcdf, metadata_table, provenance, write_netcdf
from .declaration import ERROR_STATUSES, OK, Study
from .workers import _describe, _run_dask, _run_in_process, _run_processes, batch_size_for, failed_case


#: Names that moved to :mod:`pyint.study.workers`: importable from here for one release, with a warning.
_MOVED = ("CRASHED", "IN_FLIGHT_PER_SLOT", "MAX_BATCH", "POLL", "PR_SET_PDEATHSIG", "WATCHDOG_PERIOD")


def __getattr__(name):
    if name in _MOVED:
        import warnings
        from . import workers
        warnings.warn(f"pyint.study.runner.{name} moved to pyint.study.workers.{name}", DeprecationWarning,
                      stacklevel=2)
        return getattr(workers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- running ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class StudyRun:
    """What :func:`run_study` did.

    Attributes
    ----------
    study : str
        The study's name.
    path : Path
        The NetCDF file written (``out/<name>.nc``).
    dataset : xarray.Dataset
        The combined dataset (every case, with ``status`` and ``message`` per case).
    n_cases, n_cached, n_run, n_failed : int
        The cases in all, taken from the cache, run now, and failed.
    seconds : float
        The wall time of the run [s], from the cases' lookup to the last figure.
    figure_seconds : float
        The part of ``seconds`` spent drawing the figures [s].
    figures : list of Path
        The figures drawn.
    figure_error, post_error : str or None
        Why drawing the figures or the study's ``post`` failed (None: they did not).

    Examples
    --------
    >>> import tempfile
    >>> from pyint.cli import get_study
    >>> from pyint.study import run_study
    >>> with tempfile.TemporaryDirectory() as out:
    ...     run = run_study(get_study("selftest"), out=out, quick=True, workers=1, figures=False)
    ...     print(run.study, run.n_cases == run.n_run + run.n_cached, run.path.name)
    selftest True selftest.nc
    """

    study: str
    path: Path
    _dataset: xr.Dataset | None = dataclasses.field(repr=False)  # in memory only when post() needed it
    n_cases: int
    n_cached: int
    n_run: int
    n_failed: int
    seconds: float
    figures: list = dataclasses.field(default_factory=list)
    figure_seconds: float = 0.0
    figure_error: str | None = None
    post_error: str | None = None

    @property
    def dataset(self) -> xr.Dataset:
        """The study's dataset: the file, read whole at first use and closed (a file left open would be
        one more HDF5 handle on it), or the dataset post() returned, as written."""
        if self._dataset is None:
            self._dataset = load_netcdf(self.path)
        return self._dataset

    @property
    def n_errors(self) -> int:
        """Cases with a runner error status (:data:`ERROR_STATUSES`): they produced no result."""
        return int(np.isin(self.dataset["status"].values.astype(str), ERROR_STATUSES).sum())


def _log(verbose, text):
    if verbose:
        print(text, file=sys.stderr, flush=True)


def check_before_running(study: Study, grid: Mapping[str, list], fixed: Mapping, out: Path):
    """What can be checked before the first case, checked before it: every grid parameter has units
    and a long name (:data:`STANDARD` or the study's ``meta``: the combined file needs them), the
    fixed parameters are storable attributes, and the output directory and file can be written."""
    table = metadata_table(study.meta)
    missing = [k for k in grid if k not in table]
    if missing:
        raise ValueError(f"study {study.name!r}: grid parameters {missing} have no units and long name; "
                         "declare them in Study(meta={name: (units, long_name)})")
    provenance(study.name, fixed)  # raises for a fixed parameter that is no attribute
    if out.exists() and not out.is_dir():
        raise ValueError(f"output directory {out} is a file")
    target = out / f"{study.name}.nc"
    if target.is_dir():
        raise ValueError(f"output file {target} is a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".{study.name}.probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise OSError(f"cannot write to the output directory {out}: {exc}") from exc


def _study_parts(cases: CaseGrid, store: CaseStore, shard_of: np.ndarray):
    """A function giving a fresh iterator over (grid index, case dataset) of every case, read shard by
    shard (shards in the order of their first case; skipped cases first): for :func:`combine_cases`.
    Held meanwhile: the cases' grid positions grouped by shard (8 bytes a case), not their keys."""
    wanted = np.flatnonzero(shard_of >= 0)
    by_shard = wanted[np.argsort(shard_of[wanted], kind="stable")]  # grid order within each shard
    del wanted
    shards, starts = np.unique(shard_of[by_shard], return_index=True)
    ends = np.append(starts[1:], len(by_shard))
    order = np.argsort(by_shard[starts], kind="stable")             # by each shard's first case

    def parts():
        if cases.excluded.any():
            skipped = failed_case("skipped", "excluded by the study's where()")
            for i in np.flatnonzero(cases.excluded):
                yield cases.index(int(i)), skipped
        for s in order:
            members: dict[bytes, list[int]] = {}   # the cases this shard holds for the record
            for i in by_shard[starts[s]:ends[s]]:
                members.setdefault(cases.keys[i], []).append(int(i))
            found = []
            for key, _, ds in unpack_cases(read_shard(store.path(int(shards[s]))), light=True):
                found.extend((i, ds) for i in members.pop(key.encode(), ()))
            for i, ds in sorted(found, key=lambda x: x[0]):
                yield cases.index(i), ds
    return parts


def run_study(study: Study, out="results", grid: Mapping[str, list] | None = None,
              quick: bool = False, workers: int | None = None, scheduler: str | None = None,
              rerun_failed: bool = False, figures: bool = True, progress: bool | None = None,
              verbose: bool = True, batch_size: int | None = None) -> StudyRun:
    """Run the cases of ``study`` that are not cached, combine all, write and draw them.

    Parameters
    ----------
    study : Study
        The declared sweep.
    out : str or Path, default "results"
        The output directory: ``out/<name>.nc``, the figures in ``out/<name>/``, the case
        cache.
    grid : dict, optional
        Overrides of parameter values (see ``Study.resolve``).
    quick : bool, default False
        Use the study's ``quick_grid`` (its smoke-test size).
    workers : int, optional
        Local processes (default ``os.cpu_count()``; 1 = in this process).
    scheduler : str, optional
        The address of a Dask distributed scheduler to run on instead.
    rerun_failed : bool, default False
        Run the cached cases that failed again.
    figures : bool, default True
        Draw the study's figures.
    progress : bool, optional
        The terminal progress line (default: when stderr is a terminal).
    verbose : bool, default True
        One line at the start and one at the end on stderr.
    batch_size : int, optional
        Cases per batch (default ``batch_size_for``).

    Returns
    -------
    StudyRun
        The combined dataset, its path, the counts of cases run, cached and failed, the
        figures written.

    Examples
    --------
    See :class:`pyint.study.Study`.
    """
    if not isinstance(study, Study):
        raise TypeError(f"run_study runs a Study object, got {type(study).__name__} {study!r}; a study by "
                        "name or file: pyint.cli.get_study(name_or_path)")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                   or batch_size < 1):
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if scheduler is not None and workers is not None:
        raise ValueError("give either workers (local processes) or scheduler (Dask), not both")
    grid_, fixed = study.resolve(grid, quick)
    out = Path(out)
    check_before_running(study, grid_, fixed, out)
    cases = CaseGrid(study, grid_, fixed)
    store = CaseStore(out / ".cache" / study.name).open()
    t0 = time.monotonic()

    shard_of, ok = store.lookup(cases.keys)
    todo = np.flatnonzero(~cases.excluded & ((shard_of < 0) | (bool(rerun_failed) & ~ok)))
    n_skipped = int(cases.excluded.sum())
    n_cached = len(cases) - n_skipped - len(todo)
    _log(verbose, f"[{study.name}] {len(cases)} cases: {n_cached} cached, {len(todo)} to run"
                  + (f", {n_skipped} skipped" if n_skipped else ""))

    bar = Progress(study.name, len(cases), len(cases) - len(todo), enabled=progress)

    def record(name, keys, status):
        store.record(name, keys, status)
        bar.update(len(keys))

    def make_batches(slots):
        size = batch_size_for(len(todo), slots, batch_size)
        for start in range(0, len(todo), size):
            yield [(cases.keys[i].decode(), cases.params(int(i))) for i in todo[start:start + size]]

    if len(todo):
        try:
            if scheduler is not None:
                _run_dask(study, make_batches, scheduler, store.shards, record)
            else:
                n = (os.cpu_count() or 1) if workers is None else workers
                if n == 1 or len(todo) == 1:
                    _run_in_process(study, make_batches(1), store.shards, record)
                else:
                    _run_processes(study, make_batches(n), n, store.shards, record)
        except KeyboardInterrupt:
            bar.close()
            _log(verbose, f"[{study.name}] interrupted: {bar.done - n_skipped} of {len(cases) - n_skipped} "
                          f"cases are cached in {store.dir}; run again to finish")
            raise
    bar.close()

    # combine from the store, shard by shard, so every way of running gives the same dataset
    shard_of, ok = store.lookup(cases.keys)
    lacking = np.flatnonzero(~cases.excluded & (shard_of < 0))
    if len(lacking):
        raise RuntimeError(f"{len(lacking)} cases are missing from {store.dir} after the run "
                           f"(first: {cases.params(int(lacking[0]))}); run again to finish")
    parts = _study_parts(cases, store, shard_of)
    statuses = collections.Counter()

    def counted():  # every pass over the cases counts their statuses (the first pass is complete before writing)
        statuses.clear()
        for idx, ds in parts():
            statuses[str(ds.variables["status"].values.item()) if "status" in ds.variables else OK] += 1
            yield idx, ds

    def n_failed():
        return sum(n for s, n in statuses.items() if s not in (OK, "skipped"))

    def finish(ds, post_error=None):
        """The study's units, provenance and run attributes, on the combined dataset or its skeleton."""
        ds = annotate(ds, study.meta, strict=True)
        attrs = dict(ds.attrs)
        attrs.update(provenance(study.name, fixed))
        attrs.update(description=study.description, grid=attr_value(grid_), grid_dims=attr_value(list(grid_)),
                     quick=int(bool(quick)), n_cases=len(cases), n_failed=n_failed())
        if post_error:
            attrs["post_error"] = f"post() was not applied: {post_error}"
        ds.attrs = attrs
        return ds

    target, post_error = out / f"{study.name}.nc", None
    if study.post is None:
        # written from the store block by block: the study process never holds the combined dataset
        path, combined = write_combined(grid_, counted, target, prepare=finish), None
    else:  # post() takes the combined dataset: built in memory
        combined = combine_cases(grid_, counted)
        try:
            combined = study.post(combined)
        except Exception as exc:  # noqa: BLE001 - e.g. no case has the variable post needs
            if not n_failed():
                raise
            post_error = _describe(exc)  # the failed cases explain it: write what there is
        combined = finish(combined, post_error)
        with held_interrupt():  # Ctrl-C waits for the write: a complete file or none, never a hung lock
            path = write_netcdf(combined, target)

    run = StudyRun(study.name, path, combined, len(cases), n_cached, len(todo), n_failed(),
                   time.monotonic() - t0, post_error=post_error)
    if figures:
        t_fig = time.monotonic()
        try:
            from .plotting import study_figures
            run.figures = study_figures(path, out / study.name, study)
        except Exception as exc:  # noqa: BLE001 - the data are written; say what went wrong
            run.figure_error = _describe(exc)
        # the reported time is the whole run's: the figures can cost more than the cases
        run.figure_seconds = time.monotonic() - t_fig
        run.seconds = time.monotonic() - t0
    _log(verbose, f"[{study.name}] done in {_clock(run.seconds)}"
                  + (f" (figures {_clock(run.figure_seconds)})" if figures else "")
                  + f": {len(todo)} run, {n_cached} cached, "
                  f"{run.n_failed} failed -> {path}"
                  + (f", {len(run.figures)} figures in {out / study.name}" if run.figures else "")
                  + (f"\n[{study.name}] post() not applied (cases failed): {post_error}" if post_error else "")
                  + (f"\n[{study.name}] figures failed: {run.figure_error}" if run.figure_error else ""))
    return run


# -- the command line of a run ---------------------------------------------------------------------
#: Exit statuses of ``pyint`` and of a study script: done, a case or study failed, bad usage.
EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def add_run_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of a run (``pyint study run`` and a study script take the same)."""
    parser.add_argument("--grid", action="extend", nargs="+", default=[], metavar="KEY=V1,V2",
                        help="values of a parameter (a fixed parameter given several values becomes a grid "
                             "dimension)")
    parser.add_argument("--out", type=Path, default=Path("results"), help="output directory (default: results)")
    parser.add_argument("--workers", type=int, default=None,
                        help="local worker processes (default: all cores; 1 = run in this process)")
    parser.add_argument("--scheduler", default=None, metavar="ADDR",
                        help="run on the Dask distributed scheduler at ADDR (e.g. tcp://host:8786)")
    parser.add_argument("--quick", action="store_true", help="the study's reduced grid (smoke test)")
    parser.add_argument("--rerun-failed", action="store_true", help="rerun cached cases that did not end ok")
    parser.add_argument("--no-figures", action="store_true", help="write the dataset only")
    parser.add_argument("--batch-size", type=int, default=None, metavar="N",
                        help="cases per batch (one task, one shard of the case store; default: from the "
                             "number of cases and workers, at most 100)")
    return parser


def exit_status(func, *args) -> int:
    """``func(*args)`` as a command: its exit status, or a one-line ``pyint: error:`` on stderr and
    :data:`EXIT_USAGE` (bad input) / :data:`EXIT_ERROR` (a failure) / 130 (Ctrl-C)."""
    try:
        return func(*args)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        print(f"pyint: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (RuntimeError, OSError) as exc:
        print(f"pyint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


def run_and_report(chosen: list[Study], args) -> int:
    """Run the studies ``chosen`` with the options ``args`` (:func:`add_run_options`), print each
    one's summary and failures; the exit status (1 when a case raised or crashed, or a study did
    not finish)."""
    if args.workers is not None and args.scheduler:
        raise ValueError("give --workers (local processes) or --scheduler (Dask), not both")
    if args.grid and len(chosen) > 1:
        raise ValueError("--grid applies to one study; name only one")
    overrides = [study.parse_overrides(args.grid) for study in chosen]
    runs, status, last = [], EXIT_OK, []
    for study, grid in zip(chosen, overrides):
        try:
            runs.append((study, run_study(study, out=args.out, grid=grid, quick=args.quick, workers=args.workers,
                                          scheduler=args.scheduler, rerun_failed=args.rerun_failed,
                                          figures=not args.no_figures,
                                          batch_size=getattr(args, "batch_size", None))))
        except Exception as exc:  # noqa: BLE001 - one broken study must not stop the others
            if len(chosen) == 1:
                raise
            print(f"pyint: study {study.name} did not finish: {type(exc).__name__}: {exc}", file=sys.stderr)
            last.append(f"study {study.name} did not finish")
            status = EXIT_ERROR
    if len(chosen) > 1:
        total = sum(run.seconds for _, run in runs)
        print(f"\n{len(runs)} of {len(chosen)} studies finished in {total / 60:.1f} min", file=sys.stderr)
    for study, run in runs:
        print()
        try:
            print(study.summary(run.dataset) if study.summary is not None else summary_table(run.dataset))
        except Exception as exc:  # noqa: BLE001 - the study's summary may need cases that failed
            if not run.n_failed:
                raise
            print(summary_table(run.dataset))
            print(f"(the study's own summary failed: {type(exc).__name__}: {exc})")
        print(f"-> {run.path}" + (f"; figures: {run.path.with_suffix('')}/" if run.figures else ""))
        if run.n_failed:
            print(f"\n{study.name}: {run.n_failed} of {run.n_cases} cases did not end ok:")
            print(failure_table(run.dataset))
        if run.n_errors:  # raised or crashed: no result (a status a case returned itself is a result)
            last.append(f"study {study.name}: {run.n_errors} of {run.n_cases} cases failed (see the table "
                        f"above); {run.path} holds every case with its status and message")
            status = EXIT_ERROR
        if run.figure_error:
            last.append(f"study {study.name}: figures failed: {run.figure_error}")
            status = EXIT_ERROR
    sys.stdout.flush()
    for line in last:
        print(f"pyint: error: {line}", file=sys.stderr)
    return status


def study_main(study: Study, argv=None) -> int:
    """``python path/to/<name>.py [options]`` (and ``python -m pyint.studies.<name> [options]``) is
    ``pyint study run <name> [options]``: the same options, files, summary and exit status, on this
    ``study`` object (a study script anywhere runs).

    Parameters
    ----------
    study : Study
        The study to run.
    argv : list of str, optional
        The options of ``pyint study run`` (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status (0: every case ran; see ``pyint study run -h``).

    Examples
    --------
    Every study module ends with::

        if __name__ == "__main__":
            raise SystemExit(study_main(STUDY))
    """
    parser = add_run_options(argparse.ArgumentParser(
        prog=Path(sys.argv[0]).name if sys.argv and sys.argv[0] else study.name,
        description=f"study {study.name}: {study.description} (the options of pyint study run)"))
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    return exit_status(run_and_report, [study], args)


# -- the summary table --------------------------------------------------------------------------------
#: Columns of the default summary, in this order, when present.
SUMMARY_COLUMNS = ("error", "order", "eps_pos", "eps_vel", "eps_acc", "energy_drift", "orthogonality",
                   "direction_error", "cpu_time", "n_steps", "newton_iterations", "jacobian_factorizations",
                   "failed_steps")


def _cell(value) -> str:
    """Short text for a summary table cell."""
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return "-"
        return f"{value:.3g}" if 1e-3 <= abs(value) < 1e4 or value == 0 else f"{value:.2e}"
    return str(value)


#: Rows of the summary table printed at most (the first ones; the file holds every case).
SUMMARY_ROWS = 200


def summary_table(ds: xr.Dataset, max_rows: int = SUMMARY_ROWS) -> str:
    """One row per case: the grid parameters, the status and the per-case metrics (the first
    ``max_rows`` cases, then a line saying how many more the file holds)."""
    gdims = json.loads(ds.attrs["grid_dims"]) if "grid_dims" in ds.attrs else list(ds["status"].dims)
    per_case = [n for n in ds.data_vars if set(ds[n].dims) <= set(gdims)
                and n not in ("status", "message", "case_attrs") and ds[n].dtype.kind in "fiu"]
    metrics = [n for n in SUMMARY_COLUMNS if n in per_case] + [n for n in per_case if n not in SUMMARY_COLUMNS]
    header = list(gdims) + ["status"] + metrics
    # every column as an array on the grid (broadcast over the dims a variable lacks), read once
    shape = tuple(ds.sizes[d] for d in gdims)
    status = ds["status"].transpose(*gdims).values
    message = ds["message"].transpose(*gdims).values
    columns = {name: np.broadcast_to(ds[name].transpose(*[d for d in gdims if d in ds[name].dims])
                                     .values.reshape([ds.sizes[d] if d in ds[name].dims else 1 for d in gdims]),
                                     shape) for name in metrics}
    n_cases = math.prod(shape)
    rows = []
    for index in itertools.islice(itertools.product(*(range(n) for n in shape)), max_rows):
        row = [_cell(ds[d].values[i]) for d, i in zip(gdims, index)]
        row.append(str(status[index]))
        row.extend(_cell(columns[name][index].item()) for name in metrics)
        msg = str(message[index])
        if msg:
            row.append(msg if len(msg) <= 70 else msg[:67] + "...")
        rows.append(row)
    widths = [max(len(str(r[i])) for r in [header] + rows if i < len(r)) for i in range(len(header))]

    def fmt(r):
        cells = [str(c).ljust(w) if i < len(gdims) + 1 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths))]
        return "  ".join(cells + list(r[len(widths):])).rstrip()

    title = f"{ds.attrs.get('study', '')}: {ds.attrs.get('description', '')}".strip(": ")
    more = [f"... {n_cases - max_rows} more cases in the file"] if n_cases > max_rows else []
    return "\n".join([title, fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows] + more)


def failure_table(ds: xr.Dataset) -> str:
    """One row per case that did not end ok (skipped ones aside): its grid parameters, status and
    the whole message.  Empty when every case ended ok."""
    gdims = json.loads(ds.attrs["grid_dims"]) if "grid_dims" in ds.attrs else list(ds["status"].dims)
    status = ds["status"].transpose(*gdims).values
    message = ds["message"].transpose(*gdims).values
    header = list(gdims) + ["status"]
    rows = []
    for index in itertools.product(*(range(ds.sizes[d]) for d in gdims)):
        st = str(status[index])
        if st in (OK, "skipped"):
            continue
        rows.append(([_cell(ds[d].values[i]) for d, i in zip(gdims, index)] + [st], str(message[index])))
    if not rows:
        return ""
    widths = [max(len(r[i]) for r in [header] + [row for row, _ in rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(header + ["message"], widths + [0])).rstrip(),
             "  ".join("-" * w for w in widths + [7])]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row + [msg], widths + [0])).rstrip() for row, msg in rows]
    return "\n".join(lines)
