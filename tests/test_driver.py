"""The one driver (fortran/core/driver.f90): every method runs through the same loop, batches
included, and its run maxima are taken over every step."""
import numpy as np
import pytest

import pyint.methods  # noqa: F401  (registers every method)
from pyint.integrator import METHODS
from pyint.problems import PROBLEMS, LieProblem

LIE_PROBLEMS = {n: p for n, p in PROBLEMS.items() if isinstance(p, LieProblem)}

#: (method, problem) pairs: every vector method on the first shared problem it supports whose
#: model has a Fortran twin (the batch runs built-in models in threads); every Lie-group method
#: on the first rigid-body problem.
_PAIRS = []
for _name, _cls in METHODS.items():
    if "R^n" not in _cls.spaces:
        continue
    for _pname, _prob in PROBLEMS.items():
        if _cls.accepts(_prob.model) and _prob.kinds and _prob.model.fortran_name is not None:
            _PAIRS.append((_name, _pname))
            break


#: Lie-group methods (a rigid-body system always runs in Fortran) on the first Lie problem.
_LIE_PAIRS = [(name, next(iter(LIE_PROBLEMS))) for name, cls in METHODS.items() if "R^n" not in cls.spaces]
_PAIRS += _LIE_PAIRS


def _geq(a, b):
    """a >= b, or both NaN: a level a method does not define (Galerkin-Lobatto has no acceleration)."""
    return bool(np.isnan(a) and np.isnan(b)) or a >= b


def _span(prob, nsteps=10):
    return nsteps * prob.h0, prob.h0


@pytest.mark.parametrize("method,problem", _PAIRS)
def test_integrate_batch_matches_integrate_bit_for_bit(method, problem):
    """Two trajectories in one batch (two OpenMP threads): each as integrate() returns it alone."""
    prob = PROBLEMS[problem]
    meth = METHODS[method]()
    q0, v0 = prob.initial_state
    t_end, h = _span(prob)
    one = meth.integrate(prob.model, q0, v0, t_end, h, every=3)
    batch = meth.integrate_batch([prob.model, prob.model], [q0, q0], [v0, v0], t_end, h, every=3, threads=2)
    assert len(batch) == 2
    for r in batch:
        for f in ("t", "q", "v", "a", "lam", "residual", "energy"):
            np.testing.assert_array_equal(getattr(r, f), getattr(one, f), err_msg=f)
        for name, x in one.extra.items():   # the method's auxiliary arrays (momenta p, ...)
            if name != "step_max":
                np.testing.assert_array_equal(r.extra[name], x, err_msg=name)
        stats = {k: v for k, v in r.stats.items() if k not in ("batch_size", "threads")}
        assert stats == one.stats
        assert r.extra.get("step_max") == one.extra.get("step_max")
        assert r.stats["batch_size"] == 2    # one driver call, not a loop over integrate()


#: The pairs whose method runs the problem with variable steps (rtol: a local error estimate).
_ADAPTIVE_PAIRS = [(m, p) for m, p in _PAIRS if METHODS[m]().adaptive_refusal(PROBLEMS[p].model) is None]


@pytest.mark.parametrize("method,problem", _ADAPTIVE_PAIRS)
def test_variable_step_batch_matches_integrate_bit_for_bit(method, problem):
    """Variable steps in a batch (two OpenMP threads): each trajectory takes the steps integrate()
    takes alone (the same accepted step sizes, states and counts), also with outputs at t_eval
    (on a Lie group too: interpolated in the algebra)."""
    prob = PROBLEMS[problem]
    meth = METHODS[method]()
    q0, v0 = prob.initial_state
    t_end = prob.t_end / 4
    for t_eval in (None, np.linspace(0.0, t_end, 5)):
        one = meth.integrate(prob.model, q0, v0, t_end, rtol=1e-5, t_eval=t_eval)
        batch = meth.integrate_batch(prob.model, [q0, q0], [v0, v0], t_end, rtol=1e-5, t_eval=t_eval, threads=2)
        for r in batch:
            np.testing.assert_array_equal(r.h, one.h)
            for f in ("t", "q", "v", "a", "lam", "residual"):
                np.testing.assert_array_equal(getattr(r, f), getattr(one, f), err_msg=f)
            stats = {k: v for k, v in r.stats.items() if k not in ("batch_size", "threads")}
            assert stats == one.stats and r.stats["batch_size"] == 2
            assert r.extra.get("step_max") == one.extra.get("step_max")


