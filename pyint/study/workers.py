"""Where a study's cases run: one case prepared and checked (:func:`failed_case`, the dataset a
case must return), and batches of cases in this process, in local worker processes (with their
parent-death signal and watchdog) or on a Dask cluster.  :func:`pyint.study.runner.run_study`
schedules the batches and records what they wrote; the guarantees (crashes retried, Ctrl-C) are
in pyint/study/runner.py's docstring.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import xarray as xr

from .._files import _writer_alive, held_interrupt
from .cache import write_shard
from .datasets import annotate
from .declaration import OK


# -- one case ----------------------------------------------------------------------------
def failed_case(status: str, message: str) -> xr.Dataset:
    """The dataset of a case that produced no data."""
    return xr.Dataset({"status": ((), status), "message": ((), message)})


def _describe(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _add_scalars(ds: xr.Dataset, extra: dict) -> xr.Dataset:
    """``ds`` with the scalar variables ``extra`` (name -> ((), value)) added.

    ``Dataset.assign`` aligns and merges: 0.3 ms, more than the rest of a 1-ms case's bookkeeping.
    New scalars change no dimension and no index, so they go in through the constructor xarray's
    own methods use (``Dataset._replace``, 0.02 ms; xarray is pinned in requirements.lock), and
    through ``assign`` should that private method ever change."""
    try:
        variables = dict(ds._variables)
        for name, (_, value) in extra.items():
            variables[name] = xr.Variable((), value)
        return ds._replace(variables)
    except (AttributeError, TypeError):
        return ds.assign(extra)


def _prepare_case(ds, params, meta) -> xr.Dataset:
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"run_case returned {type(ds).__name__}, expected an xarray.Dataset")
    names = (set(map(str, ds.dims)) | set(map(str, ds.variables))) & set(params)
    # a scalar variable holding the case's own value of a parameter (the rtol, atol that a variable-step
    # Result.to_xarray() records) repeats it: the parameter's coordinate holds it
    same = sorted(k for k in names if k in ds.data_vars and ds[k].ndim == 0 and ds[k].values.item() == params[k])
    clash = sorted(names - set(same))
    if clash:
        raise ValueError(f"the case dataset uses parameter names {clash} as dimensions or variables")
    if same:
        ds = ds.drop_vars(same)
    extra = {}
    if "status" in ds:
        st = ds["status"]
        if st.ndim or not isinstance(st.values.item(), str):
            raise ValueError("a case's 'status' must be a scalar string")
    else:
        extra["status"] = ((), OK)
    if "message" not in ds:
        extra["message"] = ((), "")
    if extra:
        ds = _add_scalars(ds, extra)
    flags = [name for name, var in ds.variables.items() if var.dtype == bool]
    if flags:
        ds = ds.assign({name: ds[name].astype(np.int8) for name in flags})
    return annotate(ds, meta, strict=True)


def _execute_case(run_case, params, meta) -> xr.Dataset:
    """Run one case anywhere (this process, a pool process, a Dask worker); never raises."""
    try:
        return _prepare_case(run_case(dict(params)), params, meta)
    except Exception as exc:  # noqa: BLE001 - a failed case is a result
        return failed_case("failed", _describe(exc))


# -- where cases run ---------------------------------------------------------------------------
# Cases run in batches (lists of (key, params)); whoever runs a batch writes it as one shard of the
# study's store (pyint.study.cache.write_shard) and returns (shard name, keys, statuses), which the study
# process records (``record``).  At most 2 batches per worker slot are in flight: the client holds a
# bounded number of futures whatever N, and a kill loses at most those batches.  On Ctrl-C
# (KeyboardInterrupt) a runner stops its workers at once, records every batch already written and
# re-raises: nothing computed is lost but the batches in flight, nothing is left running.
CRASHED = ("the worker process died while running this case "
           "(segmentation fault, os._exit, out of memory, ...)")

#: prctl(2) option: the signal this process gets when its parent dies (Linux).
PR_SET_PDEATHSIG = 1

#: How often (seconds) a worker's watchdog thread checks that the study process is alive.
WATCHDOG_PERIOD = 0.5

#: Cases per batch at most (default batch size: the cases to run spread over 8 batches per worker slot,
#: 1 to MAX_BATCH); batches in flight per worker slot.
MAX_BATCH = 100
IN_FLIGHT_PER_SLOT = 2

#: Seconds between two looks at the Dask futures in flight.
POLL = 0.02


def batch_size_for(n_todo: int, slots: int, requested: int | None = None) -> int:
    """Cases per batch: ``requested``, or enough batches to keep ``slots`` workers busy (8 each) with at
    most :data:`MAX_BATCH` cases each (a small sweep runs one case per batch, as before batching)."""
    if requested is not None:
        return requested
    return max(1, min(MAX_BATCH, n_todo // (8 * max(1, slots))))


def _run_batch(run_case, meta, shard_dir, batch):
    """Run a batch of cases [(key, params), ...] and write them as one shard (on the worker that ran
    them); returns (shard name, keys, statuses).  Raises only for the shard's write."""
    done = [(key, params, _execute_case(run_case, params, meta)) for key, params in batch]
    return write_shard(shard_dir, done)


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
        return os.getppid() != first_ppid or not _writer_alive(parent_pid)

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


