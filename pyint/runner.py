"""The study runner: a parameter sweep declared once, run anywhere, cached, combined.

Writing a study
---------------
A study is a module that defines one module-level ``STUDY = Study(...)``:
pyint's own are ``studies/<name>.py`` (installed as ``pyint.studies.<name>``);
yours can be any script (``python mystudy.py``, ``pyint study run
path/to/mystudy.py``, ``run_study(STUDY)``) or a module of your package
declared in the entry-point group ``pyint.studies`` (``pyint study list`` and
``pyint study run <name>`` find it, see :mod:`pyint.cli`).  A case may return
an integration's own dataset, ``Result.to_xarray()``: it carries every unit and
long name the runner asks for.  A complete example::

    import time
    import numpy as np
    import xarray as xr
    from pyint.datasets import measured_order
    from pyint.runner import Study, study_main

    def run_case(p):
        # one case: p holds the fixed parameters and one point of the grid
        if p["h"] <= 0:
            raise ValueError(f"h must be > 0, got {p['h']}")
        t = np.arange(0.0, p["T"] + p["h"] / 2, p["h"])
        t0 = time.process_time()
        y = np.exp(-p["k"] * t)                    # ... the real integration ...
        cpu = time.process_time() - t0
        return xr.Dataset(
            {"y": ("time", y, {"units": "m", "long_name": "displacement"}),
             "error": ((), float(abs(y[-1] - np.exp(-p["k"] * p["T"]))), {"units": "m"}),
             "cpu_time": ((), cpu)},               # standard names get their units
            coords={"time": t})

    def add_order(ds):                              # runs once on the combined dataset
        return ds.assign(order=measured_order(ds["error"], "h"))

    STUDY = Study(
        name="decay", description="exponential decay, error against h",
        grid={"k": [1.0, 2.0], "h": [0.1, 0.05, 0.025]},
        fixed={"T": 1.0},
        quick_grid={"h": [0.1, 0.05], "T": 0.5},
        run_case=run_case, post=add_order)

    if __name__ == "__main__":
        raise SystemExit(study_main(STUDY))

``python decay.py`` (or ``pyint study run decay.py``; ``pyint study run decay``
once it is a module of ``pyint.studies`` or an entry point) then writes
``results/decay.nc`` (dims ``k``, ``h`` and the case's own ``time``/``sample``,
see below) and ``results/decay/*.png``.

The contract (:class:`Study` fields)
------------------------------------
``name``, ``description``
    identifier (letters, digits, ``_``) and one line for ``pyint study list``.
``grid``
    ``{parameter: [values, ...]}``: the cases are the Cartesian product, and
    the parameters become the dimensions of the combined dataset, in this
    order.  Values are str, int or float (one kind per parameter).
``run_case(params) -> xarray.Dataset``
    defined at module level (processes and Dask workers import it by name),
    deterministic for given ``params`` (the cache relies on it).  ``params``
    is ``fixed`` updated with one grid point.  Use the standard names of
    :data:`pyint.datasets.STANDARD` (``eps_pos``, ``error``, ``cpu_time``, ...:
    units and long names are filled in); any other variable needs ``units``
    and ``long_name`` attrs or an entry in ``meta``, else the case fails
    with a message saying so.  Raising records the case as ``status =
    "failed"`` with the exception as ``message``; to record a soft failure
    with partial data, return a dataset with a string ``status`` other than
    ``"ok"`` and a ``message``.  Parameter names may not be used as names
    of the case's dimensions or variables.  Case attributes that all cases
    with attributes agree on become global attributes; if they differ, each
    case's attributes are kept as JSON in the ``case_attrs`` variable.
``fixed``
    ``{parameter: value}`` passed to every case, written as attributes
    (dicts and lists as JSON), part of the cache key.
``quick_grid``
    overrides for ``--quick``: a list of values for a grid parameter, a new
    value for a fixed one.  The quick grid is the smoke test every
    registered study gets in the test suite (tests/test_cli.py): keep it to
    seconds.  The default grid is what ``./dev.sh studies`` runs: all
    studies together should finish in about 10 minutes on 2 cores.
``where(params) -> bool`` (optional)
    keep only the cases it accepts; the others appear with ``status =
    "skipped"``.
``post(ds) -> ds`` (optional)
    adds what needs several cases (e.g. ``order`` from :func:`measured_order`).
``figures(nc_path, outdir) -> [png paths]`` (optional)
    the study's own figures, drawn from the file; default
    :func:`pyint.plotting.plot_file`.
``summary(ds) -> str`` (optional)
    the table printed after the run; default :func:`summary_table`.
``meta``
    ``{name: (units, long_name)}`` for the study's own parameters/variables.
``smoke``
    ``True`` for a smoke test of the machinery (the ``selftest`` study):
    ``pyint study list`` marks it and ``pyint study run --all`` leaves it out.
``version``
    bump it to invalidate the study's cached cases (an edit of the study
    module invalidates them anyway, see below; bump it when a change
    elsewhere, e.g. in a helper module, changes the results).

Running and files
-----------------
:func:`run_study` (``pyint study run``) writes, under ``out``:

* ``<out>/.cache/<study>/<key>.nc``: one file per finished case (failed ones
  too), ``key`` = hash of the study name and version, the case parameters,
  the pyint version and the study's code (the source of ``run_case`` and of
  the whole module defining it, as joblib.Memory keys on a function's source:
  editing the study module recomputes its cases; code it imports from other
  modules is not tracked, bump ``version`` for that; in a long-lived
  interpreter reload the module after editing it).  A rerun (interrupted, or
  with more grid values) runs only the cases without a file; ``rerun_failed``
  reruns failed ones too.
* ``<out>/<study>.nc``: the combined dataset (atomic write: a crash or Ctrl-C
  never leaves a half-written file; a ``<study>.nc.tmp-<pid>`` left by a
  killed run is removed at the next write);
* ``<out>/<study>/*.png``: the figures.

A run with failed cases still writes every case (status and message; if
``post`` cannot handle the gaps it is skipped and ``post_error`` says why),
and ``pyint study run`` prints a table of the cases that did not end ok; it
exits with status 1 when a case raised or crashed (:data:`ERROR_STATUSES`),
not for a status a case returned itself (a recorded soft failure).

Cases run in local processes (``workers``, default all cores; 1 runs them in
this process) or on a Dask distributed cluster (``scheduler="tcp://host:8786"``).
A case that raises is recorded and the sweep goes on; a case that kills its
worker process is retried once, then run alone, and recorded as ``crashed``.
Local workers die with the study process (Linux parent-death signal, and a
watchdog thread elsewhere); on Ctrl-C the study process kills its workers at
once, saves every case already finished and exits (status 130).

Combining: a case dimension with the same coordinate in every case stays
as it is.  If the cases' ``time`` coordinates differ (different ``h``), the
case dimension ``time`` becomes ``sample`` (the output index) and ``time``
becomes a coordinate on (grid dims..., ``sample``), NaN-padded after each
case's end; other case dimensions with differing coordinates are outer-joined
(union of the values, NaN where a case has none).  Integers with gaps become
floats with NaN; text gaps are "".
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import hashlib
import inspect
import itertools
import json
import marshal
import math
import os
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import xarray as xr

from .datasets import (annotate, attr_value, json_default, load_netcdf, provenance, remove_stale_temporaries,
                       write_netcdf)

#: Names a study parameter may not take (they are attributes or dimensions of every dataset).
RESERVED = frozenset({"pyint_version", "git_commit", "created", "study", "description", "grid",
                      "grid_dims", "quick", "n_cases", "n_failed", "runner_params", "time", "sample",
                      "status", "message", "case_attrs"})

OK = "ok"

#: The statuses the runner gives a case that produced no result: its run_case raised ("failed")
#: or its worker process died ("crashed").  ``pyint study run`` exits with status 1 when a case
#: has one; a status a case returns itself (a soft failure the study records as a result, e.g.
#: a method that fails at a step beyond its stability limit) is listed but is not an error.
ERROR_STATUSES = ("failed", "crashed")


# -- the declaration -----------------------------------------------------------------
def _check_values(key, values):
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"grid parameter {key!r}: expected a list of values, got {values!r}")
    values = [v.item() if isinstance(v, np.generic) else v for v in values]
    if not values:
        raise ValueError(f"grid parameter {key!r} has no values")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise TypeError(f"grid parameter {key!r}: values must be str, int or float, got {v!r}")
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"grid parameter {key!r}: value {v!r} is not finite")
    if len({isinstance(v, str) for v in values}) > 1:
        raise TypeError(f"grid parameter {key!r} mixes text and numbers: {values!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"grid parameter {key!r} has repeated values: {values!r}")
    return values


def _check_name(kind, key):
    if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        raise ValueError(f"{kind} name {key!r} must be an identifier (letters, digits, _)")
    if key in RESERVED:
        raise ValueError(f"{kind} name {key!r} is reserved (one of {sorted(RESERVED)})")


@dataclasses.dataclass(frozen=True, eq=False)
class Study:
    """A parameter sweep: see the module docstring for the contract."""

    name: str
    description: str
    grid: Mapping[str, list]
    run_case: Callable[[dict], xr.Dataset]
    fixed: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    quick_grid: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    where: Callable[[dict], bool] | None = None
    post: Callable[[xr.Dataset], xr.Dataset] | None = None
    figures: Callable[[Path, Path], list] | None = None
    summary: Callable[[xr.Dataset], str] | None = None
    meta: Mapping[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    version: str = "1"
    smoke: bool = False

    def __post_init__(self):
        if not isinstance(self.name, str) or not re.fullmatch(r"[A-Za-z0-9_]+", self.name):
            raise ValueError(f"study name {self.name!r} must be letters, digits and _")
        if not callable(self.run_case):
            raise TypeError(f"study {self.name!r}: run_case must be callable")
        if not isinstance(self.grid, Mapping) or not self.grid:
            raise ValueError(f"study {self.name!r}: grid must be a non-empty dict of parameter -> values")
        grid = {}
        for key, values in self.grid.items():
            _check_name("grid parameter", key)
            grid[key] = _check_values(key, values)
        for key in self.fixed:
            _check_name("fixed parameter", key)
        both = set(grid) & set(self.fixed)
        if both:
            raise ValueError(f"study {self.name!r}: {sorted(both)} are both grid and fixed parameters")
        for key, value in self.quick_grid.items():
            if key in grid:
                _check_values(key, value)
            elif key not in self.fixed:
                raise ValueError(f"study {self.name!r}: quick_grid names {key!r}, "
                                 "which is neither a grid nor a fixed parameter")
        for key, entry in self.meta.items():
            if not (isinstance(entry, tuple) and len(entry) == 2 and all(isinstance(s, str) for s in entry)):
                raise TypeError(f"study {self.name!r}: meta[{key!r}] must be a (units, long_name) tuple")
        if not isinstance(self.smoke, bool):
            raise TypeError(f"study {self.name!r}: smoke must be True or False, got {self.smoke!r}")
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "fixed", dict(self.fixed))

    # -- parameters ----------------------------------------------------------------
    def parse_overrides(self, items) -> dict[str, list]:
        """Parse command-line ``key=v1,v2`` items into typed value lists (typed like the defaults)."""
        out = {}
        for item in items or ():
            key, sep, text = str(item).partition("=")
            key = key.strip()
            if not sep or not key:
                raise ValueError(f"--grid expects key=v1,v2,..., got {item!r}")
            if key in out:
                raise ValueError(f"--grid {key}=... is given twice; give all its values once: {key}=v1,v2,...")
            if key in self.grid:
                proto = self.grid[key]
            elif key in self.fixed:
                proto = [self.fixed[key]]
            else:
                raise ValueError(f"study {self.name!r} has no parameter {key!r}; grid: {list(self.grid)}, "
                                 f"fixed: {list(self.fixed)}")
            out[key] = _parse_values(key, text, proto)
        return out

    def resolve(self, overrides: Mapping[str, list] | None = None, quick: bool = False):
        """The (grid, fixed) of a run: defaults, then ``quick_grid``, then ``overrides``.

        An override of a fixed parameter with one value replaces it; with
        several values the parameter becomes a new (last) grid dimension.
        """
        grid = {k: list(v) for k, v in self.grid.items()}
        fixed = dict(self.fixed)
        if quick:
            for key, value in self.quick_grid.items():
                if key in grid:
                    grid[key] = list(value)
                else:
                    fixed[key] = value
        for key, values in (overrides or {}).items():
            if key not in grid and key not in fixed:
                raise ValueError(f"study {self.name!r} has no parameter {key!r}; grid: {list(self.grid)}, "
                                 f"fixed: {list(self.fixed)}")
            values = _check_values(key, values)
            if key in grid:
                grid[key] = values
            elif len(values) == 1:
                fixed[key] = values[0]
            else:
                del fixed[key]
                grid[key] = values
        return grid, fixed


def _parse_values(key, text, proto):
    parts = [s.strip() for s in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise ValueError(f"--grid {key}=...: empty value in {text!r}")
    kinds = {type(v) for v in proto}
    if not kinds <= {str, int, float}:
        return [json.loads(text)]  # a structured fixed value: one JSON value

    def conv(s):
        if str in kinds:
            return s
        try:
            return int(s) if kinds == {int} else float(s)
        except ValueError:
            raise ValueError(f"--grid {key}: {s!r} is not {'an integer' if kinds == {int} else 'a number'}") from None

    return [conv(p) for p in parts]


@dataclasses.dataclass
class Case:
    params: dict
    index: tuple
    key: str
    excluded: bool = False


def _source_text(obj) -> str:
    """The source of a function, class or module, or (no source file: defined interactively,
    compiled only) a deterministic stand-in: the function's bytecode and constants."""
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        code = getattr(obj, "__code__", None)
        if code is None:
            return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"
        return marshal.dumps(code).hex()


