!> The index-1 (acceleration-level) form of a constrained system, shared by the
!> methods that integrate it.
!>
!> index1_accel (rk4_index1.f90, block.f90): holonomic and nonholonomic rows,
!>
!>     [ M   G^T  A^T ] [ a     ]   [ f         ]
!>     [ G   0    0   ] [ lam_h ] = [ -gamma_h  ]          (seed 003 eq. (7))
!>     [ A   0    0   ] [ lam_n ]   [ -gamma_n  ]
!>
!> factorized by pyint_kkt (Schur complement for a constant M) with one step of
!> iterative refinement.
!>
!> kkt_accel (baumgarte.f90, symplectic.f90): holonomic rows, optionally
!> Baumgarte-stabilized:
!>
!>     [ M(q)  G^T ] [ a   ]   [ f(t, q, v)                                        ]
!>     [ G     0   ] [ lam ] = [ -(hol_gamma + 2 alpha (G v + g_t) + beta^2 g)      ]
!>
!> alpha = beta = 0 gives the consistent acceleration and multipliers of a
!> state (G a + hol_gamma = 0); alpha, beta > 0 is Baumgarte's feedback
!> e'' + 2 alpha e' + beta^2 e = 0 on the position residual e = g(t, q).
module pyint_index1
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_linalg, only: lu_factor_solve
  use pyint_kkt, only: kkt_data_t, kkt_factor_t, kkt_setup, kkt_factor, kkt_solve, SING_TOL, SING_TOL_PROJECTED, &
                       TIKHONOV_MU, kkt_resolved, kkt_structure, kkt_structurable
  implicit none
  private
  public :: kkt_work_t, kkt_init, kkt_accel
  public :: index1_work_t, index1_init, index1_accel, rk4_step, project_step, pass_begin, pass_end, kkt_structured

  type :: kkt_work_t
    integer :: n = 0, mh = 0
    real(wp), allocatable :: k(:, :), rhs(:), gq(:, :), g(:), gt(:), gam(:)
    integer, allocatable :: ipiv(:)
  end type

  !> Workspace of one trajectory (allocated per call: reentrant).
  type :: index1_work_t
    integer :: n = 0, mh = 0, mn = 0, nx = 0
    logical :: ready = .false.            !< kkt set up (and a constant M evaluated)
    real(wp) :: sing_tol = SING_TOL       !< pyint_kkt's singular-position flag (SING_TOL_PROJECTED: projected steps)
    logical :: on_manifold = .false.      !< every solve at (q, v) projected onto the constraints (pass_begin)
    real(wp), allocatable :: rhs(:), sol(:), mq(:, :), ch(:, :), cn(:, :), bn(:)
    type(kkt_data_t) :: kd
    type(kkt_factor_t) :: kf(1)
  end type

