! f2py interface of the constrained symplectic family (fortran/symplectic.f90):
! the coefficients, for tests (the methods themselves run through the one driver's
! `run`, fortran/api/api_run.f90; the canonical field through model_query,
! fortran/api/api_models.f90).
! Plain arrays in, plain arrays out; the caller allocates the outputs.

!> Coefficients of the inner tableau: kind 0 = Gauss-Legendre, 1 = Lobatto IIIA (a) - IIIB (ahat),
!> 2 = explicit midpoint (s = 2).
!> info = 0 when every identity of fortran/core/tableaux.f90 holds.
subroutine prk_tableau(kind, s, a, ahat, b, c, info)
  use pyint_kinds
  use symplectic, only: sym_tableau
  implicit none
  integer(c_int), intent(in) :: kind, s
  real(c_double), intent(out) :: a(s, s), ahat(s, s), b(s), c(s)
  integer(c_int), intent(out) :: info
  integer :: e
  call sym_tableau(kind, s, a, ahat, b, c, e)
  info = e
end subroutine prk_tableau
