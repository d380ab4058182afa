"""Files in pyint's caches (study cases, reference solutions, compiled models): written whole or not
at all, and the temporaries of killed writers collected.

A file is written to ``<name>.tmp-<pid>`` (``<name>.tmp-<pid>-<thread>`` when threads may write it)
beside its final name and renamed (atomic on POSIX), so a reader never sees half a file; a writer
killed before the rename (SIGKILL, power loss) leaves its temporary, which
:func:`remove_stale_temporaries` removes once its process is gone.  :func:`atomic_path` is that
protocol for a writer that needs a file name (NetCDF); :func:`held_interrupt` holds Ctrl-C while a
write that must not be cut runs.
"""
from __future__ import annotations

import contextlib
import glob
import os
import threading
from pathlib import Path


def temporary_name(path, per_thread=False) -> Path:
    """``<path>.tmp-<pid>`` (``-<thread id>`` appended with ``per_thread``): the name a writer of
    ``path`` uses before renaming, recognisable by :func:`remove_stale_temporaries`."""
    path = Path(path)
    suffix = f"{os.getpid()}-{threading.get_ident()}" if per_thread else f"{os.getpid()}"
    return path.with_name(f"{path.name}.tmp-{suffix}")


def write_bytes_atomic(path, data: bytes, mode=0o644) -> Path:
    """Write ``data`` to ``path`` through a per-thread temporary beside it and a rename; on any
    error the temporary is removed and an existing ``path`` is left as it was."""
    path = Path(path)
    tmp = temporary_name(path, per_thread=True)
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return path


@contextlib.contextmanager
def atomic_path(path):
    """The temporary name (:func:`temporary_name`) under which to write ``path``: when the block ends
    without error the temporary is fsynced and renamed to ``path``; on any error, Ctrl-C included, it is
    removed and an existing ``path`` is left as it was."""
    path = Path(path)
    tmp = temporary_name(path)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


@contextlib.contextmanager
def held_interrupt():
    """Hold Ctrl-C (SIGINT) while the block runs, then raise the KeyboardInterrupt it held.

    For the writes of the study process: a KeyboardInterrupt raised inside ``to_netcdf`` can leave the
    HDF5 lock of xarray's netCDF4 backend held and the cleanup waiting on it forever; held here, it
    arrives between two writes, when every file is complete.  A no-op outside the main thread (signals
    are delivered to the main thread only)."""
    import signal
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            if previous is signal.default_int_handler:
                raise KeyboardInterrupt
            if callable(previous):
                previous(signal.SIGINT, None)


def _writer_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (a killed writer whose parent has not reaped
    it yet is dead: its temporary will never be completed)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc (not Linux): alive as far as we can tell


def remove_stale_temporaries(directory, name="*") -> int:
    """Remove ``<name>.tmp-<pid>[-<thread>]`` files in ``directory`` (default: every name) whose
    writing process is gone (a run killed while writing); those of live processes are kept.
    Returns how many were removed."""
    removed = 0
    for tmp in Path(directory).glob(f"{glob.escape(name) if name != '*' else name}.tmp-*"):
        pid = tmp.name.rsplit(".tmp-", 1)[-1].partition("-")[0]
        if not pid.isdigit():
            continue
        if _writer_alive(int(pid)):
            continue
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
            removed += 1
    return removed
