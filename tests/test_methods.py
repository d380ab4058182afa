"""The shared test list: every registered method on every problem it supports.

For each (method, problem) pair:
* measured convergence order in q and v (slope of log error against log h
  over four halvings; the error is the maximum over the problem's sample
  times) equals the claimed order within 0.2, and in lam is at least the
  claimed ``lambda_order`` - 0.2 (the start-up transient of lam decays faster
  at smaller h, which can only steepen the slope; e.g. generalized-alpha's lam
  is third order on the skate);
* the constraint levels the method claims to keep stay at round-off.
"""
import numpy as np
import pytest

import pyint.methods  # noqa: F401  (registers every method)
from pyint.errors import IntegrationError
from pyint.integrator import METHODS
from pyint.problems import PROBLEMS


def _pairs():
    for mname, cls in sorted(METHODS.items()):
        for pname, prob in sorted(PROBLEMS.items()):
            if prob.kinds <= cls.supports:
                yield pytest.param(cls, prob, id=f"{mname}-{pname}")


PAIRS = list(_pairs())


#: Errors below ERROR_FLOOR * max(1, max|reference|) are not used to fit an order: the
#: references are accurate to ~3e-14 relative (ode_reference vs. a converged order-5 run
#: at h / 512), so a fitted error is >= 30x that.
ERROR_FLOOR = 1e-12


def measured_orders(method, problem, halvings=None):
    """Slopes of log(error) against log(h) over halvings + 1 step sizes.

    Second-order methods: problem.h0 and four halvings.  A method of order p
    > 2 gains 2^(4p) (1e6 for p = 5) over four halvings: more than lies between
    its asymptotic regime and the reference's accuracy, and not at the same h
    on every problem.  So its window is three halvings of the sample spacing:
    for q, v and lam separately, the finest run whose errors all stay above
    the floor (a step size the method fails at is in no window)."""
    if halvings is None:
        halvings = 4 if method.order <= 2 else 3
    q0, v0 = problem.initial_state
    qr, vr, lr = problem.reference
    dt = problem.t_end / problem.n_samples
    if method.order <= 2:
        hs = problem.h0 / 2.0 ** np.arange(halvings + 1)
    else:
        hs = dt / 2.0 ** np.arange(halvings + 5)
    errs = []
    for h in hs:
        try:
            r = method.integrate(problem.model, q0, v0, problem.t_end, h, every=int(round(dt / h)))
        except IntegrationError:
            if method.order <= 2:
                raise
            errs.append([np.nan] * 3)      # too coarse for this method: not in any window
            continue
        errs.append([np.max(np.abs(r.q[1:] - qr)), np.max(np.abs(r.v[1:] - vr)),
                     np.max(np.abs(r.lam[1:] - lr), initial=0.0)])
    errs = np.array(errs)
    if method.order <= 2:
        slopes = [np.polyfit(np.log(hs), np.log(errs[:, j]), 1)[0] if np.all(errs[:, j] > 0) else np.nan
                  for j in range(3)]
        return np.array(slopes), errs
    slopes, used = [], []
    for j, ref in enumerate((qr, vr, lr)):   # each over the finest window of its errors above the floor
        floor = ERROR_FLOOR * max(1.0, np.max(np.abs(ref), initial=0.0))
        above = [i for i in range(len(hs) - halvings) if np.all(errs[i:i + halvings + 1, j] >= floor)]
        i = above[-1] if above else 0
        w = slice(i, i + halvings + 1)
        slopes.append(np.polyfit(np.log(hs[w]), np.log(errs[w, j]), 1)[0] if np.all(errs[w, j] > 0) else np.nan)
        used.append(errs[w, j])
    return np.array(slopes), np.array(used).T


@pytest.mark.parametrize("cls,problem", PAIRS)
def test_convergence_order(cls, problem):
    method = cls()
    slopes, errs = measured_orders(method, problem)
    assert abs(slopes[0] - cls.order) <= 0.2, (slopes, errs)
    assert abs(slopes[1] - cls.order) <= 0.2, (slopes, errs)
    lam_order = getattr(cls, "lambda_order", None)
    if lam_order is not None and problem.model.n_constraints:
        assert slopes[2] >= lam_order - 0.2, (slopes, errs)


@pytest.mark.parametrize("cls,problem", PAIRS)
def test_claimed_constraint_levels_kept(cls, problem):
    q0, v0 = problem.initial_state
    r = cls().integrate(problem.model, q0, v0, problem.t_end, problem.h0)
    levels = {"position": r.residual[:, 0], "velocity": r.residual[:, 1], "acceleration": r.residual[:, 2]}
    nh_levels = {"velocity": r.residual[:, 3], "acceleration": r.residual[:, 4]}
    scale = max(1.0, np.max(np.abs(r.q)), np.max(np.abs(r.v)))
    for kind, kept in cls.keeps.items():
        if kind == "holonomic" and problem.model.n_hol:
            for level in kept:
                assert np.max(levels[level]) <= 1e-13 * scale, (kind, level, np.max(levels[level]))
        if kind == "nonholonomic" and problem.model.n_nonhol:
            for level in kept:
                assert np.max(nh_levels[level]) <= 1e-13 * scale, (kind, level, np.max(nh_levels[level]))
