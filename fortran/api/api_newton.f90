! f2py interface of the structured linear algebra (fortran/core/newton_matrix.f90)
! and of the models' structured hooks (fortran/core/model.f90): for tests,
! benchmarks and the solver choice reported to users.

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

!> The structured hooks of a model at (t, q, v, a, lam = [lh; ln]), evaluated
!> by the model's own procedures (dflt = 0) or by the dense defaults of
!> model_t (dflt = 1), for comparing the two.  blocks(:, :, k) (n x n, the
!> block in its top-left corner) holds:
!>   1 add_qq with coefficients coef(1:6)   2 add_hol_jac (s G)     3 add_hol_jac (s G^T)
!>   4 add_hol_vel_q (s (G v)_q)           5 add_nh_jac (s A)      6 add_nh_jac (s A^T)
!>   7 add_nh_vel_q (s (A v + b)_q)
!> ops(:, k): 1 mass_mul(a), 2 hol_vel(v), 3 hol_jac_tmul(lh), 4 nh_vel(v), 5 nh_jac_tmul(ln)
!> (first mh / mn entries where the result is that long).  ierr: setup_model's.
subroutine model_structured(model_id, ipar, nipar, rpar, nrpar, usercb, n, mh, mn, mflags, dflt, t, q, v, a, &
                            nl, lam, coef, s, blocks, ops, ierr)
  use pyint_kinds
  use pyint_model
  use pyint_registry, only: setup_model
  use pyint_newton_matrix
  implicit none
  integer(c_int), intent(in) :: model_id, nipar, nrpar, n, mh, mn, nl, dflt
  integer(c_int), intent(in) :: ipar(nipar), mflags(3)
  real(c_double), intent(in) :: rpar(nrpar), t, q(n), v(n), a(n), lam(nl), coef(6), s
  real(c_double), intent(out) :: blocks(n, n, 7), ops(n, 5)
  integer(c_int), intent(out) :: ierr
  external usercb
  interface
    subroutine usercb(req, t, n, q, v, nw, w, nout, out)
      import :: c_double, c_int
      integer(c_int), intent(in) :: req, n, nw, nout
      real(c_double), intent(in) :: t, q(n), v(n), w(nw)
      real(c_double), intent(inout) :: out(nout)
    end subroutine
  end interface
  class(model_t), allocatable :: m
  type(newton_matrix_t) :: nm
  real(wp), allocatable :: gq(:, :), an(:, :)
  integer :: e, k
  blocks = 0
  ops = 0
  call setup_model(model_id, ipar, rpar, usercb, n, mh, mn, mflags, m, e)
  ierr = e
  if (e /= 0 .or. nl < mh + mn .or. mh > n .or. mn > n) then
    ierr = max(ierr, 3)
    return
  end if
  associate (lh => lam(1:mh), ln => lam(mh + 1:mh + mn))
    do k = 1, 7
      call nm%record(n)
      call nm%setup(SOLVER_DENSE, e)
      call nm%zero()
      if (dflt == 0) then
        select case (k)
        case (1); call m%add_qq(t, q, v, a, lh, ln, coef, nm, 0, 0)
        case (2); call m%add_hol_jac(t, q, s, .false., nm, 0, 0)
        case (3); call m%add_hol_jac(t, q, s, .true., nm, 0, 0)
        case (4); call m%add_hol_vel_q(t, q, v, s, nm, 0, 0)
        case (5); call m%add_nh_jac(t, q, s, .false., nm, 0, 0)
        case (6); call m%add_nh_jac(t, q, s, .true., nm, 0, 0)
        case (7); call m%add_nh_vel_q(t, q, v, s, nm, 0, 0)
        end select
      else
        select case (k)
        case (1); call default_add_qq(m, t, q, v, a, lh, ln, coef, nm, 0, 0)
        case (2); call default_add_hol_jac(m, t, q, s, .false., nm, 0, 0)
        case (3); call default_add_hol_jac(m, t, q, s, .true., nm, 0, 0)
        case (4); call default_add_hol_vel_q(m, t, q, v, s, nm, 0, 0)
        case (5); call default_add_nh_jac(m, t, q, s, .false., nm, 0, 0)
        case (6); call default_add_nh_jac(m, t, q, s, .true., nm, 0, 0)
        case (7); call default_add_nh_vel_q(m, t, q, v, s, nm, 0, 0)
        end select
      end if
      blocks(:, :, k) = nm%a
    end do
    if (dflt == 0) then
      call m%mass_mul(q, a, ops(:, 1))
      call m%hol_vel(t, q, v, ops(1:mh, 2))
      call m%hol_jac_tmul(t, q, lh, ops(:, 3))
      call m%nh_vel(t, q, v, ops(1:mn, 4))
      call m%nh_jac_tmul(t, q, ln, ops(:, 5))
    else
      call default_mass_mul(m, q, a, ops(:, 1))
      allocate(gq(mh, n))
      call m%hol_jac(t, q, gq)
      call m%hol_t(t, q, ops(1:mh, 2))
      ops(1:mh, 2) = ops(1:mh, 2) + matmul(gq, v)
      call default_hol_jac_tmul(m, t, q, lh, ops(:, 3))
      allocate(an(mn, n))
      call m%nh(t, q, an, ops(1:mn, 4))
      ops(1:mn, 4) = ops(1:mn, 4) + matmul(an, v)
      call default_nh_jac_tmul(m, t, q, ln, ops(:, 5))
    end if
  end associate

end subroutine model_structured

!> Consistent acceleration a and multipliers lam = [lh; ln] at (t, q, v) from
!> the index-1 system, assembled through the model's structured hooks and
!> solved with `solver` (0 auto, 1 dense, 2 banded, 3 sparse).
!> info: 0 ok, 1 singular, 2 solver setup failed, 3 bad model/sizes.
subroutine model_consistent_acceleration(model_id, ipar, nipar, rpar, nrpar, usercb, n, mh, mn, mflags, &
                                         t, q, v, solver, nl, a, lam, info)
  use pyint_kinds
  use pyint_model, only: model_t, consistent_acceleration
  use pyint_registry, only: setup_model
  implicit none
  integer(c_int), intent(in) :: model_id, nipar, nrpar, n, mh, mn, nl, solver
  integer(c_int), intent(in) :: ipar(nipar), mflags(3)
  real(c_double), intent(in) :: rpar(nrpar), t, q(n), v(n)
  real(c_double), intent(out) :: a(n), lam(nl)
  integer(c_int), intent(out) :: info
  external usercb
  interface
    subroutine usercb(req, t, n, q, v, nw, w, nout, out)
      import :: c_double, c_int
      integer(c_int), intent(in) :: req, n, nw, nout
      real(c_double), intent(in) :: t, q(n), v(n), w(nw)
      real(c_double), intent(inout) :: out(nout)
    end subroutine
  end interface
  class(model_t), allocatable :: m
  integer :: e
  a = 0
  lam = 0
  call setup_model(model_id, ipar, rpar, usercb, n, mh, mn, mflags, m, e)
  if (e /= 0 .or. nl /= max(mh + mn, 1)) then
    info = 3
    return
  end if
  call consistent_acceleration(m, t, q, v, solver, a, lam(1:mh + mn), e)
  info = e
end subroutine model_consistent_acceleration