contains

  subroutine kkt_init(w, model)
    type(kkt_work_t), intent(out) :: w
    class(model_t), intent(in) :: model
    w%n = model%n
    w%mh = model%mh
    allocate(w%k(w%n + w%mh, w%n + w%mh), w%rhs(w%n + w%mh), w%gq(w%mh, w%n), w%g(w%mh), &
             w%gt(w%mh), w%gam(w%mh), w%ipiv(w%n + w%mh))
  end subroutine

  !> a and lam at (t, q, v); info = STATUS_SINGULAR if the KKT matrix is singular.
  subroutine kkt_accel(model, w, t, q, v, alpha, beta, a, lam, info)
    class(model_t), intent(in) :: model
    type(kkt_work_t), intent(inout) :: w
    real(wp), intent(in) :: t, q(:), v(:), alpha, beta
    real(wp), intent(out) :: a(:), lam(:)
    integer, intent(out) :: info
    integer :: n, m
    n = w%n; m = w%mh
    w%k = 0
    call model%mass(q, w%k(1:n, 1:n))
    call model%force(t, q, v, w%rhs(1:n))
    if (m > 0) then
      call model%hol_jac(t, q, w%gq)
      call model%hol_gamma(t, q, v, w%gam)
      w%k(1:n, n + 1:) = transpose(w%gq)
      w%k(n + 1:, 1:n) = w%gq
      w%rhs(n + 1:) = -w%gam
      if (alpha /= 0) then
        call model%hol_t(t, q, w%gt)
        w%rhs(n + 1:) = w%rhs(n + 1:) - 2 * alpha * (matmul(w%gq, v) + w%gt)
      end if
      if (beta /= 0) then
        call model%hol(t, q, w%g)
        w%rhs(n + 1:) = w%rhs(n + 1:) - beta * beta * w%g
      end if
    end if
    call lu_factor_solve(w%k, w%ipiv, w%rhs, info)
    if (info /= 0) return
    a = w%rhs(1:n)
    lam = w%rhs(n + 1:)
    if (.not. all(abs(w%rhs) <= huge(1.0_wp))) info = STATUS_NONFINITE
  end subroutine

  subroutine index1_init(w, model)
    type(index1_work_t), intent(out) :: w
    class(model_t), intent(in) :: model
    w%n = model%n; w%mh = model%mh; w%mn = model%mn
    w%nx = model%n + model%mh + model%mn
    allocate(w%rhs(w%nx), w%sol(w%nx), w%mq(w%n, w%n), w%ch(w%mh, w%n), w%cn(w%mn, w%n), w%bn(w%mn))
    w%ready = .false.
  end subroutine

  !> Solve the index-1 system at (t, q, v) for a and lam = (lam_h, lam_n); with alpha, beta the
  !> holonomic rows Baumgarte-stabilized, G a + hol_gamma + 2 alpha (G v + g_t) + beta^2 g = 0
  !> (baumgarte.f90).  info: 0, STATUS_SINGULAR (singular M or rank-deficient constraints) or
  !> STATUS_SINGULAR_POSITION (pyint_kkt: the rank drops at (t, q)).
  subroutine index1_accel(model, t, q, v, w, a, lam, info, alpha, beta)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, q(:), v(:)
    type(index1_work_t), intent(inout) :: w
    real(wp), intent(out) :: a(:), lam(:)
    integer, intent(out) :: info
    real(wp), intent(in), optional :: alpha, beta
    integer :: n, mh, mn
    real(wp) :: qp(size(q)), vp(size(v))
    n = w%n; mh = w%mh; mn = w%mn
    if (w%on_manifold) then       ! a pass (pass_begin): the stage's projection, its a and lam
      qp = q
      vp = v
      call project_step(model, t, qp, vp, w, a, lam, info)
      return
    end if
    call kkt_ready(model, q, w, info)
    if (info /= 0) return
    call model%force(t, q, v, w%rhs(1:n))
    if (mh > 0) then
      call model%hol_jac(t, q, w%ch)
      call model%hol_gamma(t, q, v, w%rhs(n + 1:n + mh))
      w%rhs(n + 1:n + mh) = -w%rhs(n + 1:n + mh)
      if (present(alpha)) then
        if (alpha /= 0) then
          call model%hol_vel(t, q, v, w%sol(n + 1:n + mh))
          w%rhs(n + 1:n + mh) = w%rhs(n + 1:n + mh) - 2 * alpha * w%sol(n + 1:n + mh)
        end if
      end if
      if (present(beta)) then
        if (beta /= 0) then
          call model%hol(t, q, w%sol(n + 1:n + mh))
          w%rhs(n + 1:n + mh) = w%rhs(n + 1:n + mh) - beta * beta * w%sol(n + 1:n + mh)
        end if
      end if
    end if
    if (mn > 0) then
      call model%nh(t, q, w%cn, w%bn)
      call model%nh_gamma(t, q, v, w%rhs(n + mh + 1:w%nx))
      w%rhs(n + mh + 1:w%nx) = -w%rhs(n + mh + 1:w%nx)
    end if
    call kkt_factor(w%kd, w%mq, w%ch, w%cn, w%kf(1), info)
    if (info /= 0) return
    ! one step of iterative refinement: the Schur path loses digits to the
    ! cancellation in a = M^-1 (f - C^T lam) when M has small entries
    w%sol = w%rhs
    call kkt_solve(w%kd, w%kf(1), w%sol)
    w%rhs(1:n) = w%rhs(1:n) - matmul(w%mq, w%sol(1:n))
    if (mh > 0) then
      w%rhs(1:n) = w%rhs(1:n) - matmul(w%sol(n + 1:n + mh), w%ch)
      w%rhs(n + 1:n + mh) = w%rhs(n + 1:n + mh) - matmul(w%ch, w%sol(1:n))
    end if
    if (mn > 0) then
      w%rhs(1:n) = w%rhs(1:n) - matmul(w%sol(n + mh + 1:w%nx), w%cn)
      w%rhs(n + mh + 1:w%nx) = w%rhs(n + mh + 1:w%nx) - matmul(w%cn, w%sol(1:n))
    end if
    call kkt_solve(w%kd, w%kf(1), w%rhs)
    a = w%sol(1:n) + w%rhs(1:n)
    lam = w%sol(n + 1:w%nx) + w%rhs(n + 1:w%nx)
    info = 0
  end subroutine

  !> M(q) in w%mq (a constant M once) and the kkt set up at the first call.  info: 0 or
  !> STATUS_SINGULAR (a singular constant M).
  subroutine kkt_ready(model, q, w, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: q(:)
    type(index1_work_t), intent(inout) :: w
    integer, intent(out) :: info
    info = 0
    if (.not. (model%const_mass .and. w%ready)) call model%mass(q, w%mq)
    if (.not. w%ready) then
      call kkt_setup(w%kd, w%n, w%mh + w%mn, model%const_mass, w%mq, w%kf, info)
      if (info /= 0) return
      call kkt_structured(model, q, w%kd, w%kf)
      w%kd%sing_tol = w%sing_tol
      w%ready = .true.
    end if
  end subroutine

  !> The model's constraint pattern (add_hol_jac, add_nh_jac recorded once: every entry C = [G; A]
  !> can ever have, pyint_model's contract, so any t and q will do) handed to pyint_kkt's
  !> kkt_structure, which bands S = C M^-1 C^T for a large m; a no-op where it could not.
  subroutine kkt_structured(model, q, kd, kf)
    use pyint_newton_matrix, only: newton_matrix_t
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: q(:)
    type(kkt_data_t), intent(inout) :: kd
    type(kkt_factor_t), intent(inout) :: kf(:)
    type(newton_matrix_t) :: nm
    if (.not. kkt_structurable(kd)) return
    call nm%record(max(model%n, model%mh + model%mn))
    if (model%mh > 0) call model%add_hol_jac(0.0_wp, q, 1.0_wp, .false., nm, 0, 0)
    if (model%mn > 0) call model%add_nh_jac(0.0_wp, q, 1.0_wp, .false., nm, model%mh, 0)
    if (nm%out_of_pattern) return
    call kkt_structure(kd, kf, nm%pi(1:nm%np), nm%pj(1:nm%np))
  end subroutine

  !> Projected steps (the option projection = 'steps' of rk4_index1 and baumgarte_rk4): (q, v) at t
  !> projected onto the constraints, M-orthogonally (pyint_model: impose_constraints, Gauss-Newton
  !> on g = 0, then the velocity rows), and a, lam of the index-1 system there.  The standard
  !> projection method (Hairer, Lubich, Wanner, GNI IV.4; Hairer, Wanner, Solving ODEs II, VII.2)
  !> keeps the order of the step and holds the drift at round-off, so the index-1 form's
  !> 1 / sigma^2 amplification (pyint_kkt) passes singular positions: the stage solves then flag
  !> only sigma ratios below 1e-8 (SING_TOL_PROJECTED).  The first call lowers w%sing_tol.
  subroutine project_step(model, t, q, v, w, a, lam, info)
    use pyint_model, only: impose_constraints
    use pyint_newton_matrix, only: SOLVER_AUTO
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t
    real(wp), intent(inout) :: q(:), v(:)
    type(index1_work_t), intent(inout) :: w
    real(wp), intent(out) :: a(:), lam(:)
    integer, intent(out) :: info
    if (w%on_manifold) then       ! a pass (pass_begin): the filtered projection
      call pass_projection(model, t, q, v, w, a, lam, info)
      return
    end if
    w%sing_tol = SING_TOL_PROJECTED
    w%kd%sing_tol = SING_TOL_PROJECTED
    call impose_constraints(model, t, q, v, SOLVER_AUTO, a, lam, info)
    if (info == 1) info = STATUS_SINGULAR_POSITION     ! a singular projection matrix: exactly there
    if (info /= 0 .and. info /= STATUS_SINGULAR_POSITION) info = STATUS_NEWTON_FAILED   ! no convergence
  end subroutine

  !> A fixed step flagged at a singular position (the driver's pass_singular), taken again on the
  !> constraints.  The exact solution and its multipliers are smooth through the crossing; what
  !> stops the index-1 form is the drift d it carries (O(h^4) per unit time, 3e-12 at A02's first
  !> crossing), amplified by 1 / sigma^2 into the multipliers (pyint_kkt): on a level set g = d /= 0
  !> the branches of the singular point reconnect (the bifurcation unfolds) and the motion may
  !> leave its branch.  The stages of an explicit step are off the constraints too, by O(h^2)
  !> (Q = q + h/2 v: stage order 1), an inconsistency eps that the solve turns into an error
  !> eps / sigma in a (A02, N = 2, h = 1e-3, a stage 1e-5 from the crossing: 1e-5 in v with the
  !> step's ends projected only).  So in a pass (pass_begin .. pass_end) every index-1 solve
  !> (index1_accel) is made at its (q, v) projected onto g = 0, G v + g_t = 0 (project_step: the
  !> M-orthogonal projection of GNI IV.4 and Hairer, Wanner, Solving ODEs II, VII.2; its flag
  !> lowered to SING_TOL_PROJECTED): the start, every stage and the end, so eps is round-off.
  !> Those projections and solves are Tikhonov-filtered (pass_projection; pyint_kkt, TIKHONOV_MU):
  !> with exact solves the 1 / sigma^2 of a stage very near the crossing still turned round-off
  !> into velocity errors up to 2e-7, erratic in the substeps (A02, N = 4: block_legendre 6.2e-3
  !> at 10 s; filtered 4.4e-8).
  !> Projected stages perturb the stage derivatives by O(h^2) along the normal directions, so a
  !> passed step's local error is O(h^3), not O(h^5): a bounded number of steps per crossing (those
  !> flagged, sigma ratio below 1e-2: pyint_kkt SING_TOL_PASS), against an error 1 (the wrong branch)
  !> without.  pass_end restores the stepper's own solves, so the next step runs unprojected and is
  !> flagged, hence passed, again while it is near the singular position.
  !> Only flagged steps change: a run that never comes near one is bit for bit the same.  This is
  !> the projection of the index-3 augmented Lagrangian with projections (ALI3-P: E. Bayo,
  !> R. Ledesma, Nonlinear Dynamics 9 (1996) 113-130), which passes these positions because its
  !> states are kept on the manifold (F. Gonzalez, D. Dopico, R. Pastorino, J. Cuadrado, Nonlinear
  !> Dynamics 85 (2016) 1491-1508, on A02), applied only where the index-1 form needs it.
  !> tol: the flag to restore.
  subroutine pass_begin(model, t, q, v, w, a, lam, tol, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t
    real(wp), intent(inout) :: q(:), v(:)
    type(index1_work_t), intent(inout) :: w
    real(wp), intent(out) :: a(:), lam(:), tol
    integer, intent(out) :: info
    tol = w%sing_tol
    w%on_manifold = .true.
    w%kd%mu = TIKHONOV_MU
    call project_step(model, t, q, v, w, a, lam, info)
  end subroutine

  !> The stepper's own solves and singular-position flag back after a pass (pass_begin).
  subroutine pass_end(w, tol)
    type(index1_work_t), intent(inout) :: w
    real(wp), intent(in) :: tol
    w%on_manifold = .false.
    w%kd%mu = 0
    w%sing_tol = tol
    w%kd%sing_tol = tol
  end subroutine

  !> project_step inside a pass (pass_begin): the same M-orthogonal projection (GNI IV.4), its solves
  !> Tikhonov-filtered (pyint_kkt, w%kd%mu): Gauss-Newton on g(t, q) = 0, q <- q - M^-1 G^T lam_mu
  !> with S lam = g filtered (C = [G; 0]: the nonholonomic rows dropped by the filter), then at the
  !> final q one filtered factorization of C = [G; A] for the velocity rows (v <- v + dv,
  !> C dv = -(C v + (g_t; b))) and the index-1 a, lam (no refinement: its residual is the
  !> unfiltered K's, which would undo the filter).  The Gauss-Newton steps stop at
  !> max|g| <= GTOL, impose_constraints' test, or when g's part that the filter resolves
  !> (pyint_kkt: kkt_resolved, s_i >= mu s_max) is below GTOL: the rest lies along directions the
  !> filter damps like a null space, which a first-order step removes only by jumping along them
  !> (near a singular position, the branches' reconnection; A02, N = 2: 7e-11 left at the first
  !> crossing, which filtered steps removed at 2 % per step).  The resolved part falls by at least
  !> half per step (1 - phi_i <= 1/2), so MAXIT holds.
  !> info: 0, STATUS_NEWTON_FAILED (MAXIT steps), STATUS_NONFINITE or the kkt's (a singular M).
  subroutine pass_projection(model, t, q, v, w, a, lam, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t
    real(wp), intent(inout) :: q(:), v(:)
    type(index1_work_t), intent(inout) :: w
    real(wp), intent(out) :: a(:), lam(:)
    integer, intent(out) :: info
    real(wp), parameter :: GTOL = 1e-13_wp
    integer, parameter :: MAXIT = 50
    real(wp) :: x(w%nx), g(w%mh)
    integer :: n, mh, mn, it
    logical :: factored     !< w%kf(1) holds C = [G; A] at q
    n = w%n; mh = w%mh; mn = w%mn
    call kkt_ready(model, q, w, info)
    if (info /= 0) return
    factored = .false.
    if (mh > 0) then
      w%cn = 0
      do it = 0, MAXIT
        call model%hol(t, q, g)
        factored = .false.
        if (maxval(abs(g)) <= GTOL) exit
        info = STATUS_NEWTON_FAILED
        if (.not. all(abs(g) <= huge(1.0_wp))) return
        if (it > 0 .and. .not. model%const_mass) call model%mass(q, w%mq)
        call model%hol_jac(t, q, w%ch)
        call kkt_factor(w%kd, w%mq, w%ch, w%cn, w%kf(1), info)
        if (info /= 0) return
        factored = mn == 0
        x = 0
        x(n + 1:n + mh) = g
        if (kkt_resolved(w%kd, w%kf(1), x(n + 1:)) <= GTOL) exit
        info = STATUS_NEWTON_FAILED
        if (it == MAXIT) return
        x(n + 1:n + mh) = -g
        call kkt_solve(w%kd, w%kf(1), x)
        q = q + x(1:n)
      end do
      if (.not. factored) then
        if (.not. model%const_mass) call model%mass(q, w%mq)
        call model%hol_jac(t, q, w%ch)
      end if
    end if
    if (mn > 0) call model%nh(t, q, w%cn, w%bn)
    if (.not. factored) call kkt_factor(w%kd, w%mq, w%ch, w%cn, w%kf(1), info)
    if (info /= 0) return
    x = 0
    if (mh > 0) call model%hol_vel(t, q, v, x(n + 1:n + mh))
    if (mn > 0) call model%nh_vel(t, q, v, x(n + mh + 1:))
    x(n + 1:) = -x(n + 1:)
    call kkt_solve(w%kd, w%kf(1), x)
    v = v + x(1:n)
    call model%force(t, q, v, x(1:n))
    if (mh > 0) call model%hol_gamma(t, q, v, x(n + 1:n + mh))
    if (mn > 0) call model%nh_gamma(t, q, v, x(n + mh + 1:))
    x(n + 1:) = -x(n + 1:)
    call kkt_solve(w%kd, w%kf(1), x)
    a = x(1:n)
    lam = x(n + 1:)
    info = 0
    if (.not. (all(abs(x) <= huge(1.0_wp)) .and. all(abs(q) <= huge(1.0_wp)) .and. all(abs(v) <= huge(1.0_wp)))) &
      info = STATUS_NONFINITE
  end subroutine

  !> One classical RK4 step (rk4_index1.f90, block.f90) of size h from (t, q, v); a0 = a(t, q, v) on entry (the first
  !> stage).  On exit (q, v) advanced.  info: 0, STATUS_SINGULAR, STATUS_NONFINITE.
  subroutine rk4_step(model, t, h, q, v, a0, w, info, v4o, a4o)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, h, a0(:)
    real(wp), intent(inout) :: q(:), v(:)
    type(index1_work_t), intent(inout) :: w
    integer, intent(out) :: info
    real(wp), intent(out), optional :: v4o(:), a4o(:)   !< the last stage k4 = (v4, a4) (the embedded estimate)
    real(wp) :: v2(size(q)), v3(size(q)), v4(size(q)), a2(size(q)), a3(size(q)), a4(size(q))
    real(wp) :: lam(w%mh + w%mn)
    v2 = v + 0.5_wp * h * a0
    call index1_accel(model, t + 0.5_wp * h, q + 0.5_wp * h * v, v2, w, a2, lam, info)
    if (info /= 0) return
    v3 = v + 0.5_wp * h * a2
    call index1_accel(model, t + 0.5_wp * h, q + 0.5_wp * h * v2, v3, w, a3, lam, info)
    if (info /= 0) return
    v4 = v + h * a3
    call index1_accel(model, t + h, q + h * v3, v4, w, a4, lam, info)
    if (info /= 0) return
    q = q + (h / 6) * (v + 2 * v2 + 2 * v3 + v4)
    v = v + (h / 6) * (a0 + 2 * a2 + 2 * a3 + a4)
    if (present(v4o)) v4o = v4
    if (present(a4o)) a4o = a4
    if (.not. (all(abs(q) <= huge(1.0_wp)) .and. all(abs(v) <= huge(1.0_wp)))) info = STATUS_NONFINITE
  end subroutine

end module pyint_index1
