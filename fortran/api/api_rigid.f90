! f2py interface of the rigid-body system description (fortran/core/rigid_body.f90)
! and the SO(3) kernels (fortran/core/so3.f90): single items for tests, and the
! constraint residuals / energy / orthogonality along a trajectory.

!> Sizes of the system (ipar, rpar): bodies, joint primitives, constraint rows; ierr = 1 if invalid.
subroutine rigid_info(ipar, nipar, rpar, nrpar, nb, nj, m, ierr)
  use pyint_kinds
  use pyint_rigid, only: rigid_system_t, rigid_system_new
  implicit none
  integer(c_int), intent(in) :: nipar, nrpar
  integer(c_int), intent(in) :: ipar(nipar)
  real(c_double), intent(in) :: rpar(nrpar)
  integer(c_int), intent(out) :: nb, nj, m, ierr
  type(rigid_system_t) :: s
  integer :: e
  call rigid_system_new(ipar, rpar, s, e)
  ierr = e
  nb = s%nb; nj = s%nj; m = s%m
end subroutine rigid_info

!> One item at (x, r, v) with the extra vector w (column-major into out):
!> 1 Phi (m), 2 B (m, nv), 3 Bdot V (m), 4 (B^T w)_q (nv, nv), 5 (B w)_q (m, nv),
!> 6 (Bdot V)_q (m, nv), 7 (Bdot V)_V (m, nv), 8 Q (nv), 9 Q_V (nv, nv),
!> 10 M (nv, nv), 11 energy (1), 12 consistent (A, lam) (nv + m).
subroutine rigid_eval(ipar, nipar, rpar, nrpar, req, nb, nv, x, r, v, nw, w, nout, out, ierr)
  use pyint_kinds
  use pyint_rigid
  implicit none
  integer(c_int), intent(in) :: nipar, nrpar, req, nb, nv, nw, nout
  integer(c_int), intent(in) :: ipar(nipar)
  real(c_double), intent(in) :: rpar(nrpar), x(3, nb), r(3, 3, nb), v(nv), w(nw)
  real(c_double), intent(inout) :: out(nout)
  integer(c_int), intent(out) :: ierr
  type(rigid_system_t) :: s
  real(wp), allocatable :: a(:, :), b(:, :)
  integer :: e, m, info
  call rigid_system_new(ipar, rpar, s, e)
  ierr = e
  if (e /= 0) return
  ierr = 2
  if (s%nb /= nb .or. s%nv /= nv) return
  m = s%m
  if (nout < max(nv * nv, m * nv, nv + m, 1) .or. nw < max(nv, m, 1)) return
  ierr = 0
  allocate(a(nv, nv), b(nv, nv))
  select case (req)
  case (1)
    call rigid_phi(s, x, r, out(1:m))
  case (2)
    call rigid_bmat(s, r, a(1:m, :)); out(1:m * nv) = reshape(a(1:m, :), [m * nv])
  case (3)
    call rigid_bdotv(s, r, v, out(1:m))
  case (4)
    call rigid_btl_q(s, r, w(1:m), a); out(1:nv * nv) = reshape(a, [nv * nv])
  case (5)
    call rigid_bw_q(s, r, w(1:nv), a(1:m, :)); out(1:m * nv) = reshape(a(1:m, :), [m * nv])
  case (6, 7)
    call rigid_bdotv_jac(s, r, v, a(1:m, :), b(1:m, :))
    if (req == 7) a = b
    out(1:m * nv) = reshape(a(1:m, :), [m * nv])
  case (8)
    call rigid_force(s, v, out(1:nv))
  case (9)
    call rigid_force_v(s, v, a); out(1:nv * nv) = reshape(a, [nv * nv])
  case (10)
    call rigid_mass_matrix(s, a); out(1:nv * nv) = reshape(a, [nv * nv])
  case (11)
    out(1) = rigid_energy(s, x, v)
  case (12)
    call rigid_consistent_acc(s, r, v, out(1:nv), out(nv + 1:nv + m), info)
    if (info /= 0) ierr = 4
  case default
    ierr = 3
  end select
end subroutine rigid_eval

!> res(:, k) = [ |Phi|, |B V|, |B A + Bdot V| (max norms), max_i |R_i^T R_i - I|_F ]
!> and energy(k) at every sample k.
subroutine rigid_residuals(ipar, nipar, rpar, nrpar, nb, nv, nt, x, r, v, a, res, energy, ierr)
  use pyint_kinds
  use pyint_rigid, only: rigid_system_t, rigid_system_new, rigid_sample_residuals
  implicit none
  integer(c_int), intent(in) :: nipar, nrpar, nb, nv, nt
  integer(c_int), intent(in) :: ipar(nipar)
  real(c_double), intent(in) :: rpar(nrpar), x(3, nb, nt), r(3, 3, nb, nt), v(nv, nt), a(nv, nt)
  real(c_double), intent(inout) :: res(4, nt), energy(nt)
  integer(c_int), intent(out) :: ierr
  type(rigid_system_t) :: s
  integer :: e, k
  call rigid_system_new(ipar, rpar, s, e)
  ierr = e
  if (e /= 0) return
  ierr = 2
  if (s%nb /= nb .or. s%nv /= nv) return
  ierr = 0
  do k = 1, nt
    call rigid_sample_residuals(s, x(:, :, k), r(:, :, :, k), v(:, k), a(:, k), res(:, k), energy(k))
  end do
end subroutine rigid_residuals

!> The states at te(ne) between the samples (t, q, v, a) of a rigid system (fortran/core/dense_output.f90:
!> lie_dense_outputs, the dense output of a Lie-group run at t_eval, on given samples): q packed 12 per
!> body, red(i) = 1 on the joint rows left out (redundant ones), dense(:, j) = [q, V, Vdot, lam, |Phi|,
!> |B V|, |B A + Bdot V|, orthogonality, energy]; info, kfail as lie_dense_outputs', body and kstep
!> the ambiguous rotation's body (0-based) and step (1-based).
subroutine rigid_outputs(ipar, nipar, rpar, nrpar, m, red, nt, nq, nv, t, q, v, a, ne, te, nd, dense, info, kfail, &
                         body, kstep)
  use pyint_kinds
  use pyint_dense_output, only: lie_dense_outputs
  use pyint_control, only: control_begin
  implicit none
  integer(c_int), intent(in) :: nipar, nrpar, m, nt, nq, nv, ne, nd
  integer(c_int), intent(in) :: ipar(nipar), red(m)
  real(c_double), intent(in) :: rpar(nrpar), t(nt), q(nq, nt), v(nv, nt), a(nv, nt), te(ne)
  real(c_double), intent(inout) :: dense(nd, ne)
  integer(c_int), intent(out) :: info, kfail, body, kstep
  call control_begin()
  call lie_dense_outputs(ipar, rpar, red, t, q, v, a, te, dense, info, kfail, body, kstep)
end subroutine rigid_outputs

!> SO(3) kernels for tests: req 1 expm(psi), 2 tangent(psi) (3 x 3, column-major).
subroutine so3_eval(req, psi, out, ierr)
  use pyint_kinds
  use pyint_so3, only: expm, tangent
  implicit none
  integer(c_int), intent(in) :: req
  real(c_double), intent(in) :: psi(3)
  real(c_double), intent(out) :: out(3, 3)
  integer(c_int), intent(out) :: ierr
  ierr = 0
  select case (req)
  case (1)
    out = expm(psi)
  case (2)
    out = tangent(psi)
  case default
    out = 0
    ierr = 3
  end select
end subroutine so3_eval
