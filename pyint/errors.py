"""Errors raised by the integrators; each carries what was computed before it."""


class IntegrationError(RuntimeError):
    """An integration stopped early.  ``result`` holds the trajectory up to the
    last completed step; ``step`` and ``time`` say where it stopped."""

    def __init__(self, message, result=None, step=None, time=None):
        super().__init__(message)
        self.result = result
        self.step = step
        self.time = time


class NewtonConvergenceError(IntegrationError):
    """Newton's method did not converge within the allowed iterations."""


class SingularMatrixError(IntegrationError):
    """The iteration matrix was singular (e.g. a rank-deficient constraint Jacobian)."""


class SingularPositionError(IntegrationError):
    """The mechanism reached a singular position (its constraint Jacobian loses rank, its mobility
    jumps) that the method cannot pass: the index-1 form amplifies the constraint drift there
    (fortran/core/kkt.f90), and a fixed step taken again on the constraints (the driver's
    pass_singular) failed too.  ``time`` is where; the message says what to use instead."""


class NonFiniteError(IntegrationError):
    """NaN or Inf appeared in the state, or a model item returned NaN or Inf."""


class LapackError(IntegrationError):
    """LAPACK or BLAS rejected an argument (its error handler, xerbla, was called):
    ``routine`` and ``argument`` name it.  A bug in pyint: please report it."""

    def __init__(self, message, result=None, step=None, time=None, routine=None, argument=None):
        super().__init__(message, result=result, step=step, time=time)
        self.routine = routine
        self.argument = argument


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped an integration.  A KeyboardInterrupt, so it ends a
    script as Ctrl-C always does; ``result`` holds the steps computed before it
    (for a batch, the list of results), ``step`` and ``time`` say where it stopped."""

    def __init__(self, message, result=None, step=None, time=None):
        super().__init__(message)
        self.result = result
        self.step = step
        self.time = time
