"""Run control around one kernel call (fortran/core/control.c).

Every integrator runs its Fortran kernel inside :func:`kernel_run`:

* the flags of the C shim are cleared before the call;
* a callback model (``Model.fortran_callback``) that raises does not unwind
  through the Fortran frames (f2py would longjmp over them and leak the
  kernel's workspace): the exception is kept here, the item is filled with NaN
  and the kernel is asked to stop at its next per-step poll, returns normally,
  frees its workspace, and the exception is raised again by the integrator;
* Ctrl-C: during the call Python's default SIGINT handler is replaced by one
  that only raises a flag (a KeyboardInterrupt raised at an arbitrary bytecode
  of a callback could escape any try); the kernel runs Python's signal handlers
  once per step, sees the flag and stops with STATUS_INTERRUPTED; the integrator
  raises :class:`~pyint.errors.Interrupted` (a KeyboardInterrupt) carrying the
  steps computed so far.  A handler of the user's own stays in place;
* a LAPACK/BLAS argument error reaches pyint's own ``xerbla`` (exported from
  the extension, in place of the library's, which stops the process): the
  kernel stops and the integrator raises :class:`~pyint.errors.LapackError`
  naming the routine and the argument.

A run (the f2py entries ``run``, ``run_batch``) clears the records itself and returns them
(``kernel_run(reports=True)``, then :meth:`KernelRun.report`): the run is one call.
"""
from __future__ import annotations

import _signal
import contextlib
import signal
import threading

from . import _fortran

_local = threading.local()


class KernelRun:
    """What happened during one kernel call (filled in by :func:`kernel_run`)."""

    def __init__(self):
        self.error: BaseException | None = None   # the first exception of a callback item
        self.interrupted = False
        self.lapack: tuple[str, int] | None = None  # (routine, argument number)

    def keep(self, exc):
        """Record the exception of a callback item and ask the kernel to stop."""
        if self.error is None:
            self.error = exc
        _fortran.control_request_abort()

    @property
    def aborted(self):
        return self.error is not None

    def report(self, flags):
        """The run control's records as a run returned them (its ``ctl[:3]``: interrupted,
        aborted, LAPACK argument); the routine's name only after a LAPACK error."""
        self.interrupted = self.interrupted or bool(flags[0])
        if flags[2] != 0:
            _, name = _fortran.control_state()
            self.lapack = (bytes(name).decode("ascii", "replace").strip() or "?", int(flags[2]))


def current():
    """The KernelRun of the kernel call in progress in this thread, or None."""
    return getattr(_local, "run", None)


@contextlib.contextmanager
def kernel_run(reports=False):
    """Context of one kernel call; yields its :class:`KernelRun`.  ``reports``: the call clears
    the records at its start and returns them (a run: the caller passes them to
    :meth:`KernelRun.report`); else they are cleared and read here, around the call."""
    run = KernelRun()
    outer = current()
    _local.run = run
    if not reports:
        _fortran.control_reset()
    try:
        with sigint_as(_flag_interrupt, outer is None):
            yield run
    finally:
        _local.run = outer
        if not reports:
            flags, name = _fortran.control_state()
            run.interrupted = run.interrupted or bool(flags[0])
            if flags[2] != 0:
                run.lapack = (bytes(name).decode("ascii", "replace").strip() or "?", int(flags[2]))


@contextlib.contextmanager
def sigint_as(on_interrupt, replace=True):
    """Ctrl-C calls ``on_interrupt(signum, frame)`` instead of raising KeyboardInterrupt, for the
    duration (the previous handler is restored after): only in the main thread (where Python runs
    signal handlers) and when Python's default handler is in place (a handler of the user's own
    stays).  For code that calls back into Python from C, where a KeyboardInterrupt raised at an
    arbitrary bytecode of a callback is lost or escapes any try: the kernels (:func:`kernel_run`)
    and IDA's residual in pyint.reference (scikits.odes prints and ignores its exceptions)."""
    # (_signal: the C functions under signal.signal and signal.getsignal, without their wrappers'
    # conversions of the number and the handlers to and from enums: 9 us of every run, here 2 us)
    previous = None
    if replace and threading.current_thread() is threading.main_thread() \
            and _signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous = _signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield
    finally:
        if previous is not None:
            _signal.signal(signal.SIGINT, previous)


def _flag_interrupt(signum, frame):
    """SIGINT during a kernel call: the kernel stops at its next per-step poll.  Kept on the
    KernelRun too: a Ctrl-C just before a run's own reset of the records is not lost."""
    run = current()
    if run is not None:
        run.interrupted = True
    _fortran.control_request_interrupt()


def lapack_selfcheck():
    """Provoke a LAPACK argument error (DGETRF, argument 4) and return what pyint's
    xerbla recorded: ("DGETRF", 4) when it is in charge (the library's own would
    have stopped the process)."""
    with kernel_run() as run:
        info = _fortran.lapack_selfcheck()
    return run.lapack, int(info)
