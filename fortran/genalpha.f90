!> Generalized-alpha for constrained mechanical systems (seed 000, section 2),
!> and the shared Newton step of the alpha family (alpha_rattle.f90 reuses it).
!>
!> Discrete equations (Chung-Hulbert form as printed in seed 000):
!>   M_{n+1} a_{n+1} + am/(1-am) M_n a_n = (1-af)/(1-am) F_{n+1} + af/(1-am) F_n
!>   q_{n+1} = q_n + h v_n + h^2 ((1/2 - beta) a_n + beta a_{n+1})
!>   v_{n+1} = v_n + h ((1 - gamma) a_n + gamma a_{n+1})
!>   g(t_{n+1}, q_{n+1}) / (beta h^2) = 0                 (holonomic, index 3)
!>   (A(t_{n+1}, q_{n+1}) v_{n+1} + b) / h = 0           (nonholonomic, index 2)
!> with F = f - G^T lam_h - A^T lam_n.  The 1/h scaling of the nonholonomic row
!> is the paper's; 1/(beta h^2) of the holonomic row is the usual one (Bottasso
!> et al.), so the iteration matrix stays O(1) as h -> 0.
!>
!> Newton matrix (SPEC: F_v gamma h, and (A v)_q beta h + A gamma in the scaled row):
!>   [ M + beta h^2 ((M a)_q - c F_q) - gamma h c f_v     c [G; A]^T ]
!>   [ G                                                   0         ]
!>   [ (A v + b)_q beta h + A gamma                        0         ]
!> c = (1-af)/(1-am), F_q = f_q - (G^T lam)_q - (A^T lam)_q.
!>
!> Mass-matrix treatment (mass_mode): 0 = M(q_{n+1}) with the exact (M a)_q;
!> 1 = the paper's approximation M(q_n + h v_n) a_{n+1} (no (M a)_q needed).
!>
!> Start (start_mode): 0 = a_0 = qddot(0) (consistent acceleration, supplied by
!> the caller); 1 = the paper's M a_0 = (1 - alpha) F_0 + alpha F_1, solved by
!> fixed-point iteration over the first step.
module genalpha
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_linalg, only: lu_factor, lu_solve
  implicit none
  private
  public :: alpha_params_t, alpha_params, alpha_work_t, alpha_work_init, alpha_newton, &
            alpha_history, alpha_driver, VARIANT_GENALPHA, VARIANT_RATTLE, &
            FORM_PAPER, FORM_ARNOLD_BRULS

  integer, parameter :: VARIANT_GENALPHA = 0, VARIANT_RATTLE = 1
  !> FORM_PAPER: seed 000's  M_{n+1} a_{n+1} + am/(1-am) M_n a_n = c F_{n+1} + af/(1-am) F_n.
  !> FORM_ARNOLD_BRULS: M(q_{n+1}) w_{n+1} = F_{n+1} for the physical acceleration w and
  !>   (1-am) a_{n+1} + am a_n = (1-af) w_{n+1} + af w_n for the algorithmic one.
  !> Identical for constant M; for M(q) the paper's form is first order unless
  !> am = af (rho_inf = 1): M_{n+1} multiplies an acceleration that approximates
  !> qddot at t_{n+1} + (am - af) h.  Arnold-Bruls is second order for any M(q).
  integer, parameter :: FORM_PAPER = 0, FORM_ARNOLD_BRULS = 1

  !> Method constants derived from the spectral radius at infinity.
  type :: alpha_params_t
    real(wp) :: rho_inf, alpha_m, alpha_f, alpha, beta, gamma
    real(wp) :: c   !< (1 - af) / (1 - am): weight of F_{n+1}
    real(wp) :: k   !< am / (1 - am):       weight of M_n a_n
    real(wp) :: d   !< af / (1 - am):       weight of F_n
    integer :: form = FORM_PAPER
  end type

  !> Per-trajectory workspace (allocated once per call: the kernels are reentrant).
  type :: alpha_work_t
    integer :: n, mh, mn, m, nx
    real(wp), allocatable :: x(:), dx(:), e(:), jac(:, :)
    integer, allocatable :: ipiv(:)
    real(wp), allocatable :: q(:), v(:), f(:), mq(:, :), mpred(:, :), ch(:, :), cn(:, :), bn(:)
    real(wp), allocatable :: fq(:, :), fv(:, :), dq(:, :), dtmp(:, :), pn(:, :), ph(:, :)
    real(wp), allocatable :: rm(:, :)          !< alpha-RATTLE: -M^{-1} A^T at the half step
    real(wp), allocatable :: ma(:), force_tot(:)
  end type