def _repr_default(value):
    try:
        return json_default(value)
    except TypeError:
        return repr(value)  # an object with an address in its repr only costs a recompute


def code_fingerprint(study: Study) -> str:
    """Hash of the code that computes a case: the source of ``run_case`` and of the whole module
    that defines it (its helpers, constants and imports), as joblib.Memory keys on a function's
    source.  Read once per run; a study module edited in place gives new keys."""
    func, parts = inspect.unwrap(study.run_case), []
    while isinstance(func, functools.partial):  # the bound arguments, then the function
        parts.append(json.dumps([func.args, func.keywords], sort_keys=True, default=_repr_default))
        func = inspect.unwrap(func.func)
    if not (inspect.isfunction(func) or inspect.ismethod(func)):
        func = type(func)  # a callable object: its class
    parts.append(_source_text(func))
    module = sys.modules.get(getattr(func, "__module__", None) or "")
    if module is not None:
        parts.append(_source_text(module))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def cache_key(study: Study, params: Mapping, code: str | None = None) -> str:
    """Hash of the study name and version, the case parameters, the pyint version and the
    study's code (:func:`code_fingerprint`; pass it when keying many cases)."""
    from . import __version__
    blob = json.dumps({"study": study.name, "study_version": study.version, "pyint_version": __version__,
                       "code": code_fingerprint(study) if code is None else code,
                       "params": dict(params)}, sort_keys=True, default=json_default)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def make_cases(study: Study, grid: Mapping[str, list], fixed: Mapping) -> list[Case]:
    keys = list(grid)
    code = code_fingerprint(study)
    cases = []
    for index in itertools.product(*(range(len(grid[k])) for k in keys)):
        params = {**fixed, **{k: grid[k][i] for k, i in zip(keys, index)}}
        excluded = study.where is not None and not study.where(dict(params))
        cases.append(Case(params, index, cache_key(study, params, code), bool(excluded)))
    return cases


