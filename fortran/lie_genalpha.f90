!> Lie-group generalized-alpha on (R^3 x SO(3))^nb (Arnold, Brüls, Cardona 2015):
!> index 3 (variant 0) and a stabilized index-2 variant (variant 1).
!>
!> One step from (q_n, V_n, Vdot_n, a_n) with the unknown Vdot_{n+1} =: W:
!>   (1 - am) a_{n+1} = (1 - af) W + af Vdot_n - am a_n
!>   V_{n+1}  = V_n + h (1 - gamma) a_n + h gamma a_{n+1}
!>   psi      = h V_n + h^2 (1/2 - beta) a_n + h^2 beta a_{n+1}  [+ beta h^2 B(q_n)^T mu]
!>   q_{n+1}  = q_n o exp(psi):  x + psi_x,  R expm(psi_theta)
!>   M W + B(q_{n+1})^T lam - Q(V_{n+1}) = 0
!>   Phi(q_{n+1}) / (beta h^2) = 0
!>   [variant 1:  B(q_{n+1}) V_{n+1} / (gamma h) = 0]
!> The multiplier mu of the stabilized variant moves q_{n+1} along B(q_n)^T
!> (a GGL-type correction evaluated at the known q_n, so no derivative of B^T mu
!> is needed); it keeps Phi = 0 and B V = 0 together.  alpha parameters from
!> rho_inf as in genalpha.f90 (Chung-Hulbert): the same alpha_params.
!>
!> Newton on z = (W, lam[, mu]) with the exact Jacobian; with c = (1-af)/(1-am),
!> P' = diag(I, T(psi_theta_i)), B1 = B(q_{n+1}), B0 = B(q_n):
!>   [ M - h gamma c Q_V + h^2 beta c (B1^T lam)_q P'   B1^T   beta h^2 (B1^T lam)_q P' B0^T ]
!>   [ c B1 P'                                          0      B1 P' B0^T                     ]
!>   [ c B1 + (h beta c/gamma) (B1 V)_q P'              0      (beta h/gamma) (B1 V)_q P' B0^T ]
!> Termination: the one rule of every implicit kernel, pyint_newton_control
!> (fortran/core/newton_control.f90); groups at ga_newton.
module lie_genalpha
  use pyint_kinds
  use pyint_control, only: stop_status
  use pyint_rigid
  use pyint_alpha, only: alpha_params_t, alpha_params
  use pyint_newton_control, only: newton_control_t, NEWTON_CONVERGED, NEWTON_DIVERGED, maxabs
  implicit none
  private
  public :: lie_genalpha_driver, LGA_INDEX3, LGA_STAB2

  integer, parameter :: LGA_INDEX3 = 0, LGA_STAB2 = 1

  type :: ga_work_t
    integer :: nv, m, nz
    type(newton_control_t) :: nc      !< the Newton termination rule (carried across steps)
    real(wp), allocatable :: z(:), dz(:), res(:), jac(:, :), mm(:, :), b0(:, :), b1(:, :)
    real(wp), allocatable :: kvv(:, :), kmv(:, :), qf(:), psi(:), psi0(:), v1(:), a1(:)
    real(wp), allocatable :: x1(:, :), r1(:, :, :)
    integer, allocatable :: ipiv(:)
  end type

