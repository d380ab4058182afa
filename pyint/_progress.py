"""The one progress line of pyint: a study's cases (pyint.study.runner) and a long single
``integrate`` (the time the kernel has reached).

:class:`Progress` draws ``[label] 7/12 cases, 00:12 elapsed, ~00:09 left`` on one updating line
of a terminal.  :func:`run_progress` draws it for one kernel call without touching the time loop:
each driver already polls the run control once per step (fortran/core/control.c, for Ctrl-C),
and that poll now also stores the time reached; a SIGALRM timer (``signal.setitimer``) makes the
poll's ``PyErr_CheckSignals`` run a handler that reads that time and redraws the line, once a
second after the first ``PROGRESS_AFTER`` seconds.  Nothing else runs per step.
"""
from __future__ import annotations

import contextlib
import math
import signal
import sys
import threading
import time

#: Seconds a single run goes before its progress line appears (a shorter run prints nothing).
PROGRESS_AFTER = 2.0
#: Seconds between two redraws of the line.
PROGRESS_EVERY = 1.0


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60:02d}:{rest % 60:02d}"


class Progress:
    """``[study] 7/12 cases, 00:12 elapsed, ~00:09 left`` on one updating line of a terminal.

    Silent when ``stream`` is not a terminal (or ``enabled=False``).  The
    estimate assumes the remaining work costs what the work done so far did.
    ``unit``: "cases" (counts) or a time unit, e.g. "s": the line then reads
    ``[label] t = 3.2 of 10 s, ...`` (``done`` the time reached, ``total`` the end).
    """

    def __init__(self, label, total, done=0, stream=None, enabled=None, unit="cases"):
        self.label, self.total, self.done, self.unit = label, total, done, unit
        self.stream = sys.stderr if stream is None else stream
        self.enabled = (self.stream.isatty() if hasattr(self.stream, "isatty") else False) \
            if enabled is None else enabled
        self.start, self.run, self._width = time.monotonic(), 0, 0

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        if self.unit == "cases":
            text = f"[{self.label}] {self.done}/{self.total} cases, {_clock(elapsed)} elapsed"
        else:
            text = f"[{self.label}] t = {self.done:.4g} of {self.total:.4g} {self.unit}, {_clock(elapsed)} elapsed"
        left = self.total - self.done
        if self.run > 0 and left > 0:
            text += f", ~{_clock(elapsed / self.run * left)} left"
        return text

    def update(self, n=1):
        """``n`` more done."""
        self.done += n
        self.run += n
        self._draw()

    def set(self, done):
        """``done`` reached (a time); the work done since the start counts for the estimate."""
        self.run += done - self.done
        self.done = done
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


@contextlib.contextmanager
def run_progress(label, t0, t_end, enabled=None, stream=None, after=None, every=None):
    """The progress line of one kernel call integrating from t0 to t_end (see the module docstring).

    ``enabled``: None (when ``stream``, default stderr, is a terminal), True or False.  Nothing is
    drawn before ``after`` seconds (default :data:`PROGRESS_AFTER`).  Only in the main thread (where
    Python runs signal handlers), on a platform with ``setitimer``, and when no SIGALRM handler of
    the caller's own is installed (it is left alone); else the run goes on without a line.
    """
    from . import _fortran
    stream = sys.stderr if stream is None else stream
    if enabled is None:
        enabled = stream.isatty() if hasattr(stream, "isatty") else False
    if enabled not in (True, False):
        raise TypeError(f"progress must be None, True or False, got {enabled!r}")
    if (not enabled or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, None)):
        yield None
        return
    span = float(t_end) - float(t0)
    bar = Progress(label, float(t_end), done=float(t0), stream=stream, enabled=True, unit="s")
    bar.start = time.monotonic()

    def tick(signum, frame):
        t = float(_fortran.control_progress())
        if math.isfinite(t) and (t - t0) * span >= 0:
            bar.set(t)

    previous = signal.signal(signal.SIGALRM, tick)
    signal.setitimer(signal.ITIMER_REAL, PROGRESS_AFTER if after is None else after,
                     PROGRESS_EVERY if every is None else every)
    try:
        yield bar
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        bar.close()
