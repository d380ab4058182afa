"""Status codes of the Fortran drivers (fortran/core/kinds.f90) and their Python meaning."""
from .errors import IntegrationError, Interrupted, LapackError, NewtonConvergenceError, NonFiniteError, \
    SingularMatrixError, SingularPositionError, StepTooLargeError
from .options import STATUS

# The codes are described once, in seam/seam.toml (fortran/core/kinds.f90 re-exports the same).
STATUS_OK = STATUS["ok"]
STATUS_NEWTON_FAILED = STATUS["newton_failed"]
STATUS_SINGULAR = STATUS["singular_matrix"]
STATUS_BAD_INPUT = STATUS["bad_input"]
STATUS_NONFINITE = STATUS["nonfinite"]
STATUS_INTERRUPTED = STATUS["interrupted"]            # Ctrl-C (fortran/core/control.c)
STATUS_ABORTED = STATUS["aborted"]                    # a callback model item raised (the exception is raised again)
STATUS_LAPACK_ERROR = STATUS["lapack_error"]          # LAPACK/BLAS rejected an argument (pyint's xerbla)
STATUS_RANK_DEFICIENT = STATUS["rank_deficient"]      # the start found [G; A] rank deficient (a ValueError)
STATUS_MAX_STEPS = STATUS["max_steps"]                # variable steps: more than max_steps step attempts needed
STATUS_STEP_TOO_SMALL = STATUS["step_too_small"]      # variable steps: the step fell below h_min
STATUS_SINGULAR_POSITION = STATUS["singular_position"]  # the index-1 form met a singular position
STATUS_STEP_TOO_LARGE = STATUS["step_too_large"]      # fixed steps: a step-to-step oscillation (driver.f90)
STATUS_LEFT_MANIFOLD = STATUS["left_manifold"]        # fixed steps: the velocity constraint residual jumped
STATUS_LEFT_BRANCH = STATUS["left_branch"]            # fixed steps: the velocity jumped at a singular position

#: code -> name, the description's names
STATUS_NAMES = {code: name for name, code in STATUS.items()}

STATUS_ERRORS = {
    STATUS_NEWTON_FAILED: NewtonConvergenceError,
    STATUS_SINGULAR: SingularMatrixError,
    STATUS_NONFINITE: NonFiniteError,
    STATUS_BAD_INPUT: IntegrationError,
    STATUS_INTERRUPTED: Interrupted,
    STATUS_ABORTED: IntegrationError,
    STATUS_LAPACK_ERROR: LapackError,
    STATUS_MAX_STEPS: IntegrationError,
    STATUS_STEP_TOO_SMALL: IntegrationError,
    STATUS_SINGULAR_POSITION: SingularPositionError,
    STATUS_STEP_TOO_LARGE: StepTooLargeError,
    STATUS_LEFT_MANIFOLD: SingularPositionError,
    STATUS_LEFT_BRANCH: SingularPositionError,
}

STATUS_TEXT = {
    STATUS_NEWTON_FAILED: "Newton's method did not converge",
    STATUS_SINGULAR: "the iteration matrix is singular",
    STATUS_NONFINITE: "NaN or Inf appeared in the state",
    STATUS_BAD_INPUT: "the Fortran kernel rejected its input",
    STATUS_INTERRUPTED: "interrupted (Ctrl-C)",
    STATUS_ABORTED: "a model item raised",
    STATUS_LAPACK_ERROR: "LAPACK rejected an argument",
    STATUS_RANK_DEFICIENT: "the constraint Jacobian [G; A] is rank deficient",
    STATUS_MAX_STEPS: "more than max_steps step attempts were needed (raise max_steps or loosen rtol)",
    STATUS_STEP_TOO_SMALL: "the step size fell below h_min (the error test or Newton kept failing)",
    STATUS_SINGULAR_POSITION: ("the mechanism reached a singular position (the constraint Jacobian's rank drops "
                               "there: its mobility jumps) that this method cannot pass: the index-1 form "
                               "amplifies the constraint drift by 1 / sigma^2 (sigma_min / sigma_max of C below "
                               "1e-2 at fixed steps, 1e-3 with rtol), an implicit step's Newton matrix turns "
                               "singular (below 1e-2); at fixed steps rk4_index1, baumgarte_rk4, the block "
                               "methods and lobatto_iiiab take such a step again (on the constraints, or in "
                               "halves) and stopped here because that failed too (or the step is beyond the "
                               "method's stability: retry with a smaller h); genalpha, rattle and "
                               "symplectic_gl pass it as they are (docs/guide/redundant.md)"),
    STATUS_STEP_TOO_LARGE: ("the run turned into a growing step-to-step oscillation: the velocity's increment "
                            "changed sign three steps in a row while h |v(n+1) - 2 v(n) + v(n-1)| grew past a tenth "
                            "of 1 + |q| (an unstable step: too large for the motion, e.g. through a singular "
                            "position, or beyond an explicit method's stability interval)"),
    STATUS_LEFT_MANIFOLD: ("the run left the constraint manifold: within three steps the velocity-level constraint "
                           "residual |G v + g_t| grew by more than ten times the largest value the run had reached "
                           "and by more than 3e-4 of its largest speed (fortran/core/driver.f90: manifold_left), "
                           "as when a crossing of a singular position takes the wrong branch; the index-1 form "
                           "keeps only the acceleration level, so the position residual would then grow "
                           "unchecked"),
    STATUS_LEFT_BRANCH: ("a step next to a singular position of the mechanism (the constraint Jacobian's rank "
                         "drops there) jumped onto another branch of its motion: the velocity changed by more "
                         "than ten times the step before's change (fortran/core/driver.f90: branch_check), and "
                         "the method's own pass of the step, where it has one, jumped too (Lobatto IIIA-IIIB and "
                         "symplectic_gl also retake the two steps from the one before as 0.6 h and 1.4 h); the "
                         "run stops at the step's start"),
}