contains

  subroutine ga_work_init(s, variant, w)
    type(rigid_system_t), intent(in) :: s
    integer, intent(in) :: variant
    type(ga_work_t), intent(out) :: w
    w%nv = s%nv; w%m = s%m
    w%nz = s%nv + s%m
    if (variant == LGA_STAB2) w%nz = w%nz + s%m
    allocate(w%z(w%nz), w%dz(w%nz), w%res(w%nz), w%jac(w%nz, w%nz), w%ipiv(w%nz), &
             w%mm(s%nv, s%nv), w%b0(s%m, s%nv), w%b1(s%m, s%nv), w%kvv(s%nv, s%nv), &
             w%kmv(s%m, s%nv), w%qf(s%nv), w%psi(s%nv), w%psi0(s%nv), w%v1(s%nv), &
             w%a1(s%nv), w%x1(3, s%nb), w%r1(3, 3, s%nb))
    call rigid_mass_matrix(s, w%mm)
  end subroutine

  !> q_{n+1}, V_{n+1}, a_{n+1} at the iterate (w%x1, w%r1, w%v1, w%a1, w%psi).
  subroutine ga_kinematics(s, variant, p, h, x, r, v, vd, a, w)
    type(rigid_system_t), intent(in) :: s
    integer, intent(in) :: variant
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: h, x(:, :), r(:, :, :), v(:), vd(:), a(:)
    type(ga_work_t), intent(inout) :: w
    associate (wd => w%z(1:w%nv))
      w%a1 = ((1 - p%alpha_f) * wd + p%alpha_f * vd - p%alpha_m * a) / (1 - p%alpha_m)
      w%v1 = v + h * (1 - p%gamma) * a + h * p%gamma * w%a1
      w%psi = w%psi0 + h * h * p%beta * w%a1
      if (variant == LGA_STAB2) w%psi = w%psi + p%beta * h * h * matmul(w%z(w%nv + w%m + 1:), w%b0)
    end associate
    call rigid_advance(s, x, r, w%psi, w%x1, w%r1)
  end subroutine

  !> Residual and Newton matrix at the iterate w%z.
  subroutine ga_eval(s, variant, p, h, x, r, v, vd, a, w)
    type(rigid_system_t), intent(in) :: s
    integer, intent(in) :: variant
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: h, x(:, :), r(:, :, :), v(:), vd(:), a(:)
    type(ga_work_t), intent(inout) :: w
    integer :: nv, m
    real(wp) :: c, bh2
    nv = w%nv; m = w%m
    c = p%c
    bh2 = p%beta * h * h
    call ga_kinematics(s, variant, p, h, x, r, v, vd, a, w)
    associate (wd => w%z(1:nv), lam => w%z(nv + 1:nv + m))
      call rigid_bmat(s, w%r1, w%b1)
      call rigid_force(s, w%v1, w%qf)
      w%res(1:nv) = matmul(w%mm, wd) + matmul(lam, w%b1) - w%qf
      call rigid_phi(s, w%x1, w%r1, w%res(nv + 1:nv + m))
      w%res(nv + 1:nv + m) = w%res(nv + 1:nv + m) / bh2
      if (variant == LGA_STAB2) w%res(nv + m + 1:) = matmul(w%b1, w%v1) / (p%gamma * h)
      w%jac = 0
      call rigid_force_v(s, w%v1, w%kvv)
      w%jac(1:nv, 1:nv) = w%mm - h * p%gamma * c * w%kvv
      call rigid_btl_q(s, w%r1, lam, w%kvv)
      call rigid_right_tangent(s, w%psi, w%kvv)          ! (B1^T lam)_q P'
      w%jac(1:nv, 1:nv) = w%jac(1:nv, 1:nv) + bh2 * c * w%kvv
      w%jac(1:nv, nv + 1:nv + m) = transpose(w%b1)
      w%kmv = w%b1
      call rigid_right_tangent(s, w%psi, w%kmv)          ! B1 P'
      w%jac(nv + 1:nv + m, 1:nv) = c * w%kmv
      if (variant == LGA_STAB2) then
        w%jac(1:nv, nv + m + 1:) = bh2 * matmul(w%kvv, transpose(w%b0))
        w%jac(nv + 1:nv + m, nv + m + 1:) = matmul(w%kmv, transpose(w%b0))
        call rigid_bw_q(s, w%r1, w%v1, w%kmv)
        call rigid_right_tangent(s, w%psi, w%kmv)        ! (B1 V)_q P'
        w%jac(nv + m + 1:, 1:nv) = c * w%b1 + (h * p%beta * c / p%gamma) * w%kmv
        w%jac(nv + m + 1:, nv + m + 1:) = (p%beta * h / p%gamma) * matmul(w%kmv, transpose(w%b0))
      end if
    end associate
  end subroutine

  subroutine ga_newton(s, variant, p, h, x, r, v, vd, a, tol, maxit, w, iters, info)
    type(rigid_system_t), intent(in) :: s
    integer, intent(in) :: variant, maxit
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: h, x(:, :), r(:, :, :), v(:), vd(:), a(:), tol
    type(ga_work_t), intent(inout) :: w
    integer, intent(out) :: iters, info
    integer :: it, nv, m, status
    real(wp) :: sv, smv, sx
    nv = w%nv; m = w%m
    iters = 0
    call w%nc%start()
    do it = 1, maxit
      call ga_eval(s, variant, p, h, x, r, v, vd, a, w)
      call newton_increment(w%res, w%jac, w%ipiv, w%dz, w%z, info)
      if (info /= 0) return
      iters = iters + 1
      ! groups, each in the units of what it changes: W (h |dW| against 1 + |V|),
      ! lam (h |dlam| against 1 + |M V|), mu (beta h^2 |dmu| against 1 + |x|).  The
      ! 1/(beta h^2) rows leave a round-off eps (1 + |x|) / (beta h^2) in W and lam:
      ! their floor is what changes the positions by an ulp
      sv = 1 + maxabs(w%v1)
      smv = 1 + maxabs(matmul(w%mm, w%v1))
      sx = (1 + maxval(abs(x))) / (p%beta * h * h)
      call w%nc%clear()
      call w%nc%group(w%dz(1:nv), sv / h, max(maxabs(w%z(1:nv)), sx))
      call w%nc%group(w%dz(nv + 1:nv + m), smv / h, smv * sx / sv)
      if (variant == LGA_STAB2) call w%nc%group(w%dz(nv + m + 1:), sx, sx)
      status = w%nc%test(tol, maxit, .false.)
      if (status == NEWTON_CONVERGED) then
        info = 0
        return
      end if
      if (status == NEWTON_DIVERGED) exit
    end do
    info = STATUS_NEWTON_FAILED
  end subroutine

  !> The whole trajectory (see lie_backward_driver for the output layout).
  !> aout holds the acceleration Vdot; auxout = (a, mu): the algorithmic
  !> acceleration and, for variant 1, the stabilizing multiplier.
  !> istat = [status, steps done, samples]; stats as lie_backward_driver (with the
  !> running maxima of rigid_track).
  subroutine lie_genalpha_driver(s, variant, rho_inf, tol, maxit, t0, h, nsteps, every, &
                                 x0, r0, v0, tout, xout, rout, vout, aout, lout, auxout, istat, stats)
    type(rigid_system_t), intent(in) :: s
    integer, intent(in) :: variant, maxit, nsteps, every
    real(wp), intent(in) :: rho_inf, tol, t0, h, x0(:, :), r0(:, :, :), v0(:)
    real(wp), intent(out) :: tout(:), xout(:, :, :), rout(:, :, :, :), vout(:, :), aout(:, :), &
                             lout(:, :), auxout(:, :)
    integer, intent(out) :: istat(3)
    real(wp), intent(out) :: stats(8)
    type(ga_work_t) :: w
    type(alpha_params_t) :: p
    real(wp) :: x(3, s%nb), r(3, 3, s%nb), v(s%nv), vd(s%nv), a(s%nv), lam(s%m), mu(s%m), t, e0
    integer :: step, iters, info, ns, nv, m
    nv = s%nv; m = s%m
    stats = 0
    istat = [STATUS_BAD_INPUT, 0, 0]
    if (variant /= LGA_INDEX3 .and. variant /= LGA_STAB2) return
    if (h <= 0 .or. every < 1 .or. rho_inf < 0 .or. rho_inf > 1) return
    p = alpha_params(rho_inf)
    call ga_work_init(s, variant, w)
    x = x0; r = r0; v = v0
    call rigid_consistent_acc(s, r, v, vd, lam, info)
    if (info /= 0) then
      istat = [info, 0, 0]
      return
    end if
    a = vd
    mu = 0
    t = t0
    e0 = rigid_energy(s, x, v)
    call rigid_track(s, x, r, v, vd, e0, stats(4:8))
    ns = 1
    call store(ns)
    do step = 1, nsteps
      w%psi0 = h * v + h * h * (0.5_wp - p%beta) * a
      if (variant == LGA_STAB2) call rigid_bmat(s, r, w%b0)
      w%z(1:nv) = vd
      w%z(nv + 1:nv + m) = lam
      if (variant == LGA_STAB2) w%z(nv + m + 1:) = 0
      call ga_newton(s, variant, p, h, x, r, v, vd, a, tol, maxit, w, iters, info)
      stats(1) = stats(1) + iters
      stats(2) = stats(2) + iters
      stats(3) = max(stats(3), real(iters, wp))
      if (info == 0) info = stop_status()   ! Ctrl-C, a LAPACK error
      if (info /= 0) then
        istat = [info, step - 1, ns]
        return
      end if
      call ga_kinematics(s, variant, p, h, x, r, v, vd, a, w)
      x = w%x1; r = w%r1; v = w%v1; a = w%a1
      vd = w%z(1:nv)
      lam = w%z(nv + 1:nv + m)
      if (variant == LGA_STAB2) mu = w%z(nv + m + 1:)
      t = t0 + step * h
      call rigid_track(s, x, r, v, vd, e0, stats(4:8))
      if (mod(step, every) == 0) then
        ns = ns + 1
        call store(ns)
      end if
    end do
    if (mod(nsteps, every) /= 0) then   ! the final state is always the last sample
      ns = ns + 1
      call store(ns)
    end if
    istat = [STATUS_OK, nsteps, ns]

  contains

    subroutine store(k)
      integer, intent(in) :: k
      call rigid_store(k, t, x, r, v, vd, lam, [a, mu], tout, xout, rout, vout, aout, lout, auxout)
    end subroutine

  end subroutine lie_genalpha_driver

end module lie_genalpha