def test_variable_step_batch_of_a_parameter_sweep():
    """A sweep of masses with rtol: every trajectory chooses its own steps (their counts differ),
    each equal to its own integrate() run; h and rtol together are refused as in integrate()."""
    from pyint.errors import IntegrationError
    from pyint.methods.genalpha import GeneralizedAlpha
    from pyint.models.pendulum_chain import PendulumChain
    models = [PendulumChain(2, mass=[1.0, m2], length=[1.0, 0.8]) for m2 in (0.5, 1.5, 4.0)]
    q0, v0 = models[0].initial_state(np.array([0.5, 1.0]))
    meth = GeneralizedAlpha()
    batch = meth.integrate_batch(models, q0, v0, 1.0, rtol=1e-5, threads=2)
    assert len({len(r.h) for r in batch}) == 3
    for m, r in zip(models, batch):
        one = meth.integrate(m, q0, v0, 1.0, rtol=1e-5)
        np.testing.assert_array_equal(r.h, one.h)
        np.testing.assert_array_equal(r.q, one.q)
        assert r.t[-1] == pytest.approx(1.0, abs=4 * np.finfo(float).eps)
    with pytest.raises(ValueError, match="not both"):
        meth.integrate_batch(models, q0, v0, 1.0, 0.01, rtol=1e-5)
    with pytest.raises(ValueError, match="atol is an option of variable steps"):
        meth.integrate_batch(models, q0, v0, 1.0, 0.01, atol=1e-5)
    with pytest.raises(IntegrationError, match="more than max_steps") as e:   # each trajectory's own limit
        meth.integrate_batch(models, q0, v0, 1.0, rtol=1e-5, max_steps=10)
    assert len(e.value.result.h) == 9


@pytest.mark.parametrize("method,problem", _PAIRS)
def test_step_maxima_bound_the_sample_maxima(method, problem):
    """The driver's maxima over every step are >= those over the samples (every = 4 keeps a
    quarter of the steps), and equal to them when every step is a sample."""
    prob = PROBLEMS[problem]
    meth = METHODS[method]()
    q0, v0 = prob.initial_state
    t_end, h = _span(prob, 16)
    sparse = meth.integrate(prob.model, q0, v0, t_end, h, every=4)
    full = meth.integrate(prob.model, q0, v0, t_end, h, every=1)
    sm = sparse.extra.get("step_max")
    assert sm is not None and sm == full.extra["step_max"]
    res = sparse.residual
    assert sm["eps_pos"] >= np.max(res[:, 0])
    assert sm["eps_vel"] >= np.max(res[:, [1, 3]])
    assert _geq(sm["eps_acc"], np.max(res[:, [2, 4]]))
    # with every step a sample, the step maxima are the sample maxima
    assert sm["eps_pos"] == np.max(full.residual[:, 0])
    assert sm["eps_vel"] == np.max(full.residual[:, [1, 3]])
    assert _geq(sm["eps_acc"], np.max(full.residual[:, [2, 4]])) and _geq(np.max(full.residual[:, [2, 4]]), sm["eps_acc"])
    if full.energy is not None:
        assert sm["energy_change"] == np.max(np.abs(full.energy - full.energy[0]))
        assert sm["energy_change"] >= np.max(np.abs(sparse.energy - sparse.energy[0]))