# -- one case ----------------------------------------------------------------------------
def failed_case(status: str, message: str) -> xr.Dataset:
    """The dataset of a case that produced no data."""
    return xr.Dataset({"status": ((), status), "message": ((), message)})


def _describe(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _prepare_case(ds, params, meta) -> xr.Dataset:
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"run_case returned {type(ds).__name__}, expected an xarray.Dataset")
    clash = sorted((set(map(str, ds.dims)) | set(map(str, ds.variables))) & set(params))
    if clash:
        raise ValueError(f"the case dataset uses parameter names {clash} as dimensions or variables")
    ds = ds.copy()
    if "status" in ds:
        st = ds["status"]
        if st.ndim or not isinstance(st.values.item(), str):
            raise ValueError("a case's 'status' must be a scalar string")
    else:
        ds["status"] = ((), OK)
    if "message" not in ds:
        ds["message"] = ((), "")
    for name in list(ds.variables):
        if ds[name].dtype == bool:
            ds[name] = ds[name].astype(np.int8)
    return annotate(ds, meta, strict=True)


def _execute_case(run_case, params, meta) -> xr.Dataset:
    """Run one case anywhere (this process, a pool process, a Dask worker); never raises."""
    try:
        return _prepare_case(run_case(dict(params)), params, meta)
    except Exception as exc:  # noqa: BLE001 - a failed case is a result
        return failed_case("failed", _describe(exc))