def _run_in_process(study, batches, shard_dir, record):
    for batch in batches:
        done = []
        try:
            for key, params in batch:
                done.append((key, params, _execute_case(study.run_case, params, study.meta)))
        finally:  # also on Ctrl-C: the cases computed so far are kept
            if done:
                with held_interrupt():
                    record(*write_shard(shard_dir, done))


def _record_failed(shard_dir, record, batch, status, message):
    """Cases that produced no result (their worker died, their arguments did not pickle): written by the
    study process, as one shard."""
    with held_interrupt():
        record(*write_shard(shard_dir, [(key, params, failed_case(status, message)) for key, params in batch]))


def _run_processes(study, batches, workers, shard_dir, record):
    """Local process pool.  A dead worker breaks the pool: the unfinished batches are resubmitted; a
    case caught in two breaks runs alone, and if it dies alone it is recorded as crashed."""
    from collections import deque
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    breaks: dict[str, int] = {}
    source, retry, alone, exhausted = iter(batches), deque(), deque(), False
    while True:
        if retry or not exhausted:
            size, solo = workers, False
        elif alone:
            size, solo = 1, True
        else:
            return
        pool = ProcessPoolExecutor(max_workers=size, initializer=_worker_init, initargs=(os.getpid(),))
        inflight, broken, clean = {}, False, False
        try:
            while True:
                while not broken and len(inflight) < IN_FLIGHT_PER_SLOT * size:
                    if solo:
                        if inflight or not alone:
                            break
                        batch = [alone.popleft()]
                    elif retry:
                        batch = retry.popleft()
                    else:
                        batch = next(source, None)
                        if batch is None:
                            exhausted = True
                            break
                    try:
                        inflight[pool.submit(_run_batch, study.run_case, study.meta, str(shard_dir), batch)] = batch
                    except BrokenProcessPool:  # a worker died while we were still submitting
                        if not inflight:
                            raise RuntimeError("the local process pool cannot start its workers") from None
                        (alone if solo else retry).append(batch[0] if solo else batch)
                        broken = True
                if not inflight:
                    break
                done, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for fut in done:
                    batch = inflight.pop(fut)
                    try:
                        result = fut.result()
                    except BrokenProcessPool:
                        broken = True
                        again = []
                        for key, params in batch:
                            breaks[key] = breaks.get(key, 0) + 1
                            if solo and breaks[key] >= 2:
                                _record_failed(shard_dir, record, [(key, params)], "crashed", CRASHED)
                            elif breaks[key] >= 2:
                                alone.append((key, params))
                            else:
                                again.append((key, params))
                        if again:
                            retry.append(again)
                        continue
                    except OSError as exc:  # the shard could not be written: not the cases' fault
                        raise RuntimeError(f"a worker could not write its results to {shard_dir}: {exc}") from exc
                    except Exception as exc:  # noqa: BLE001 - e.g. the arguments did not pickle
                        _record_failed(shard_dir, record, batch, "failed", _describe(exc))
                        continue
                    with held_interrupt():
                        record(*result)
            clean = True
        except KeyboardInterrupt:
            _stop_workers(pool)
            for fut in inflight:  # written by their workers: record them (a later run would find them anyway)
                if fut.done() and not fut.cancelled() and fut.exception() is None:
                    record(*fut.result())
            raise
        finally:
            pool.shutdown(wait=clean, cancel_futures=True)


