"""The one driver (fortran/core/driver.f90): every method runs through the same loop, batches
included, and its run maxima are taken over every step."""
import numpy as np
import pytest

import pyint.methods  # noqa: F401  (registers every method)
from pyint.integrator import METHODS
from pyint.problems import LIE_PROBLEMS, PROBLEMS

#: (method, problem) pairs: every vector method on the first shared problem it supports whose
#: model has a Fortran twin (the batch runs built-in models in threads); every Lie-group method
#: that is a stepper of the driver on the first rigid-body problem.
_PAIRS = []
for _name, _cls in METHODS.items():
    if "lie_group" in _cls.supports:
        if _cls.KERNEL is not None:
            _PAIRS.append((_name, next(iter(LIE_PROBLEMS))))
        continue
    for _pname, _prob in PROBLEMS.items():
        if _prob.kinds <= _cls.supports and _prob.kinds and _prob.model.fortran_name is not None:
            _PAIRS.append((_name, _pname))
            break


def _geq(a, b):
    """a >= b, or both NaN: a level a method does not define (Galerkin-Lobatto has no acceleration)."""
    return bool(np.isnan(a) and np.isnan(b)) or a >= b


def _span(prob, nsteps=10):
    return nsteps * prob.h0, prob.h0


@pytest.mark.parametrize("method,problem", _PAIRS)
def test_integrate_batch_matches_integrate_bit_for_bit(method, problem):
    prob = {**PROBLEMS, **LIE_PROBLEMS}[problem]
    meth = METHODS[method]()
    q0, v0 = prob.initial_state
    t_end, h = _span(prob)
    one = meth.integrate(prob.model, q0, v0, t_end, h, every=3)
    batch = meth.integrate_batch(prob.model, np.array([q0, q0]), np.array([v0, v0]), t_end, h, every=3, threads=2)
    assert len(batch) == 2
    for r in batch:
        for f in ("t", "q", "v", "a", "lam", "residual"):
            np.testing.assert_array_equal(getattr(r, f), getattr(one, f), err_msg=f)
        for name, x in one.extra.items():   # the method's auxiliary arrays (momenta p, ...)
            if name != "step_max":
                np.testing.assert_array_equal(r.extra[name], x, err_msg=name)
        stats = {k: v for k, v in r.stats.items() if k not in ("batch_size", "threads")}
        assert stats == one.stats
        assert r.extra.get("step_max") == one.extra.get("step_max")


@pytest.mark.parametrize("method,problem", [p for p in _PAIRS if METHODS[p[0]].KERNEL is not None])
def test_step_maxima_bound_the_sample_maxima(method, problem):
    """The driver's maxima over every step are >= those over the samples (every = 4 keeps a
    quarter of the steps), and equal to them when every step is a sample."""
    prob = {**PROBLEMS, **LIE_PROBLEMS}[problem]
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
