"""Errors raised by the integrators; each carries what was computed before it."""


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
    >>> import numpy as np
    >>> from pyint import GeneralizedAlpha, IntegrationError, PendulumChain
    >>> model = PendulumChain(n_links=2)
    >>> q0, v0 = model.initial_state([np.pi / 3, np.pi / 2])
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


class NewtonConvergenceError(IntegrationError):
    """Newton's method did not converge within the allowed iterations.

    An :class:`IntegrationError`: ``result``, ``step`` and ``time`` say what was computed and
    where it stopped.
    """


class SingularMatrixError(IntegrationError):
    """The iteration matrix was singular (e.g. a rank-deficient constraint Jacobian).

    An :class:`IntegrationError`: ``result``, ``step`` and ``time`` say what was computed and
    where it stopped.
    """


class SingularPositionError(IntegrationError):
    """The mechanism reached a singular position (its constraint Jacobian loses rank, its mobility
    jumps) that the method cannot pass: the index-1 form amplifies the constraint drift there
    (fortran/core/kkt.f90), and a fixed step taken again on the constraints (the driver's
    pass_singular) failed too.  ``time`` is where; the message says what to use instead.
    Also raised (status ``left_manifold``) when a fixed-step run of the index-1 form crossed such a
    position onto another branch: its velocity-level constraint residual jumped (the driver's
    manifold check, fortran/core/driver.f90: manifold_left).

    An :class:`IntegrationError`: ``result``, ``step`` and ``time`` say what was computed and
    where it stopped.

    Examples
    --------
    Lobatto IIIA-IIIB through the IFToMM A02 mechanism with N = 4 windows: its Newton matrix turns
    singular where the cranks are horizontal (docs/guide/redundant.md lists who passes):

    >>> from pyint import LobattoIIIAB, SingularPositionError
    >>> from pyint.models.iftomm import n_four_bar, n_four_bar_state
    >>> model = n_four_bar(4)
    >>> q0, v0 = n_four_bar_state(model, 0.0, 1.0)
    >>> try:
    ...     LobattoIIIAB().integrate(model, q0, v0, t_end=1.0, h=1e-3)
    ... except SingularPositionError as exc:
    ...     print(exc.result.status, 0.7 < exc.time < 0.75)
    singular_position True
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