# -- where cases run ---------------------------------------------------------------------------
# Each runner computes the cases of ``todo`` and hands every result to ``save(case, ds)`` (which
# writes it to the cache) as soon as it has it.  On Ctrl-C (KeyboardInterrupt) a runner stops its
# workers at once, saves every result it already holds (also one whose save was interrupted) and
# re-raises: nothing computed is lost, nothing is left running.
CRASHED = ("the worker process died while running this case "
           "(segmentation fault, os._exit, out of memory, ...)")

#: prctl(2) option: the signal this process gets when its parent dies (Linux).
PR_SET_PDEATHSIG = 1

#: How often (seconds) a worker's watchdog thread checks that the study process is alive.
WATCHDOG_PERIOD = 0.5


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _worker_init(parent_pid: int):
    """Initializer of every local worker process: die with the study process.

    Ctrl-C reaches the whole process group: workers ignore SIGINT and the study
    process stops them (:func:`_stop_workers`).  If the study process dies
    without stopping them (SIGKILL, out of memory), the kernel sends SIGKILL
    (Linux prctl PR_SET_PDEATHSIG); a watchdog thread that polls the parent
    covers other systems and a parent that died before prctl took effect.
    """
    import signal
    import threading
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the watchdog remains
            pass
    first_ppid = os.getppid()

    def orphaned():
        return os.getppid() != first_ppid or not _alive(parent_pid)

    if orphaned():
        os._exit(1)

    def watchdog():
        while not orphaned():
            time.sleep(WATCHDOG_PERIOD)
        os._exit(1)

    threading.Thread(target=watchdog, name="pyint-parent-watchdog", daemon=True).start()