contains

  !> am = (2 rho - 1)/(rho + 1), af = rho/(rho + 1), alpha = am - af,
  !> beta = (1 - alpha)^2 / 4, gamma = 1/2 - alpha (seed 000; = Chung-Hulbert).
  function alpha_params(rho_inf, form) result(p)
    real(wp), intent(in) :: rho_inf
    integer, intent(in) :: form
    type(alpha_params_t) :: p
    p%form = form
    p%rho_inf = rho_inf
    p%alpha_m = (2 * rho_inf - 1) / (rho_inf + 1)
    p%alpha_f = rho_inf / (rho_inf + 1)
    p%alpha = p%alpha_m - p%alpha_f
    p%beta = (1 - p%alpha)**2 / 4
    p%gamma = 0.5_wp - p%alpha
    p%c = (1 - p%alpha_f) / (1 - p%alpha_m)
    p%k = p%alpha_m / (1 - p%alpha_m)
    p%d = p%alpha_f / (1 - p%alpha_m)
  end function

  subroutine alpha_work_init(w, model)
    type(alpha_work_t), intent(out) :: w
    class(model_t), intent(in) :: model
    integer :: n, m
    n = model%n
    w%n = n; w%mh = model%mh; w%mn = model%mn
    m = model%mh + model%mn
    w%m = m; w%nx = n + m
    allocate(w%x(w%nx), w%dx(w%nx), w%e(w%nx), w%jac(w%nx, w%nx), w%ipiv(w%nx))
    allocate(w%q(n), w%v(n), w%f(n), w%mq(n, n), w%mpred(n, n), w%ch(model%mh, n), &
             w%cn(model%mn, n), w%bn(model%mn), w%fq(n, n), w%fv(n, n), w%dq(n, n), &
             w%dtmp(n, n), w%pn(model%mn, n), w%ph(model%mh, n), w%rm(n, model%mn), &
             w%ma(n), w%force_tot(n))
    w%rm = 0
  end subroutine

  !> Residual of the step at the iterate w%x = (a, lam_h, lam_n); also leaves
  !> q, v, M a and the total force F (with constraint forces) in w.
  subroutine alpha_residual(model, variant, p, mass_mode, t1, h, qpred, vpred, hist, w)
    class(model_t), intent(in) :: model
    integer, intent(in) :: variant, mass_mode
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: t1, h, qpred(:), vpred(:), hist(:)
    type(alpha_work_t), intent(inout) :: w
    integer :: n, mh, mn
    n = w%n; mh = w%mh; mn = w%mn
    associate (a => w%x(1:n), lh => w%x(n + 1:n + mh), ln => w%x(n + mh + 1:w%nx))
      w%q = qpred + p%beta * h * h * a
      w%v = vpred + p%gamma * h * a
      if (variant == VARIANT_RATTLE .and. mn > 0) then
        w%q = w%q + 0.5_wp * h * h * matmul(w%rm, ln)
        w%v = w%v + h * matmul(w%rm, ln)
      end if
      if (mass_mode == 1) then
        w%mq = w%mpred
      else if (.not. model%const_mass) then
        call model%mass(w%q, w%mq)
      end if
      call model%force(t1, w%q, w%v, w%f)
      w%force_tot = w%f
      if (mh > 0) then
        call model%hol_jac(t1, w%q, w%ch)
        w%force_tot = w%force_tot - matmul(lh, w%ch)
        call model%hol(t1, w%q, w%e(n + 1:n + mh))
        w%e(n + 1:n + mh) = w%e(n + 1:n + mh) / (p%beta * h * h)
      end if
      if (mn > 0) then
        call model%nh(t1, w%q, w%cn, w%bn)
        w%force_tot = w%force_tot - matmul(ln, w%cn)
        w%e(n + mh + 1:w%nx) = (matmul(w%cn, w%v) + w%bn) / h
      end if
      ! hist: paper form, am/(1-am) M_n a_n - af/(1-am) F_n;
      !       Arnold-Bruls, ahist = af/(1-am) w_n - am/(1-am) a_n, so that c w = a - ahist
      if (p%form == FORM_ARNOLD_BRULS) then
        w%ma = matmul(w%mq, a - hist)          ! = c M w_{n+1}
        w%e(1:n) = w%ma
      else
        w%ma = matmul(w%mq, a)                 ! M_{n+1} a_{n+1}, reused by alpha_history
        w%e(1:n) = w%ma + hist
      end if
      if (variant == VARIANT_RATTLE) then
        w%e(1:n) = w%e(1:n) - p%c * w%f
      else
        w%e(1:n) = w%e(1:n) - p%c * w%force_tot
      end if
    end associate
  end subroutine

  !> Newton matrix at the current iterate (after alpha_residual at the same x).
  subroutine alpha_jacobian(model, variant, p, mass_mode, t1, h, hist, w)
    class(model_t), intent(in) :: model
    integer, intent(in) :: variant, mass_mode
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: t1, h, hist(:)
    type(alpha_work_t), intent(inout) :: w
    integer :: n, mh, mn
    n = w%n; mh = w%mh; mn = w%mn
    associate (a => w%x(1:n), lh => w%x(n + 1:n + mh), ln => w%x(n + mh + 1:w%nx))
      call model%force_jac(t1, w%q, w%v, w%fq, w%fv)
      ! Dq = (M a)_q - c F_q ;  Dv = -c f_v (kept in fv)
      w%dq = -p%c * w%fq
      if (mass_mode == 0 .and. .not. model%const_mass) then
        if (p%form == FORM_ARNOLD_BRULS) then
          call model%mass_dq(w%q, a - hist, w%dtmp)
        else
          call model%mass_dq(w%q, a, w%dtmp)
        end if
        w%dq = w%dq + w%dtmp
      end if
      if (variant == VARIANT_GENALPHA) then
        if (mh > 0) then
          call model%hol_gtl_q(t1, w%q, lh, w%dtmp)
          w%dq = w%dq + p%c * w%dtmp
        end if
        if (mn > 0) then
          call model%nh_atl_q(t1, w%q, ln, w%dtmp)
          w%dq = w%dq + p%c * w%dtmp
        end if
      end if
      w%fv = -p%c * w%fv
      w%jac = 0
      w%jac(1:n, 1:n) = w%mq + p%beta * h * h * w%dq + p%gamma * h * w%fv
      if (variant == VARIANT_GENALPHA) then
        if (mh > 0) w%jac(1:n, n + 1:n + mh) = p%c * transpose(w%ch)
        if (mn > 0) w%jac(1:n, n + mh + 1:w%nx) = p%c * transpose(w%cn)
      else if (mn > 0) then
        w%jac(1:n, n + mh + 1:w%nx) = matmul(0.5_wp * h * h * w%dq + h * w%fv, w%rm)
      end if
      if (mh > 0) w%jac(n + 1:n + mh, 1:n) = w%ch
      if (mn > 0) then
        call model%nh_vel_q(t1, w%q, w%v, w%pn)
        w%jac(n + mh + 1:w%nx, 1:n) = p%beta * h * w%pn + p%gamma * w%cn
        if (variant == VARIANT_RATTLE) then
          w%jac(n + mh + 1:w%nx, n + mh + 1:w%nx) = matmul(0.5_wp * h * w%pn + w%cn, w%rm)
        end if
      end if
    end associate
  end subroutine

  !> Solve the step equations for w%x (start value on entry) by Newton; stop when
  !> beta h^2 |increment| <= tol (1 + |q|) componentwise (see below).
  !> info: 0 converged, STATUS_NEWTON_FAILED, STATUS_SINGULAR, STATUS_NONFINITE.
  subroutine alpha_newton(model, variant, p, mass_mode, t1, h, qpred, vpred, hist, tol, maxit, &
                          w, iters, nfact, info)
    class(model_t), intent(in) :: model
    integer, intent(in) :: variant, mass_mode, maxit
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: t1, h, qpred(:), vpred(:), hist(:), tol
    type(alpha_work_t), intent(inout) :: w
    integer, intent(out) :: iters, nfact, info
    integer :: it, lapack_info
    logical :: converged
    real(wp) :: sh
    sh = p%beta * h * h
    iters = 0; nfact = 0; info = 0
    converged = .false.
    do it = 1, maxit + 1
      call alpha_residual(model, variant, p, mass_mode, t1, h, qpred, vpred, hist, w)
      if (converged) return
      if (.not. all(abs(w%e) <= huge(1.0_wp))) then
        info = STATUS_NONFINITE
        return
      end if
      if (it == maxit + 1) exit
      call alpha_jacobian(model, variant, p, mass_mode, t1, h, hist, w)
      call lu_factor(w%jac, w%ipiv, lapack_info)
      nfact = nfact + 1
      if (lapack_info /= 0) then
        info = STATUS_SINGULAR
        return
      end if
      w%dx = -w%e
      call lu_solve(w%jac, w%ipiv, w%dx)
      w%x = w%x + w%dx
      iters = iters + 1
      ! Increments measured in position units (Hairer's h^2 scaling of index-3
      ! variables): a and lam carry a round-off floor ~ eps / (beta h^2), their
      ! effect on q does not.
      converged = all(abs(w%dx(1:w%n)) * sh <= tol * (1 + abs(w%q))) .and. &
                  all(abs(w%dx(w%n + 1:)) * sh <= tol * (1 + sh * abs(w%x(w%n + 1:))))
    end do
    info = STATUS_NEWTON_FAILED
  end subroutine

  !> The history term of the converged step (see alpha_residual); on entry hist
  !> is the previous step's.
  subroutine alpha_history(variant, p, w, hist)
    integer, intent(in) :: variant
    type(alpha_params_t), intent(in) :: p
    type(alpha_work_t), intent(in) :: w
    real(wp), intent(inout) :: hist(:)
    if (p%form == FORM_ARNOLD_BRULS) then
      ! w_{n+1} = (a_{n+1} - ahist) / c ;  ahist' = d w_{n+1} - k a_{n+1}
      hist = p%d * (w%x(1:w%n) - hist) / p%c - p%k * w%x(1:w%n)
    else if (variant == VARIANT_RATTLE) then
      hist = p%k * w%ma - p%d * w%f
    else
      hist = p%k * w%ma - p%d * w%force_tot
    end if
  end subroutine

  !> alpha-RATTLE's R_{1/2} operator: rm = -M(q_h)^{-1} A(t_h, q_h)^T at
  !> q_h = q_n + h/2 v_n, t_h = t_n + h/2 (seed 000, section 3).
  subroutine rattle_half_step(model, t, h, q, v, w, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, h, q(:), v(:)
    type(alpha_work_t), intent(inout) :: w
    integer, intent(out) :: info
    real(wp) :: mh_(w%n, w%n), qh(w%n), an(w%mn, w%n), bn(w%mn), col(w%n)
    integer :: ipiv(w%n), j
    qh = q + 0.5_wp * h * v
    call model%mass(qh, mh_)
    call model%nh(t + 0.5_wp * h, qh, an, bn)
    call lu_factor(mh_, ipiv, info)
    if (info /= 0) then
      info = STATUS_SINGULAR
      return
    end if
    do j = 1, w%mn
      col = -an(j, :)
      call lu_solve(mh_, ipiv, col)
      w%rm(:, j) = col
    end do
  end subroutine

  !> One step of the method from (q, v, a, lam, hist) at t with step h.
  subroutine alpha_step(model, variant, p, mass_mode, t, h, q, v, a, lam, hist, tol, maxit, &
                        w, iters, nfact, info)
    class(model_t), intent(in) :: model
    integer, intent(in) :: variant, mass_mode, maxit
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: t, h, tol
    real(wp), intent(inout) :: q(:), v(:), a(:), lam(:), hist(:)
    type(alpha_work_t), intent(inout) :: w
    integer, intent(out) :: iters, nfact, info
    real(wp) :: qpred(w%n), vpred(w%n)
    qpred = q + h * v + h * h * (0.5_wp - p%beta) * a
    vpred = v + h * (1 - p%gamma) * a
    if (mass_mode == 1) call model%mass(q + h * v, w%mpred)
    if (variant == VARIANT_RATTLE) then
      call rattle_half_step(model, t, h, q, v, w, info)
      if (info /= 0) return
    end if
    w%x(1:w%n) = a
    w%x(w%n + 1:) = lam
    call alpha_newton(model, variant, p, mass_mode, t + h, h, qpred, vpred, hist, tol, maxit, &
                      w, iters, nfact, info)
    if (info /= 0) return
    q = w%q
    v = w%v
    a = w%x(1:w%n)
    lam = w%x(w%n + 1:)
    call alpha_history(variant, p, w, hist)
  end subroutine

  !> The whole trajectory: nsteps steps of size h from t0, output every
  !> `every` steps into the caller's arrays (column k = sample k).
  !> On entry a (n) and lam (m) hold the consistent acceleration and
  !> multipliers at t0.  istat = [status, steps done, samples written];
  !> stats = [newton iterations, factorizations, max iterations in a step,
  !> start-up iterations].
  subroutine alpha_driver(model, variant, form, rho_inf, mass_mode, start_mode, tol, maxit, t0, h, &
                          nsteps, every, q0, v0, a0, lam0, tout, qout, vout, aout, lout, &
                          istat, stats)
    class(model_t), intent(in) :: model
    integer, intent(in) :: variant, form, mass_mode, start_mode, maxit, nsteps, every
    real(wp), intent(in) :: rho_inf, tol, t0, h, q0(:), v0(:), a0(:), lam0(:)
    real(wp), intent(out) :: tout(:), qout(:, :), vout(:, :), aout(:, :), lout(:, :)
    integer, intent(out) :: istat(3)
    real(wp), intent(out) :: stats(4)
    type(alpha_params_t) :: p
    type(alpha_work_t) :: w
    real(wp) :: q(size(q0)), v(size(v0)), a(size(a0)), lam(size(lam0)), hist(size(q0))
    real(wp) :: t, m0(size(q0), size(q0)), f0(size(q0)), ftot0(size(q0))
    integer :: step, iters, nfact, info, ns
    p = alpha_params(rho_inf, form)
    if (variant == VARIANT_RATTLE .and. model%mh > 0) then
      istat = [STATUS_BAD_INPUT, 0, 0]   ! alpha-RATTLE is written for nonholonomic constraints
      stats = 0
      return
    end if
    call alpha_work_init(w, model)
    call model%mass(q0, w%mq)          ! the constant mass matrix (re-evaluated per iterate otherwise)
    stats = 0
    istat = 0
    q = q0; v = v0; a = a0; lam = lam0
    t = t0
    ! F_0 and M_0 a_0 for the history term
    call total_force(model, t0, q0, v0, lam0, w, f0, ftot0)
    call model%mass(q0, m0)
    if (start_mode == 1) then
      call paper_start(info)
      if (info /= 0) then
        istat = [info, 0, 0]
        return
      end if
    end if
    hist = initial_history(a)
    ns = 1
    call store(ns)
    do step = 1, nsteps
      call alpha_step(model, variant, p, mass_mode, t, h, q, v, a, lam, hist, tol, maxit, w, &
                      iters, nfact, info)
      stats(1) = stats(1) + iters
      stats(2) = stats(2) + nfact
      stats(3) = max(stats(3), real(iters, wp))
      if (info /= 0) then
        istat = [info, step - 1, ns]
        return
      end if
      t = t0 + step * h
      if (mod(step, every) == 0) then
        ns = ns + 1
        call store(ns)
      end if
    end do
    istat = [STATUS_OK, nsteps, ns]

  contains

    !> History term at t0 for the algorithmic acceleration a (a0 = qddot(0) is the physical one).
    function initial_history(a) result(hst)
      real(wp), intent(in) :: a(:)
      real(wp) :: hst(size(a))
      if (p%form == FORM_ARNOLD_BRULS) then
        hst = p%d * a0 - p%k * a
      else if (variant == VARIANT_RATTLE) then
        hst = p%k * matmul(m0, a) - p%d * f0
      else
        hst = p%k * matmul(m0, a) - p%d * ftot0
      end if
    end function

    subroutine store(k)
      integer, intent(in) :: k
      if (k > size(tout)) return
      tout(k) = t
      qout(:, k) = q
      vout(:, k) = v
      aout(:, k) = a
      if (size(lam) > 0) lout(:, k) = lam
    end subroutine

    !> M a_0 = (1 - alpha) F_0 + alpha F_1 by fixed-point iteration over step 1.
    subroutine paper_start(info)
      integer, intent(out) :: info
      real(wp) :: q1(size(q0)), v1(size(q0)), a1(size(q0)), l1(size(lam0)), h1(size(q0))
      real(wp) :: anew(size(q0)), f1(size(q0)), ftot1(size(q0)), mlu(size(q0), size(q0))
      integer :: it, ipiv(size(q0)), lapack_info
      mlu = m0
      call lu_factor(mlu, ipiv, lapack_info)
      if (lapack_info /= 0) then
        info = STATUS_SINGULAR
        return
      end if
      do it = 1, 4 * maxit
        q1 = q0; v1 = v0; a1 = a; l1 = lam
        h1 = initial_history(a)
        call alpha_step(model, variant, p, mass_mode, t0, h, q1, v1, a1, l1, h1, tol, maxit, w, &
                        iters, nfact, info)
        stats(4) = stats(4) + 1
        if (info /= 0) return
        call total_force(model, t0 + h, q1, v1, l1, w, f1, ftot1)
        anew = (1 - p%alpha) * ftot0 + p%alpha * ftot1
        call lu_solve(mlu, ipiv, anew)
        if (all(abs(anew - a) <= tol * (1 + abs(a)))) then
          a = anew
          info = 0
          return
        end if
        a = anew
      end do
      info = STATUS_NEWTON_FAILED
    end subroutine

  end subroutine alpha_driver

  !> f and F = f - G^T lam_h - A^T lam_n at (t, q, v).
  subroutine total_force(model, t, q, v, lam, w, f, ftot)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, q(:), v(:), lam(:)
    type(alpha_work_t), intent(inout) :: w
    real(wp), intent(out) :: f(:), ftot(:)
    call model%force(t, q, v, f)
    ftot = f
    if (w%mh > 0) then
      call model%hol_jac(t, q, w%ch)
      ftot = ftot - matmul(lam(1:w%mh), w%ch)
    end if
    if (w%mn > 0) then
      call model%nh(t, q, w%cn, w%bn)
      ftot = ftot - matmul(lam(w%mh + 1:), w%cn)
    end if
  end subroutine

end module genalpha
