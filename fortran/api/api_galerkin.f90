! f2py interface of the Galerkin-Lobatto variational integrator's coefficients
! (fortran/galerkin.f90; the method runs through the one driver's `run`,
! fortran/api/api_run.f90; its step equations and the dual-variable form of a model
! through model_query, fortran/api/api_models.f90).
! Plain arrays in, plain arrays out; the caller allocates the outputs.

!> The Lobatto rule of degree s on [0, 1]: nodes d, weights b, differentiation
!> matrix dm(v, j) = l_j'(d_v) (ns = s + 1); info = 0 when every check passed.
subroutine galerkin_rule(s, ns, d, b, dm, info)
  use pyint_kinds
  use galerkin, only: lobatto_rule
  implicit none
  integer(c_int), intent(in) :: s, ns
  real(c_double), intent(inout) :: d(ns), b(ns), dm(ns, ns)
  integer(c_int), intent(out) :: info
  integer :: e
  info = 2
  if (ns /= s + 1) return
  call lobatto_rule(s, d, b, dm, e)
  info = e
end subroutine galerkin_rule