def _stop_workers(pool):
    """Kill the pool's worker processes now (a case in a compiled kernel may not answer gentler
    signals for a long time) and wait for them, so that none is left behind."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.kill()
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.join(5)
    pool.shutdown(wait=True, cancel_futures=True)


def _save_finished(futures, saved, save):
    """After an interrupt: save every finished result not saved yet."""
    for fut, case in futures.items():
        if case.key in saved or not fut.done() or fut.cancelled() or fut.exception() is not None:
            continue
        save(case, fut.result())
        saved.add(case.key)


def _run_in_process(study, todo, save):
    for case in todo:
        ds = _execute_case(study.run_case, case.params, study.meta)
        try:
            save(case, ds)
        except KeyboardInterrupt:
            save(case, ds)  # computed: keep it (the interrupted write left no file)
            raise


def _run_processes(study, todo, workers, save):
    """Local process pool.  A dead worker breaks the pool: the unfinished cases are
    resubmitted; a case caught in two breaks runs alone, and if it dies alone it is
    recorded as crashed."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    breaks: dict[str, int] = {}
    queue, alone = list(todo), []
    while queue or alone:
        if queue:
            batch, queue, size = queue, [], min(workers, len(queue))
        else:
            batch, size = [alone.pop(0)], 1
        pool = ProcessPoolExecutor(max_workers=size, initializer=_worker_init, initargs=(os.getpid(),))
        futures, saved = {}, set()
        clean = False
        try:
            for i, c in enumerate(batch):
                try:
                    futures[pool.submit(_execute_case, study.run_case, c.params, study.meta)] = c
                except BrokenProcessPool:  # a worker died while we were still submitting
                    if not futures:
                        raise RuntimeError("the local process pool cannot start its workers") from None
                    queue.extend(batch[i:])
                    break
            for fut in as_completed(futures):
                case = futures[fut]
                try:
                    ds = fut.result()
                except BrokenProcessPool:
                    breaks[case.key] = breaks.get(case.key, 0) + 1
                    if size == 1 and breaks[case.key] >= 2:
                        save(case, failed_case("crashed", CRASHED))
                        saved.add(case.key)
                    else:
                        (alone if breaks[case.key] >= 2 else queue).append(case)
                    continue
                except Exception as exc:  # noqa: BLE001 - e.g. the arguments did not pickle
                    ds = failed_case("failed", _describe(exc))
                    save(case, ds)
                    saved.add(case.key)
                    continue
                save(case, ds)
                saved.add(case.key)
            clean = True
        except KeyboardInterrupt:
            _stop_workers(pool)
            _save_finished(futures, saved, save)
            raise
        finally:
            pool.shutdown(wait=clean, cancel_futures=True)


def _run_dask(study, todo, address, save):
    try:
        from distributed import Client, as_completed
    except ImportError as exc:
        raise RuntimeError("a Dask scheduler needs dask.distributed: pip install 'dask[distributed]'") from exc
    try:
        client = Client(address, timeout="20s", set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise RuntimeError(f"cannot connect to the Dask scheduler at {address}: {exc}") from exc
    with client:
        futures = {client.submit(_execute_case, study.run_case, c.params, study.meta, pure=False): c
                   for c in todo}
        saved = set()
        try:
            for fut in as_completed(list(futures), loop=client.loop):
                case = futures[fut]
                try:
                    ds = fut.result()
                except Exception as exc:  # noqa: BLE001 - KilledWorker and the like
                    status = "crashed" if type(exc).__name__ == "KilledWorker" else "failed"
                    ds = failed_case(status, _describe(exc))
                save(case, ds)
                saved.add(case.key)
                fut.release()
        except KeyboardInterrupt:
            client.cancel([f for f, c in futures.items() if c.key not in saved and not f.done()])
            for fut, case in futures.items():
                if case.key not in saved and fut.status == "finished":
                    save(case, fut.result())
                    saved.add(case.key)
            raise


# -- progress ------------------------------------------------------------------------------------
def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60:02d}:{rest % 60:02d}"


