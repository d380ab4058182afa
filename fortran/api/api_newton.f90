! f2py interface of the structured linear algebra (fortran/core/newton_matrix.f90): for
! tests, benchmarks and the solver choice reported to users.  The models' structured
! hooks and the consistent acceleration: model_query (fortran/api/api_models.f90).

!> 1 when the sparse solver (SuiteSparse KLU) is built in, else 0.
subroutine sparse_solver_available(have_klu)
  use pyint_kinds
  use pyint_newton_matrix, only: klu_available
  implicit none
  integer(c_int), intent(out) :: have_klu
  have_klu = merge(1, 0, klu_available())
end subroutine sparse_solver_available

!> Assemble the nx x nx matrix given in coordinate form (irow, jcol, vals;
!> duplicates add up) with `solver` (0 auto, 1 dense, 2 banded, 3 sparse),
!> factor it and solve A x = b (x overwrites b).  info = [status (0 ok, 1
!> singular, 2 setup failed), solver used, kl, ku, nnz of the pattern].
subroutine newton_matrix_solve(nx, nnz, irow, jcol, vals, solver, b, info)
  use pyint_kinds
  use pyint_newton_matrix
  implicit none
  integer(c_int), intent(in) :: nx, nnz, solver
  integer(c_int), intent(in) :: irow(nnz), jcol(nnz)
  real(c_double), intent(in) :: vals(nnz)
  real(c_double), intent(inout) :: b(nx)
  integer(c_int), intent(out) :: info(5)
  type(newton_matrix_t) :: nm
  integer :: k, e
  info = 0
  call nm%record(nx)
  do k = 1, nnz
    call nm%add(irow(k), jcol(k), 0.0_wp)
  end do
  call nm%setup(solver, e)
  info(2:5) = [nm%kind, nm%kl, nm%ku, nm%nnz]
  if (e /= 0) then
    info(1) = 2
    call nm%release()
    return
  end if
  call nm%zero()
  do k = 1, nnz
    call nm%add(irow(k), jcol(k), vals(k))
  end do
  call nm%factor(e)
  if (e /= 0) then
    info(1) = 1
  else
    call nm%solve(b)
  end if
  call nm%release()
end subroutine newton_matrix_solve
