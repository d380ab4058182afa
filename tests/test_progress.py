"""The progress line of a long single integrate (pyint/_progress.py): drawn from the poll the kernel
already makes once per step (a SIGALRM handler reads the time reached), silent unless asked for or on
a terminal, and without any effect on the result."""
import numpy as np
import pytest

import pyint._progress as progress_mod
from pyint import GeneralizedAlpha, PendulumChain


@pytest.fixture
def soon(monkeypatch):
    """The line from 50 ms on, redrawn every 50 ms (the defaults, 2 s and 1 s, would make the test long)."""
    monkeypatch.setattr(progress_mod, "PROGRESS_AFTER", 0.05)
    monkeypatch.setattr(progress_mod, "PROGRESS_EVERY", 0.05)


def _run(**kw):
    model = PendulumChain(n_links=2)
    q0, v0 = model.initial_state([np.pi / 3, np.pi / 2])
    # the callback path (Python model items): slow enough (~1 s) for several redraws
    return GeneralizedAlpha().integrate(model, q0, v0, t_end=2.0, h=1e-3, every=100, backend="callback", **kw)


def test_progress_line_shows_the_time_reached_and_changes_nothing(soon, capsys):
    shown = _run(progress=True)
    err = capsys.readouterr().err
    lines = [ln.strip() for ln in err.split("\r") if ln.strip()]
    assert lines, "no progress line was drawn"
    times = []
    for ln in lines:
        assert ln.startswith("[genalpha pendulum_chain_2] t = ") and " of 2 s, " in ln and "elapsed" in ln, ln
        times.append(float(ln.split("t = ")[1].split(" of")[0]))
    assert times == sorted(times) and 0 < times[0] and times[-1] <= 2.0
    assert err.endswith("\n")                       # the line is closed
    silent = _run(progress=False)
    assert capsys.readouterr().err == ""
    for key in ("t", "q", "v", "a", "lam"):          # the line costs the run nothing but a store per step
        np.testing.assert_array_equal(getattr(shown, key), getattr(silent, key))


def test_progress_default_is_silent_off_a_terminal(soon, capsys):
    _run()                                           # progress=None: stderr (captured) is no terminal
    assert capsys.readouterr().err == ""
    with pytest.raises(TypeError, match="progress must be None, True or False"):
        _run(progress="yes")
