!> Working precision and the status codes shared by every kernel.
module pyint_kinds
  use iso_c_binding, only: c_double, c_int
  use pyint_seam, only: STATUS_OK, STATUS_NEWTON_FAILED, STATUS_SINGULAR => STATUS_SINGULAR_MATRIX, &
                        STATUS_BAD_INPUT, STATUS_NONFINITE, STATUS_INTERRUPTED, STATUS_ABORTED, &
                        STATUS_LAPACK_ERROR, STATUS_RANK_DEFICIENT, STATUS_MAX_STEPS, &
                        STATUS_STEP_TOO_SMALL, STATUS_SINGULAR_POSITION, STATUS_STEP_TOO_LARGE, &
                        STATUS_LEFT_MANIFOLD, STATUS_LEFT_BRANCH
  implicit none
  private
  public :: wp, c_double, c_int
  public :: STATUS_OK, STATUS_NEWTON_FAILED, STATUS_SINGULAR, STATUS_BAD_INPUT, STATUS_NONFINITE
  public :: STATUS_INTERRUPTED, STATUS_ABORTED, STATUS_LAPACK_ERROR, STATUS_RANK_DEFICIENT
  public :: STATUS_MAX_STEPS, STATUS_STEP_TOO_SMALL, STATUS_SINGULAR_POSITION, STATUS_STEP_TOO_LARGE
  public :: STATUS_LEFT_MANIFOLD, STATUS_LEFT_BRANCH

  integer, parameter :: wp = c_double

  ! The status codes returned in istat(1) by every driver are described once, with their
  ! meanings, in seam/seam.toml (the module pyint_seam is generated from it, as is
  ! pyint/_seam.py); re-exported here under the kernels' names.
end module pyint_kinds
