"""Newton termination (issue 14; fortran/core/newton_control.f90): small steps never fail.

Every registered method on every shared problem whose model it accepts (PROBLEMS, the
rigid bodies on a Lie group included), and Lobatto IIIA-IIIB with s = 2..10 stages: 200 steps at
h = h0, h0/10, ... down to 1e-6.  Once a method converges at some h, it converges at
every smaller one (the increments of a small step reach round-off; that is convergence,
not failure).  A failure at a larger h names its cause, the step and the time.
"""
import numpy as np
import pytest

import pyint.methods  # noqa: F401  (registers every method)
from pyint.errors import IntegrationError, NewtonConvergenceError, NonFiniteError, SingularMatrixError, StepTooLargeError
from pyint.integrator import METHODS
from pyint.problems import PROBLEMS
from pyint.methods.symplectic import LobattoIIIAB

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
        for pname, prob in sorted(PROBLEMS.items()):
            if cls.accepts(prob.model):
                yield pytest.param(cls, {}, prob, id=f"{mname}-{pname}")
    # Lobatto's stage sweep: not on the redundant mechanisms (n = 24, 36: a dense stage system of up to
    # 2 s n + m = 758 unknowns per Newton iteration, minutes per case; their default stages run above)
    for s in range(2, 11):
        for pname, prob in sorted(PROBLEMS.items()):
            if LobattoIIIAB.accepts(prob.model) and "redundant" not in prob.tags:
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
            # a failure at a large step names its cause, where it happened (StepTooLargeError: the driver's
            # guard against a step-to-step oscillation; a SingularPositionError of status left_manifold: its
            # check of the index-1 form's velocity residual, which jumps when a step is far too large)
            assert isinstance(err, (NewtonConvergenceError, SingularMatrixError, NonFiniteError,
                                    StepTooLargeError)) or err.result.status == "left_manifold", err
            assert "step" in str(err) and "t = " in str(err), err
            continue
        if converged_at is None:
            converged_at = h
    assert converged_at is not None, "fails at every step size down to 1e-6"


@pytest.mark.parametrize("s", [5, 6, 7, 8])
def test_galerkin_many_stages_converge_on_the_skate_at_every_eta(s):
    """Seed 004's Fig. 1 sweep (s = 1..8, eta = 2^-1 .. 2^-7, T = 10, tol 1e-12): the Galerkin
    matrix's condition grows like s^4 / h, so Newton's increments stagnate above the kernel's
    floor estimate; the rule stops such a stagnating Newton iteration as converged.  Without
    that, s = 7 failed at every eta <= 1/8 and s = 8 at every eta <= 1/32."""
    from pyint.methods.galerkin import GalerkinLobatto
    from pyint.models import Skate
    model = Skate()
    q0, v0 = model.initial_state()
    for n in range(1, 8):
        r = GalerkinLobatto(s=s, tol=1e-12).integrate(model, q0, v0, 10.0, 2.0 ** -n)
        assert r.status == "ok" and np.all(np.isfinite(r.q))


@pytest.mark.parametrize("h", [0.02, 0.01])
def test_alpha_rattle_on_the_violent_snakeboard_refreshes_instead_of_failing(h):
    """The thrusted snakeboard near t = 1 (theta' ~ 13, psi' ~ 27 rad/s): simplified Newton with
    a kept matrix contracts too slowly there; the rule asks for a fresh matrix instead of
    failing the step (it failed at t = 1 for both h when a slow kept matrix was a failure)."""
    from pyint.methods.genalpha import AlphaRattle
    from pyint.models import Snakeboard
    model = Snakeboard()
    q0, v0 = model.initial_state()
    r = AlphaRattle().integrate(model, q0, v0, 1.0, h)
    assert r.status == "ok" and r.t[-1] == pytest.approx(1.0)
