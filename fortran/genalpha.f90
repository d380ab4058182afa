!> Generalized-alpha for constrained mechanical systems (seed 000, section 2),
!> and alpha-RATTLE (section 3): one kernel, two variants.
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
!> Newton matrix (seed 000 section 2 with its OCR typos corrected: F_v gamma h, and
!> (A v)_q beta h + A gamma in the scaled row):
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
!>
!> Linear algebra (solver): the Newton matrix is assembled through the model's
!> structured hooks (model.f90: add_qq, add_hol_jac, add_nh_jac,
!> add_nh_vel_q) into a pyint_newton_matrix%newton_matrix_t, which records the
!> pattern once per trajectory and factors it densely, banded (after reverse
!> Cuthill-McKee) or sparse (KLU); SOLVER_AUTO picks by size and band width.
!> The residual uses operator applications only (mass_mul, hol_jac_tmul,
!> nh_jac_tmul, nh_vel), so a model with O(N) hooks costs O(N) per step.
!> alpha-RATTLE's matrix contains the dense products with R_{1/2}: it always
!> uses the dense solver.  The stabilized variant's (below) contains products with
!> G(q_n)^T: dense (stab2_jacobian) for SOLVER_DENSE and for SOLVER_AUTO with at most
!> SMALL_MAX unknowns; otherwise (banded, sparse, or AUTO's choose_solver on the pattern
!> unless that picks dense) the structured form with auxiliary unknowns z = G(q_n)^T mu
!> (stab2_blocks), and the variable-step estimates' projections through the same solver
!> (project_structured): O(nnz) per step for a model with structured add_* items.
!>
!> Jacobian reuse (reuse = 1, simplified Newton): the factorization is kept
!> across iterations and steps; the matrix is re-assembled and refactored at
!> the next iteration when the observed contraction exceeds THETA_REFACTOR,
!> and a step that fails with an old factorization is retried once with a
!> fresh one.  reuse = 0 is Newton's method (a new matrix every iteration).
!> With variable steps (reuse = 1) the factorization is also kept across a change of
!> h while IDA's cj-ratio test allows (pyint_newton_control's keep_matrix); reuse = 2
!> refactors at every new h (one factorization per variable step).
!> Termination: the one rule of every implicit kernel, pyint_newton_control
!> (fortran/core/newton_control.f90); the groups are listed at alpha_newton.
!>
!> Stabilized index 2 (VARIANT_STAB2; Arnold, Bruls, Cardona, Numer. Math. 129 (2015), the vector
!> form of fortran/lie_genalpha.f90's variant 1): q_{n+1} gains beta h^2 G(q_n)^T mu and
!> (G v_{n+1} + g_t) / (gamma h) = 0 is solved with g = 0: both levels at round-off.
!>
!> Variable steps (self%adaptive, fortran/core/driver.f90 drive_adaptive; the derivation is
!> docs/adaptive_steps.md section 1, checked on its NumPy prototype tests/adaptive_numpy.py):
!>  * a_n approximates qddot(t_n + o_n), (1 - am) o_{n+1} + am o_n = delta h_n, delta = am - af
!>    (o_0 = 0: the consistent start); second order needs o_n = delta h_n for the step h_n taken,
!>    so before each step a_n* = a_n + (delta h_n - o_n) (a_n - a_{n-1}*) / (t_n + o_n - s_{n-1}),
!>    the history term with it (Arnold-Bruls: ahist - k da; paper: hist + k M_n da); without it a
!>    changing h leaves h_n delta kappa (h_{n-1} - h_n) q^(3) per step in v (order 1);
!>  * local errors h^3 C_q q^(3) (q), h^3 C_v q^(4) (v), C_q = beta + delta/2 - 1/6,
!>    C_v = c2 + gamma/2 + gamma delta - 1/6, c2 = (1 - af)/2 - (1 - am)(1/2 + delta)
!>    (rho_inf = 1: 1/12, the trapezoidal rule's); estimated by the divided differences of a over
!>    the times s = t + o it approximates qddot at: e_q = h^3 C_q a[s_n, s_n+1],
!>    e_v = h^3 C_v 2 a[s_n-1, s_n, s_n+1] (none at step 1), projected along the direction the
!>    constraint rows move the solution (project_estimates);
!>  * index 3 collapses under step control (the velocity defect G v = O(h^2) is corrected within a
!>    step of the new h: lam and the estimates grow as 1/h): with holonomic constraints only the
!>    stabilized variant runs adaptively (init refuses VARIANT_GENALPHA there); nonholonomic rows are
!>    index 2 as they are;
!>  * alpha-RATTLE (docs/adaptive_steps.md 1.8): a approximates the free acceleration u = M^-1 f
!>    (start a_0 = u(0), not qddot(0)), the constraint's r = -M^-1 A^T lam enters by the midpoint
!>    rule through R_1/2 = R(q_n + h/2 v_n); its local errors add h^3 r'/12 to q and
!>    -h^3 r''/24 - h^3 R'(q)[qddot] lam / 8 to v (R_1/2 sits h^2/8 qddot off the midpoint): the
!>    estimates gain h^3/12 r[m_n, m_n+1] and -h^3/24 2 r[m_n-1, m_n, m_n+1] - h/2 (Rbar - R_1/2) lam
!>    with r_k = (R_1/2 + Rbar) lam_k / 2 at the midpoints m_k (r(t_0) = qddot(0) - u(0)), Rbar =
!>    R((q_n + q_n+1)/2) (rattle_estimates); without them the estimate misses the constraint part
!>    (the skate's u = 0: estimate 0).
module genalpha
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_linalg, only: lu_factor, lu_solve, lu_factor_solve
  use pyint_newton_matrix, only: newton_matrix_t, SOLVER_AUTO, SOLVER_DENSE, SMALL_MAX
  use pyint_newton_control, only: newton_control_t, NEWTON_CONVERGED, NEWTON_DIVERGED, &
                                  local_error_scale, local_error_trusted, keep_matrix
  use pyint_alpha, only: alpha_params_t, alpha_params, alpha_error_constants, FORM_PAPER, FORM_ARNOLD_BRULS
  use pyint_driver, only: stepper_t, state_t, consistent_start
  use pyint_reduced_model, only: near_singular_position
  use pyint_small_lu, only: slu_factor, slu_solve
  use pyint_kkt, only: kkt_data_t, kkt_factor_t, kkt_setup, kkt_factor, kkt_solve, kkt_project
  use pyint_seam, only: NSTATS_GENALPHA, NIOPT_GENALPHA, NROPT_GENALPHA, GENALPHA_VARIANT_GENALPHA, &
                        GENALPHA_VARIANT_RATTLE, GENALPHA_VARIANT_STAB2, IOPT_GENALPHA_VARIANT, &
                        IOPT_GENALPHA_FORMULATION, IOPT_GENALPHA_MASS_UPDATE, IOPT_GENALPHA_START, &
                        IOPT_GENALPHA_MAXIT, IOPT_GENALPHA_LINEAR_SOLVER, IOPT_GENALPHA_JACOBIAN_REUSE, &
                        ROPT_GENALPHA_TOL, ROPT_GENALPHA_RHO_INF, STAT_GENALPHA_NEWTON_ITERATIONS, &
                        STAT_GENALPHA_JACOBIAN_FACTORIZATIONS, STAT_GENALPHA_MAX_NEWTON_ITERATIONS, &
                        STAT_GENALPHA_STARTUP_ITERATIONS, STAT_GENALPHA_JACOBIAN_REUSES, &
                        STAT_GENALPHA_LINEAR_SOLVER, STAT_GENALPHA_BAND_LOWER, STAT_GENALPHA_BAND_UPPER
  implicit none
  private
  public :: alpha_stepper_t, VARIANT_GENALPHA, VARIANT_RATTLE, VARIANT_STAB2, NSTATS

  !> VARIANT_STAB2: the stabilized index-2 generalized-alpha (see "Variable steps" below).
  integer, parameter :: VARIANT_GENALPHA = GENALPHA_VARIANT_GENALPHA, VARIANT_RATTLE = GENALPHA_VARIANT_RATTLE, &
                        VARIANT_STAB2 = GENALPHA_VARIANT_STAB2
  !> stats = [newton iterations, factorizations, max iterations in a step, start-up
  !>          iterations, solves with a kept factorization, solver kind, band kl, band ku]
  integer, parameter :: NSTATS = NSTATS_GENALPHA
  !> Simplified Newton refactors when the contraction rate exceeds this.
  real(wp), parameter :: THETA_REFACTOR = 0.1_wp

  !> Per-trajectory workspace (allocated once per call: the kernels are reentrant).
  type :: alpha_work_t
    integer :: n, mh, mn, m, nx
    integer :: ns = 0                  !< VARIANT_STAB2: mu's unknowns (mh); else 0
    integer :: nm = 0                  !< n + m: x = (a, lam_h, lam_n, mu), mu = x(nm + 1:nx)
    !> VARIANT_STAB2 with a banded/sparse solver: the Newton matrix's auxiliary unknowns
    !> z = G(q_n)^T mu (n of them, after x; stab2_blocks); else 0
    integer :: nz = 0
    logical :: stab2_dense = .false.   !< VARIANT_STAB2 with the dense matrix (stab2_jacobian)
    real(wp) :: h_factor = 0           !< the h of the kept factorization
    !> variable steps (alpha_stepper_t%adaptive)
    logical :: h_varies = .false.
    !> variable steps, reuse = 1 (the default): a factorization is kept across a change of h while
    !> the cj ratio allows (pyint_newton_control's keep_matrix, cj = 1 / (beta h^2)).  A kept matrix
    !> contracts the stabilized velocity rows, which must reach round-off, only ~1e-2 per iteration:
    !> it pays since Newton starts from the extrapolation through the last steps' times (alpha_step:
    !> 1.9-3.4 iterations per step against a fresh matrix's 1.8-2 and a factorization;
    !> docs/adaptive_steps.md 1.7, with the figures).  reuse = 2: a fresh one at every new h
    logical :: keep_across_h = .false.
    integer :: variant = VARIANT_GENALPHA, mass_mode = 0
    logical :: dense_mass = .false.    !< M held as a dense array (dense solver)
    logical :: reuse = .false.         !< simplified Newton
    logical :: have_factor = .false.   !< jm holds a usable factorization
    type(newton_control_t) :: nc       !< the Newton termination rule's state (carried across steps)
    !> x = (a, lam) at this step's start (xn) and the previous one's (xprev): Newton's
    !> start value (alpha_step) and the local-error estimate (alpha_newton); xprev2 the one
    !> before, valid when the last nback >= 2 steps followed one another (a fixed step only)
    real(wp), allocatable :: xn(:), xprev(:), xprev2(:)
    integer :: nback = 0
    logical :: quadratic = .false.     !< the quadratic start was the nearer at the last step
    !> variable steps: the steps that led from xprev to xn (hx1) and from xprev2 to xprev (hx2);
    !> r1 = h / hx1 of the step being solved (alpha_newton's scaled second difference)
    real(wp) :: hx1 = 0, hx2 = 0, r1 = 1
    !> variable steps: a approximates qddot at t + o, not at t (docs/adaptive_steps.md 1.1), so its
    !> extrapolations and second difference run through those times: oa the offset of xn's a (set by
    !> alpha_advance: the shifted a_n*'s), oa1, oa2 those of xprev's and xprev2's; dta the interval
    !> from xn's a to the step's (h + o_{n+1} - o_n, = h after the shift (4)); r1a = dta / (xprev's
    !> to xn's).  Through the step boundaries a's start was delta (h_n - h_{n-1}) |a'| off.
    real(wp) :: oa = 0, oa1 = 0, oa2 = 0, dta = 0, r1a = 1
    logical :: have_prev = .false.
    logical :: contiguous = .false.    !< the previous step ended where this one starts: xprev is x_{n-1}
    logical :: trusted = .false.       !< the last step's second difference was above round-off
    real(wp) :: t_prev_end = 0
    type(newton_matrix_t) :: jm        !< the Newton matrix and its factors
    real(wp), allocatable :: x(:), dx(:), e(:)
    real(wp), allocatable :: q(:), v(:), qm(:), qpred(:), vpred(:), f(:), ma(:), force_tot(:), tmp(:)
    !> the vector M multiplies in the step equation: a (paper form) or a - ahist =
    !> c w (Arnold-Bruls); its (M av)_q enters the Newton matrix
    real(wp), allocatable :: av(:)
    real(wp), allocatable :: mq(:, :)  !< dense M (dense_mass only)
    ! alpha-RATTLE only: R_{1/2} = -M^{-1} A^T at the half step, and dense items
    real(wp), allocatable :: rm(:, :), cn(:, :), bn(:), fq(:, :), fv(:, :), dq(:, :), dtmp(:, :), pn(:, :)
    ! VARIANT_STAB2 only: g0t = beta h^2 G(q_n)^T (mu's direction), G(q_{n+1}), (G v + g_t)_q; mu;
    ! the step's start (t0, q0: G(q_n) of the structured matrix) and its solve's (dx, dz) (dxz)
    real(wp), allocatable :: g0t(:, :), gq(:, :), gvq(:, :), mu(:), q0(:), dxz(:)
    real(wp) :: t0 = 0
    !> variable steps, the dense stabilized matrix: gq holds G(t_gq, q_{n+1}) of the step just taken,
    !> evaluated by its estimate's projection (project_estimates), which is G(q_n) of the next step
    !> when it starts there (alpha_step); cleared by stab2_jacobian (gq its scratch) and a restore
    logical :: gq_next = .false.
    real(wp) :: t_gq = 0
  end type

  !> The variable-step state of a trajectory (docs/adaptive_steps.md 1.3): a approximates
  !> qddot(t + off); a_start, s_start: the (shifted) a the last step started from and the time
  !> it approximates qddot at; with the history term, mu and Newton's start data (those in the
  !> save slots only: sync) it is what the driver's save_state / restore_state keep.
  type :: alpha_var_t
    real(wp) :: off = 0, s_start = 0, t_prev_end = 0
    logical :: has_start = .false., have_prev = .false., trusted = .false., quadratic = .false.
    real(wp), allocatable :: a_start(:), hist(:), xprev(:), xprev2(:), mu(:)
    real(wp) :: hx1 = 0, hx2 = 0       !< alpha_work_t's: the quadratic start's steps
    real(wp) :: oa1 = 0, oa2 = 0       !< alpha_work_t's: the offsets of xprev's and xprev2's a
    integer :: nback = 0
    !> alpha-RATTLE: the last two constraint accelerations r1, r2 (r2 the older) and the times
    !> m1, m2 they approximate r at (nr of them known)
    real(wp), allocatable :: r1(:), r2(:)
    real(wp) :: m1 = 0, m2 = 0
    integer :: nr = 0
  end type

  !> The variable-step workspace (allocated once, project_setup): project_estimates' C = [G; A](q_{n+1}),
  !> C D and its LU (err_q), M and the KKT factorization (err_v), the right-hand side x; alpha_advance's vectors.
  type :: alpha_proj_t
    real(wp), allocatable :: c(:, :), bn(:), cd(:, :), y(:), mq(:, :), x(:)
    real(wp), allocatable :: da(:), a0(:), d1(:)     !< alpha_advance's shift, shifted a_n, divided difference
    real(wp), allocatable :: qn(:)                   !< alpha-RATTLE: q_n (rattle_estimates' midpoint)
    integer, allocatable :: piv(:)
    type(kkt_data_t) :: kd
    type(kkt_factor_t), allocatable :: kf(:)
    !> structured (the stabilized variant's Newton matrix structured, w%nz > 0): the projections'
    !> saddle-point matrices kq, kv (project_structured) by the Newton matrix's solver; xs their
    !> right-hand side
    logical :: structured = .false.
    type(newton_matrix_t) :: kq, kv
    real(wp), allocatable :: xs(:)
  end type

  !> The stepper of the one driver (fortran/core/driver.f90).  Options:
  !> iopt = [variant, form, mass_mode, start_mode, maxit, solver, reuse], ropt = [rho_inf, tol];
  !> solver: SOLVER_AUTO/DENSE/BANDED/SPARSE (pyint_newton_matrix); reuse: 1 = simplified
  !> Newton (Jacobian reuse; with variable steps kept across changes of h), 2 = the same with a
  !> fresh factorization at every new h.
  !> stats = [newton iterations, factorizations, max iterations in a step, start-up iterations,
  !> solves with a kept factorization, solver kind, band kl, ku].
  type, extends(stepper_t) :: alpha_stepper_t
    type(alpha_params_t) :: p
    type(alpha_work_t) :: w
    integer :: variant = VARIANT_GENALPHA, mass_mode = 0, start_mode = 0, maxit = 1
    real(wp) :: tol = 0
    real(wp), allocatable :: hist(:)
    type(alpha_var_t) :: var, slots(2)
    real(wp) :: cq = 0, cv = 0         !< local error constants C_q, C_v (eqs. (7), (8))
    type(alpha_proj_t) :: pj           !< project_estimates' workspace
  contains
    procedure :: init => alpha_init
    procedure :: step => alpha_advance
    procedure :: finish => alpha_finish
    procedure :: save_state => alpha_save
    procedure :: restore_state => alpha_restore
  end type

contains

  !> Allocate the workspace.  The Newton matrix is left recording its pattern
  !> (alpha_setup_solver finishes it).
  subroutine alpha_work_init(w, model, variant, mass_mode, reuse)
    type(alpha_work_t), intent(out) :: w
    class(model_t), intent(in) :: model
    integer, intent(in) :: variant, mass_mode
    logical, intent(in) :: reuse
    integer :: n, mn
    n = model%n
    mn = model%mn
    w%n = n; w%mh = model%mh; w%mn = mn
    w%m = model%mh + mn; w%nm = n + w%m
    w%ns = merge(model%mh, 0, variant == VARIANT_STAB2)
    w%nx = w%nm + w%ns
    w%variant = variant
    w%mass_mode = mass_mode
    w%reuse = reuse
    allocate(w%x(w%nx), w%dx(w%nx), w%e(w%nx), w%xn(w%nx), w%xprev(w%nx), w%xprev2(w%nx))
    allocate(w%q(n), w%v(n), w%qm(n), w%qpred(n), w%vpred(n), w%f(n), w%ma(n), w%force_tot(n), w%tmp(n))
    allocate(w%av(n))
    w%qm = 0
    w%av = 0
    if (variant == VARIANT_RATTLE) then
      allocate(w%rm(n, mn), w%cn(mn, n), w%bn(mn), w%fq(n, n), w%fv(n, n), w%dq(n, n), &
               w%dtmp(n, n), w%pn(mn, n))
      w%rm = 0
    end if
    if (variant == VARIANT_STAB2) then     ! (the dense matrix's items: alpha_setup_solver)
      allocate(w%mu(w%mh), w%q0(n))
      w%mu = 0
      w%q0 = 0
    end if
    call w%jm%record(w%nx)
  end subroutine

  !> Record the Newton matrix pattern at the current iterate (w%x, w%q, w%v
  !> set by the caller) and choose the solver.  info: 0 ok, else STATUS_BAD_INPUT.
  subroutine alpha_setup_solver(model, p, t1, h, requested, w, info)
    class(model_t), intent(in) :: model
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: t1, h
    integer, intent(in) :: requested
    type(alpha_work_t), intent(inout) :: w
    integer, intent(out) :: info
    integer :: req
    req = requested
    if (w%variant == VARIANT_RATTLE) req = SOLVER_DENSE
    if (w%variant == VARIANT_STAB2) then
      ! the stabilized variant: the dense matrix (stab2_jacobian) when asked for, or automatic with
      ! at most SMALL_MAX unknowns; else the structured one with the auxiliary z (stab2_blocks)
      if (req == SOLVER_AUTO .and. w%nx <= SMALL_MAX) req = SOLVER_DENSE
      if (req /= SOLVER_DENSE .and. w%ns > 0) then
        w%nz = w%n
        allocate(w%dxz(w%nx + w%nz))
        call w%jm%record(w%nx + w%nz)
      end if
    end if
    if (req /= SOLVER_DENSE) then
      w%dense_mass = .false.
      call alpha_jacobian(model, p, t1, h, w)
    end if
    call w%jm%setup(req, info)
    if (info == 0 .and. w%variant == VARIANT_STAB2 .and. req /= SOLVER_DENSE .and. &
        w%jm%kind == SOLVER_DENSE) then
      ! the automatic choice (choose_solver) found the pattern too full: the dense matrix without z
      w%nz = 0
      if (allocated(w%dxz)) deallocate(w%dxz)
      call w%jm%record(w%nx)
      call w%jm%setup(SOLVER_DENSE, info)
    end if
    if (info /= 0) then
      info = STATUS_BAD_INPUT
      return
    end if
    w%stab2_dense = w%variant == VARIANT_STAB2 .and. w%jm%kind == SOLVER_DENSE
    if (w%stab2_dense) allocate(w%cn(w%mn, w%n), w%bn(w%mn), w%fq(w%n, w%n), w%fv(w%n, w%n), w%dq(w%n, w%n), &
                                w%dtmp(w%n, w%n), w%pn(w%mn, w%n), w%g0t(w%n, w%mh), w%gq(w%mh, w%n), &
                                w%gvq(w%mh, w%n))
    w%dense_mass = w%jm%kind == SOLVER_DENSE
    if (w%dense_mass) allocate(w%mq(w%n, w%n))
    ! variable steps: a small dense matrix by plain loops (the fixed-step results stay LAPACK's)
    w%jm%small = w%h_varies .and. w%dense_mass .and. w%nx <= SMALL_MAX
  end subroutine

  !> Residual of the step at the iterate w%x = (a, lam_h, lam_n); also leaves
  !> q, v, M a and the total force F (with constraint forces) in w.
  subroutine alpha_residual(model, p, t1, h, hist, w)
    class(model_t), intent(in) :: model
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: t1, h, hist(:)
    type(alpha_work_t), intent(inout) :: w
    integer :: n, mh, mn, i
    real(wp) :: ei
    logical :: ab, paper, rattle
    ! (the hot path: whole arrays are assigned as w%q(:) =, no reallocation test)
    n = w%n; mh = w%mh; mn = w%mn
    associate (lh => w%x(n + 1:n + mh), ln => w%x(n + mh + 1:w%nm))
      ! (the n-vectors in one loop each, element by element as the array expressions were)
      ab = p%form == FORM_ARNOLD_BRULS
      do i = 1, n
        w%q(i) = w%qpred(i) + p%beta * h * h * w%x(i)
        w%v(i) = w%vpred(i) + p%gamma * h * w%x(i)
        ! hist: paper form, am/(1-am) M_n a_n - af/(1-am) F_n; Arnold-Bruls,
        ! ahist = af/(1-am) w_n - am/(1-am) a_n, so that c w_{n+1} = a - ahist
        if (ab) then
          w%av(i) = w%x(i) - hist(i)
        else
          w%av(i) = w%x(i)
        end if
      end do
      if (w%ns > 0) then     ! + beta h^2 G(q_n)^T mu
        call g0t_mul(model, p, h, w, w%x(w%nm + 1:w%nx), w%tmp)
        w%q(:) = w%q + w%tmp
      end if
      if (w%variant == VARIANT_RATTLE .and. mn > 0) then
        w%tmp(:) = matmul(w%rm, ln)
        w%q(:) = w%q + 0.5_wp * h * h * w%tmp
        w%v(:) = w%v + h * w%tmp
      end if
      if (w%dense_mass) then
        if (w%mass_mode == 0 .and. .not. model%const_mass) call model%mass(w%q, w%mq)
        w%ma(:) = matmul(w%mq, w%av)
      else if (w%mass_mode == 1) then
        call model%mass_mul(w%qm, w%av, w%ma)
      else
        call model%mass_mul(w%q, w%av, w%ma)
      end if
      call model%force(t1, w%q, w%v, w%f)
      if (mh > 0) then
        call model%hol_jac_tmul(t1, w%q, lh, w%tmp)
        w%force_tot(:) = w%f - w%tmp
        call model%hol(t1, w%q, w%e(n + 1:n + mh))
        w%e(n + 1:n + mh) = w%e(n + 1:n + mh) / (p%beta * h * h)
      else
        w%force_tot(:) = w%f
      end if
      if (mn > 0) then
        call model%nh_jac_tmul(t1, w%q, ln, w%tmp)
        w%force_tot(:) = w%force_tot - w%tmp
        call model%nh_vel(t1, w%q, w%v, w%e(n + mh + 1:w%nm))
        w%e(n + mh + 1:w%nm) = w%e(n + mh + 1:w%nm) / h
      end if
      if (w%ns > 0) then     ! (G v + g_t) / (gamma h) = 0
        call model%hol_vel(t1, w%q, w%v, w%e(w%nm + 1:w%nx))
        w%e(w%nm + 1:w%nx) = w%e(w%nm + 1:w%nx) / (p%gamma * h)
      end if
      paper = p%form == FORM_PAPER
      rattle = w%variant == VARIANT_RATTLE
      do i = 1, n
        ei = w%ma(i)
        if (paper) ei = ei + hist(i)
        if (rattle) then
          ei = ei - p%c * w%f(i)
        else
          ei = ei - p%c * w%force_tot(i)
        end if
        w%e(i) = ei
      end do
    end associate
  end subroutine

  !> Assemble the Newton matrix at the current iterate (after alpha_residual
  !> at the same x) into w%jm (zeroed first; or recording its pattern).
  subroutine alpha_jacobian(model, p, t1, h, w)
    class(model_t), intent(in) :: model
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: t1, h
    type(alpha_work_t), intent(inout) :: w
    integer :: n, mh, mn, i, j
    real(wp) :: sh, coef(6)
    n = w%n; mh = w%mh; mn = w%mn
    sh = p%beta * h * h
    call w%jm%zero()
    if (w%variant == VARIANT_RATTLE) then
      call rattle_jacobian(model, p, t1, h, w)
      return
    end if
    if (w%stab2_dense) then
      call stab2_jacobian(model, p, t1, h, w)
      return
    end if
    associate (a => w%x(1:n), lh => w%x(n + 1:n + mh), ln => w%x(n + mh + 1:w%nm))
      ! M (at q_{n+1}, or at q_n + h v_n for mass_mode 1)
      if (w%dense_mass) then
        do j = 1, n
          do i = 1, n
            call w%jm%add(i, j, w%mq(i, j))
          end do
        end do
      else if (w%mass_mode == 1) then
        call model%add_qq(t1, w%qm, w%v, a, lh, ln, [1.0_wp, 0.0_wp, 0.0_wp, 0.0_wp, 0.0_wp, 0.0_wp], &
                          w%jm, 0, 0)
      else
        call model%add_qq(t1, w%q, w%v, a, lh, ln, [1.0_wp, 0.0_wp, 0.0_wp, 0.0_wp, 0.0_wp, 0.0_wp], &
                          w%jm, 0, 0)
      end if
      ! beta h^2 ((M a)_q - c F_q) - gamma h c f_v
      coef = [0.0_wp, 0.0_wp, -sh * p%c, -p%gamma * h * p%c, sh * p%c, sh * p%c]
      if (w%mass_mode == 0 .and. .not. model%const_mass) coef(2) = sh
      if (mh == 0) coef(5) = 0
      if (mn == 0) coef(6) = 0
      call model%add_qq(t1, w%q, w%v, w%av, lh, ln, coef, w%jm, 0, 0)
      if (mh > 0) then
        call model%add_hol_jac(t1, w%q, p%c, .true., w%jm, 0, n)
        call model%add_hol_jac(t1, w%q, 1.0_wp, .false., w%jm, n, 0)
      end if
      if (mn > 0) then
        call model%add_nh_jac(t1, w%q, p%c, .true., w%jm, 0, n + mh)
        call model%add_nh_jac(t1, w%q, p%gamma, .false., w%jm, n + mh, 0)
        call model%add_nh_vel_q(t1, w%q, w%v, p%beta * h, w%jm, n + mh, 0)
      end if
      if (w%nz > 0) then
        coef(4) = 0       ! z moves q only: sh D_q
        call stab2_blocks(model, p, t1, h, coef, w)
      end if
    end associate
  end subroutine

  !> The structured stabilized matrix's blocks beyond the plain variant's (alpha_jacobian adds
  !> those: rows 1-3, columns a, lam_h, lam_n): with the auxiliary unknowns z = G(q_n)^T mu
  !> (so beta h^2 z = G0t mu, the position change of mu) the mu columns of stab2_jacobian's
  !> products become sparse blocks, every one an add_* of the model (pyint_model):
  !>   [ M + beta h^2 D_q + gamma h D_v   c G^T   c A^T   0           beta h^2 D_q           ]
  !>   [ G                                0       0       0           G                      ]
  !>   [ beta h (A v + b)_q + gamma A     0       0       0           beta h (A v + b)_q     ]
  !>   [ (beta h / gamma) (G v)_q + G     0       0       0           (beta h / gamma) (G v)_q ]
  !>   [ 0                                0       0       -G(q_n)^T   I                      ]
  !> the last row z - G(q_n)^T mu = 0 with right-hand side 0 (alpha_newton): eliminating z
  !> (z = G(q_n)^T mu) gives back stab2_jacobian's matrix, so (da, dlam, dmu) are its Newton
  !> step.  coef: add_qq's coefficients of sh D_q (alpha_jacobian's without the f_v term).
  subroutine stab2_blocks(model, p, t1, h, coef, w)
    class(model_t), intent(in) :: model
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: t1, h, coef(6)
    type(alpha_work_t), intent(inout) :: w
    integer :: n, mh, mn, nm, zc, i
    n = w%n; mh = w%mh; mn = w%mn; nm = w%nm
    zc = w%nx          ! z's columns (and its rows) start after x's
    associate (lh => w%x(n + 1:n + mh), ln => w%x(n + mh + 1:nm))
      ! (G v + g_t) / (gamma h): its a columns
      call model%add_hol_vel_q(t1, w%q, w%v, p%beta * h / p%gamma, w%jm, nm, 0)
      call model%add_hol_jac(t1, w%q, 1.0_wp, .false., w%jm, nm, 0)
      ! z's columns: q_{n+1} moves by beta h^2 z
      call model%add_qq(t1, w%q, w%v, w%av, lh, ln, coef, w%jm, 0, zc)
      call model%add_hol_jac(t1, w%q, 1.0_wp, .false., w%jm, n, zc)
      if (mn > 0) call model%add_nh_vel_q(t1, w%q, w%v, p%beta * h, w%jm, n + mh, zc)
      call model%add_hol_vel_q(t1, w%q, w%v, p%beta * h / p%gamma, w%jm, nm, zc)
      ! z - G(q_n)^T mu = 0
      call model%add_hol_jac(w%t0, w%q0, -1.0_wp, .true., w%jm, zc, nm)
      do i = 1, n
        call w%jm%add(zc + i, zc + i, 1.0_wp)
      end do
    end associate
  end subroutine

  !> The dense Newton matrices' force and mass part at (t1, w%q, w%v): w%fq, w%fv = f_q, f_v
  !> and w%dq = (M av)_q - c f_q (the mass term when M depends on q_{n+1}).
  subroutine force_mass_dq(model, p, t1, w)
    class(model_t), intent(in) :: model
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: t1
    type(alpha_work_t), intent(inout) :: w
    call model%force_jac(t1, w%q, w%v, w%fq, w%fv)
    w%dq = -p%c * w%fq
    if (w%mass_mode == 0 .and. .not. model%const_mass) then
      call model%mass_dq(w%q, w%av, w%dtmp)
      w%dq = w%dq + w%dtmp
    end if
  end subroutine

  !> alpha-RATTLE's Newton matrix (dense: it holds products with R_{1/2}).
  !>   [ M + beta h^2 D_q + gamma h D_v        (h^2/2 D_q + h D_v) R ]
  !>   [ beta h P + gamma A                    (h/2 P + A) R         ]
  !> D_q = (M a)_q - c f_q, D_v = -c f_v, P = (A v + b)_q, R = R_{1/2}.
  subroutine rattle_jacobian(model, p, t1, h, w)
    class(model_t), intent(in) :: model
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: t1, h
    type(alpha_work_t), intent(inout) :: w
    integer :: n, mn
    n = w%n; mn = w%mn
    associate (a => w%x(1:n), jac => w%jm%a)
      call force_mass_dq(model, p, t1, w)
      w%fv = -p%c * w%fv
      jac(1:n, 1:n) = w%mq + p%beta * h * h * w%dq + p%gamma * h * w%fv
      if (mn > 0) then
        call model%nh(t1, w%q, w%cn, w%bn)
        call model%nh_vel_q(t1, w%q, w%v, w%pn)
        jac(1:n, n + 1:w%nx) = matmul(0.5_wp * h * h * w%dq + h * w%fv, w%rm)
        jac(n + 1:w%nx, 1:n) = p%beta * h * w%pn + p%gamma * w%cn
        jac(n + 1:w%nx, n + 1:w%nx) = matmul(0.5_wp * h * w%pn + w%cn, w%rm)
      end if
    end associate
  end subroutine

  !> The stabilized index-2 variant's Newton matrix (dense: the mu columns are products with
  !> G(q_n)^T; docs/adaptive_steps.md section 6, the oracle tests/genalpha_numpy.py alpha_step
  !> with stabilized=True), rows (dynamics; g / (beta h^2); (A v + b) / h; (G v + g_t) / (gamma h)):
  !>   [ M + beta h^2 D_q + gamma h D_v   c G^T   c A^T   D_q G0t                ]
  !>   [ G                                0       0       G G0t / (beta h^2)      ]
  !>   [ beta h (A v + b)_q + gamma A     0       0       (A v + b)_q G0t / h     ]
  !>   [ (beta h / gamma) (G v)_q + G     0       0       (G v)_q G0t / (gamma h) ]
  !> D_q = (M av)_q - c (f_q - (G^T lam)_q - (A^T lam)_q), D_v = -c f_v, G0t = beta h^2 G(q_n)^T.
  subroutine stab2_jacobian(model, p, t1, h, w)
    class(model_t), intent(in) :: model
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: t1, h
    type(alpha_work_t), intent(inout) :: w
    integer :: n, mh, mn, nm
    real(wp) :: sh
    n = w%n; mh = w%mh; mn = w%mn; nm = w%nm
    sh = p%beta * h * h
    associate (lh => w%x(n + 1:n + mh), ln => w%x(n + mh + 1:nm), jac => w%jm%a)
      jac(1:w%nx, 1:w%nx) = 0
      call force_mass_dq(model, p, t1, w)
      if (mh > 0) then
        call model%hol_gtl_q(t1, w%q, lh, w%dtmp)
        w%dq = w%dq + p%c * w%dtmp
      end if
      if (mn > 0) then
        call model%nh_atl_q(t1, w%q, ln, w%dtmp)
        w%dq = w%dq + p%c * w%dtmp
      end if
      jac(1:n, 1:n) = w%mq + sh * w%dq - p%gamma * h * p%c * w%fv
      if (mh > 0) then
        call model%hol_jac(t1, w%q, w%gq)
        w%gq_next = .false.
        call model%hol_vel_q(t1, w%q, w%v, w%gvq)
        jac(1:n, n + 1:n + mh) = p%c * transpose(w%gq)
        jac(n + 1:n + mh, 1:n) = w%gq
        jac(1:n, nm + 1:w%nx) = matmul(w%dq, w%g0t)
        jac(n + 1:n + mh, nm + 1:w%nx) = matmul(w%gq, w%g0t) / sh
        jac(nm + 1:w%nx, 1:n) = (p%beta * h / p%gamma) * w%gvq + w%gq
        jac(nm + 1:w%nx, nm + 1:w%nx) = matmul(w%gvq, w%g0t) / (p%gamma * h)
      end if
      if (mn > 0) then
        call model%nh(t1, w%q, w%cn, w%bn)
        call model%nh_vel_q(t1, w%q, w%v, w%pn)
        jac(1:n, n + mh + 1:nm) = p%c * transpose(w%cn)
        jac(n + mh + 1:nm, 1:n) = p%beta * h * w%pn + p%gamma * w%cn
        if (mh > 0) jac(n + mh + 1:nm, nm + 1:w%nx) = matmul(w%pn, w%g0t) / h
      end if
    end associate
  end subroutine

  !> y = beta h^2 G(q_n)^T x (mu's position change): the dense matrix's g0t, or (structured,
  !> w%nz > 0) the model's hol_jac_tmul at the step's start, O(nnz) instead of O(n mh).
  subroutine g0t_mul(model, p, h, w, x, y)
    class(model_t), intent(in) :: model
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: h, x(:)
    type(alpha_work_t), intent(in) :: w
    real(wp), intent(out) :: y(:)
    if (w%nz > 0) then
      call model%hol_jac_tmul(w%t0, w%q0, x, y)
      y(:) = (p%beta * h * h) * y
    else
      y(:) = matmul(w%g0t, x)
    end if
  end subroutine

  !> Solve the step equations for w%x (start value on entry) by Newton (or
  !> simplified Newton, w%reuse), stopped by the rule of pyint_newton_control:
  !> accelerations measured against 1 + |a|, each multiplier group against
  !> 1 + |lam|; the accelerations' round-off floor in the units of the positions
  !> they change (index-3: |q| / (beta h^2)), the stabilized variant's in those of the
  !> velocities (its velocity rows fix a: |v| / (gamma h)).  Local error (newton_control's
  !> local_error_scale): a Newton error da changes v_{n+1} by gamma h da, and the
  !> method's local error in v is that of the trapezoidal rule (its rho_inf = 1
  !> member), h^3 |a''| / 12 ~ h |x_{n+1} - 2 x_n + x_{n-1}| / 12 with the
  !> second difference of x = (a, lam): each group's le is its |second
  !> difference| / (12 gamma) (the multipliers follow a: M a + c G^T lam = F),
  !> trusted when the accelerations' is (local_error_trusted, a's floor scale).  With variable
  !> steps the second difference through the steps' times, 2 r / (1 + r) (x_{n+1} - x_n -
  !> r (x_n - x_{n-1})) = h^2 x'' + O(h^3), r = h_n / h_{n-1} (the equal-step one adds
  !> (r - 1) h x', an estimate too large by O(1/h): a looser stop).
  !> Measured (h0 ... h0/64 on chain2, triple_pendulum, manipulator, stiff_fast): the
  !> Newton error at most 2.3e-3 of the discretization error in q and v (test_genalpha).
  !> iters: iterations; nfact: factorizations;
  !> nreuse: iterations that used a factorization from an earlier iteration.
  !> info: 0 converged, STATUS_NEWTON_FAILED, STATUS_SINGULAR, STATUS_NONFINITE,
  !> STATUS_BAD_INPUT (the model added an entry outside its declared pattern).
  subroutine alpha_newton(model, p, t1, h, hist, tol, maxit, w, iters, nfact, nreuse, info)
    class(model_t), intent(in) :: model
    integer, intent(in) :: maxit
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: t1, h, hist(:), tol
    type(alpha_work_t), intent(inout) :: w
    integer, intent(out) :: iters, nfact, nreuse, info
    integer :: it, lapack_info, status, ih
    logical :: fresh
    real(wp) :: sh, amax, qfloor, lnmax, cle, d2a
    logical :: use_le
    sh = p%beta * h * h
    cle = 1 / (12 * p%gamma)
    ih = w%n + w%mh      ! the last lam_h
    iters = 0; nfact = 0; nreuse = 0; info = 0
    call w%nc%start()
    call alpha_residual(model, p, t1, h, hist, w)
    do it = 1, maxit
      if (.not. all(abs(w%e) <= huge(1.0_wp))) then
        info = STATUS_NONFINITE
        w%have_factor = .false.
        return
      end if
      fresh = .not. w%have_factor
      if (fresh) then
        call alpha_jacobian(model, p, t1, h, w)
        if (w%jm%out_of_pattern) then
          info = STATUS_BAD_INPUT
          return
        end if
        call w%jm%factor(lapack_info)
        nfact = nfact + 1
        if (lapack_info /= 0) then
          info = STATUS_SINGULAR
          return
        end if
        w%have_factor = .true.
        w%h_factor = h
      else
        nreuse = nreuse + 1
      end if
      if (w%nz > 0) then      ! the structured stabilized matrix: z's rows have right-hand side 0
        w%dxz(1:w%nx) = -w%e
        w%dxz(w%nx + 1:) = 0
        call w%jm%solve(w%dxz)
        w%dx(:) = w%dxz(1:w%nx)
      else
        w%dx(:) = -w%e
        call w%jm%solve(w%dx)
      end if
      w%x(:) = w%x + w%dx
      iters = iters + 1
      amax = maxval(abs(w%x(1:w%n)))
      ! a's floor: what changes q by an ulp.  The multipliers follow a (M a + c G^T lam
      ! balances the forces): once a is at its floor theirs is the index-3 round-off,
      ! no floor of their own (huge); alpha-RATTLE's nonholonomic ones move q and v
      ! themselves (through R_1/2): the floor of a.  The stabilized variant's a is fixed by
      ! its velocity rows (G v + g_t) / (gamma h), the position rows' round-off going into mu
      ! (G G(q_n)^T dmu): a's floor is what changes v by an ulp, |v| / (gamma h), far below
      ! |q| / (beta h^2) (docs/adaptive_steps.md 1.7).  With the index-3 floor the extrapolated
      ! start was never trusted at small h (stiff_fast, h = 1.6e-6: 5.5 iterations per step
      ! with a kept matrix; from the extrapolation 1.4)
      if (w%ns > 0) then
        qfloor = maxval(abs(w%v)) / (p%gamma * h)
      else
        qfloor = maxval(abs(w%q)) / sh
      end if
      lnmax = 0
      if (w%nm > ih) lnmax = maxval(abs(w%x(ih + 1:w%nm)))
      use_le = w%contiguous
      if (use_le) then
        d2a = d2(1, w%n)    ! the accelerations' second difference, once per iteration
        use_le = local_error_trusted(d2a, max(amax, qfloor))
      end if
      ! the groups a, lam_h, lam_n (nc%group's rule, its max |dx| taken in place; an empty
      ! group counts for nothing)
      call w%nc%clear()
      if (w%n > 0) call w%nc%group_max(maxval(abs(w%dx(1:w%n))), scale(1, w%n, 1 + amax), max(amax, qfloor))
      if (ih > w%n) call w%nc%group_max(maxval(abs(w%dx(w%n + 1:ih))), &
                                        scale(w%n + 1, ih, 1 + maxval(abs(w%x(w%n + 1:ih)))), huge(1.0_wp))
      if (w%nm > ih) call w%nc%group_max(maxval(abs(w%dx(ih + 1:w%nm))), scale(ih + 1, w%nm, 1 + lnmax), &
                                         merge(max(lnmax, qfloor), huge(1.0_wp), w%variant == VARIANT_RATTLE))
      ! mu (stabilized variant): measured by the position change beta h^2 G(q_n)^T dmu
      if (w%ns > 0) then
        call g0t_mul(model, p, h, w, w%dx(w%nm + 1:w%nx), w%tmp)
        call w%nc%group(w%tmp, 1 + maxval(abs(w%q)), maxval(abs(w%q)))
      end if
      status = w%nc%test(tol, maxit, .not. fresh, can_refresh=.true.)
      if (.not. w%reuse .or. w%nc%refresh) then
        w%have_factor = .false.
      else if (.not. fresh .and. w%nc%theta > THETA_REFACTOR) then
        w%have_factor = .false.
      end if
      call alpha_residual(model, p, t1, h, hist, w)    ! q, v, the force terms and the residual at the new x
      ! the method keeps its constraint rows at round-off: simplified Newton, which
      ! leaves theta |dx| in them, goes on until they are (a fresh matrix leaves O(|dx|^2),
      ! round-off when |dx| met tol, not when it met the local error: use_le)
      if (status == NEWTON_CONVERGED .and. ((fresh .and. .not. use_le) .or. constraints_at_roundoff())) then
        w%trusted = use_le
        return
      end if
      if (status == NEWTON_DIVERGED) exit
    end do
    info = STATUS_NEWTON_FAILED
    w%have_factor = .false.

  contains

    !> max |x_{n+1} - 2 x_n + x_{n-1}| over unknowns i1:i2, x_{n+1} the iterate
    real(wp) function d2(i1, i2)
      integer, intent(in) :: i1, i2
      real(wp) :: r
      d2 = 0
      if (i2 < i1) return
      if (w%h_varies) then
        ! unequal steps: the linear extrapolation's error h (h + h_prev) x'' / 2, scaled to h^2 x''
        ! (a, i1 = 1: through the times it approximates qddot at, r1a)
        r = merge(w%r1a, w%r1, i1 == 1)
        d2 = 2 * r / (1 + r) * maxval(abs(w%x(i1:i2) - w%xn(i1:i2) - r * (w%xn(i1:i2) - w%xprev(i1:i2))))
      else
        d2 = maxval(abs(w%x(i1:i2) - 2 * w%xn(i1:i2) + w%xprev(i1:i2)))
      end if
    end function

    !> the scale of unknowns i1:i2 of size scale0, with their local error when known
    real(wp) function scale(i1, i2, scale0)
      integer, intent(in) :: i1, i2
      real(wp), intent(in) :: scale0
      scale = scale0
      if (use_le .and. i1 == 1) then
        scale = local_error_scale(scale0, cle * d2a, tol)
      else if (use_le) then
        scale = local_error_scale(scale0, cle * d2(i1, i2), tol)
      end if
    end function

    !> |g| within 10 eps (1 + |q|) and |A v + b| within 10 eps (1 + |v|) (the
    !> scaled constraint rows times their scale)
    !> (each bound computed once, only for rows that exist)
    logical function constraints_at_roundoff()
      real(wp) :: bound
      constraints_at_roundoff = .true.
      if (ih > w%n) then
        bound = 10 * epsilon(1.0_wp) * (1 + maxval(abs(w%q)))
        constraints_at_roundoff = all(abs(w%e(w%n + 1:ih)) * sh <= bound)
      end if
      if (w%nx > ih .and. constraints_at_roundoff) then
        bound = 10 * epsilon(1.0_wp) * (1 + maxval(abs(w%v)))
        constraints_at_roundoff = all(abs(w%e(ih + 1:w%nm)) * h <= bound) .and. &
                                  all(abs(w%e(w%nm + 1:w%nx)) * p%gamma * h <= bound)
      end if
    end function
  end subroutine

  !> The history term of the converged step (see alpha_residual); on entry
  !> hist is the previous step's.
  subroutine alpha_history(p, w, hist)
    type(alpha_params_t), intent(in) :: p
    type(alpha_work_t), intent(in) :: w
    real(wp), intent(inout) :: hist(:)
    if (p%form == FORM_ARNOLD_BRULS) then
      ! w_{n+1} = (a_{n+1} - ahist) / c ;  ahist' = d w_{n+1} - k a_{n+1}
      hist = p%d * (w%x(1:w%n) - hist) / p%c - p%k * w%x(1:w%n)
    else if (w%variant == VARIANT_RATTLE) then
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
    call rattle_operator(model, t + 0.5_wp * h, q + 0.5_wp * h * v, w%rm, info)
  end subroutine

  !> r = -M(q)^{-1} A(t, q)^T (n x mn): R_{1/2} at the half step, Rbar of the estimate.
  subroutine rattle_operator(model, t, q, r, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, q(:)
    real(wp), intent(out) :: r(:, :)
    integer, intent(out) :: info
    real(wp) :: mq(size(q), size(q)), cn(model%mn, size(q)), bn(model%mn), col(size(q))
    integer :: ipiv(size(q)), j
    call model%mass(q, mq)
    call model%nh(t, q, cn, bn)
    call lu_factor(mq, ipiv, info)
    if (info /= 0) then
      info = STATUS_SINGULAR
      return
    end if
    do j = 1, model%mn
      col = -cn(j, :)
      call lu_solve(mq, ipiv, col)
      r(:, j) = col
    end do
  end subroutine

  !> One step of the method from (q, v, a, lam, hist) at t with step h.
  !> Newton starts from the extrapolation of the last steps' x = (a, lam) (as RADAU5
  !> extrapolates its last collocation polynomial, Hairer & Wanner II sec. IV.8): the linear
  !> one, x_n + (x_n - x_{n-1}), h^2 |x''| away from x_{n+1} instead of h |x'| from x_n; at a
  !> fixed step with simplified Newton (jacobian reuse, the default) the quadratic one,
  !> 3 x_n - 3 x_{n-1} + x_{n-2}, h^3 |x'''| away, whenever it was clearly (by half) the nearer
  !> of the two at the last step (a stiff component, Andrews' spring at h = 1e-5, can make the
  !> third difference the larger: the choice is the selection of a multistep predictor's order
  !> by its last errors).  The simplified Newton iteration goes on until the constraint rows
  !> are at round-off (alpha_newton) at its contraction rate from the start's distance: the
  !> nearer start saves up to one iteration in four.  (Newton's method needs two iterations
  !> from the linear start; from the quadratic one its first increment can fall to the
  !> round-off floor, so that the count, one or two, would depend on the solver's round-off:
  !> it keeps the linear start.)  Measured, iterations per step: IFToMM A02 N = 2,
  !> h = 2.5e-3: 4.22 -> 3.09; the 2-link chain, h = 1e-3: 3.47 -> 2.57; A04, h = 2.5e-2:
  !> 5.33 -> 5.33.
  !> Only where the last step's second difference was trusted as above round-off
  !> (alpha_newton): at small h the index-3 accelerations carry a round-off
  !> sawtooth that extrapolation doubles (stiff_fast, h = 6e-7: 2.1 -> 3.4
  !> iterations per step).  From x_n at the first step, and where the previous
  !> call was not the previous step (the paper start's repeated first steps).
  !> The stabilized variant gains most from the nearer start: its velocity rows must reach
  !> round-off and a kept matrix contracts them only by the drift of G since it was built
  !> (~1e-2 per iteration on stiff_fast), so each power of h in the start value's error
  !> saves about an iteration.  With variable steps the same two starts are the extrapolations
  !> through the last steps' times, t_n, t_n - h_{n-1} (, t_n - h_{n-1} - h_{n-2}): at a ratio
  !> h_n / h_{n-1} = 1.2 the equal-step formulas are O(h) off, and a matrix kept across h then
  !> needed 2.8-4.2 iterations per step (stiff_fast, rtol 1e-6 / 1e-4; through the times:
  !> 2.1 / 3.4, magnet pendulum 2.5 -> 1.9).
  subroutine alpha_step(model, p, t, h, q, v, a, lam, hist, tol, maxit, w, iters, nfact, nreuse, info)
    class(model_t), intent(in) :: model
    integer, intent(in) :: maxit
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(in) :: t, h, tol
    real(wp), intent(inout) :: q(:), v(:), a(:), lam(:), hist(:)
    type(alpha_work_t), intent(inout) :: w
    integer, intent(out) :: iters, nfact, nreuse, info
    integer :: it2, nf2, nr2, i, k
    real(wp) :: e2, e3, cl, cq3(3)
    !> start_value's weights (a_weights: wa_l, wa_q; the steps': ws_l, ws_q; have_wa, have_ws when
    !> formed), which the choice between the starts after the step takes again: the same numbers
    !> (alpha_newton changes none of the steps and offsets they come from) without their divisions
    real(wp) :: wa_l, wa_q(3), ws_l, ws_q(3)
    logical :: have_wa, have_ws
    do i = 1, w%n
      w%qpred(i) = q(i) + h * v(i) + h * h * (0.5_wp - p%beta) * a(i)
      w%vpred(i) = v(i) + h * (1 - p%gamma) * a(i)
    end do
    if (w%mass_mode == 1) then
      w%qm(:) = q + h * v
      if (w%dense_mass .and. .not. model%const_mass) call model%mass(w%qm, w%mq)
    end if
    if (w%variant == VARIANT_RATTLE) then
      call rattle_half_step(model, t, h, q, v, w, info)
      if (info /= 0) return
    end if
    if (w%variant == VARIANT_STAB2 .and. w%mh > 0) then
      if (w%nz == 0) then     ! (the structured matrix applies G(q_n)^T as an operator: g0t_mul)
        if (.not. (w%gq_next .and. t == w%t_gq)) call model%hol_jac(t, q, w%gq)
        ! (g0t = beta h^2 G^T element by element: transpose() made a heap temporary every step)
        do i = 1, w%mh
          do k = 1, w%n
            w%g0t(k, i) = p%beta * h * h * w%gq(i, k)
          end do
        end do
      end if
      w%gq_next = .false.
      w%t0 = t
      w%q0(:) = q
    end if
    ! a kept factorization at a new h: with variable steps while the cj ratio allows
    ! (keep_across_h; cj = 1 / (beta h^2)); at a fixed step never
    if (w%reuse .and. w%have_factor .and. h /= w%h_factor) then
      if (.not. (w%keep_across_h .and. keep_matrix(w%h_factor**2, h**2))) w%have_factor = .false.
    end if
    w%xn(1:w%n) = a
    w%xn(w%n + 1:w%nm) = lam
    if (w%ns > 0) w%xn(w%nm + 1:) = w%mu
    call start_value()
    call alpha_newton(model, p, t + h, h, hist, tol, maxit, w, iters, nfact, nreuse, info)
    if (info == STATUS_NEWTON_FAILED .and. nreuse > 0) then
      ! simplified Newton failed with an old factorization: once more, fresh
      call start_value()
      call alpha_newton(model, p, t + h, h, hist, tol, maxit, w, it2, nf2, nr2, info)
      iters = iters + it2
      nfact = nfact + nf2
      nreuse = nreuse + nr2
    end if
    if (info /= 0) return
    do i = 1, w%n
      q(i) = w%q(i)
      v(i) = w%v(i)
      a(i) = w%x(i)
    end do
    lam = w%x(w%n + 1:w%nm)
    if (w%ns > 0) w%mu(:) = w%x(w%nm + 1:)
    call alpha_history(p, w, hist)
    if (w%reuse .and. w%h_varies) then
      ! variable steps: the same choice between the extrapolations through the last steps' times
      w%quadratic = .false.
      if (w%contiguous .and. w%nback >= 2) then
        e2 = 0
        e3 = 0
        if (have_wa) then
          cl = wa_l
          cq3 = wa_q
        else
          call a_weights(cl, cq3)
        end if
        do i = 1, w%n
          e2 = max(e2, abs(w%x(i) - cl * w%xn(i) - (1 - cl) * w%xprev(i)))
          e3 = max(e3, abs(w%x(i) - cq3(1) * w%xn(i) - cq3(2) * w%xprev(i) - cq3(3) * w%xprev2(i)))
        end do
        if (have_ws) then
          cl = ws_l
          cq3 = ws_q
        else
          call extrapolation_weights(h, w%hx1, w%hx2, cl, cq3)
        end if
        do i = w%n + 1, w%nx
          e2 = max(e2, abs(w%x(i) - cl * w%xn(i) - (1 - cl) * w%xprev(i)))
          e3 = max(e3, abs(w%x(i) - cq3(1) * w%xn(i) - cq3(2) * w%xprev(i) - cq3(3) * w%xprev2(i)))
        end do
        w%quadratic = 2 * e3 < e2
      end if
      w%nback = merge(w%nback + 1, 1, w%contiguous)
      w%xprev2(:) = w%xprev
      w%hx2 = w%hx1
      w%oa2 = w%oa1
      w%oa1 = w%oa
    else if (w%reuse) then   ! (see above: otherwise linear, no xprev2)
      ! the start that would have been the nearer to this step's x (max norm) is taken next
      ! (one pass, no temporaries: two array maxvals cost 3 % of a 128-link chain's step)
      w%quadratic = .false.
      if (w%contiguous .and. w%nback >= 2) then
        e2 = 0
        e3 = 0
        do i = 1, w%nx
          e2 = max(e2, abs(w%x(i) - 2 * w%xn(i) + w%xprev(i)))
          e3 = max(e3, abs(w%x(i) - 3 * w%xn(i) + 3 * w%xprev(i) - w%xprev2(i)))
        end do
        w%quadratic = 2 * e3 < e2
      end if
      w%nback = merge(w%nback + 1, 1, w%contiguous)
      w%xprev2(:) = w%xprev
    end if
    w%xprev(:) = w%xn
    w%hx1 = h
    w%have_prev = .true.
    w%t_prev_end = t + h

  contains

    !> The extrapolations to t + dt through x_n, x_{n-1} (x_n + r (x_n - x_{n-1}), r = dt / h1:
    !> cl x_n + (1 - cl) x_{n-1}) and through x_n, x_{n-1}, x_{n-2} (Lagrange's weights cq for the
    !> times t, t - h1, t - h1 - h2); at equal steps 2, -1 and 3, -3, 1.
    subroutine extrapolation_weights(dt, h1, h2, cl, cq)
      real(wp), intent(in) :: dt, h1, h2
      real(wp), intent(out) :: cl, cq(3)
      cl = 1 + dt / h1
      cq(1) = (dt + h1) * (dt + h1 + h2) / (h1 * (h1 + h2))
      cq(2) = -dt * (dt + h1 + h2) / (h1 * h2)
      cq(3) = dt * (dt + h1) / ((h1 + h2) * h2)
    end subroutine

    !> extrapolation_weights for a, through the times t + o it approximates qddot at (w%oa ...):
    !> its intervals differ from the steps by the changes of the offset, delta (h_n - h_{n-1}) after
    !> the shift (4); the steps' weights where an interval would shrink below half its step (rho_inf
    !> near 0, delta near -1, and h doubled: no extrapolation through the offsets' times then)
    subroutine a_weights(cl, cq)
      real(wp), intent(out) :: cl, cq(3)
      real(wp) :: h1, h2
      h1 = w%hx1 + w%oa - w%oa1
      h2 = w%hx2 + w%oa1 - w%oa2
      if (w%dta > 0 .and. h1 > 0.5_wp * w%hx1 .and. h2 > 0.5_wp * w%hx2) then
        call extrapolation_weights(w%dta, h1, h2, cl, cq)
      else
        call extrapolation_weights(h, w%hx1, w%hx2, cl, cq)
      end if
    end subroutine

    subroutine start_value()
      real(wp) :: cl, cq(3), cla, cqa(3)
      integer :: n
      n = w%n
      w%contiguous = w%have_prev .and. abs(t - w%t_prev_end) <= 0.5_wp * h
      w%r1 = 1
      w%r1a = 1
      have_wa = .false.
      have_ws = .false.
      if (w%h_varies .and. w%contiguous) then
        w%r1 = h / w%hx1
        call a_weights(cla, cqa)
        w%r1a = cla - 1
        wa_l = cla
        wa_q = cqa
        have_wa = .true.
      end if
      if (w%h_varies .and. w%contiguous .and. w%trusted) then
        ! variable steps: the same starts through the last steps' times (a: through its own, a_weights)
        call extrapolation_weights(h, w%hx1, w%hx2, cl, cq)
        ws_l = cl
        ws_q = cq
        have_ws = .true.
        if (w%quadratic .and. w%nback >= 2) then
          w%x(1:n) = cqa(1) * w%xn(1:n) + cqa(2) * w%xprev(1:n) + cqa(3) * w%xprev2(1:n)
          w%x(n + 1:) = cq(1) * w%xn(n + 1:) + cq(2) * w%xprev(n + 1:) + cq(3) * w%xprev2(n + 1:)
        else
          w%x(1:n) = cla * w%xn(1:n) + (1 - cla) * w%xprev(1:n)
          w%x(n + 1:) = cl * w%xn(n + 1:) + (1 - cl) * w%xprev(n + 1:)
        end if
      else if (w%contiguous .and. w%trusted .and. w%quadratic .and. w%nback >= 2) then
        w%x(:) = 3 * w%xn - 3 * w%xprev + w%xprev2
      else if (w%contiguous .and. w%trusted) then
        w%x(:) = 2 * w%xn - w%xprev
      else
        w%x(:) = w%xn
      end if
    end subroutine
  end subroutine

  !> The start: a_0 = qddot(0) and the multipliers from the driver's consistent start
  !> (with the rank check of the constraints); the Newton matrix's pattern at the initial
  !> state and the solver choice; start_mode 1: the paper's M a_0 = (1 - alpha) F_0 + alpha F_1
  !> by fixed-point iteration over the first step; the history term of step 1.
  subroutine alpha_init(self, s, info)
    class(alpha_stepper_t), intent(inout) :: self
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    real(wp), allocatable :: a0(:), f0(:), ftot0(:)
    integer :: form, solver, reuse
    if (.not. self%options_fit(nstats=NSTATS, niopt=NIOPT_GENALPHA, nropt=NROPT_GENALPHA, info=info)) return
    self%variant = self%iopt(IOPT_GENALPHA_VARIANT); form = self%iopt(IOPT_GENALPHA_FORMULATION)
    self%mass_mode = self%iopt(IOPT_GENALPHA_MASS_UPDATE); self%start_mode = self%iopt(IOPT_GENALPHA_START)
    self%maxit = self%iopt(IOPT_GENALPHA_MAXIT); solver = self%iopt(IOPT_GENALPHA_LINEAR_SOLVER)
    reuse = self%iopt(IOPT_GENALPHA_JACOBIAN_REUSE)
    self%tol = self%ropt(ROPT_GENALPHA_TOL)
    self%p = alpha_params(self%ropt(ROPT_GENALPHA_RHO_INF), form)
    ! alpha-RATTLE is written for nonholonomic constraints
    if (self%variant == VARIANT_RATTLE .and. self%model%mh > 0) return
    if (self%variant < VARIANT_GENALPHA .or. self%variant > VARIANT_STAB2) return
    if (self%adaptive) then
      ! variable steps (docs/adaptive_steps.md 1.6): the stabilized index-2 variant (with
      ! nonholonomic rows only the plain one is the same method) or alpha-RATTLE (1.8); index 3
      ! collapses under step control; the offset o_0 = 0 needs the consistent start
      if (self%start_mode /= 0) return
      if (self%variant == VARIANT_GENALPHA .and. self%model%mh > 0) return
      self%est_power = 3
      self%order = 2
      call alpha_error_constants(self%p, self%cq, self%cv)
    end if
    call consistent_start(self%model, s, info)
    if (info /= 0) return
    if (self%adaptive .and. self%variant == VARIANT_RATTLE) then
      call rattle_free_start(info)
      if (info /= 0) return
    end if
    associate (model => self%model, p => self%p, w => self%w, stats => self%stats)
      call alpha_work_init(w, model, self%variant, self%mass_mode, reuse /= 0)
      w%h_varies = self%adaptive        ! (before alpha_setup_solver)
      w%keep_across_h = self%adaptive .and. reuse == 1
      a0 = s%a
      allocate(self%hist(self%nv), f0(self%nv), ftot0(self%nv))
      ! the Newton matrix: pattern at the initial state, solver choice
      w%x = 0
      w%x(1:w%n) = s%a
      w%x(w%n + 1:w%nm) = s%lam
      w%av = s%a
      w%q = s%q; w%v = s%v; w%qm = s%q
      if (self%variant == VARIANT_STAB2) then
        w%t0 = s%t
        w%q0 = s%q
      end if
      call alpha_setup_solver(model, p, s%t, self%h, solver, w, info)
      stats(STAT_GENALPHA_LINEAR_SOLVER) = w%jm%kind
      stats(STAT_GENALPHA_BAND_LOWER) = w%jm%kl
      stats(STAT_GENALPHA_BAND_UPPER) = w%jm%ku
      if (info /= 0) return
      if (w%dense_mass) call model%mass(s%q, w%mq)   ! constant M (re-evaluated per iterate otherwise)
      ! F_0 and M_0 a_0 for the history term
      call total_force(model, s%t, s%q, s%v, s%lam, w, f0, ftot0)
      if (self%start_mode == 1) then
        call paper_start(info)
        if (info /= 0) return
      end if
      call start_history(s%a, self%hist)
      if (self%adaptive) then
        call project_setup(self, s, info)
        if (info /= 0) return
      end if
      self%var%off = 0
      self%var%has_start = .false.
    end associate

  contains

    !> alpha-RATTLE with variable steps (docs/adaptive_steps.md 1.8): a approximates the free
    !> acceleration, so the start is a_0 = u(0) = M^-1 f (offset 0), and r(t_0) = qddot(0) - u(0)
    !> is the first of the constraint accelerations rattle_estimates differentiates.
    subroutine rattle_free_start(info)
      integer, intent(out) :: info
      real(wp) :: mm(self%nv, self%nv), u(self%nv)
      integer :: ipm(self%nv)
      call self%model%mass(s%q, mm)
      call self%model%force(s%t, s%q, s%v, u)
      call lu_factor_solve(mm, ipm, u, info)
      if (info /= 0) return
      self%var%r1 = s%a - u
      self%var%m1 = s%t
      self%var%nr = 1
      s%a = u
    end subroutine

    !> The history term of step 1 for the start acceleration a_ (a0: qddot(0); alpha-RATTLE with
    !> variable steps: u(0)).
    subroutine start_history(a_, hist_)
      real(wp), intent(in) :: a_(:)
      real(wp), intent(out) :: hist_(:)
      associate (p => self%p, w => self%w)
        call self%model%mass_mul(s%q, a_, w%ma)
        if (p%form == FORM_ARNOLD_BRULS) then
          hist_ = p%d * a0 - p%k * a_     ! a0: qddot(0), the physical acceleration
        else if (self%variant == VARIANT_RATTLE) then
          hist_ = p%k * w%ma - p%d * f0
        else
          hist_ = p%k * w%ma - p%d * ftot0
        end if
      end associate
    end subroutine

    !> M a_0 = (1 - alpha) F_0 + alpha F_1 by fixed-point iteration over step 1
    !> (a dense LU of M(q_0), once); s%a holds the result.
    subroutine paper_start(info)
      integer, intent(out) :: info
      real(wp), allocatable :: q1(:), v1(:), a1(:), l1(:), h1(:), anew(:), f1(:), ftot1(:), mlu(:, :)
      integer, allocatable :: ipiv(:)
      integer :: it, lapack_info, iters, nfact, nreuse
      associate (model => self%model, p => self%p, w => self%w, stats => self%stats, a => s%a)
        allocate(mlu(self%nv, self%nv), ipiv(self%nv), h1(self%nv), f1(self%nv), ftot1(self%nv))
        call model%mass(s%q, mlu)
        call lu_factor(mlu, ipiv, lapack_info)
        if (lapack_info /= 0) then
          info = STATUS_SINGULAR
          return
        end if
        do it = 1, 4 * self%maxit
          q1 = s%q; v1 = s%v; a1 = a; l1 = s%lam
          call start_history(a, h1)
          call alpha_step(model, p, s%t, self%h, q1, v1, a1, l1, h1, self%tol, self%maxit, w, iters, nfact, nreuse, info)
          stats(STAT_GENALPHA_STARTUP_ITERATIONS) = stats(STAT_GENALPHA_STARTUP_ITERATIONS) + 1
          stats(STAT_GENALPHA_JACOBIAN_FACTORIZATIONS) = stats(STAT_GENALPHA_JACOBIAN_FACTORIZATIONS) + nfact
          stats(STAT_GENALPHA_JACOBIAN_REUSES) = stats(STAT_GENALPHA_JACOBIAN_REUSES) + nreuse
          if (info /= 0) return
          call total_force(model, s%t + self%h, q1, v1, l1, w, f1, ftot1)
          anew = (1 - p%alpha) * ftot0 + p%alpha * ftot1
          call lu_solve(mlu, ipiv, anew)
          if (all(abs(anew - a) <= self%tol * (1 + abs(a)))) then
            a = anew
            info = 0
            return
          end if
          a = anew
        end do
        info = STATUS_NEWTON_FAILED
      end associate
    end subroutine

  end subroutine alpha_init

  !> One step of the method (alpha_step) and its counters; with variable steps (self%adaptive)
  !> the shift of a_n to the offset the step needs (eq. (4)), the offset's recursion (eq. (3))
  !> and the local error estimates (eqs. (9)-(11)) into err_q, err_v.
  subroutine alpha_advance(self, h, t1, s, info)
    class(alpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    integer :: iters, nfact, nreuse, i, n
    real(wp) :: off0, off1, s_n, s_1, t0, e0, dsh, den, cq3, cv3
    if (.not. self%adaptive) then
      call alpha_step(self%model, self%p, s%t, h, s%q, s%v, s%a, s%lam, self%hist, self%tol, self%maxit, &
                      self%w, iters, nfact, nreuse, info)
    else
      associate (p => self%p, var => self%var, da => self%pj%da, a0 => self%pj%a0, d1 => self%pj%d1, &
                 q0 => self%pj%qn)
        t0 = s%t
        e0 = self%el0   ! the offsets' times: elapsed since the run's t0 (stepper_t%el0)
        if (self%variant == VARIANT_RATTLE) q0 = s%q
        ! (the n-vectors element by element in loops, as the array expressions were: a variable
        ! step's own work is overhead-bound at small n)
        n = self%nv
        off0 = var%off
        if (var%has_start .and. p%alpha * h /= var%off) then
          ! eq. (4): a_n* = a_n + (delta h - o_n) (a_n - a_{n-1}*) / (t_n + o_n - s_{n-1}*)
          dsh = p%alpha * h - var%off
          den = e0 + var%off - var%s_start
          call shift_a(n, dsh, den, s%a, var%a_start, da, a0)
          if (p%form == FORM_ARNOLD_BRULS) then
            do i = 1, n
              self%hist(i) = self%hist(i) - p%k * da(i)      ! ahist = d w_n - k a_n
            end do
          else
            call self%model%mass_mul(s%q, da, self%w%tmp)    ! hist = k M_n a_n - d F_n
            self%hist = self%hist + p%k * self%w%tmp
          end if
          off0 = p%alpha * h
          do i = 1, n
            s%a(i) = a0(i)
          end do
        else
          do i = 1, n
            a0(i) = s%a(i)
          end do
        end if
        off1 = (p%alpha * h - p%alpha_m * off0) / (1 - p%alpha_m)       ! eq. (3)
        self%w%oa = off0                ! Newton's start for a through the times it approximates
        self%w%dta = h + off1 - off0
        call alpha_step(self%model, p, t0, h, s%q, s%v, s%a, s%lam, self%hist, self%tol, self%maxit, &
                        self%w, iters, nfact, nreuse, info)
        ! A Newton failure next to a singular position (the mechanism's C = [G; A] near rank loss
        ! at the last iterate: near_singular_position, the driver's own test) sets near_singular:
        ! drive_adaptive then tries 4 h from the same start once, the error test deciding.  The
        ! stabilized Newton matrix holds G twice (c G^T in the lam columns, G G(q_n)^T / (beta h^2)
        ! in mu's): within sigma_min(C) ~ |t - t*| of the crossing t* its smallest singular value
        ! falls like sigma_min^2, the multipliers' increments along the null direction of G^T are
        ! round-off times its inverse, and through (G^T lam)_q they keep the dynamics rows from
        ! converging (IFToMM A02, N = 40: |d lam| ~ 1e8, the residual stalls at 1e-2 from 25
        ! iterations on).  Newton's region shrinks with the inverse's norm (Deuflhard, Newton
        ! Methods for Nonlinear Problems, 2004, Thm. 2.1, the affine covariant Newton-Kantorovich
        ! theorem), so the h/4 retries, which end nearer t*, fail again down to h_min; a step
        ! whose end lies past the window converges (the crossing is straddled, not hit:
        ! Hairer-Wanner II, VII.1, the index-3 system's Jacobian is singular only at t*).
        self%near_singular = .false.
        if (info == STATUS_NEWTON_FAILED) &
          self%near_singular = near_singular_position(self%model, t1, self%w%q, self%w%v)
        if (info == 0) then
          s_n = e0 + off0
          s_1 = self%el1 + off1
          cq3 = h**3 * self%cq
          call first_difference(n, cq3, s_1 - s_n, s%a, a0, d1, self%err_q)   ! eq. (9)
          self%has_err_v = var%has_start
          if (self%variant == VARIANT_RATTLE) self%has_err_v = var%has_start .and. var%nr >= 2
          if (self%has_err_v) then                                         ! eq. (10)
            cv3 = h**3 * self%cv * 2
            call second_difference(n, cv3, s_n - var%s_start, s_1 - var%s_start, d1, a0, var%a_start, self%err_v)
          end if
          if (self%variant == VARIANT_RATTLE) call rattle_estimates(self, t0, h, q0, s, info)   ! eq. (11a)
          if (info == 0) call project_estimates(self, t1, s, info)     ! eq. (11)
          if (.not. allocated(var%a_start)) allocate(var%a_start(n))
          do i = 1, n
            var%a_start(i) = a0(i)
          end do
          var%s_start = s_n
          var%has_start = .true.
          var%off = off1
        end if
      end associate
    end if
    self%stats(STAT_GENALPHA_NEWTON_ITERATIONS) = self%stats(STAT_GENALPHA_NEWTON_ITERATIONS) + iters
    self%stats(STAT_GENALPHA_JACOBIAN_FACTORIZATIONS) = self%stats(STAT_GENALPHA_JACOBIAN_FACTORIZATIONS) + nfact
    self%stats(STAT_GENALPHA_MAX_NEWTON_ITERATIONS) = max(self%stats(STAT_GENALPHA_MAX_NEWTON_ITERATIONS), real(iters, wp))
    self%stats(STAT_GENALPHA_JACOBIAN_REUSES) = self%stats(STAT_GENALPHA_JACOBIAN_REUSES) + nreuse
  end subroutine

  !> alpha_advance's vector loops on explicit-shape arrays (on the stepper's components the compiler
  !> reloaded their bounds and strides in the loops; stiff_fast rtol 1e-6: 75 fewer instructions a
  !> step): eq. (4)'s shift da = dsh (a - a_start) / den, a0 = a + da; ...
  pure subroutine shift_a(n, dsh, den, a, a_start, da, a0)
    integer, intent(in) :: n
    real(wp), intent(in) :: dsh, den, a(n), a_start(n)
    real(wp), intent(out) :: da(n), a0(n)
    integer :: i
    do i = 1, n
      da(i) = dsh * (a(i) - a_start(i)) / den
      a0(i) = a(i) + da(i)
    end do
  end subroutine

  !> ... eq. (9)'s divided difference d1 = (a - a0) / ds and e_q = cq3 d1; ...
  pure subroutine first_difference(n, cq3, ds, a, a0, d1, eq)
    integer, intent(in) :: n
    real(wp), intent(in) :: cq3, ds, a(n), a0(n)
    real(wp), intent(out) :: d1(n), eq(n)
    integer :: i
    do i = 1, n
      d1(i) = (a(i) - a0(i)) / ds
      eq(i) = cq3 * d1(i)
    end do
  end subroutine

  !> ... and eq. (10)'s e_v = cv3 (d1 - (a0 - a_start) / ds0) / ds1.
  pure subroutine second_difference(n, cv3, ds0, ds1, d1, a0, a_start, ev)
    integer, intent(in) :: n
    real(wp), intent(in) :: cv3, ds0, ds1, d1(n), a0(n), a_start(n)
    real(wp), intent(out) :: ev(n)
    integer :: i
    do i = 1, n
      ev(i) = cv3 * (d1(i) - (a0(i) - a_start(i)) / ds0) / ds1
    end do
  end subroutine

  !> alpha-RATTLE's share of the estimates (docs/adaptive_steps.md 1.8, eq. (11a)), added to the
  !> free acceleration's (9), (10) before the projection (11): with Rbar = R(t_n + h/2, (q_n + q_n+1)/2)
  !> and r = (R_1/2 + Rbar) lam_n+1 / 2 (r(t_n + h/2) + O(h^2): R_1/2 sits -h^2/8 qddot, Rbar
  !> +h^2/8 qddot off the midpoint),
  !>   e_q += h^3/12 r[m_n, m_n+1],
  !>   e_v += -h^3/24 2 r[m_n-1, m_n, m_n+1] - h/2 (Rbar - R_1/2) lam_n+1
  !> (the midpoint rule's errors in q and v, and R_1/2's offset); then r becomes the newest of var's.
  subroutine rattle_estimates(self, t0, h, q0, s, info)
    class(alpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: t0, h, q0(:)
    type(state_t), intent(in) :: s
    integer, intent(out) :: info
    real(wp) :: rbar(self%nv, self%model%mn), r(self%nv), dr(self%nv), mid
    mid = t0 + 0.5_wp * h
    call rattle_operator(self%model, mid, 0.5_wp * (q0 + s%q), rbar, info)
    if (info /= 0) return
    associate (var => self%var, rm => self%w%rm, lam => s%lam(1:self%model%mn))
      r = 0.5_wp * matmul(rm + rbar, lam)
      dr = (r - var%r1) / (mid - var%m1)
      self%err_q = self%err_q + h**3 / 12 * dr
      if (self%has_err_v) self%err_v = self%err_v - h**3 / 12 * (dr - (var%r1 - var%r2) / (var%m1 - var%m2)) &
                                       / (mid - var%m2) - 0.5_wp * h * matmul(rbar - rm, lam)
      var%r2 = var%r1
      var%m2 = var%m1
      var%r1 = r
      var%m1 = mid
      var%nr = min(var%nr + 1, 2)
    end associate
  end subroutine

  !> eq. (11): the estimates projected onto the constraints' tangent space at q_{n+1} along the
  !> direction in which the step's constraint rows move the solution, P = I - D (C D)^-1 C:
  !> err_q with C = G(q_{n+1}), D = G(q_n)^T (mu's direction; the stabilized variant: with
  !> holonomic constraints the only adaptive one; D is taken as the step's w%g0t = beta h^2 G(q_n)^T,
  !> P does not depend on D's scale); err_v with C = [G; A](q_{n+1}), D = M^-1 C^T: P e is the
  !> first block of K^-1 (M e, 0), K the index-1 KKT matrix [M C^T; C 0] (pyint_kkt: the Schur
  !> complement C M^-1 C^T with M^-1 formed once when M is constant, else one LU of K).
  !> Small dense LUs (pyint_small_lu) in workspace allocated once (project_setup).
  subroutine project_estimates(self, t1, s, info)
    class(alpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: t1
    type(state_t), intent(in) :: s
    integer, intent(out) :: info
    integer :: n, mh, mn, m
    info = 0
    n = self%nv; mh = self%model%mh; mn = self%model%mn; m = mh + mn
    if (m == 0) return
    if (self%pj%structured) then
      call project_structured(self, t1, s, info)
      return
    end if
    associate (pj => self%pj, w => self%w)
      ! C = [G; A](q_{n+1}): G in w%gq (holonomic rows: the stabilized variant, the dense matrix),
      ! where the next step takes it as its G(q_n) when it starts at t1 (alpha_step, gq_next)
      if (mh > 0) then
        call self%model%hol_jac(t1, s%q, w%gq)
        w%gq_next = .true.
        w%t_gq = t1
      end if
      if (mn > 0) call self%model%nh(t1, s%q, pj%c(mh + 1:m, :), pj%bn)
      if (mh > 0) then
        ! (C D and C e in scalar loops, the sums in dot_product's order: the dot_products of C's
        ! strided rows cost more than their arithmetic, 400 instructions for m = 2, n = 4; on
        ! explicit-shape arrays, cd_products: 115 fewer a step on stiff_fast)
        call cd_products(mh, n, w%gq, w%g0t, self%err_q, pj%cd, pj%y)
        call slu_factor(pj%cd, pj%piv, info)
        if (info /= 0) then
          info = STATUS_SINGULAR
          return
        end if
        call slu_solve(pj%cd, pj%piv, pj%y)
        call minus_d_times(mh, n, w%g0t, pj%y, self%err_q)
      end if
      if (.not. self%has_err_v) return
      if (.not. self%model%const_mass) call self%model%mass(s%q, pj%mq)
      if (mh > 0) then
        call kkt_factor(pj%kd, pj%mq, w%gq, pj%c(mh + 1:m, :), pj%kf(1), info)
      else
        call kkt_factor(pj%kd, pj%mq, pj%c(1:0, :), pj%c(1:m, :), pj%kf(1), info)
      end if
      if (info /= 0) return
      if (pj%kd%schur) then     ! constant M: x - W S^-1 C x, without M x and M^-1 (M x)
        call kkt_project(pj%kd, pj%kf(1), self%err_v, pj%x(n + 1:))
      else
        call self%model%mass_mul(s%q, self%err_v, pj%x(1:n))
        pj%x(n + 1:) = 0
        call kkt_solve(pj%kd, pj%kf(1), pj%x)
        self%err_v = pj%x(1:n)
      end if
    end associate
  end subroutine

  !> project_estimates' C D (cd) and C e (y) for C = gq, D = g0t, the sums in dot_product's order, on
  !> explicit-shape arrays (on the workspace's components the compiler reloaded their bounds and
  !> strides in the loops).
  pure subroutine cd_products(mh, n, gq, g0t, e, cd, y)
    integer, intent(in) :: mh, n
    real(wp), intent(in) :: gq(mh, n), g0t(n, mh), e(n)
    real(wp), intent(out) :: cd(mh, mh), y(mh)
    integer :: i, j, k
    real(wp) :: acc
    do j = 1, mh
      do i = 1, mh
        acc = 0
        do k = 1, n
          acc = acc + gq(i, k) * g0t(k, j)
        end do
        cd(i, j) = acc
      end do
      acc = 0
      do k = 1, n
        acc = acc + gq(j, k) * e(k)
      end do
      y(j) = acc
    end do
  end subroutine

  !> e = e - D y, column by column of D (project_estimates' err_q; as cd_products).
  pure subroutine minus_d_times(mh, n, g0t, y, e)
    integer, intent(in) :: mh, n
    real(wp), intent(in) :: g0t(n, mh), y(mh)
    real(wp), intent(inout) :: e(n)
    integer :: j, k
    do j = 1, mh
      do k = 1, n
        e(k) = e(k) - y(j) * g0t(k, j)
      end do
    end do
  end subroutine

  !> project_estimates through the structured solvers (the stabilized variant with its structured
  !> Newton matrix, pj%structured): the same projections as first blocks of saddle-point solves,
  !>   err_q = P e = x of [I  G(q_n)^T; G(q_{n+1}) 0] (x, y) = (e, 0)   (x = e - D y, C x = 0),
  !>   err_v = x of [M  C^T; C  0] (x, y) = (M e, 0),   C = [G; A](q_{n+1}),
  !> both assembled from the model's add_* (project_assemble) and factored by the Newton matrix's
  !> solver: O(nnz) per step instead of project_estimates' dense C D and KKT (O(n m^2)).
  subroutine project_structured(self, t1, s, info)
    class(alpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: t1
    type(state_t), intent(in) :: s
    integer, intent(out) :: info
    integer :: n, mh, m
    n = self%nv; mh = self%model%mh; m = mh + self%model%mn
    associate (pj => self%pj)
      call project_assemble(self, t1, s, .true.)
      call project_factor(pj%kq, info)
      if (info /= 0) return
      pj%xs(1:n) = self%err_q
      pj%xs(n + 1:n + mh) = 0
      call pj%kq%solve(pj%xs(1:n + mh))
      self%err_q = pj%xs(1:n)
      if (.not. self%has_err_v) return
      call project_assemble(self, t1, s, .false.)
      call project_factor(pj%kv, info)
      if (info /= 0) return
      call self%model%mass_mul(s%q, self%err_v, pj%xs(1:n))
      pj%xs(n + 1:n + m) = 0
      call pj%kv%solve(pj%xs)
      self%err_v = pj%xs(1:n)
    end associate
  contains
    subroutine project_factor(k, ierr)
      type(newton_matrix_t), intent(inout) :: k
      integer, intent(out) :: ierr
      if (k%out_of_pattern) then
        ierr = STATUS_BAD_INPUT
        return
      end if
      call k%factor(ierr)
      if (ierr /= 0) ierr = STATUS_SINGULAR
    end subroutine
  end subroutine

  !> project_structured's matrices at the state s at t1 (the step's end; G(q_n) at the step's start
  !> w%t0, w%q0): kq (err_q) or kv (err_v); zeroed first, or recording the pattern (project_setup).
  subroutine project_assemble(self, t1, s, err_q)
    class(alpha_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: t1
    type(state_t), intent(in) :: s
    logical, intent(in) :: err_q
    integer :: n, mh, mn, i
    n = self%nv; mh = self%model%mh; mn = self%model%mn
    associate (pj => self%pj, model => self%model, w => self%w)
      if (err_q) then
        call pj%kq%zero()
        do i = 1, n
          call pj%kq%add(i, i, 1.0_wp)
        end do
        call model%add_hol_jac(w%t0, w%q0, 1.0_wp, .true., pj%kq, 0, n)
        call model%add_hol_jac(t1, s%q, 1.0_wp, .false., pj%kq, n, 0)
      else
        call pj%kv%zero()
        call model%add_qq(t1, s%q, s%v, s%a, s%lam(1:mh), s%lam(mh + 1:mh + mn), &
                          [1.0_wp, 0.0_wp, 0.0_wp, 0.0_wp, 0.0_wp, 0.0_wp], pj%kv, 0, 0)
        if (mh > 0) then
          call model%add_hol_jac(t1, s%q, 1.0_wp, .true., pj%kv, 0, n)
          call model%add_hol_jac(t1, s%q, 1.0_wp, .false., pj%kv, n, 0)
        end if
        if (mn > 0) then
          call model%add_nh_jac(t1, s%q, 1.0_wp, .true., pj%kv, 0, n + mh)
          call model%add_nh_jac(t1, s%q, 1.0_wp, .false., pj%kv, n + mh, 0)
        end if
      end if
    end associate
  end subroutine

  !> The workspace of project_estimates at the start state s (M(q_0): constant M is factored once;
  !> structured: project_structured's patterns, recorded at s, and the Newton matrix's solver).
  subroutine project_setup(self, s, info)
    class(alpha_stepper_t), intent(inout) :: self
    type(state_t), intent(in) :: s
    integer, intent(out) :: info
    integer :: n, mh, m
    info = 0
    n = self%nv; mh = self%model%mh; m = mh + self%model%mn
    allocate(self%pj%da(n), self%pj%a0(n), self%pj%d1(n), self%pj%qn(self%nq))
    if (m == 0) return
    if (self%w%nz > 0) then
      associate (pj => self%pj)
        pj%structured = .true.
        allocate(pj%xs(n + m))
        call pj%kq%record(n + mh)
        call project_assemble(self, s%t, s, .true.)
        call pj%kq%setup(self%w%jm%kind, info)
        if (info == 0) then
          call pj%kv%record(n + m)
          call project_assemble(self, s%t, s, .false.)
          call pj%kv%setup(self%w%jm%kind, info)
        end if
        if (info /= 0) info = STATUS_BAD_INPUT
      end associate
      return
    end if
    associate (pj => self%pj)
      allocate(pj%c(m, n), pj%bn(self%model%mn), pj%cd(mh, mh), pj%piv(mh), pj%y(mh), pj%mq(n, n), &
               pj%x(n + m), pj%kf(1))
      call self%model%mass(s%q, pj%mq)
      call kkt_setup(pj%kd, n, m, self%model%const_mass, pj%mq, pj%kf, info)
      pj%kd%sing_tol = 0      ! the estimate's projection: generalized-alpha passes singular positions
    end associate
  end subroutine

  !> The driver's save / restore of the variable-step state (slot 1: before the step tried,
  !> 2: the start); a restore drops the kept factorization (the next h differs).
  subroutine alpha_save(self, slot)
    class(alpha_stepper_t), intent(inout) :: self
    integer, intent(in) :: slot
    call var_copy(self%slots(slot), self%var)
    call sync(self%slots(slot), self%hist, self%w, .true.)
  end subroutine

  subroutine alpha_restore(self, slot)
    class(alpha_stepper_t), intent(inout) :: self
    integer, intent(in) :: slot
    call var_copy(self%var, self%slots(slot))
    call sync(self%slots(slot), self%hist, self%w, .false.)
    self%w%have_factor = .false.
    self%w%gq_next = .false.
  end subroutine

  !> The offsets' state of var (alpha_advance's: every component of alpha_var_t but those sync
  !> copies from the workspace; a new one goes here or there), the arrays copied in place: the
  !> intrinsic assignment of a type with allocatable components frees and allocates each of
  !> them, and a variable step saves its state at every step (stiff_fast, 4 unknowns: ~10 % of
  !> a step in malloc and free).
  subroutine var_copy(dst, src)
    type(alpha_var_t), intent(inout) :: dst
    type(alpha_var_t), intent(in) :: src
    dst%off = src%off; dst%s_start = src%s_start; dst%has_start = src%has_start
    dst%m1 = src%m1; dst%m2 = src%m2; dst%nr = src%nr
    call copy_array(dst%a_start, src%a_start)
    if (allocated(src%r1) .or. allocated(dst%r1)) call copy_array(dst%r1, src%r1)     ! (alpha-RATTLE's)
    if (allocated(src%r2) .or. allocated(dst%r2)) call copy_array(dst%r2, src%r2)
  end subroutine

  !> d = s for allocatable vectors, in place when the sizes agree
  subroutine copy_array(d, s)
    real(wp), allocatable, intent(inout) :: d(:)
    real(wp), allocatable, intent(in) :: s(:)
    integer :: i
    if (allocated(s) .and. allocated(d)) then
      if (size(d) == size(s)) then      ! (a loop: d(:) = s called memcpy for a few elements)
        do i = 1, size(s)
          d(i) = s(i)
        end do
        return
      end if
    end if
    if (.not. allocated(s)) then
      if (allocated(d)) deallocate(d)
    else if (allocated(d)) then
      if (size(d) == size(s)) then
        d(:) = s
      else
        d = s
      end if
    else
      d = s
    end if
  end subroutine

  !> Copy the history term, mu and Newton's start data into var (a save slot; to_var) or back.
  !> Not w%xn: alpha_step sets it from the step's start (a, lam, mu) before reading it.  The slot's
  !> arrays are allocated at the first save and copied in place after (a save at every step).
  subroutine sync(var, hist, w, to_var)
    type(alpha_var_t), intent(inout) :: var
    real(wp), intent(inout) :: hist(:)
    type(alpha_work_t), intent(inout) :: w
    logical, intent(in) :: to_var
    integer :: i
    if (to_var) then
      if (.not. allocated(var%hist)) allocate(var%hist(size(hist)), var%xprev(w%nx), var%xprev2(w%nx))
      ! (loops: the section assignments called memcpy or ran vector loops with overlap checks,
      ! twice the copies' cost at a few elements; a save at every step)
      !GCC$ novector
      do i = 1, size(hist)
        var%hist(i) = hist(i)
      end do
      !GCC$ novector
      do i = 1, w%nx
        var%xprev(i) = w%xprev(i)
        var%xprev2(i) = w%xprev2(i)
      end do
      var%hx1 = w%hx1
      var%hx2 = w%hx2
      var%oa1 = w%oa1
      var%oa2 = w%oa2
      var%nback = w%nback
      var%quadratic = w%quadratic
      var%have_prev = w%have_prev
      var%trusted = w%trusted
      var%t_prev_end = w%t_prev_end
      if (w%ns > 0) then
        if (.not. allocated(var%mu)) allocate(var%mu(w%ns))
        !GCC$ novector
        do i = 1, w%ns
          var%mu(i) = w%mu(i)
        end do
      end if
    else
      hist(:) = var%hist
      w%xprev(:) = var%xprev
      w%xprev2(:) = var%xprev2
      w%hx1 = var%hx1
      w%hx2 = var%hx2
      w%oa1 = var%oa1
      w%oa2 = var%oa2
      w%nback = var%nback
      w%quadratic = var%quadratic
      w%have_prev = var%have_prev
      w%trusted = var%trusted
      w%t_prev_end = var%t_prev_end
      if (w%ns > 0) w%mu(:) = var%mu
    end if
  end subroutine

  subroutine alpha_finish(self)
    class(alpha_stepper_t), intent(inout) :: self
    call self%w%jm%release()
    call self%pj%kq%release()
    call self%pj%kv%release()
  end subroutine

  !> f and F = f - G^T lam_h - A^T lam_n at (t, q, v).
  subroutine total_force(model, t, q, v, lam, w, f, ftot)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, q(:), v(:), lam(:)
    type(alpha_work_t), intent(inout) :: w
    real(wp), intent(out) :: f(:), ftot(:)
    call model%force(t, q, v, f)
    ftot = f
    if (w%mh > 0) then
      call model%hol_jac_tmul(t, q, lam(1:w%mh), w%tmp)
      ftot = ftot - w%tmp
    end if
    if (w%mn > 0) then
      call model%nh_jac_tmul(t, q, lam(w%mh + 1:), w%tmp)
      ftot = ftot - w%tmp
    end if
  end subroutine

end module genalpha
