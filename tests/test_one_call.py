"""One f2py call per run: the extension module wrapped, its calls counted.

A fixed-step run, a variable-step run with t_eval and a batch of a built-in model (or of rigid
bodies, with a Lie-group method) each make exactly one call into pyint._fortran (the model block
resolved, the start levels checked, the run control reset and read, and the outputs at t_eval
interpolated and re-imposed inside it, as RADAU5's SOLOUT/CONTR5 give dense output inside the
integrator: Hairer, Wanner, Solving ODEs II, IV.8).  Each count is exact: one more call is a failure.
"""
import numpy as np
import pytest

import pyint
from pyint import GeneralizedAlpha, PendulumChain, RK4Index1, _fortran
from pyint.methods.lie.backward import LieDAE3
from pyint.methods.lie.genalpha import LieGeneralizedAlphaStab2
from pyint.models._fortran_model import builtin_id
from pyint.problems import PROBLEMS


@pytest.fixture
def calls(monkeypatch):
    """name -> number of calls into the extension module during the test (after the fixture)."""
    counted = {}
    for name in dir(_fortran):
        fn = getattr(_fortran, name)
        if name.startswith("_") or not callable(fn):
            continue

        def wrapper(*args, _fn=fn, _name=name, **kwargs):
            counted[_name] = counted.get(_name, 0) + 1
            return _fn(*args, **kwargs)
        monkeypatch.setattr(_fortran, name, wrapper)
    return counted


def _model():
    """A built-in model whose id is known: a name's id is looked up once per process (a fixed table,
    pyint.models._fortran_model.builtin_id), the run itself checks the parameters and sizes."""
    model = PendulumChain(n_links=3)
    builtin_id(model.fortran_name)
    return model, *model.initial_state([0.4, 0.2, -0.1])


@pytest.mark.parametrize("method", [GeneralizedAlpha(), RK4Index1()], ids=["genalpha", "rk4_index1"])
def test_a_fixed_step_run_is_one_call(calls, method):
    model, q0, v0 = _model()
    method.params()            # the method's constants are derived once (not per run)
    calls.clear()
    res = method.integrate(model, q0, v0, t_end=0.1, h=1e-2)
    assert res.status == "ok"
    assert calls == {"run": 1}


@pytest.mark.parametrize("method", [GeneralizedAlpha(), RK4Index1()], ids=["genalpha", "rk4_index1"])
def test_a_variable_step_run_with_t_eval_is_one_call(calls, method):
    model, q0, v0 = _model()
    method.params()
    calls.clear()
    t_eval = np.linspace(0.0, 0.5, 11)
    res = method.integrate(model, q0, v0, t_end=0.5, rtol=1e-6, t_eval=t_eval)
    assert res.status == "ok"
    assert np.array_equal(res.t, t_eval)
    assert calls == {"run": 1}


def test_a_lie_group_run_is_one_call(calls):
    """A Lie-group method on rigid bodies: a fixed-step run, and a variable-step run with t_eval whose
    outputs are interpolated on the group and re-imposed on the joints inside the run
    (fortran/core/dense_output.f90: lie_dense_outputs), each one call; a batch with t_eval too."""
    prob = PROBLEMS["hinged_pair"]
    q0, v0 = prob.initial_state
    res = LieDAE3().integrate(prob.model, q0, v0, t_end=0.1, h=1e-2)
    assert res.status == "ok" and calls == {"run": 1}
    calls.clear()
    t_eval = np.linspace(0.0, 0.3, 7)
    res = LieGeneralizedAlphaStab2().integrate(prob.model, q0, v0, t_end=0.3, rtol=1e-6, t_eval=t_eval)
    assert res.status == "ok" and np.array_equal(res.t, t_eval)
    # re-imposed: |Phi|, |B V| at round-off (measured 1.1e-16, 3.9e-16; bounds as test_adaptive.py's)
    eps = np.finfo(float).eps
    assert np.max(res.residual[:, 0]) <= 10 * eps * (1 + np.max(np.abs(res.x)))
    assert np.max(res.residual[:, 1]) <= 100 * eps * (1 + np.max(np.abs(res.v)))
    assert calls == {"run": 1}
    calls.clear()
    runs = LieGeneralizedAlphaStab2().integrate_batch(prob.model, [q0, q0], [v0, v0], 0.3, rtol=1e-6, t_eval=t_eval,
                                                      threads=1)
    assert [r.status for r in runs] == ["ok"] * 2 and np.array_equal(runs[1].q, res.q)
    assert calls == {"run_batch": 1}


def test_a_lie_group_start_is_checked_and_projected_inside_the_run(calls):
    """A rigid system's start: its rank test and its levels checked, or with project=True projected onto
    the joints (M-orthogonal, on the independent rows), by the run itself (fortran/core/lie_stepper.f90:
    lie_checked_start); a violated start is refused and worded from the run's diagnostics."""
    prob = PROBLEMS["hinged_pair"]
    s = prob.model
    q0, v0 = prob.initial_state
    dx = np.zeros_like(q0)
    dx[:3] = 1e-3                         # x of body 1 moved: Phi and B V off by 1e-3
    with pytest.raises(ValueError, match=r"the initial configuration violates the joints: max\|Phi\| = 1.000e-03"):
        LieDAE3().integrate(s, q0 + dx, v0 + 1e-3, t_end=0.1, h=1e-2)
    assert calls == {"run": 1}
    calls.clear()
    res = LieDAE3().integrate(s, q0 + dx, v0 + 1e-3, t_end=0.1, h=1e-2, project=True)
    assert res.status == "ok" and calls == {"run": 1}
    eps = np.finfo(float).eps           # the start on the joints (measured 1.1e-16, 3.7e-16)
    assert np.max(np.abs(s.phi(res.x[0], res.R[0]))) <= 10 * eps * (1 + np.max(np.abs(res.x[0])))
    assert np.max(np.abs(s.bmat(res.R[0]) @ res.v[0])) <= 100 * eps * (1 + np.max(np.abs(res.v[0])))


def test_a_batch_is_one_call(calls):
    models = [PendulumChain(n_links=2, length=[1.0, L]) for L in (0.5, 1.0, 2.0)]
    builtin_id(models[0].fortran_name)
    starts = [m.initial_state([0.5, 0.0]) for m in models]
    method = GeneralizedAlpha()
    method.params()
    calls.clear()
    runs = method.integrate_batch(models, [s[0] for s in starts], [s[1] for s in starts], t_end=0.1, h=1e-2,
                                  threads=1)
    assert [r.status for r in runs] == ["ok"] * 3
    assert calls == {"run_batch": 1}


def test_an_inconsistent_start_is_found_by_the_run_and_named(calls):
    """The start levels are checked inside the run (no query before it): the same ValueError."""
    model, q0, v0 = _model()
    with pytest.raises(ValueError, match="violates the holonomic constraints"):
        GeneralizedAlpha().integrate(model, q0 + 1e-3, v0, t_end=0.1, h=1e-2)
    with pytest.raises(ValueError, match="initial velocity violates"):
        GeneralizedAlpha().integrate(model, q0, v0 + 1e-3, t_end=0.1, h=1e-2)
    assert pyint.GeneralizedAlpha().integrate(model, q0 + 1e-3, v0, t_end=0.1, h=1e-2, project=True).status == "ok"