class Progress:
    """``[study] 7/12 cases, 00:12 elapsed, ~00:09 left`` on one updating line of a terminal.

    Silent when ``stream`` is not a terminal (or ``enabled=False``).  The
    estimate assumes the remaining cases cost what the ones run so far did.
    """

    def __init__(self, label, total, done=0, stream=None, enabled=None):
        self.label, self.total, self.done = label, total, done
        self.stream = sys.stderr if stream is None else stream
        self.enabled = (self.stream.isatty() if hasattr(self.stream, "isatty") else False) \
            if enabled is None else enabled
        self.start, self.run, self._width = time.monotonic(), 0, 0

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        text = f"[{self.label}] {self.done}/{self.total} cases, {_clock(elapsed)} elapsed"
        left = self.total - self.done
        if self.run and left:
            text += f", ~{_clock(elapsed / self.run * left)} left"
        return text

    def update(self, n=1):
        self.done += n
        self.run += n
        self._draw()

    def _draw(self):
        if self.enabled:
            text = self.line()
            self.stream.write("\r" + text.ljust(self._width))
            self._width = len(text)
            self.stream.flush()

    def close(self):
        if self.enabled and self._width:
            self.stream.write("\n")
            self.stream.flush()


# -- combining cases ---------------------------------------------------------------------------------
def _string_kind(dtype) -> bool:
    return dtype.kind in "OUS"


def combine_cases(grid: Mapping[str, list], results) -> xr.Dataset:
    """One dataset from ``results`` = [(grid index tuple, case dataset), ...].

    The grid parameters become the leading dimensions in ``grid`` order;
    see the module docstring for how the cases' own dimensions combine.
    """
    gdims = list(grid)
    gshape = tuple(len(v) for v in grid.values())
    results = list(results)
    with_time = [ds for _, ds in results if "time" in ds.dims]
    time_differs = any(not np.array_equal(ds["time"].values, with_time[0]["time"].values) for ds in with_time)

    def dims_of(var):
        return tuple("sample" if (d == "time" and time_differs) else str(d) for d in var.dims)

    # the cases' own dimensions: coordinate values (None = positional) and sizes
    dim_values: dict[str, list] = {}
    dim_size: dict[str, int] = {}
    for _, ds in results:
        clash = set(map(str, ds.dims)) & set(gdims)
        if clash:
            raise ValueError(f"a case has dimensions {sorted(clash)} that are grid parameters")
        for var in ds.variables.values():
            for d, size in zip(dims_of(var), var.shape):
                dim_size[d] = max(dim_size.get(d, 0), size)
        for d in ds.indexes:
            if d == "time" and time_differs:
                continue
            vals = ds.indexes[d].tolist()
            old = dim_values.setdefault(str(d), vals)
            if old != vals:
                merged = old + [v for v in vals if v not in old]
                try:
                    merged = sorted(merged)
                except TypeError:
                    pass
                dim_values[str(d)] = merged
    for d, vals in dim_values.items():
        dim_size[d] = len(vals)
    lookup = {d: {v: i for i, v in enumerate(vals)} for d, vals in dim_values.items()}

    # every variable but the index coordinates of the cases' own dimensions
    names = [n for n in dict.fromkeys(str(n) for _, ds in results for n in ds.variables) if n not in dim_values]

    data_vars, coords = {}, {}
    for name in names:
        present = [(idx, ds[name]) for idx, ds in results if name in ds.variables]
        vdims = dims_of(present[0][1])
        for _, var in present:
            if dims_of(var) != vdims:
                raise ValueError(f"variable {name!r} has dimensions {vdims} in one case and "
                                 f"{dims_of(var)} in another")
        is_coord = any(name in ds.coords for _, ds in results if name in ds.variables)
        attrs = dict(present[0][1].attrs)
        if is_coord and vdims and all(var.equals(present[0][1]) for _, var in present):
            coords[name] = (vdims, present[0][1].values, attrs)  # the same wherever present: once
            continue
        strings = any(_string_kind(var.dtype) for _, var in present)
        dtype = object if strings else np.result_type(*(var.dtype for _, var in present))
        shape = gshape + tuple(dim_size[d] for d in vdims)
        data = np.empty(shape, dtype=dtype)
        filled = np.zeros(shape, dtype=bool)
        for idx, var in present:
            where = []
            for d, size in zip(vdims, var.shape):
                if d in lookup:
                    where.append(np.array([lookup[d][v] for v in var[d].values.tolist()], dtype=int)
                                 if d in var.coords else np.arange(size))
                else:
                    where.append(np.arange(size))
            sel = (*idx, *np.ix_(*where)) if where else idx
            values = var.values.astype(object) if strings else var.values
            data[sel] = values.item() if values.ndim == 0 else values
            filled[sel] = True
        if not filled.all():
            if strings:
                data[~filled] = ""
            else:
                if data.dtype.kind not in "fc":
                    data = data.astype(np.float64)
                data[~filled] = np.nan
        target = coords if is_coord else data_vars
        target[name] = (tuple(gdims) + vdims, data, attrs)

    for d, vals in dim_values.items():
        coords[d] = (d, np.asarray(vals, dtype=object if isinstance(vals[0], str) else None),
                     dict(next(ds[d].attrs for _, ds in results if d in ds.indexes)))
    for k, vals in grid.items():
        coords[k] = (k, np.asarray(vals, dtype=object if isinstance(vals[0], str) else None))
    out = xr.Dataset(data_vars, coords)
    out = out.transpose(*gdims, ...)

    # case attributes: global when all cases that have any agree, else per case as JSON
    attr_sets = [(idx, ds.attrs) for idx, ds in results if ds.attrs]
    if attr_sets:
        first = json.dumps(attr_sets[0][1], sort_keys=True, default=json_default)
        if all(json.dumps(a, sort_keys=True, default=json_default) == first for _, a in attr_sets):
            out.attrs.update(attr_sets[0][1])
        else:
            text = np.full(gshape, "", dtype=object)
            for idx, a in attr_sets:
                text[idx] = json.dumps({k: attr_value(v) for k, v in a.items()}, sort_keys=True)
            out["case_attrs"] = (tuple(gdims), text)
    return out


