"""Errors raised by the integrators; each carries what was computed before it."""
from ._docfrag import with_fragments


@with_fragments
class IntegrationError(RuntimeError):
    """An integration stopped early; the base of pyint's integration errors.

    Parameters
    ----------
    message : str
        What stopped the run, where, and what to try.
    result : Result, optional
        The trajectory up to the last completed step.
    step : int, optional
        The step (1-based) that failed.
    time : float, optional
        The time the run stopped at.

    Attributes
    ----------
    result : Result or None
        The trajectory up to the last completed step (``result.status`` names the failure).
    step : int or None
        The step that failed.
    time : float or None
        The time the run stopped at.

    Examples
    --------
    %(pendulum_start: GeneralizedAlpha, IntegrationError)s
    >>> try:
    ...     GeneralizedAlpha(maxit=1).integrate(model, q0, v0, t_end=1.0, h=0.5)
    ... except IntegrationError as exc:
    ...     print(type(exc).__name__, exc.step, len(exc.result.t))
    NewtonConvergenceError 1 1
    """

    def __init__(self, message, result=None, step=None, time=None):
        super().__init__(message)
        self.result = result
        self.step = step
        self.time = time


@with_fragments
class NewtonConvergenceError(IntegrationError):
    """Newton's method did not converge within the allowed iterations.

    An :class:`IntegrationError`: ``result``, ``step`` and ``time`` say what was computed and
    where it stopped.

    Examples
    --------
    Generalized-alpha on a swinging double pendulum at a step of half the run, allowed one Newton
    iteration (``maxit=1``; the default is 25): the first step cannot converge, and the result holds
    the start alone:

    %(pendulum_start: GeneralizedAlpha, NewtonConvergenceError)s
    >>> try:
    ...     GeneralizedAlpha(maxit=1).integrate(model, q0, v0, t_end=1.0, h=0.5)
    ... except NewtonConvergenceError as exc:
    ...     print(exc.result.status, exc.step, exc.result.t)
    newton_failed 1 [0.]
    """


class SingularMatrixError(IntegrationError):
    r"""The iteration matrix was singular (e.g. a rank-deficient constraint Jacobian).

    An :class:`IntegrationError`: ``result``, ``step`` and ``time`` say what was computed and
    where it stopped.

    Examples
    --------
    A model whose second coordinate's mass is the first coordinate, :math:`M(q) = \operatorname{diag}(1, q_1)`,
    moving at :math:`\dot q_1 = -1` from :math:`q_1 = 1`: at :math:`t = 1` the mass matrix is
    singular, and RK4 on the index-1 form cannot solve :math:`M(q)\,\ddot q = f` there:

    >>> import numpy as np
    >>> from pyint import RK4Index1, SingularMatrixError
    >>> from pyint.models import Model
    >>> class Fading(Model):
    ...     name, n, constant_mass = "fading", 2, False
    ...     def mass(self, q):
    ...         return np.diag([1.0, q[0]])
    ...     def force(self, t, q, v):
    ...         return np.zeros(2)
    >>> try:
    ...     RK4Index1().integrate(Fading(), [1.0, 0.0], [-1.0, 0.0], t_end=2.0, h=0.25)
    ... except SingularMatrixError as exc:
    ...     print(exc.result.status, exc.step, exc.time)
    singular_matrix 4 1.0
    """


class SingularPositionError(IntegrationError):
    """The mechanism reached a singular position (its constraint Jacobian loses rank, its mobility
    jumps) that the method cannot pass: the index-1 form amplifies the constraint drift there
    (fortran/core/kkt.f90), and a fixed step taken again on the constraints (the driver's
    pass_singular) failed too.  ``time`` is where; the message says what to use instead.
    Also raised (status ``left_manifold``) when a fixed-step run of the index-1 form crossed such a
    position onto another branch: its velocity-level constraint residual jumped (the driver's
    manifold check, fortran/core/driver.f90: manifold_left), and (status ``left_branch``) when a
    fixed step next to such a position jumped onto another branch of the motion and the method's pass
    of the step (and its straddle, where it has one) jumped too (the driver's branch check,
    fortran/core/driver.f90: branch_check).

    An :class:`IntegrationError`: ``result``, ``step`` and ``time`` say what was computed and
    where it stopped.

    Examples
    --------
    RK4 on the index-1 form at h = 1e-3 on the IFToMM A05 flyball governor: the step is beyond
    explicit RK4's stability for the stiff dampers, the state leaves the mechanism's neighbourhood
    and reaches a near-singular configuration, where the pass on the constraints fails too and the
    run stops at its fourth step (docs/iftomm.md; docs/guide/redundant.md lists who passes):

    >>> from pyint import RK4Index1, SingularPositionError
    >>> from pyint.models.iftomm import flyball_governor, flyball_state
    >>> model = flyball_governor()
    >>> q0, v0 = flyball_state(model)
    >>> try:
    ...     RK4Index1().integrate(model, q0, v0, t_end=0.1, h=1e-3)
    ... except SingularPositionError as exc:
    ...     print(exc.result.status, exc.step, exc.time)
    singular_position 4 0.004
    """


