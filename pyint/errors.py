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


class NonFiniteError(IntegrationError):
    """NaN or Inf appeared in the state."""