# -- running ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class StudyRun:
    """What :func:`run_study` did."""

    study: str
    path: Path
    dataset: xr.Dataset
    n_cases: int
    n_cached: int
    n_run: int
    n_failed: int
    seconds: float
    figures: list = dataclasses.field(default_factory=list)
    figure_error: str | None = None
    post_error: str | None = None

    @property
    def n_errors(self) -> int:
        """Cases with a runner error status (:data:`ERROR_STATUSES`): they produced no result."""
        return int(np.isin(self.dataset["status"].values.astype(str), ERROR_STATUSES).sum())


def _params_json(params) -> str:
    """The case parameters as stored in its cache file (checked when the file is reused)."""
    return json.dumps(params, sort_keys=True, default=json_default)


def _load_cached(path: Path, case: Case, rerun_failed: bool):
    if not path.is_file():
        return None
    try:
        ds = load_netcdf(path)
    except Exception:  # noqa: BLE001 - unreadable: recompute
        return None
    if ds.attrs.get("runner_params") != _params_json(case.params):
        return None
    if rerun_failed and str(ds["status"].values.item()) != OK:
        return None
    return ds


def _log(verbose, text):
    if verbose:
        print(text, file=sys.stderr, flush=True)


def run_study(study: Study, out="results", grid: Mapping[str, list] | None = None,
              quick: bool = False, workers: int | None = None, scheduler: str | None = None,
              rerun_failed: bool = False, figures: bool = True, progress: bool | None = None,
              verbose: bool = True) -> StudyRun:
    """Run the cases of ``study`` that are not cached, combine all, write and draw them.

    ``grid`` overrides parameter values (see :meth:`Study.resolve`), ``quick``
    uses the study's ``quick_grid``.  ``workers``: local processes (default
    ``os.cpu_count()``; 1 = in this process).  ``scheduler``: address of a
    Dask distributed scheduler to run on instead.  ``progress``: the terminal
    progress line (default: when stderr is a terminal).  ``verbose``: one line
    at the start and one at the end on stderr.
    """
    if not isinstance(study, Study):
        raise TypeError(f"run_study runs a Study object, got {type(study).__name__} {study!r}; a study by "
                        "name or file: pyint.cli.get_study(name_or_path)")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if scheduler is not None and workers is not None:
        raise ValueError("give either workers (local processes) or scheduler (Dask), not both")
    grid_, fixed = study.resolve(grid, quick)
    cases = make_cases(study, grid_, fixed)
    out = Path(out)
    cache_dir = out / ".cache" / study.name
    cache_dir.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(cache_dir)
    t0 = time.monotonic()

    have: dict[tuple, xr.Dataset] = {}  # the cases not to run: skipped and cached
    todo = []
    for case in cases:
        if case.excluded:
            have[case.index] = failed_case("skipped", "excluded by the study's where()")
            continue
        ds = _load_cached(cache_dir / f"{case.key}.nc", case, rerun_failed)
        if ds is None:
            todo.append(case)
        else:
            have[case.index] = ds
    n_skipped = sum(c.excluded for c in cases)
    n_cached = len(have) - n_skipped
    _log(verbose, f"[{study.name}] {len(cases)} cases: {n_cached} cached, {len(todo)} to run"
                  + (f", {n_skipped} skipped" if n_skipped else ""))

    bar = Progress(study.name, len(cases), len(cases) - len(todo), enabled=progress)

    def save(case, ds):
        ds.attrs["runner_params"] = _params_json(case.params)
        write_netcdf(ds, cache_dir / f"{case.key}.nc")  # atomic: a crash leaves no half-written file
        bar.update()

    if todo:
        try:
            if scheduler is not None:
                _run_dask(study, todo, scheduler, save)
            else:
                n = (os.cpu_count() or 1) if workers is None else workers
                if n == 1 or len(todo) == 1:
                    _run_in_process(study, todo, save)
                else:
                    _run_processes(study, todo, n, save)
        except KeyboardInterrupt:
            bar.close()
            _log(verbose, f"[{study.name}] interrupted: {bar.done - n_skipped} of {len(cases) - n_skipped} "
                          f"cases are cached in {cache_dir}; run again to finish")
            raise
    bar.close()

    # combine from the files, so every way of running gives the same dataset
    parts = []
    for case in cases:
        ds = have[case.index] if case.index in have else load_netcdf(cache_dir / f"{case.key}.nc")
        ds.attrs.pop("runner_params", None)
        parts.append((case.index, ds))
    combined = combine_cases(grid_, parts)
    status = combined["status"].values
    n_failed = int(np.sum((status != OK) & (status != "skipped")))
    post_error = None
    if study.post is not None:
        try:
            combined = study.post(combined)
        except Exception as exc:  # noqa: BLE001 - e.g. no case has the variable post needs
            if not n_failed:
                raise
            post_error = _describe(exc)  # the failed cases explain it: write what there is
    combined = annotate(combined, study.meta, strict=True)
    attrs = dict(combined.attrs)
    attrs.update(provenance(study.name, fixed))
    attrs.update(description=study.description, grid=attr_value(grid_), grid_dims=attr_value(list(grid_)),
                 quick=int(bool(quick)), n_cases=len(cases), n_failed=n_failed)
    if post_error:
        attrs["post_error"] = f"post() was not applied: {post_error}"
    combined.attrs = attrs
    path = write_netcdf(combined, out / f"{study.name}.nc")

    run = StudyRun(study.name, path, combined, len(cases), n_cached, len(todo), n_failed,
                   time.monotonic() - t0, post_error=post_error)
    if figures:
        try:
            from .plotting import study_figures
            run.figures = study_figures(path, out / study.name, study)
        except Exception as exc:  # noqa: BLE001 - the data are written; say what went wrong
            run.figure_error = _describe(exc)
    _log(verbose, f"[{study.name}] done in {_clock(run.seconds)}: {len(todo)} run, {n_cached} cached, "
                  f"{n_failed} failed -> {path}"
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
                                          figures=not args.no_figures)))
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
    ``study`` object (a study script anywhere runs).  argv: the options (default ``sys.argv[1:]``).
    Returns the exit status.

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