class StepTooLargeError(IntegrationError):
    """A fixed-step run turned into a growing step-to-step oscillation (fortran/core/driver.f90:
    step_guard): the step is unstable for this motion.  ``time`` is where; a smaller ``h``, or
    variable steps, is the cure.

    An :class:`IntegrationError`: ``result``, ``step`` and ``time`` say what was computed and
    where it stopped.

    Examples
    --------
    Generalized-alpha through the IFToMM A02 mechanism's singular positions at a step twenty times
    the benchmark's: without the guard it returned a trajectory whose energy grew 3000-fold:

    >>> from pyint import GeneralizedAlpha, StepTooLargeError
    >>> from pyint.models.iftomm import n_four_bar, n_four_bar_state
    >>> model = n_four_bar(2)
    >>> q0, v0 = n_four_bar_state(model, 0.0, 1.0)
    >>> try:
    ...     GeneralizedAlpha().integrate(model, q0, v0, t_end=10.0, h=0.05)
    ... except StepTooLargeError as exc:
    ...     print(exc.result.status, round(exc.time, 2))
    step_too_large 5.1
    """


class NonFiniteError(IntegrationError):
    """NaN or Inf appeared in the state, or a model item returned NaN or Inf.

    An :class:`IntegrationError`: ``result``, ``step`` and ``time`` say what was computed and
    where it stopped.

    Examples
    --------
    An oscillator whose force turns NaN after :math:`t = 0.5`: the run stops at the step that
    evaluates it there (:math:`t = 0.51`), the message names the item and the time, and the steps
    before it are returned (every one finite):

    >>> import numpy as np
    >>> from pyint import GeneralizedAlpha, NonFiniteError
    >>> from pyint.models import Model
    >>> class Broken(Model):
    ...     name, n = "broken", 2
    ...     def mass(self, q):
    ...         return np.eye(2)
    ...     def force(self, t, q, v):
    ...         return -q if t <= 0.5 else np.array([np.nan, 0.0])
    >>> try:
    ...     GeneralizedAlpha().integrate(Broken(), [1.0, 0.0], [0.0, 1.0], t_end=1.0, h=0.01)
    ... except NonFiniteError as exc:
    ...     print(exc.result.t[-1], np.isfinite(exc.result.q).all())
    ...     print(str(exc)[:67])
    0.5 True
    model 'broken': force() returned a non-finite value at t = 0.51
    """


class LapackError(IntegrationError):
    """LAPACK or BLAS rejected an argument (its error handler, xerbla, was called).

    A bug in pyint: please report it.

    Attributes
    ----------
    routine : str
        The LAPACK/BLAS routine (e.g. "DGETRF").
    argument : int
        The number of the argument it rejected.
    result, step, time
        As for :class:`IntegrationError`.
    """

    def __init__(self, message, result=None, step=None, time=None, routine=None, argument=None):
        super().__init__(message, result=result, step=step, time=time)
        self.routine = routine
        self.argument = argument


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped an integration.

    A KeyboardInterrupt, so it ends a script as Ctrl-C always does.

    Attributes
    ----------
    result : Result or list of Result
        The steps computed before it (for a batch, the list of results).
    step : int or None
        The step it stopped at.
    time : float or None
        The time it stopped at.
    """

    def __init__(self, message, result=None, step=None, time=None):
        super().__init__(message)
        self.result = result
        self.step = step
        self.time = time
