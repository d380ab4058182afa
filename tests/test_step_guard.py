"""The fixed-step guard (fortran/core/driver.f90: step_guard): a run that turns into a step-to-step
oscillation ends with StepTooLargeError naming t and the cure, never with status "ok"; a coarse step
that follows the solution is left alone."""
import numpy as np
import pytest

import pyint
from pyint.methods.genalpha import GeneralizedAlpha
from pyint.models.iftomm import n_four_bar, n_four_bar_state


def _indicator(r):
    """h |v_{n+1} - 2 v_n + v_{n-1}| / (1 + |q|) at every step of a run sampled at every step."""
    d2 = np.abs(np.diff(r.v, 2, axis=0)).max(axis=1)
    return np.diff(r.t)[1:] * d2 / (1 + np.abs(r.q[2:]).max(axis=1))


def test_genalpha_through_a02_singularity_at_a_coarse_step_stops_by_name():
    # h = 0.05: near the crossing at t ~ 4.7 the step turns into a step-to-step oscillation; unchecked,
    # the run came back "ok" with the energy at 1e5 J (35 J at the start)
    model = n_four_bar(2)
    q0, v0 = n_four_bar_state(model, 0.0, 1.0)
    with pytest.raises(pyint.StepTooLargeError) as info:
        GeneralizedAlpha().integrate(model, q0, v0, 10.0, 0.05)
    err = info.value
    # measured: t = 5.1 (the steps to 5.05 returned), where the run without the check went on
    # to 1e5 J by t = 6.8
    assert 4.0 < err.time < 5.3
    assert "step_too_large" == err.result.status and "smaller h" in str(err)
    assert err.result.t[-1] == pytest.approx(err.time - 0.05)


def test_a_step_that_follows_the_solution_is_far_below_the_guard():
    # the same mechanism at h = 0.025 follows the solution through every crossing: the indicator stays
    # at 2.1e-3 (measured), 48 times below the guard's 0.1
    model = n_four_bar(2)
    q0, v0 = n_four_bar_state(model, 0.0, 1.0)
    r = GeneralizedAlpha().integrate(model, q0, v0, 10.0, 0.025)
    assert r.status == "ok"
    assert _indicator(r).max() < 0.01


def test_a_coarse_high_order_step_is_not_an_oscillation():
    # Galerkin-Lobatto s = 8 on the skate at h = 1/2 (seed 004's coarsest eta): the indicator alone reaches
    # 0.25 (measured), above the guard's 0.1, but the velocity does not alternate step after step
    from pyint.methods.galerkin import GalerkinLobatto
    from pyint.models import Skate
    model = Skate()
    q0, v0 = model.initial_state()
    r = GalerkinLobatto(s=8, tol=1e-12).integrate(model, q0, v0, 10.0, 0.5)
    assert r.status == "ok"
    assert _indicator(r).max() > 0.1