def summary_table(ds: xr.Dataset) -> str:
    """One row per case: the grid parameters, the status and the per-case metrics."""
    gdims = json.loads(ds.attrs["grid_dims"]) if "grid_dims" in ds.attrs else list(ds["status"].dims)
    per_case = [n for n in ds.data_vars if set(ds[n].dims) <= set(gdims)
                and n not in ("status", "message", "case_attrs") and ds[n].dtype.kind in "fiu"]
    metrics = [n for n in SUMMARY_COLUMNS if n in per_case] + [n for n in per_case if n not in SUMMARY_COLUMNS]
    header = list(gdims) + ["status"] + metrics
    rows = []
    status = ds["status"].transpose(*gdims)
    for index in itertools.product(*(range(ds.sizes[d]) for d in gdims)):
        sel = dict(zip(gdims, index))
        row = [_cell(ds[d].values[i]) for d, i in sel.items()]
        st = str(status.values[index])
        row.append(st)
        for name in metrics:
            var = ds[name].isel({d: i for d, i in sel.items() if d in ds[name].dims})
            row.append(_cell(var.values.item()))
        msg = str(ds["message"].transpose(*gdims).values[index])
        if msg:
            row.append(msg if len(msg) <= 70 else msg[:67] + "...")
        rows.append(row)
    widths = [max(len(str(r[i])) for r in [header] + rows if i < len(r)) for i in range(len(header))]

    def fmt(r):
        cells = [str(c).ljust(w) if i < len(gdims) + 1 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths))]
        return "  ".join(cells + list(r[len(widths):])).rstrip()

    title = f"{ds.attrs.get('study', '')}: {ds.attrs.get('description', '')}".strip(": ")
    return "\n".join([title, fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows])


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
