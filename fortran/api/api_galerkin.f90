! f2py interface of the Galerkin-Lobatto variational integrator's coefficients and step
! equations (fortran/galerkin.f90; the method runs through the one driver's `run`,
! fortran/api/api_run.f90) and of the dual-variable form of a model (fortran/core/dual_form.f90).
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

!> Residual e(x) and Newton matrix jac = de/dx of one step of the degree-s
!> method from (t, q0, P0, lam0) with step h, at the unknowns x
!> (q_1..q_s, phat_0..phat_s, P_s, lam_1..lam_s[, lam_0 for variant 1]);
!> ierr /= 0: bad input/singular M.
subroutine galerkin_system(model_id, ipar, nipar, rpar, nrpar, usercb, n, mh, mn, mflags, &
                           s, variant, t, h, q0, p0, nl, lam0, nx, x, e, jac, ierr)
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_registry, only: setup_model
  use galerkin, only: gl_work_t, gl_work_init, gl_residual, gl_jacobian
  implicit none
  integer(c_int), intent(in) :: model_id, nipar, nrpar, n, mh, mn, nl, nx, s, variant
  integer(c_int), intent(in) :: ipar(nipar), mflags(3)
  real(c_double), intent(in) :: rpar(nrpar), t, h, q0(n), p0(n), lam0(nl), x(nx)
  real(c_double), intent(inout) :: e(nx), jac(nx, nx)
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
  type(gl_work_t) :: w
  integer :: info
  call setup_model(model_id, ipar, rpar, usercb, n, mh, mn, mflags, m, info)
  ierr = info
  if (info /= 0) return
  ierr = STATUS_BAD_INPUT
  if (nl /= max(mn, 1)) return
  call gl_work_init(w, m, s, variant, q0, info)
  ierr = info
  if (info /= 0) return
  if (nx /= w%nx) then
    ierr = STATUS_BAD_INPUT
    return
  end if
  w%x = x
  call gl_residual(m, t, h, q0, p0, lam0(1:mn), w, info)
  if (info == 0) call gl_jacobian(m, t, h, w, info)
  ierr = info
  e = w%e
  jac = w%jac
end subroutine galerkin_system

!> The dual-variable form of the model at (t, q, p): v = H_p, hq = H_q and the
!> Jacobians hpq = dH_p/dq, hpp = dH_p/dp, hqq = dH_q/dq, hqp = dH_q/dp.
subroutine galerkin_dual(model_id, ipar, nipar, rpar, nrpar, usercb, n, mh, mn, mflags, &
                         t, q, p, v, hq, hpq, hpp, hqq, hqp, ierr)
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_registry, only: setup_model
  use pyint_dual, only: dual_work_t, dual_init, dual_grad, dual_hess
  implicit none
  integer(c_int), intent(in) :: model_id, nipar, nrpar, n, mh, mn
  integer(c_int), intent(in) :: ipar(nipar), mflags(3)
  real(c_double), intent(in) :: rpar(nrpar), t, q(n), p(n)
  real(c_double), intent(inout) :: v(n), hq(n), hpq(n, n), hpp(n, n), hqq(n, n), hqp(n, n)
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
  type(dual_work_t) :: w
  integer :: info
  call setup_model(model_id, ipar, rpar, usercb, n, mh, mn, mflags, m, info)
  ierr = info
  if (info /= 0) return
  call dual_init(w, m, q, info)
  if (info == 0) call dual_grad(m, t, q, p, w, v, hq, info)
  if (info == 0) call dual_hess(m, t, q, p, w, hpq, hpp, hqq, hqp, info)
  ierr = info
end subroutine galerkin_dual