@pytest.mark.parametrize("backend", ["fortran", "callback"])
def test_rank_deficient_constraints_at_the_start_raise_a_clear_error(backend):
    """The coupled snakeboard's A loses rank at its rank-drop times (test_builtin_models.py): a start
    there is a singular position, not a redundant constraint set (A has full rank nearby), and is
    refused with a ValueError that says so, for the built-in model and through the callback
    (fortran/core/reduced_model.f90: drop_redundant_rows measures the rank again nearby)."""
    from pyint.methods.genalpha import GeneralizedAlpha
    from pyint.models import SnakeboardCoupled
    sc = SnakeboardCoupled()
    q, v = sc.initial_state("general")
    t = sc.rank_drop_times(q, v, 100.0)[0]
    q = q.copy()
    q[4] += v[4] * t
    a, b = sc.nh_A(0.0, q), sc.nh_b(0.0, q)
    v = v - np.linalg.pinv(a) @ (a @ v + b)      # a velocity the rank-1 constraints admit
    with pytest.raises(ValueError, match="constraint Jacobian .* singular.*a start at a singular position"):
        GeneralizedAlpha().integrate(sc, q, v, 0.1, 0.01, backend=backend)


@pytest.mark.parametrize("method,problem", [p for p in _PAIRS if "R^n" in METHODS[p[0]].spaces])
def test_builtin_model_time_loop_never_calls_python(method, problem):
    """The driver called directly (f2py entry run) with a counting callback: no call for a built-in
    model, and many through the callback model."""
    from pyint.models._fortran_model import model_args
    from pyint._driver import _option_arrays, call_run, driver_buffers
    from pyint._control import kernel_run
    prob = PROBLEMS[problem]
    m, meth = prob.model, METHODS[method]()
    q0, v0 = prob.initial_state
    iopt, ropt = _option_arrays(meth._ropt_start(m, 0.0, q0, v0))
    nl = m.n_hol + m.n_nonhol

    def run(backend, cb, steps=20):
        a = model_args(m, backend)
        buf = driver_buffers(m.n, m.n, nl, steps, 1, nstats=len(meth.STATS), naux=sum(meth.kernel_aux(m).values()),
                             nres=meth.NRES)
        with kernel_run(reports=True):   # the run resets the run control itself
            return call_run(meth.KERNEL, dict(a, usercb=cb or a["usercb"]), m.n, iopt, ropt, 0.0, prob.h0, steps, 1,
                            q0, v0, buf)[0]

    calls = []

    def counting(req, t, q, v, w, out):  # f2py reads the callback's signature: explicit arguments
        calls.append(req)
        inner(req, t, q, v, w, out)

    inner = model_args(m, "callback")["usercb"]
    istat = run("fortran", counting)
    assert istat[0] == 0 and istat[1] == 20 and istat[2] == 21
    assert calls == []
    istat = run("callback", counting)
    assert istat[0] == 0 and len(calls) > 20


def test_integrate_cases_batches_vector_and_lie_methods():
    """pyint.batch groups every method with a stepper into batch calls, rigid-body systems included."""
    from pyint.batch import integrate_cases
    cases, alone = [], []
    for method, problem, problems in (("genalpha", "chain2", PROBLEMS), ("rk4_index1", "snakeboard", PROBLEMS),
                                      ("lie_genalpha", next(iter(LIE_PROBLEMS)), LIE_PROBLEMS)):
        prob = problems[problem]
        meth = METHODS[method]()
        q0, v0 = prob.initial_state
        t_end, h = _span(prob)
        one = meth.integrate(prob.model, q0, v0, t_end, h)
        for _ in range(2):
            cases.append(dict(method=meth, model=prob.model, q0=q0, v0=v0, t_end=t_end, h=h))
            alone.append(one)
    results = integrate_cases(cases, threads=2)
    for r, one in zip(results, alone):
        assert r.stats["batch_size"] == 2
        np.testing.assert_array_equal(r.q, one.q)
        np.testing.assert_array_equal(r.lam, one.lam)
