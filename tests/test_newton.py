"""Newton termination (issue 14; fortran/core/newton_control.f90): small steps never fail.

Every registered method on every shared problem it supports (PROBLEMS; LIE_PROBLEMS for
the Lie-group methods), and Lobatto IIIA-IIIB with s = 2..10 stages: 200 steps at
h = h0, h0/10, ... down to 1e-6.  Once a method converges at some h, it converges at
every smaller one (the increments of a small step reach round-off; that is convergence,
not failure).  A failure at a larger h names its cause, the step and the time.
"""
import numpy as np
import pytest

import pyint.methods  # noqa: F401  (registers every method)
from pyint.errors import IntegrationError, NewtonConvergenceError, NonFiniteError, SingularMatrixError
from pyint.integrator import METHODS
from pyint.problems import LIE_PROBLEMS, PROBLEMS
from pyint.symplectic import LobattoIIIAB

STEPS = 200
H_MIN = 1e-6


def _step_sizes(h0):
    hs = []
    h = h0
    while h > H_MIN:
        hs.append(h)
        h /= 10
    return hs + [H_MIN]


def _cases():
    for mname, cls in sorted(METHODS.items()):
        for pname, prob in sorted({**PROBLEMS, **LIE_PROBLEMS}.items()):
            if prob.kinds <= cls.supports:
                yield pytest.param(cls, {}, prob, id=f"{mname}-{pname}")
    for s in range(2, 11):
        for pname, prob in sorted(PROBLEMS.items()):
            if prob.kinds <= LobattoIIIAB.supports:
                yield pytest.param(LobattoIIIAB, {"stages": s}, prob, id=f"lobatto_s{s}-{pname}")


@pytest.mark.parametrize("cls,options,problem", list(_cases()))
def test_small_steps_never_fail(cls, options, problem):
    method = cls(**options)
    q0, v0 = problem.initial_state
    converged_at = None
    for h in _step_sizes(problem.h0):
        try:
            method.integrate(problem.model, q0, v0, STEPS * h, h, every=STEPS)
        except IntegrationError as err:
            assert converged_at is None, f"converged at h = {converged_at:g}, fails at h = {h:g}: {err}"
            # a failure at a large step names its cause, where it happened
            assert isinstance(err, (NewtonConvergenceError, SingularMatrixError, NonFiniteError)), err
            assert "step" in str(err) and "t = " in str(err), err
            continue
        if converged_at is None:
            converged_at = h
    assert converged_at is not None, "fails at every step size down to 1e-6"
