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
from pyint.integrator import METHODS
from pyint.problems import PROBLEMS


def _pairs():
    for mname, cls in sorted(METHODS.items()):
        for pname, prob in sorted(PROBLEMS.items()):
            if prob.kinds <= cls.supports:
                yield pytest.param(cls, prob, id=f"{mname}-{pname}")


PAIRS = list(_pairs())


def measured_orders(method, problem, halvings=4):
    q0, v0 = problem.initial_state
    qr, vr, lr = problem.reference
    hs = problem.h0 / 2.0 ** np.arange(halvings + 1)
    dt = problem.t_end / problem.n_samples
    errs = []
    for h in hs:
        r = method.integrate(problem.model, q0, v0, problem.t_end, h, every=int(round(dt / h)))
        errs.append([np.max(np.abs(r.q[1:] - qr)), np.max(np.abs(r.v[1:] - vr)),
                     np.max(np.abs(r.lam[1:] - lr), initial=0.0)])
    errs = np.array(errs)
    slopes = [np.polyfit(np.log(hs), np.log(errs[:, j]), 1)[0] if np.all(errs[:, j] > 0) else np.nan
              for j in range(3)]
    return np.array(slopes), errs


@pytest.mark.parametrize("cls,problem", PAIRS)
def test_convergence_order(cls, problem):
    method = cls()
    slopes, errs = measured_orders(method, problem)
    assert abs(slopes[0] - cls.order) <= 0.2, (slopes, errs)
    assert abs(slopes[1] - cls.order) <= 0.2, (slopes, errs)
    lam_order = getattr(cls, "lambda_order", None)
    if lam_order is not None and problem.model.n_constraints:
        lam_scale = max(1.0, float(np.max(np.abs(problem.reference[2]))))
        if np.max(errs[:, 2]) > 1e-10 * lam_scale:   # lam exact to round-off needs no slope
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


# == Lie-group section: rigid bodies on (R^3 x SO(3))^nb =======================
# The Lie-group methods (supports = {"lie_group"}) never pair with the vector
# PROBLEMS above; they run on pyint.problems.LIE_PROBLEMS.  Errors at t_end
# against the quaternion reference are measured in the integrators' own
# coordinates: x, R through |log(R_ref^T R)|, and V.
from pyint.problems import LIE_PROBLEMS  # noqa: E402
from pyint.so3 import rotation_error  # noqa: E402

#: Constraint levels a Lie-group method claims, and the bound it must meet (issue 6).
LIE_LEVEL_TOL = {"position": 1e-12, "velocity": 1e-10, "acceleration": 1e-8}
LIE_ORTHOGONALITY_TOL = 1e-12

LIE_PAIRS = [pytest.param(cls, prob, id=f"{mname}-{pname}")
             for mname, cls in sorted(METHODS.items())
             for pname, prob in sorted(LIE_PROBLEMS.items()) if prob.kinds <= cls.supports]


def test_lie_methods_never_pair_with_vector_problems():
    lie = [c for c in METHODS.values() if "lie_group" in c.supports]
    assert lie and LIE_PAIRS
    for cls, prob in (p.values for p in PAIRS):
        assert cls not in lie, (cls.name, prob.name)


def lie_measured_orders(method, problem, halvings=4):
    """Slopes of log error against log h in x, R (log map) and V; and the errors."""
    system = problem.model
    q0, v0 = problem.initial_state
    qr, vr, _ = problem.reference
    xr, rr = system.unpack(qr)
    hs = problem.h0 / 2.0 ** np.arange(halvings + 1)
    errs = []
    for h in hs:
        r = method.integrate(system, q0, v0, problem.t_end, h)
        errs.append([np.max(np.abs(r.x[-1] - xr)),
                     max(rotation_error(rr[i], r.R[-1][i]) for i in range(system.nb)),
                     np.max(np.abs(r.v[-1] - vr))])
    errs = np.array(errs)
    return np.array([np.polyfit(np.log(hs), np.log(errs[:, j]), 1)[0] for j in range(3)]), errs


@pytest.mark.parametrize("cls,problem", LIE_PAIRS)
def test_lie_convergence_order(cls, problem):
    slopes, errs = lie_measured_orders(cls(), problem)
    assert np.all(np.abs(slopes - cls.order) <= 0.2), (slopes, errs)


@pytest.mark.parametrize("cls,problem", LIE_PAIRS)
def test_lie_claimed_levels_and_orthogonality_kept(cls, problem):
    q0, v0 = problem.initial_state
    r = cls().integrate(problem.model, q0, v0, problem.t_end, problem.h0)
    levels = dict(zip(("position", "velocity", "acceleration"), r.level_residuals.T))
    for level in cls.keeps["holonomic"]:
        assert np.max(levels[level]) <= LIE_LEVEL_TOL[level], (level, np.max(levels[level]))
    assert r.orthogonality <= LIE_ORTHOGONALITY_TOL
