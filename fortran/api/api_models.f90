! f2py interface: built-in model lookup and single-item evaluation.
! Plain arrays in and out; every model argument block is
!   model_id, ipar, rpar, usercb, n, mh, mn, mflags
! (see fortran/models/registry.f90: setup_model).

!> Id of the built-in model called `name` (-1 if unknown) and its sizes for ipar/rpar.
subroutine model_lookup(name, ipar, nipar, rpar, nrpar, model_id, n, mh, mn, const_mass, has_energy, ierr)
  use pyint_kinds
  use pyint_registry, only: builtin_info, model_lookup_id
  implicit none
  character(len=*), intent(in) :: name
  integer(c_int), intent(in) :: nipar, nrpar
  integer(c_int), intent(in) :: ipar(nipar)
  real(c_double), intent(in) :: rpar(nrpar)
  integer(c_int), intent(out) :: model_id, n, mh, mn, const_mass, has_energy, ierr
  model_id = model_lookup_id(name)
  call builtin_info(model_id, ipar, rpar, n, mh, mn, const_mass, has_energy, ierr)
end subroutine model_lookup

!> Evaluate one model item (request code req, see callback_model.f90) at (t, q, v, w).
subroutine model_eval(model_id, ipar, nipar, rpar, nrpar, usercb, n, mh, mn, mflags, req, t, q, v, nw, w, nout, out, ierr)
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_registry, only: setup_model
  use pyint_callback_model
  implicit none
  integer(c_int), intent(in) :: model_id, nipar, nrpar, n, mh, mn, req, nw, nout
  integer(c_int), intent(in) :: ipar(nipar), mflags(3)
  real(c_double), intent(in) :: rpar(nrpar), t, q(n), v(n), w(nw)
  real(c_double), intent(inout) :: out(nout)
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
  real(wp), allocatable :: a(:, :), b(:, :)
  integer :: e
  call setup_model(model_id, ipar, rpar, usercb, n, mh, mn, mflags, m, e)
  ierr = e
  if (e /= 0) return
  allocate(a(n, n), b(n, n))
  select case (req)
  case (REQ_MASS)
    call m%mass(q, a); out(1:n * n) = reshape(a, [n * n])
  case (REQ_MASS_DQ)
    call m%mass_dq(q, w(1:n), a); out(1:n * n) = reshape(a, [n * n])
  case (REQ_FORCE)
    call m%force(t, q, v, out(1:n))
  case (REQ_FORCE_Q, REQ_FORCE_V)
    call m%force_jac(t, q, v, a, b)
    if (req == REQ_FORCE_Q) then
      out(1:n * n) = reshape(a, [n * n])
    else
      out(1:n * n) = reshape(b, [n * n])
    end if
  case (REQ_HOL)
    call m%hol(t, q, out(1:mh))
  case (REQ_HOL_JAC)
    call m%hol_jac(t, q, a(1:mh, :)); out(1:mh * n) = reshape(a(1:mh, :), [mh * n])
  case (REQ_HOL_T)
    call m%hol_t(t, q, out(1:mh))
  case (REQ_HOL_VEL_Q)
    call m%hol_vel_q(t, q, v, a(1:mh, :)); out(1:mh * n) = reshape(a(1:mh, :), [mh * n])
  case (REQ_HOL_GAMMA)
    call m%hol_gamma(t, q, v, out(1:mh))
  case (REQ_HOL_GTL_Q)
    call m%hol_gtl_q(t, q, w(1:mh), a); out(1:n * n) = reshape(a, [n * n])
  case (REQ_NH_A, REQ_NH_B)
    call m%nh(t, q, a(1:mn, :), b(1:mn, 1))
    if (req == REQ_NH_A) then
      out(1:mn * n) = reshape(a(1:mn, :), [mn * n])
    else
      out(1:mn) = b(1:mn, 1)
    end if
  case (REQ_NH_VEL_Q)
    call m%nh_vel_q(t, q, v, a(1:mn, :)); out(1:mn * n) = reshape(a(1:mn, :), [mn * n])
  case (REQ_NH_GAMMA)
    call m%nh_gamma(t, q, v, out(1:mn))
  case (REQ_NH_ATL_Q)
    call m%nh_atl_q(t, q, w(1:mn), a); out(1:n * n) = reshape(a, [n * n])
  case (REQ_ENERGY)
    out(1) = m%energy(t, q, v)
  case default
    ierr = 3
  end select
end subroutine model_eval

!> Constraint residuals (5 x nt: |g|, |Gv+g_t|, |Ga+gamma_h|, |Av+b|, |Aa+gamma_n|) and energy along a trajectory.
subroutine model_residuals(model_id, ipar, nipar, rpar, nrpar, usercb, n, mh, mn, mflags, nt, t, q, v, a, res, energy, ierr)
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_registry, only: setup_model
  use pyint_metrics, only: trajectory_residuals
  implicit none
  integer(c_int), intent(in) :: model_id, nipar, nrpar, n, mh, mn, nt
  integer(c_int), intent(in) :: ipar(nipar), mflags(3)
  real(c_double), intent(in) :: rpar(nrpar), t(nt), q(n, nt), v(n, nt), a(n, nt)
  real(c_double), intent(inout) :: res(5, nt), energy(nt)
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
  integer :: e
  call setup_model(model_id, ipar, rpar, usercb, n, mh, mn, mflags, m, e)
  ierr = e
  if (e /= 0) return
  call trajectory_residuals(m, t, q, v, a, res, energy)
end subroutine model_residuals