def _run_dask(study, make_batches, address, shard_dir, record):
    """On a Dask distributed cluster: batches submitted as slots free up (the futures' states polled
    every :data:`POLL` s: Ctrl-C and a lost scheduler are seen at once); a batch that kills its workers (KilledWorker) is split into
    single cases, a single case that does is recorded as crashed.  A batch lost with the scheduler
    (cancelled, lost, a connection error) is never recorded: the run stops with an error and a rerun
    resumes from what the workers wrote (dask.distributed docs, "Futures": submit, status, cancel).""" 
    from collections import deque
    try:
        from distributed import Client
    except ImportError as exc:
        raise RuntimeError("a Dask scheduler needs dask.distributed: pip install 'dask[distributed]'") from exc
    try:
        client = Client(address, timeout="20s", set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise RuntimeError(f"cannot connect to the Dask scheduler at {address}: {exc}") from exc
    with client:
        slots = max(1, sum(client.nthreads().values()))
        source, retry, exhausted = iter(make_batches(slots)), deque(), False
        inflight: dict = {}
        try:
            while True:
                while len(inflight) < IN_FLIGHT_PER_SLOT * slots:
                    if retry:
                        batch = retry.popleft()
                    else:
                        batch = None if exhausted else next(source, None)
                        if batch is None:
                            exhausted = True
                            break
                    fut = client.submit(_run_batch, study.run_case, study.meta, str(shard_dir), batch, pure=False)
                    inflight[fut] = batch
                if not inflight:
                    return
                if client.status not in ("running", "newly-created"):
                    raise RuntimeError(f"lost the Dask scheduler at {address} (client {client.status})")
                lost = [f for f in inflight if f.status in ("lost", "cancelled")]
                if lost:
                    raise RuntimeError(f"the Dask scheduler at {address} lost {len(lost)} batches in flight "
                                       f"({lost[0].status}): nothing of them is recorded as failed")
                done = [f for f in inflight if f.done()]
                if not done:
                    time.sleep(POLL)  # polled: Ctrl-C and a lost scheduler are seen within POLL
                    continue
                for fut in done:
                    batch = inflight.pop(fut)
                    if fut.status == "finished":
                        with held_interrupt():
                            record(*fut.result())
                    elif fut.status == "error":
                        exc = fut.exception()
                        if type(exc).__name__ == "KilledWorker":
                            if len(batch) > 1:
                                retry.extend([case] for case in batch)
                            else:
                                _record_failed(shard_dir, record, batch, "crashed", _describe(exc))
                        elif isinstance(exc, OSError):
                            raise RuntimeError(f"a worker could not write its results to {shard_dir}: {exc}")
                        else:
                            _record_failed(shard_dir, record, batch, "failed", _describe(exc))
                    else:
                        raise RuntimeError(f"the Dask scheduler at {address} lost a batch ({fut.status}): "
                                           "nothing of it is recorded as failed")
                    fut.release()
        except KeyboardInterrupt:
            finished = [f for f in inflight if f.status == "finished"]
            client.cancel([f for f in inflight if f.status != "finished"])
            for fut in finished:
                with contextlib.suppress(Exception):
                    record(*fut.result(timeout=1))
            raise
