!> Working precision and the status codes shared by every kernel.
module pyint_kinds
  use iso_c_binding, only: c_double, c_int
  implicit none
  private
  public :: wp, c_double, c_int
  public :: STATUS_OK, STATUS_NEWTON_FAILED, STATUS_SINGULAR, STATUS_BAD_INPUT, STATUS_NONFINITE
  public :: STATUS_INTERRUPTED, STATUS_ABORTED, STATUS_LAPACK_ERROR, STATUS_RANK_DEFICIENT
  public :: STATUS_MAX_STEPS, STATUS_STEP_TOO_SMALL, STATUS_SINGULAR_POSITION, STATUS_STEP_TOO_LARGE

  integer, parameter :: wp = c_double

  ! Status codes returned in istat(1) by every driver (mirrored in pyint/_status.py).
  integer, parameter :: STATUS_OK = 0
  integer, parameter :: STATUS_NEWTON_FAILED = 1   !< Newton did not converge within maxit
  integer, parameter :: STATUS_SINGULAR = 2        !< singular iteration matrix (LAPACK info > 0)
  integer, parameter :: STATUS_BAD_INPUT = 3       !< inconsistent sizes or options
  integer, parameter :: STATUS_NONFINITE = 4       !< NaN/Inf appeared in the state
  ! Stops requested from outside the step (fortran/core/control.c, polled once per step):
  integer, parameter :: STATUS_INTERRUPTED = 5     !< Ctrl-C (a Python signal handler raised)
  integer, parameter :: STATUS_ABORTED = 6         !< a callback model item raised (kept in Python)
  integer, parameter :: STATUS_LAPACK_ERROR = 7    !< LAPACK/BLAS reported an illegal argument (xerbla)
  ! The start (fortran/core/driver.f90: consistent_start):
  integer, parameter :: STATUS_RANK_DEFICIENT = 8  !< the constraint Jacobian [G; A] is rank deficient at t0
  integer, parameter :: STATUS_MAX_STEPS = 9       !< variable steps: more than max_steps step attempts needed
  integer, parameter :: STATUS_STEP_TOO_SMALL = 10 !< variable steps: the step fell below h_min
  !> the index-1 form met a singular position (the constraint Jacobian's rank drops: fortran/core/kkt.f90)
  integer, parameter :: STATUS_SINGULAR_POSITION = 11
  !> fixed steps: the run turned into a step-to-step oscillation (driver.f90: step_guard)
  integer, parameter :: STATUS_STEP_TOO_LARGE = 12
end module pyint_kinds
