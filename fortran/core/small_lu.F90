!> LU factorization with partial pivoting for the small dense systems solved
!> many times per step (KKT matrices of a few tens of unknowns): plain loops,
!> no BLAS calls.  For n ~ 10-60 this is 2-3 times faster than the reference
!> LAPACK dgetrf/dgetrs (whose recursive/blocked code pays call overhead at
!> these sizes).  Real and complex versions of one text (small_lu.inc).
module pyint_small_lu
  use pyint_kinds
  implicit none
  private
  public :: slu_factor, slu_solve, zlu_factor, zlu_solve

contains

#define LU_T real(wp)
#define LU_FACTOR slu_factor
#define LU_SOLVE slu_solve
#include "small_lu.inc"
#undef LU_T
#undef LU_FACTOR
#undef LU_SOLVE

#define LU_T complex(wp)
#define LU_FACTOR zlu_factor
#define LU_SOLVE zlu_solve
#include "small_lu.inc"

end module pyint_small_lu
