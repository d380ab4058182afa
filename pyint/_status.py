"""Status codes of the Fortran drivers (fortran/core/kinds.f90) and their Python meaning."""
from .errors import IntegrationError, NewtonConvergenceError, SingularMatrixError, NonFiniteError

STATUS_OK = 0
STATUS_NEWTON_FAILED = 1
STATUS_SINGULAR = 2
STATUS_BAD_INPUT = 3
STATUS_NONFINITE = 4

STATUS_NAMES = {
    STATUS_OK: "ok",
    STATUS_NEWTON_FAILED: "newton_failed",
    STATUS_SINGULAR: "singular_matrix",
    STATUS_BAD_INPUT: "bad_input",
    STATUS_NONFINITE: "nonfinite",
}

STATUS_ERRORS = {
    STATUS_NEWTON_FAILED: NewtonConvergenceError,
    STATUS_SINGULAR: SingularMatrixError,
    STATUS_NONFINITE: NonFiniteError,
    STATUS_BAD_INPUT: IntegrationError,
}

STATUS_TEXT = {
    STATUS_NEWTON_FAILED: "Newton's method did not converge",
    STATUS_SINGULAR: "the iteration matrix is singular",
    STATUS_NONFINITE: "NaN or Inf appeared in the state",
    STATUS_BAD_INPUT: "the Fortran kernel rejected its input",
}
