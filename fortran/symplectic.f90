!> Constrained symplectic partitioned Runge-Kutta methods on the canonical form
!> (seed 002, and Lobatto IIIA-IIIB beyond it).
!>
!> The system (fortran/core/hamiltonian.f90; p = M(q) v)
!>     qdot = phi(q, p) = M^{-1} p,   pdot = psi(t, q, p) - G(t, q)^T lam,   g(t, q) = 0
!> is the canonical system of H = 1/2 p^T M^{-1} p + V(q) when f = -grad V.
!>
!> SCHEME_COMPOSITION (seed 002 section 1, the three-step composition): one step from (q_k, p_k) is
!>   (1) pbar   = p_k - G(t_k, q_k)^T mu,                mu = h/2 Lam_k
!>   (2) one step of the partitioned RK method (A for q, Ahat for p) on the
!>       unconstrained field from (q_k, pbar):
!>         Q_i = q_k  + h sum_j a_ij    phi(Q_j, P_j)
!>         P_i = pbar + h sum_j ahat_ij psi(t_k + c_j h, Q_j, P_j)
!>         q_{k+1} = q_k + h sum_j b_j phi_j,   pbar_{k+1} = pbar + h sum_j b_j psi_j
!>   (3) p_{k+1} = pbar_{k+1} - G(t_{k+1}, q_{k+1})^T nu,  nu = h/2 Lam_{k+1}
!>   Lam_k is fixed by g(t_{k+1}, q_{k+1}) = 0: ONE Newton system in
!>   (Q_1..Q_s, P_1..P_s, mu) per step; Lam_{k+1} by the velocity constraint
!>   G M^{-1} p_{k+1} + g_t = 0, a linear m x m solve after it.
!>   Inner tableaux: Gauss-Legendre with s stages (Ahat = A; s = 1 is the
!>   implicit midpoint rule) or Lobatto IIIA-IIIB with s = 2, which is the
!>   Stormer-Verlet method: the composition is then exactly RATTLE.  The
!>   composition is symmetric and of order 2 whatever the inner method.
!>   (The explicit midpoint rule is also accepted as inner tableau: the
!>   composition then keeps both constraint levels but is not symplectic.)
!>
!> SCHEME_LOBATTO (Jay 1996; Hairer-Lubich-Wanner, GNI VII.1): the Lobatto
!> IIIA-IIIB pair with the constraint force inside the stages,
!>     Q_i = q_k + h sum_j a_ij phi_j
!>     P_i = p_k + sum_j ahat_ij (h psi_j - G(Q_j)^T mu_j),      mu_j = h Lam_j
!>     0   = g(t_k + c_i h, Q_i)                         i = 2..s (Q_1 = q_k)
!>     q_{k+1} = Q_s,  p_{k+1} = p_k + sum_j b_j (h psi_j - G(Q_j)^T mu_j)
!>     0   = G(t_{k+1}, q_{k+1}) phi(q_{k+1}, p_{k+1}) + g_t
!>   one Newton system in (Q, P, mu) per step; order 2s - 2, s = 2 is RATTLE.  (For a constant
!>   M both schemes take the reduced stage system below.)
!>
!> Both schemes keep g = 0 and G v + g_t = 0 at every step to round-off and
!> are symplectic on the constraint manifold when f = -grad V(q) and g does
!> not depend on t.  A stepper of the one driver (fortran/core/driver.f90, which
!> owns the loop, sampling and the per-step maxima); the state after each step:
!> q, v = M^{-1} p, and the consistent a and lam of (q, v) (index-1 KKT solve,
!> fortran/core/index1.f90); p is the auxiliary vector of a sample.  A Lobatto IIIA-IIIB step that
!> fails next to a singular position is taken again (sym_pass).
!>
!> RATTLE (the composition with the Lobatto IIIA-IIIB s = 2 inner tableau) for a constant M:
!> the stage system reduces to the multipliers (Hairer-Lubich-Wanner, GNI VII.1.4).  Its tableau
!> (a = [0 0; 1/2 1/2], ahat = [1/2 0; 1/2 0]) gives Q_1 = q_k, P_1 = P_2 and q_{k+1} = Q_2 =
!> q_k + h M^{-1} P_1, so with u = M^{-1} P_1 (the half-step velocity) the step is
!>     M u = p_k - G(t_k, q_k)^T mu + h/2 f(t_k, q_k, u),     g(t_k + h, q_k + h u) = 0,
!>     pbar_{k+1} = p_k - G_k^T mu + h/2 (f(t_k, q_k, u) + f(t_{k+1}, q_{k+1}, u))   (explicit),
!> n + m unknowns (u, mu) instead of 4n + m; u enters f only through a velocity-dependent force,
!> so for f = f(t, q) the first row is linear in u and the system is m equations in mu with
!> Newton matrix G(q_{k+1}) M^{-1} G(q_k)^T.  It is solved in the KKT form
!>     K = [M - h/2 f_v, G(t_k, q_k)^T; G(t_{k+1}, q_{k+1}), 0]
!> through the model's structured hooks and the solvers of fortran/core/newton_matrix.f90 (banded
!> or KLU for structured models, as generalized-alpha): simplified Newton with the kept matrix
!> K(t_k, q_k) = [M G_k^T; G_k 0], which the step before factored for its projection (for a
!> diagonal M through pyint_kkt's Schur complement G M^{-1} G^T, dense or banded: schur_init), or the
!> exact K at the iterate when the Newton rule asks for a fresh one (c%refresh) or the kept one
!> contracts slower than THETA_REFRESH (kept for the rest of the step).  The projection
!> and the consistent a, lam of the new state then share one factorization of K(t_{k+1}, q_{k+1}).
!> The fixed point is the composition's: the outputs agree with the full stage system's to the
!> Newton tolerance.  A configuration-dependent M (phi(Q, P) = M(Q)^{-1} P makes Q_2 implicit and
!> psi depends on P) takes the general stage system below.
!>
!> Lobatto IIIA-IIIB and the composition with Gauss stages for a constant M: the reduced stage
!> system (red_step).  With U_j = M^{-1} P_j (stage velocities) the stage positions
!> Q_i = q_k + h sum_j a_ij U_j are explicit, so the unknowns are (U_1..U_s, multipliers):
!>   Lobatto:  r_U,i = M U_i - p_k - sum_j ahat_ij (h f(Q_j, U_j) - G(Q_j)^T mu_j),
!>             r_g,i = g(Q_i) / h (i = 2..s); mu_s is absent from the stages (ahat's last column
!>             is zero) and is the final kick's multiplier (below);
!>   composition: r_U,i = M U_i - p_k + G_k^T mu - h sum_j ahat_ij f(Q_j, U_j),
!>             r_g = g(q_{k+1}) / h, q_{k+1} = q_k + h sum_j b_j U_j.
!> Simplified Newton (Hairer-Wanner II, sec. IV.8) with f_q, f_v neglected and G frozen at
!> G_k = G(t_k, q_k) (a Kronecker-structured matrix, as in the implementation of implicit RK
!> methods; Jay 1996 for the Lobatto pair):
!>   Lobatto:  [I (x) M, Ahat' (x) G^T; A'' (x) G, 0], A'' = rows 2..s of A, Ahat' = columns
!>             1..s-1 of Ahat.  Eliminating dU = -(I (x) M^{-1}) (r_U + (Ahat' (x) G^T) dmu) leaves
!>             (C (x) S) dmu = r_g - (A'' (x) G M^{-1}) r_U, C = A'' Ahat' ((s-1) x (s-1),
!>             invertible: cond 7 at s = 3, 1.1e3 at s = 10), S = G M^{-1} G^T; its inverse
!>             C^{-1} (x) S^{-1} is s - 1 solves with the kept K = [M G_k^T; G_k 0]:
!>             K [z_i; dmu_i] = [-(W r_U)_i; -(C^{-1} r_g)_i], W = C^{-1} A'', gives dmu_i and
!>             z_i = M^{-1}(-(W r_U)_i - G^T dmu_i); then dU_l = sum_i ahat'_li z_i -
!>             alpha_l M^{-1} (beta . r_U), where I - Ahat' W = alpha beta^T has rank one
!>             (A'' (I - Ahat' W) = 0): one solve with M, factored once;
!>   composition: [I (x) M, 1 (x) G^T; b^T (x) G, 0]: one solve K [z; dmu] = [-sum_j b_j r_U,j;
!>             -r_g] gives dmu and z = sum_j b_j dU_j, then dU_l = z - M^{-1}(r_U,l - sum_j b_j
!>             r_U,j) (s - 1 solves with M; for s = 1 none).
!> (Checked against a dense solve of the frozen system, s = 2..6, to 1.5e-15 relative; the
!> outputs against the full stage system's: 1e-13 relative after 2000 steps of the 2- and
!> 8-link chains.)  K is RATTLE's kept matrix (through newton_matrix.f90's banded / KLU solvers),
!> refreshed once per step by the final kick: q_{k+1} = Q_s (Lobatto) or q_k + h sum b_j U_j,
!> pbar_{k+1} = p_k + sum_j b_j (h f_j - G(Q_j)^T mu_j) (j < s) + b_s h f_s (Lobatto) or
!> p_k - G_k^T mu + h sum_j b_j f_j (composition), and p_{k+1} = pbar_{k+1} - G_1^T nu with
!> G_1 M^{-1} p_{k+1} + g_t = 0 (kick_complete: K(t_{k+1}, q_{k+1}) factored, the next step's
!> kept K, and a, lam of the new state from it).  The iteration stops by the one rule
!> (pyint_newton_control) and then takes the iterations that bring what the kept matrix leaves,
!> eta |dx|, to round-off at the observed rate (sym_step's reason: it accumulates).  The
!> contraction rate is O(h^2 |M^{-1} f_q| + h |M^{-1} f_v| + h |G_q| |mu| / |G|), small in the
!> methods' range; a step whose kept matrix contracts slower than THETA_REFRESH, or that the rule
!> gives up (c%refresh, divergence), goes on with the reduced system's own Jacobian (red_jacobian:
!> f_q, f_v, (G^T mu)_q and G at the stages, assembled through the structured hooks into a sparse /
!> banded newton_matrix, never a dense O((sn)^2) matrix for a structured model; Hairer-Wanner II,
!> sec. IV.8), iterated to round-off as above; the state and the kick as above.  Redundant constraints: K is factored by the
!> same layer as RATTLE's; singular positions: sym_pass takes the step again with the step's own
!> Jacobian and a backward-error test (red_step's pass mode), then halves it.
!>
!> Newton (every other case): simplified Newton on the stage system, unknowns (Q, P, mu) with
!> the position constraint rows scaled by 1/h, its dense LU kept across iterations and steps and
!> refreshed when the one rule of every implicit kernel, pyint_newton_control
!> (fortran/core/newton_control.f90), asks for it (c%refresh) or the kept matrix contracts slower
!> than THETA_REFRESH; groups in sym_step; the state is taken from the updated iterate.  A kept
!> matrix leaves theta |dx| in every row: once the rule has converged with one, an iteration
!> with a fresh matrix ends the step (Newton's step: the fresh-Jacobian iteration's result).
!> RATTLE's reduced step
!> instead iterates with its cheap kept matrix until g(q_{k+1}) is at round-off (or stops
!> shrinking: its noise).
module symplectic
  use pyint_kinds
  use pyint_model, only: model_t, index1_rhs
  use pyint_newton_matrix, only: newton_matrix_t, SOLVER_AUTO, SOLVER_DENSE, SMALL_MAX
  use pyint_driver, only: stepper_t, state_t
  use pyint_linalg, only: lu_factor, lu_solve, dense_lu_small, dense_lu_factor, dense_lu_solve
  use pyint_tableaux, only: gauss_legendre, lobatto_iiia_iiib, explicit_midpoint
  use pyint_hamiltonian, only: ham_work_t, ham_init, ham_velocity, ham_field, ham_field_jac, ham_minv
  use pyint_index1, only: kkt_work_t, kkt_init, kkt_accel, index1_work_t, index1_init, index1_accel, kkt_structured
  use pyint_kkt, only: kkt_data_t, kkt_factor_t, kkt_setup, kkt_factor, kkt_solve, kkt_ctmul, SING_TOL, &
                       TIKHONOV_MU
  use pyint_newton_control, only: newton_control_t, NEWTON_CONVERGED, NEWTON_DIVERGED, NEWTON_FLOOR, maxabs, &
                                  NEWTON_STAGNATION, NEWTON_KAPPA
  use pyint_seam, only: NSTATS_SYMPLECTIC, NIOPT_SYMPLECTIC, NROPT_SYMPLECTIC, IOPT_SYMPLECTIC_SCHEME, &
                        IOPT_SYMPLECTIC_TABLEAU, IOPT_SYMPLECTIC_STAGES, IOPT_SYMPLECTIC_MAXIT, ROPT_SYMPLECTIC_TOL
  use pyint_seam, only: STAT_SYMPLECTIC_JACOBIAN_FACTORIZATIONS, STAT_SYMPLECTIC_MAX_NEWTON_ITERATIONS, &
                        STAT_SYMPLECTIC_NEWTON_ITERATIONS
  implicit none
  private
  public :: sym_stepper_t, sym_tableau, SCHEME_COMPOSITION, SCHEME_LOBATTO, TAB_GAUSS, TAB_LOBATTO, &
            TAB_EXPLICIT_MIDPOINT

  integer, parameter :: SCHEME_COMPOSITION = 0, SCHEME_LOBATTO = 1
  !> a kept matrix is refreshed at the next iteration when the observed contraction exceeds this
  !> (generalized-alpha's THETA_REFACTOR, fortran/genalpha.f90), besides when the rule asks (c%refresh)
  real(wp), parameter :: THETA_REFRESH = 0.1_wp
  !> The banded Schur path of the kept K (schur_init) up to m n = BAND_G_MAX entries of G: model%hol_jac
  !> fills (and zeroes) a dense G at every factorization, memory-bound beyond (the chain N = 1024,
  !> 2^21 entries: 1080 us a step against 454 by KLU on K; N = 512, 2^19: 198 ... 240 against 197)
  real(wp), parameter :: BAND_G_MAX = 2.0_wp**18
  integer, parameter :: TAB_GAUSS = 0, TAB_LOBATTO = 1, TAB_EXPLICIT_MIDPOINT = 2

  !> Per-trajectory workspace (allocated once per call: the kernel is reentrant).
  type :: sym_work_t
    integer :: n, m, s, nx, scheme
    type(newton_control_t) :: nc      !< the Newton termination rule (carried across steps)
    logical :: have_jac = .false.     !< jac holds the LU factors of a kept Newton matrix
    real(wp), allocatable :: a(:, :), ah(:, :), b(:), c(:)
    real(wp), allocatable :: x(:), dx(:), e(:), jac(:, :)
    integer, allocatable :: ipiv(:)
    real(wp), allocatable :: v(:, :), psi(:, :), hf(:, :)                      !< (n, s)
    real(wp), allocatable :: phq(:, :, :), php(:, :, :), psq(:, :, :), psp(:, :, :)   !< (n, n, s)
    real(wp), allocatable :: gs(:, :, :), gtl(:, :, :)   !< Lobatto: G(Q_j) (m, n, s), (G^T mu_j)_q (n, n, s)
    real(wp), allocatable :: gk(:, :), g1(:, :), hvq(:, :), bm(:, :)           !< (m, n)
    real(wp), allocatable :: gval(:), gt(:)                                    !< (m)
    real(wp), allocatable :: q1(:), p1(:), v1(:), psi1(:), pbar(:)             !< (n)
    real(wp), allocatable :: ph1q(:, :), ph1p(:, :), ps1q(:, :), ps1p(:, :)    !< (n, n)
    real(wp), allocatable :: wmat(:, :), smat(:, :), srhs(:)                   !< projection
    integer, allocatable :: sipiv(:)
    type(ham_work_t) :: hw
  end type

  !> RATTLE's reduced step (rattle_step): unknowns x = (u, mu), u = M^{-1} P_{1/2}.
  type :: rattle_work_t
    logical :: on = .false.
    logical :: use_jf = .false.       !< the iteration matrix is jf (refreshed by the rule in this step), not kf
    type(newton_matrix_t) :: kf       !< K(t_k, q_k) = [M G_k^T; G_k 0], factored at the end of each step
    type(newton_matrix_t) :: jf       !< the step's own Jacobian, factored when the rule asks (refresh)
    real(wp), allocatable :: x(:), dx(:), r(:), xs(:)             !< (n + m)
    real(wp), allocatable :: q1(:), f0(:), f1(:), gtm(:), mdu(:), zn(:)   !< (n)
    real(wp), allocatable :: mu_(:), gdm(:)     !< (n): M u and G_k^T dmu (rattle_residual's products)
    real(wp), allocatable :: qf(:)              !< (n): kf's position (kf = K(tf, qf))
    real(wp) :: tf = 0
    real(wp), allocatable :: zm(:)                                 !< (m)
    !> the kept K through pyint_kkt's Schur complement (kept_factor): kk holds it when kf_schur
    logical :: schur = .false., kf_schur = .false.
    type(kkt_data_t) :: kd
    type(kkt_factor_t) :: kk(1)
    real(wp), allocatable :: gq(:, :), cn(:, :)                    !< (m, n): G at the kept point; (0, n)
    real(wp), allocatable :: xr(:)                                 !< (n + m): kept_index1's refinement
    real(wp), allocatable :: gr(:)                                 !< (m): its G a
  end type

  !> The reduced stage system for a constant M (red_step; module header) of Lobatto IIIA-IIIB
  !> (unknowns U_j = M^{-1} P_j and mu_1 .. mu_{s-1}) and of the composition with Gauss stages
  !> (U_j and mu); the kept K(t_k, q_k) and the final kick are RATTLE's (rattle_work_t's kf,
  !> kick_complete).  nmu multipliers: s - 1 (Lobatto), 1 (composition).
  type :: red_work_t
    logical :: on = .false.
    logical :: comp = .false.          !< the composition (else Lobatto IIIA-IIIB)
    logical :: jm_ok = .false.         !< jm holds a factored Jacobian (of a step with size jm_h)
    real(wp) :: jm_h = 0
    type(newton_matrix_t) :: jm        !< the reduced system's Jacobian (red_jacobian), at its first need
    integer :: kind = TAB_LOBATTO      !< the inner tableau
    type(newton_matrix_t) :: mf        !< M, factored once
    real(wp), allocatable :: a(:, :), ah(:, :), b(:), c(:)
    real(wp), allocatable :: cinv(:, :), wm(:, :), alpha(:), beta(:)   !< Lobatto's elimination
    real(wp), allocatable :: gcoef(:, :)    !< (s, nmu): d r_U,i / d mu_j = gcoef(i, j) G^T
    real(wp), allocatable :: u(:, :), du(:, :), ru(:, :), qs(:, :), fs(:, :), gtm(:, :)   !< (n, s)
    real(wp), allocatable :: hf(:, :)      !< (n, s): lob_residual's h f_j - G(Q_j)^T mu_j
    real(wp), allocatable :: wq(:, :)      !< (n, s): red_step's combinations of the dU_l
    real(wp), allocatable :: z(:, :), gd(:, :)                          !< (n, nmu)
    real(wp), allocatable :: mu(:, :), dmu(:, :), rg(:, :)             !< (m, nmu)
    real(wp), allocatable :: xs(:), zb(:), zn(:), zm(:), q1(:)
    real(wp), allocatable :: wk(:)         !< (n): stage_points' and red_step's column combinations
    real(wp), allocatable :: mus(:, :)     !< (n, s): M U_j of the last residual (the momenta's scale)
    real(wp), allocatable :: dpm(:)        !< (s): red_step's max |M dU_l|
    real(wp), allocatable :: xj(:)         !< (s n + nmu m): jm's right-hand side
    logical :: pass = .false.              !< a step of sym_pass (red_step's pass mode)
  end type

  !> The family as a stepper of the one driver (fortran/core/driver.f90).  Options:
  !> iopt = [scheme, kind, s, maxit], ropt = [tol]; the auxiliary vector of a sample
  !> is p; stats = [Newton iterations, LU factorizations, max iterations in a step].
  type, extends(stepper_t) :: sym_stepper_t
    type(sym_work_t) :: w
    type(kkt_work_t) :: kw
    type(rattle_work_t) :: rt
    type(red_work_t) :: lw
    type(index1_work_t) :: iw          !< sym_pass: the filtered a, lam of a passed step's end
    integer :: scheme = SCHEME_COMPOSITION, maxit = 0
    real(wp) :: tol = 0
    real(wp), allocatable :: p(:)      !< the momenta
  contains
    procedure :: init => sym_init
    procedure :: step => sym_advance
    procedure :: aux => sym_aux
    procedure :: pass_singular => sym_pass
    procedure :: straddle => sym_straddle
  end type

contains

  !> The inner tableau: kind TAB_GAUSS (s >= 1), TAB_LOBATTO (s >= 2) or
  !> TAB_EXPLICIT_MIDPOINT (s = 2; not symplectic: the tests' negative control).
  subroutine sym_tableau(kind, s, a, ah, b, c, info)
    integer, intent(in) :: kind, s
    real(wp), intent(out) :: a(s, s), ah(s, s), b(s), c(s)
    integer, intent(out) :: info
    select case (kind)
    case (TAB_GAUSS)
      call gauss_legendre(s, a, ah, b, c, info)
    case (TAB_LOBATTO)
      call lobatto_iiia_iiib(s, a, ah, b, c, info)
    case (TAB_EXPLICIT_MIDPOINT)
      info = STATUS_BAD_INPUT
      if (s == 2) call explicit_midpoint(a, ah, b, c, info)
    case default
      info = STATUS_BAD_INPUT
    end select
  end subroutine

  subroutine work_init(w, model, scheme, kind, s, q0, info)
    type(sym_work_t), intent(out) :: w
    class(model_t), intent(in) :: model
    integer, intent(in) :: scheme, kind, s
    real(wp), intent(in) :: q0(:)
    integer, intent(out) :: info
    integer :: n, m
    n = model%n; m = model%mh
    w%n = n; w%m = m; w%s = s; w%scheme = scheme
    if (scheme == SCHEME_COMPOSITION) then
      w%nx = 2 * s * n + m
    else
      w%nx = 2 * s * n + s * m
    end if
    allocate(w%a(s, s), w%ah(s, s), w%b(s), w%c(s))
    call sym_tableau(kind, s, w%a, w%ah, w%b, w%c, info)
    if (info /= 0) then
      info = STATUS_BAD_INPUT
      return
    end if
    allocate(w%x(w%nx), w%dx(w%nx), w%e(w%nx), w%jac(w%nx, w%nx), w%ipiv(w%nx))
    allocate(w%v(n, s), w%psi(n, s), w%hf(n, s), w%phq(n, n, s), w%php(n, n, s), &
             w%psq(n, n, s), w%psp(n, n, s), w%gs(m, n, s), w%gtl(n, n, s))
    allocate(w%gk(m, n), w%g1(m, n), w%hvq(m, n), w%bm(m, n), w%gval(m), w%gt(m))
    allocate(w%q1(n), w%p1(n), w%v1(n), w%psi1(n), w%pbar(n))
    allocate(w%ph1q(n, n), w%ph1p(n, n), w%ps1q(n, n), w%ps1p(n, n))
    allocate(w%wmat(n, m), w%smat(m, m), w%srhs(m), w%sipiv(m))
    w%gs = 0; w%gtl = 0
    call ham_init(w%hw, model, q0, info)
  end subroutine

  ! Offsets of the blocks of the unknown vector x = (Q_1..Q_s, P_1..P_s, mu).
  pure integer function oq(w, i)
    type(sym_work_t), intent(in) :: w
    integer, intent(in) :: i
    oq = (i - 1) * w%n
  end function

  pure integer function op(w, i)
    type(sym_work_t), intent(in) :: w
    integer, intent(in) :: i
    op = (w%s + i - 1) * w%n
  end function

  pure integer function om(w, j)
    type(sym_work_t), intent(in) :: w
    integer, intent(in) :: j
    om = 2 * w%s * w%n + (j - 1) * w%m
  end function

  !> Stage fields (and, with jac, their Jacobians) at the iterate w%x.
  subroutine eval_stages(model, w, t, h, jac, info)
    class(model_t), intent(in) :: model
    type(sym_work_t), intent(inout) :: w
    real(wp), intent(in) :: t, h
    logical, intent(in) :: jac
    integer, intent(out) :: info
    integer :: j, n
    real(wp) :: tj
    n = w%n
    info = 0
    do j = 1, w%s
      tj = t + w%c(j) * h
      associate (qj => w%x(oq(w, j) + 1:oq(w, j) + n), pj => w%x(op(w, j) + 1:op(w, j) + n))
        if (jac) then
          call ham_field_jac(model, w%hw, tj, qj, pj, w%v(:, j), w%psi(:, j), w%phq(:, :, j), &
                             w%php(:, :, j), w%psq(:, :, j), w%psp(:, :, j), info)
        else
          call ham_field(model, w%hw, tj, qj, pj, w%v(:, j), w%psi(:, j), info)
        end if
        if (info /= 0) return
        if (w%scheme == SCHEME_LOBATTO .and. w%m > 0) then
          call model%hol_jac(tj, qj, w%gs(:, :, j))
          if (jac) call model%hol_gtl_q(tj, qj, w%x(om(w, j) + 1:om(w, j) + w%m), w%gtl(:, :, j))
        end if
      end associate
    end do
  end subroutine

  !> Rows x_i - base - h sum_j coef_ij f_j (i = 1..s) of block `part` (0: the Q rows,
  !> 1: the P rows) and, with jac, their Jacobian blocks I - h coef_ij [dfq_j, dfp_j].
  subroutine stage_rows(w, part, base, f, coef, dfq, dfp, h, jac)
    type(sym_work_t), intent(inout) :: w
    integer, intent(in) :: part
    real(wp), intent(in) :: base(:), f(:, :), coef(:, :), dfq(:, :, :), dfp(:, :, :), h
    logical, intent(in) :: jac
    integer :: i, j, k, n, r
    n = w%n
    do i = 1, w%s
      r = (part * w%s + i - 1) * n
      w%e(r + 1:r + n) = w%x(r + 1:r + n) - base - h * matmul(f, coef(i, :))
      if (.not. jac) cycle
      do j = 1, w%s
        w%jac(r + 1:r + n, oq(w, j) + 1:oq(w, j) + n) = -h * coef(i, j) * dfq(:, :, j)
        w%jac(r + 1:r + n, op(w, j) + 1:op(w, j) + n) = -h * coef(i, j) * dfp(:, :, j)
      end do
      do k = 1, n
        w%jac(r + k, r + k) = w%jac(r + k, r + k) + 1
      end do
    end do
  end subroutine

  !> Residual (and with jac the Newton matrix) of the composition step at w%x.
  subroutine composition_eval(model, w, t, h, qk, pk, jac, info)
    class(model_t), intent(in) :: model
    type(sym_work_t), intent(inout) :: w
    real(wp), intent(in) :: t, h, qk(:), pk(:)
    logical, intent(in) :: jac
    integer, intent(out) :: info
    integer :: i, j, n, m
    n = w%n; m = w%m
    call eval_stages(model, w, t, h, jac, info)
    if (info /= 0) return
    if (jac) w%jac = 0
    w%pbar = pk
    if (m > 0) w%pbar = pk - matmul(w%x(om(w, 1) + 1:om(w, 1) + m), w%gk)
    call stage_rows(w, 0, qk, w%v, w%a, w%phq, w%php, h, jac)
    call stage_rows(w, 1, w%pbar, w%psi, w%ah, w%psq, w%psp, h, jac)
    if (jac .and. m > 0) then
      do i = 1, w%s
        w%jac(op(w, i) + 1:op(w, i) + n, om(w, 1) + 1:om(w, 1) + m) = transpose(w%gk)
      end do
    end if
    w%q1 = qk + h * matmul(w%v, w%b)
    if (m == 0) return
    ! g(t_{k+1}, q_{k+1}) / h = 0
    call model%hol(t + h, w%q1, w%gval)
    w%e(om(w, 1) + 1:om(w, 1) + m) = w%gval / h
    if (.not. jac) return
    call model%hol_jac(t + h, w%q1, w%g1)
    do j = 1, w%s
      w%jac(om(w, 1) + 1:om(w, 1) + m, oq(w, j) + 1:oq(w, j) + n) = w%b(j) * matmul(w%g1, w%phq(:, :, j))
      w%jac(om(w, 1) + 1:om(w, 1) + m, op(w, j) + 1:op(w, j) + n) = w%b(j) * matmul(w%g1, w%php(:, :, j))
    end do
  end subroutine

  !> Residual (and with jac the Newton matrix) of the Lobatto IIIA-IIIB step at w%x.
  subroutine lobatto_eval(model, w, t, h, qk, pk, jac, info)
    class(model_t), intent(in) :: model
    type(sym_work_t), intent(inout) :: w
    real(wp), intent(in) :: t, h, qk(:), pk(:)
    logical, intent(in) :: jac
    integer, intent(out) :: info
    integer :: i, j, k, n, m, s, rg, rv
    n = w%n; m = w%m; s = w%s
    call eval_stages(model, w, t, h, jac, info)
    if (info /= 0) return
    if (jac) w%jac = 0
    call stage_rows(w, 0, qk, w%v, w%a, w%phq, w%php, h, jac)
    ! hf_j = h psi_j - G_j^T mu_j: the momentum increment of stage j
    do j = 1, s
      w%hf(:, j) = h * w%psi(:, j)
      if (m > 0) w%hf(:, j) = w%hf(:, j) - matmul(w%x(om(w, j) + 1:om(w, j) + m), w%gs(:, :, j))
    end do
    do i = 1, s
      w%e(op(w, i) + 1:op(w, i) + n) = w%x(op(w, i) + 1:op(w, i) + n) - pk - matmul(w%hf, w%ah(i, :))
      if (.not. jac) cycle
      do j = 1, s
        if (w%ah(i, j) == 0) cycle
        w%jac(op(w, i) + 1:op(w, i) + n, oq(w, j) + 1:oq(w, j) + n) = &
            w%ah(i, j) * (w%gtl(:, :, j) - h * w%psq(:, :, j))
        w%jac(op(w, i) + 1:op(w, i) + n, op(w, j) + 1:op(w, j) + n) = -h * w%ah(i, j) * w%psp(:, :, j)
        if (m > 0) w%jac(op(w, i) + 1:op(w, i) + n, om(w, j) + 1:om(w, j) + m) = &
            w%ah(i, j) * transpose(w%gs(:, :, j))
      end do
      do k = 1, n
        w%jac(op(w, i) + k, op(w, i) + k) = w%jac(op(w, i) + k, op(w, i) + k) + 1
      end do
    end do
    w%p1 = pk + matmul(w%hf, w%b)
    w%q1 = w%x(oq(w, s) + 1:oq(w, s) + n)
    if (m == 0) return
    ! g(t_k + c_i h, Q_i) / h = 0 for i = 2..s (rows om(w, 1) + (i - 2) m + 1 ...)
    do i = 2, s
      rg = om(w, 1) + (i - 2) * m
      call model%hol(t + w%c(i) * h, w%x(oq(w, i) + 1:oq(w, i) + n), w%gval)
      w%e(rg + 1:rg + m) = w%gval / h
      if (jac) w%jac(rg + 1:rg + m, oq(w, i) + 1:oq(w, i) + n) = w%gs(:, :, i) / h
    end do
    ! velocity constraint at (t_{k+1}, Q_s, p_{k+1}); G(t_{k+1}, Q_s) = gs(:, :, s) since c_s = 1
    rv = om(w, 1) + (s - 1) * m
    if (jac) then
      call ham_field_jac(model, w%hw, t + h, w%q1, w%p1, w%v1, w%psi1, w%ph1q, w%ph1p, w%ps1q, w%ps1p, info)
    else
      call ham_field(model, w%hw, t + h, w%q1, w%p1, w%v1, w%psi1, info)
    end if
    if (info /= 0) return
    call model%hol_t(t + h, w%q1, w%gt)
    w%e(rv + 1:rv + m) = matmul(w%gs(:, :, s), w%v1) + w%gt
    if (.not. jac) return
    call model%hol_vel_q(t + h, w%q1, w%v1, w%hvq)
    w%bm = matmul(w%gs(:, :, s), w%ph1p)           ! d(residual)/d p_{k+1}
    w%jac(rv + 1:rv + m, oq(w, s) + 1:oq(w, s) + n) = w%hvq + matmul(w%gs(:, :, s), w%ph1q)
    do j = 1, s
      w%jac(rv + 1:rv + m, oq(w, j) + 1:oq(w, j) + n) = w%jac(rv + 1:rv + m, oq(w, j) + 1:oq(w, j) + n) &
          + w%b(j) * matmul(w%bm, h * w%psq(:, :, j) - w%gtl(:, :, j))
      w%jac(rv + 1:rv + m, op(w, j) + 1:op(w, j) + n) = h * w%b(j) * matmul(w%bm, w%psp(:, :, j))
      w%jac(rv + 1:rv + m, om(w, j) + 1:om(w, j) + m) = -w%b(j) * matmul(w%bm, transpose(w%gs(:, :, j)))
    end do
  end subroutine

  !> Residual of the current scheme (with jac: and its Newton matrix).
  subroutine step_eval(model, w, t, h, qk, pk, jac, info)
    class(model_t), intent(in) :: model
    type(sym_work_t), intent(inout) :: w
    real(wp), intent(in) :: t, h, qk(:), pk(:)
    logical, intent(in) :: jac
    integer, intent(out) :: info
    if (w%scheme == SCHEME_COMPOSITION) then
      call composition_eval(model, w, t, h, qk, pk, jac, info)
    else
      call lobatto_eval(model, w, t, h, qk, pk, jac, info)
    end if
  end subroutine

  !> One step (t, q, p) -> (t + h, q, p): simplified Newton on the stage system, its LU kept
  !> across iterations and steps (w%have_jac), refreshed when the rule asks (c%refresh) or the
  !> kept one contracts slower than THETA_REFRESH.  Once the rule has converged with a kept
  !> matrix, one more iteration with a fresh matrix (Newton's step, its error O(|dx|^2)) ends
  !> the step, as the fresh-Jacobian iteration did: a kept matrix leaves theta |dx| in every
  !> row, the constraint rows (which the methods keep at round-off) and the others (an error
  !> that accumulates over the steps).  iters, nfact: iterations and LU factorizations.
  subroutine sym_step(model, w, t, h, q, p, tol, maxit, iters, nfact, info)
    class(model_t), intent(in) :: model
    type(sym_work_t), intent(inout) :: w
    real(wp), intent(in) :: t, h, tol
    real(wp), intent(inout) :: q(:), p(:)
    integer, intent(in) :: maxit
    integer, intent(out) :: iters, nfact, info
    integer :: it, i, n, lapack_info, status, rc
    logical :: fresh, refresh
    real(wp) :: sq, sp, amp
    n = w%n
    ! start: Q_i = q + c_i h v, P_i = p (multipliers: the previous step's)
    call ham_velocity(model, w%hw, q, p, w%v1, info)
    if (info /= 0) return
    do i = 1, w%s
      w%x(oq(w, i) + 1:oq(w, i) + n) = q + w%c(i) * h * w%v1
      w%x(op(w, i) + 1:op(w, i) + n) = p
    end do
    if (w%scheme == SCHEME_COMPOSITION .and. w%m > 0) call model%hol_jac(t, q, w%gk)
    iters = 0
    nfact = 0
    status = NEWTON_DIVERGED
    rc = om(w, 1)         ! the constraint rows: rc + 1 .. nx
    call w%nc%start()
    fresh = .not. w%have_jac
    call step_eval(model, w, t, h, q, p, fresh, info)   ! the residual (and a Jacobian when none is kept)
    if (info /= 0) return
    do it = 1, maxit
      if (.not. all(abs(w%e) <= huge(1.0_wp))) then
        info = STATUS_NONFINITE
        return
      end if
      if (fresh) then
        call dense_lu_factor(w%jac, w%ipiv, info)
        w%have_jac = info == 0
        if (info /= 0) then
          info = STATUS_SINGULAR
          return
        end if
        nfact = nfact + 1
      end if
      w%dx = -w%e
      call dense_lu_solve(w%jac, w%ipiv, w%dx)
      w%x = w%x + w%dx
      iters = iters + 1
      ! groups: stage positions, stage momenta, multipliers (impulses: momentum units).
      ! The 1/h-scaled constraint rows leave a round-off ~ eps |Q| / h in the momenta and
      ! multipliers, amplified by the stage system (measured: up to 3.5 s^2 at s = 10 on
      ! the manipulator, 8 at s = 6 on chain2): their floor is s^3 times what changes
      ! Q by an ulp
      sq = maxabs(w%x(1:w%s * n))
      sp = maxabs(w%x(w%s * n + 1:2 * w%s * n))
      amp = w%s**3 * max(1.0_wp, sq / (h * max(maxabs(w%v1), sq * epsilon(1.0_wp))))
      call w%nc%clear()
      call w%nc%group(w%dx(1:w%s * n), 1 + sq, sq)
      call w%nc%group(w%dx(w%s * n + 1:2 * w%s * n), 1 + sp, amp * sp)
      call w%nc%group(w%dx(2 * w%s * n + 1:w%nx), 1 + max(sp, maxabs(w%x(2 * w%s * n + 1:w%nx))), &
                      amp * max(sp, maxabs(w%x(2 * w%s * n + 1:w%nx))))
      status = w%nc%test(tol, maxit, .not. fresh, can_refresh=.true.)
      if (status == NEWTON_DIVERGED) exit
      refresh = w%nc%refresh .or. (.not. fresh .and. w%nc%theta > THETA_REFRESH)
      if (status == NEWTON_CONVERGED) then
        call step_eval(model, w, t, h, q, p, .false., info)    ! the state from the updated iterate
        if (info /= 0) return
        if (fresh) exit
        ! a kept matrix's iterate: one iteration with a fresh matrix ends every step (Newton's
        ! step, its error O(|dx|^2)).  Stopping at the rule's KAPPA tol instead left an
        ! iteration error of up to 1e-11 (1 + |x|) per step, which accumulates over the run
        ! and capped Lobatto IIIA-IIIB's order 4 on the rolling disc and on quadratic drag
        ! (tests/test_mechanics_bridge.py, tests/test_symbolic_nonsmooth.py) once the
        ! discretization error fell below it; the kept matrix still saves the factorizations
        ! of the iterations before it
        refresh = .true.
        status = NEWTON_DIVERGED      ! unless the fresh iteration converges
      end if
      ! the residual at the new iterate, with a fresh Jacobian when one is due
      call step_eval(model, w, t, h, q, p, refresh, info)
      if (info /= 0) return
      fresh = refresh
    end do
    if (status /= NEWTON_CONVERGED) then
      info = STATUS_NEWTON_FAILED
      if (.not. all(abs(w%e) <= huge(1.0_wp))) info = STATUS_NONFINITE
      w%have_jac = .false.
      return
    end if
    q = w%q1
    if (w%scheme == SCHEME_LOBATTO) then
      p = w%p1
      return
    end if
    ! composition: pbar_{k+1}, then the kick that enforces G M^{-1} p + g_t = 0
    p = w%pbar + h * matmul(w%psi, w%b)
    if (w%m == 0) return
    call ham_minv(model, w%hw, q, info)
    if (info /= 0) return
    call model%hol_jac(t + h, q, w%g1)
    call model%hol_t(t + h, q, w%gt)
    w%wmat = matmul(w%hw%minv, transpose(w%g1))
    w%smat = matmul(w%g1, w%wmat)
    w%srhs = matmul(w%g1, matmul(w%hw%minv, p)) + w%gt
    call lu_factor(w%smat, w%sipiv, lapack_info)
    if (lapack_info /= 0) then
      info = STATUS_SINGULAR
      return
    end if
    call lu_solve(w%smat, w%sipiv, w%srhs)
    p = p - matmul(w%srhs, w%g1)
  end subroutine

  !> K = [M - cf f_v(tf, qg, u), G(tg, qg)^T; G(t1, q1), 0] into nm (zeroed first), through the
  !> model's structured hooks (O(nnz) for a model with structure; fortran/core/model.f90).
  subroutine rattle_assemble(model, rw, nm, tg, qg, t1, q1, tf, u, cf)
    class(model_t), intent(in) :: model
    type(rattle_work_t), intent(inout) :: rw
    type(newton_matrix_t), intent(inout) :: nm
    real(wp), intent(in) :: tg, qg(:), t1, q1(:), tf, u(:), cf
    integer :: n
    n = model%n
    call nm%zero()
    call model%add_qq(tf, qg, u, rw%zn, rw%zm, rw%zm(1:0), [1.0_wp, 0.0_wp, 0.0_wp, -cf, 0.0_wp, 0.0_wp], nm, 0, 0)
    call model%add_hol_jac(tg, qg, 1.0_wp, .true., nm, 0, n)
    call model%add_hol_jac(t1, q1, 1.0_wp, .false., nm, n, 0)
  end subroutine

  !> K(t1, q1) = [M G_1^T; G_1 0] into rw%kf: M (constant) restored from its base (kept by
  !> rattle_init), G_1 from one evaluation and its transpose mirrored.
  subroutine kick_assemble(model, rw, t1, q1)
    class(model_t), intent(in) :: model
    type(rattle_work_t), intent(inout) :: rw
    real(wp), intent(in) :: t1, q1(:)
    call rw%kf%zero_base()
    call rw%kf%set_mirror(.true.)
    call model%add_hol_jac(t1, q1, 1.0_wp, .false., rw%kf, model%n, 0)
    call rw%kf%set_mirror(.false.)
  end subroutine

  !> The Schur path of the kept K (kept_factor): for at most SMALL_MAX constraints and a diagonal
  !> M (or at most SMALL_MAX coordinates), where S = G M^{-1} G^T (m x m, dense) costs less than the
  !> sparse LU of the whole K (n + m); for more constraints, a diagonal M and a G of at most
  !> BAND_G_MAX entries where pyint_kkt bands S (kkt_structure, from the model's constraint pattern:
  !> index1.f90's kkt_structured), cheaper than the sparse LU of K with kick_assemble's refill of G
  !> (RATTLE on the chain N = 128: 473 k -> 396 k instructions a step); M, constant, from q.
  subroutine schur_init(model, rw, q)
    class(model_t), intent(in) :: model
    type(rattle_work_t), intent(inout) :: rw
    real(wp), intent(in) :: q(:)
    real(wp), allocatable :: mq(:, :)
    integer :: n, m, info
    n = model%n; m = model%mh
    rw%schur = .false.
    if (.not. model%const_mass) return
    allocate(mq(n, n))
    call model%mass(q, mq)
    call kkt_setup(rw%kd, n, m, .true., mq, rw%kk, info)
    if (info /= 0) return
    if (m > SMALL_MAX) then
      if (real(m, wp) * n > BAND_G_MAX) return
      call kkt_structured(model, q, rw%kd, rw%kk)
      if (.not. rw%kd%banded) return
    end if
    if (.not. (rw%kd%diagonal .or. n <= SMALL_MAX)) return
    rw%kd%sing_tol = SING_TOL
    rw%kd%lower_s = .true.        ! (S exactly symmetric from its lower triangle: half the products)
    rw%kd%chol = .true.           ! (S = L L^T: half the LU's operations; pyint_kkt)
    allocate(rw%gq(m, n), rw%cn(0, n), rw%xr(n + m), rw%gr(m))
    rw%schur = .true.
  end subroutine

  !> Factor the kept K(t1, q1) = [M G_1^T; G_1 0]: through pyint_kkt's Schur complement
  !> (rw%schur) unless its pivots flag a near-singular S (pyint_kkt's singular-position test:
  !> there the Schur complement loses what the sparse LU of K keeps), else K itself in rw%kf
  !> (kick_assemble, newton_matrix.f90's solvers).  info: 0 or that of kf%factor.
  subroutine kept_factor(model, rw, t1, q1, info)
    class(model_t), intent(in) :: model
    type(rattle_work_t), intent(inout) :: rw
    real(wp), intent(in) :: t1, q1(:)
    integer, intent(out) :: info
    rw%kf_schur = .false.
    if (rw%schur) then
      call model%hol_jac(t1, q1, rw%gq)
      call kkt_factor(rw%kd, rw%cn, rw%gq, rw%cn, rw%kk(1), info)   ! (M is not read on the Schur path)
      rw%kf_schur = info == 0
      if (rw%kf_schur) return
    end if
    call kick_assemble(model, rw, t1, q1)
    call rw%kf%factor(info)
  end subroutine

  !> The kept K factored at (t, q) (kept_factor), and recorded as K(tf, qf) for kept_gtmul once it
  !> is (tf stays -huge while it is not).  info: 0 or STATUS_SINGULAR.
  subroutine kept_at(model, rw, t, q, info)
    class(model_t), intent(in) :: model
    type(rattle_work_t), intent(inout) :: rw
    real(wp), intent(in) :: t, q(:)
    integer, intent(out) :: info
    rw%tf = -huge(1.0_wp)
    call kept_factor(model, rw, t, q, info)
    if (info /= 0) then
      info = STATUS_SINGULAR
      return
    end if
    rw%tf = t
    rw%qf = q
  end subroutine

  !> x <- K^{-1} x with the kept factorization (kept_factor); top_zero: x(1:n) is zero (kkt_solve's).
  subroutine kept_solve(rw, x, top_zero)
    type(rattle_work_t), intent(inout) :: rw
    real(wp), intent(inout), contiguous :: x(:)
    logical, intent(in), optional :: top_zero
    if (rw%kf_schur) then
      call kkt_solve(rw%kd, rw%kk(1), x, top_zero)
    else
      call rw%kf%solve(x)
    end if
  end subroutine

  !> x = G(t, q)^T y: from the kept K's Schur factors when they are at (t, q) and G is sparse
  !> (kkt_ctmul over its nonzeros, no evaluation of G: IFToMM A02 in natural coordinates, RATTLE,
  !> 5.5 M of 79.9 M instructions fewer in 503 steps), else by the model (a small G: the chain N = 8's
  !> hook took 0.5 M where kkt_ctmul took 1.5 M).
  subroutine kept_gtmul(model, rw, t, q, y, x)
    class(model_t), intent(in) :: model
    type(rattle_work_t), intent(in) :: rw
    real(wp), intent(in) :: t, q(:), y(:)
    real(wp), intent(out) :: x(:)
    if (rw%kf_schur .and. t == rw%tf) then
      if (rw%kk(1)%sparse .and. all(q == rw%qf)) then
        call kkt_ctmul(rw%kk(1), y, x)
        return
      end if
    end if
    call model%hol_jac_tmul(t, q, y, x)
  end subroutine

  !> a and lam of (t, q, v) from the kept factorization of K(t, q) (the index-1 system).  On the
  !> Schur path with one step of iterative refinement of the constraint rows (as index1.f90's
  !> index1_accel refines): the Schur complement leaves eps |S| |lam| in G a + gamma where the LU
  !> of K leaves eps |G| |a| (IFToMM A02 over 10 s: 2.4e-12 against 9e-14; refined 1.4e-14).  Its
  !> first rows, a = M^{-1} (f - G^T lam), hold by construction: their residual is not formed.
  subroutine kept_index1(model, rw, t, q, v, a, lam)
    class(model_t), intent(in) :: model
    type(rattle_work_t), intent(inout) :: rw
    real(wp), intent(in) :: t, q(:), v(:)
    real(wp), intent(out) :: a(:), lam(:)
    integer :: n, i, k
    n = model%n
    call index1_rhs(model, t, q, v, rw%xs)
    if (rw%kf_schur) rw%xr(n + 1:) = rw%xs(n + 1:)
    call kept_solve(rw, rw%xs)
    if (rw%kf_schur) then
      rw%xr(1:n) = 0
      if (rw%kd%banded) then       ! G a over G's pattern (pyint_kkt's rows crp, crc), as kkt_solve's
        rw%gr = 0
        do i = 1, model%mh
          do k = rw%kd%crp(i), rw%kd%crp(i + 1) - 1
            rw%gr(i) = rw%gr(i) + rw%gq(i, rw%kd%crc(k)) * rw%xs(rw%kd%crc(k))
          end do
        end do
      else if (rw%kk(1)%sparse) then   ! over G's nonzeros (the factors' cp, ci): combine's sums, x * 0 left out
        rw%gr = 0
        do i = 1, n
          do k = rw%kk(1)%cp(i), rw%kk(1)%cp(i + 1) - 1
            rw%gr(rw%kk(1)%ci(k)) = rw%gr(rw%kk(1)%ci(k)) + rw%gq(rw%kk(1)%ci(k), i) * rw%xs(i)
          end do
        end do
      else
        call combine(model%mh, n, 1, 1, rw%gq, rw%xs, rw%gr)
      end if
      rw%xr(n + 1:) = rw%xr(n + 1:) - rw%gr
      call kept_solve(rw, rw%xr, top_zero=.true.)
      rw%xs = rw%xs + rw%xr
    end if
    a = rw%xs(1:n)
    lam = rw%xs(n + 1:)
  end subroutine

  !> Record the pattern of K (every entry rattle_assemble can touch) and choose its solver.
  subroutine rattle_pattern(model, rw, nm, t, q, v, info)
    class(model_t), intent(in) :: model
    type(rattle_work_t), intent(inout) :: rw
    type(newton_matrix_t), intent(inout) :: nm
    real(wp), intent(in) :: t, q(:), v(:)
    integer, intent(out) :: info
    call nm%record(model%n + model%mh)
    call rattle_assemble(model, rw, nm, t, q, t, q, t, v, 1.0_wp)
    call nm%setup(SOLVER_AUTO, info)
    if (info /= 0 .or. nm%out_of_pattern) info = STATUS_BAD_INPUT
    ! a small dense matrix by pyint_small_lu's plain loops (pyint_linalg's dense_lu_small)
    nm%small = nm%kind == SOLVER_DENSE .and. dense_lu_small(nm%nx)
  end subroutine

  !> RATTLE's start: K's pattern; K(t0, q0) factored; a and lam of (q0, v0) from it.
  subroutine rattle_init(model, rw, s, info)
    class(model_t), intent(in) :: model
    type(rattle_work_t), intent(inout) :: rw
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    integer :: n, m
    n = model%n; m = model%mh
    allocate(rw%x(n + m), rw%dx(n + m), rw%r(n + m), rw%xs(n + m), rw%q1(n), rw%f0(n), rw%f1(n), &
             rw%gtm(n), rw%mdu(n), rw%zn(n), rw%zm(m), rw%mu_(n), rw%gdm(n), &
             rw%qf(n))
    rw%zn = 0; rw%zm = 0; rw%x = 0
    call rattle_pattern(model, rw, rw%kf, s%t, s%q, s%v, info)
    if (info /= 0) return
    ! M, kept as kf's base (kick_assemble)
    call rw%kf%zero()
    call model%add_qq(s%t, s%q, s%v, rw%zn, rw%zm, rw%zm(1:0), [1.0_wp, 0.0_wp, 0.0_wp, 0.0_wp, 0.0_wp, 0.0_wp], &
                      rw%kf, 0, 0)
    call rw%kf%keep_base()
    call schur_init(model, rw, s%q)
    call kept_at(model, rw, s%t, s%q, info)
    if (info /= 0) return
    call kept_index1(model, rw, s%t, s%q, s%v, s%a, s%lam)
    info = 0
    if (.not. all(abs(s%a) <= huge(1.0_wp))) info = STATUS_NONFINITE
  end subroutine

  !> The residual of RATTLE's reduced step at x = (u, mu) (see the module header):
  !>   r_u = M u - p_k + G_k^T mu - h/2 f(t_k, q_k, u),   r_mu = g(t_k + h, q_k + h u) / h;
  !> leaves q1 = q_k + h u, f0 = f(t_k, q_k, u) and gtm = G_k^T mu.  A constant force (const_force)
  !> is evaluated once per step (f0 set by the caller).  The products M u (mu_) and G_k^T mu (gtm)
  !> are evaluated with products; else (after an increment) they are the caller's, updated by
  !> M du and G_k^T dmu (rattle_step).
  subroutine rattle_residual(model, rw, t, h, q, p, newf, products)
    class(model_t), intent(in) :: model
    type(rattle_work_t), intent(inout) :: rw
    real(wp), intent(in) :: t, h, q(:), p(:)
    logical, intent(in) :: newf, products
    integer :: n
    n = model%n
    associate (u => rw%x(1:n), mu => rw%x(n + 1:))
      if (products) then
        call model%mass_mul(q, u, rw%mu_)
        call kept_gtmul(model, rw, t, q, mu, rw%gtm)
      end if
      if (newf) call model%force(t, q, u, rw%f0)
      rw%r(1:n) = rw%mu_ - p + rw%gtm - 0.5_wp * h * rw%f0
      rw%q1 = q + h * u
      call model%hol(t + h, rw%q1, rw%r(n + 1:))
      rw%r(n + 1:) = rw%r(n + 1:) / h
    end associate
  end subroutine

  !> One RATTLE step (t, q, p, v, a, lam) -> t + h: the composition with the Stormer-Verlet
  !> middle step reduced to its multipliers (module header: RATTLE), simplified Newton with the
  !> kept K(t_k, q_k) or the rule's fresh Jacobian, then the projection and a, lam at the new
  !> state from one factorization of K(t_{k+1}, q_{k+1}) (kept for the next step).
  !> iters, nfact: Newton iterations and LU factorizations of the step.
  subroutine rattle_step(model, w, rw, t, h, q, p, v, a, lam, tol, maxit, iters, nfact, info)
    class(model_t), intent(in) :: model
    type(sym_work_t), intent(inout) :: w
    type(rattle_work_t), intent(inout) :: rw
    real(wp), intent(in) :: t, h, tol
    ! (contiguous: the state's arrays; maxabs's contiguous dummy made a packed heap copy of each else)
    real(wp), intent(inout), contiguous :: q(:), p(:), v(:), a(:), lam(:)
    integer, intent(in) :: maxit
    integer, intent(out) :: iters, nfact, info
    integer :: it, n, m, status
    logical :: fresh, newf, kept
    real(wp) :: sq, sp, amp, gnow, gprev
    n = model%n; m = model%mh
    iters = 0; nfact = 0; info = 0
    ! start: u = v + h/2 a (the half-step velocity), mu = h/2 lam (GNI VII.1: mu = h/2 Lam_k)
    rw%x(1:n) = v + 0.5_wp * h * a
    rw%x(n + 1:) = 0.5_wp * h * lam(1:m)
    newf = .not. model%const_force
    call rattle_residual(model, rw, t, h, q, p, .true., .true.)   ! (f0: a constant force's once a step)
    ! the groups' scales and floors, as in sym_step with s = 2 (stage positions q_k, q_{k+1};
    ! momenta ~ p_k)
    sq = max(maxabs(q), maxabs(rw%q1))
    sp = maxabs(p)
    amp = 8 * max(1.0_wp, sq / (h * max(maxabs(v), sq * epsilon(1.0_wp))))
    gprev = huge(1.0_wp)
    fresh = .false.
    rw%use_jf = .false.      ! a step starts from the freshest matrix, K(t_k, q_k)
    kept = t == rw%tf .and. all(q == rw%qf)     ! kf is K(t_k, q_k) (else only an approximation)
    call w%nc%start()
    do it = 1, maxit
      if (.not. all(abs(rw%r) <= huge(1.0_wp))) then
        info = STATUS_NONFINITE
        return
      end if
      rw%dx = -rw%r
      if (rw%use_jf) then
        call rw%jf%solve(rw%dx)
      else
        call kept_solve(rw, rw%dx)
      end if
      rw%x = rw%x + rw%dx
      iters = iters + 1
      ! groups: the positions (h du), the momenta (M du), the impulses mu by the momenta they
      ! change, G_k^T dmu (as generalized-alpha's stabilizing multipliers by their position
      ! change): mu itself carries the round-off of g / h amplified by 1 / sigma_min(G)^2
      ! (measured 2e-8 of |mu| on the 1024-link chain, where q, p are at their floor), which
      ! does not reach the state.  With the kept K the first rows of the solve give M du =
      ! -r_u - G_k^T dmu (to the solve's round-off): M u and G_k^T mu of the next residual are
      ! updated by these increments, two products fewer per iteration (GNI VII.1.4's
      ! first-order form: r_u then is h/2 (f(u) - f(u + du)), the Newton remainder; g(q_{k+1}),
      ! which ends the iteration, is evaluated)
      call kept_gtmul(model, rw, t, q, rw%dx(n + 1:), rw%gdm)
      if (rw%use_jf .or. .not. kept) then
        call model%mass_mul(q, rw%dx(1:n), rw%mdu)
      else
        rw%mdu = -rw%r(1:n) - rw%gdm
      end if
      call w%nc%clear()
      call w%nc%group_max(h * maxabs(rw%dx(1:n)), 1 + sq, sq)
      call w%nc%group_max(maxabs(rw%mdu), 1 + sp, amp * sp)
      call w%nc%group_max(maxabs(rw%gdm), 1 + sp, amp * sp)
      status = w%nc%test(tol, maxit, .not. fresh, can_refresh=.true.)
      rw%mu_ = rw%mu_ + rw%mdu
      rw%gtm = rw%gtm + rw%gdm
      call rattle_residual(model, rw, t, h, q, p, newf, .false.)
      if (status == NEWTON_DIVERGED) exit
      ! g(q_{k+1}) at round-off (a kept matrix leaves theta |dx| in it): converged when it is,
      ! or when it stopped shrinking (its noise)
      gnow = h * maxabs(rw%r(n + 1:))
      if (status == NEWTON_CONVERGED .and. (gnow <= 10 * epsilon(1.0_wp) * (1 + sq) .or. gnow >= 0.5_wp * gprev)) &
        then
        call finish(info)
        return
      end if
      gprev = gnow
      if (w%nc%refresh .or. (.not. fresh .and. w%nc%theta > THETA_REFRESH)) then
        ! the rule's fresh matrix: the Jacobian of (r_u, r_mu) at this iterate (its pattern
        ! recorded at the first need)
        if (rw%jf%nx == 0) then
          call rattle_pattern(model, rw, rw%jf, t, q, rw%x(1:n), info)
          if (info /= 0) return
        end if
        call rattle_assemble(model, rw, rw%jf, t, q, t + h, rw%q1, t, rw%x(1:n), 0.5_wp * h)
        call rw%jf%factor(info)
        nfact = nfact + 1
        if (info /= 0) then
          info = STATUS_SINGULAR
          return
        end if
        rw%use_jf = .true.
        fresh = .true.
      else
        fresh = .false.
      end if
    end do
    info = STATUS_NEWTON_FAILED
    if (.not. all(abs(rw%r) <= huge(1.0_wp))) info = STATUS_NONFINITE

  contains

    !> pbar_{k+1} = p_k - G_k^T mu + h/2 (f(t_k, q_k, u) + f(t_{k+1}, q_{k+1}, u)), q = q_{k+1},
    !> then the kick (kick_complete).
    subroutine finish(info)
      integer, intent(out) :: info
      real(wp) :: t1
      t1 = t + h
      call model%force(t1, rw%q1, rw%x(1:n), rw%f1)
      p = p - rw%gtm + 0.5_wp * h * (rw%f0 + rw%f1)
      q = rw%q1
      call kick_complete(model, rw, t1, q, p, v, a, lam, nfact, info)
    end subroutine
  end subroutine

  !> The end of a step with a constant M (RATTLE and the reduced stage systems): on entry q = q_{k+1}, p = pbar_{k+1}; the kick p = pbar - G_1^T nu with
  !> G_1 v + g_t = 0: K(t_{k+1}, q_{k+1}) [v; nu] = [pbar; -g_t]; a, lam of (q, v) from the same
  !> factorization, kept in rw%kf as the next step's iteration matrix (kick_assemble).  (Iterative refinement of these two solves with an
  !> older factorization instead was measured slower: 1.3-2.7 times on the chains N = 2 ... 128
  !> and the N-four-bar, n = 30 and 66.)
  subroutine kick_complete(model, rw, t1, q, p, v, a, lam, nfact, info)
    class(model_t), intent(in) :: model
    type(rattle_work_t), intent(inout) :: rw
    real(wp), intent(in) :: t1, q(:)
    real(wp), intent(inout) :: p(:), v(:), a(:), lam(:)
    integer, intent(inout) :: nfact
    integer, intent(out) :: info
    integer :: n
    n = model%n
    call kept_at(model, rw, t1, q, info)
    nfact = nfact + 1
    if (info /= 0) return
    if (model%scleronomic) then     ! (g_t = 0: hol_t's work array and copy skipped, the same zeros)
      rw%xs(n + 1:) = 0
    else
      call model%hol_t(t1, q, rw%xs(n + 1:))
    end if
    rw%xs(n + 1:) = -rw%xs(n + 1:)
    rw%xs(1:n) = p
    call kept_solve(rw, rw%xs)
    v = rw%xs(1:n)
    call kept_gtmul(model, rw, t1, q, rw%xs(n + 1:), rw%gtm)
    p = p - rw%gtm
    call kept_index1(model, rw, t1, q, v, a, lam)
    info = 0
    if (.not. (all(abs(p) <= huge(1.0_wp)) .and. all(abs(a) <= huge(1.0_wp)))) info = STATUS_NONFINITE
  end subroutine

  !> y(:, r) = sum_j c(r, j) x(:, j), r = 1 .. nr, each accumulated in the order of j from 0, zero
  !> c(r, j) skipped: matmul(x, transpose(c)) without temporaries.  Explicit shapes: x (n, s), y
  !> (n, nr), c with leading dimension ldc from its first used element (a row of a tableau as
  !> c(i, 1), ldc its rows); every caller's x and y are contiguous work arrays or their columns.
  !> So unit-stride loops without the descriptors' stride cases, several rows in one call, and the
  !> first term's 0 + c(r, j) x(:, j) written as such rather than after a zeroing of y (a memset
  !> call): with the reduced step's n of a few the calls' overhead was most of the cost (chain2,
  !> Lobatto s = 3: ~150 instructions a call of one row, ~15 calls an iteration).
  pure subroutine combine(n, s, nr, ldc, x, c, y)
    integer, intent(in) :: n, s, nr, ldc
    real(wp), intent(in) :: x(n, s), c(ldc, *)
    real(wp), intent(out) :: y(n, nr)
    integer :: r, j
    logical :: first
    do r = 1, nr
      first = .true.
      do j = 1, s
        if (c(r, j) == 0) cycle
        if (first) then
          y(:, r) = 0.0_wp + c(r, j) * x(:, j)
          first = .false.
        else
          y(:, r) = y(:, r) + c(r, j) * x(:, j)
        end if
      end do
      if (first) y(:, r) = 0
    end do
  end subroutine

  !> x <- M^{-1} x (M constant): by the diagonal M^{-1} of the kept K's Schur path when it has
  !> one (kept_factor), else by M's factors (lw%mf).
  subroutine minv_solve(lw, rw, x)
    type(red_work_t), intent(inout) :: lw
    type(rattle_work_t), intent(in) :: rw
    real(wp), intent(inout) :: x(:)
    if (rw%schur .and. rw%kd%diagonal) then
      x = rw%kd%minv(:, 1) * x
    else
      call lw%mf%solve(x)
    end if
  end subroutine

  !> The reduced step's start (s stages; lw%comp and lw%kind set): the tableau, Lobatto's
  !> elimination coefficients (checked: P = I - Ahat' W is the rank-one alpha beta^T), M factored
  !> once, and RATTLE's start (K(t0, q0) factored; a, lam of (q0, v0)).
  subroutine red_init(model, lw, rw, ns, st, info)
    class(model_t), intent(in) :: model
    type(red_work_t), intent(inout) :: lw
    type(rattle_work_t), intent(inout) :: rw
    integer, intent(in) :: ns
    type(state_t), intent(inout) :: st
    integer, intent(out) :: info
    real(wp) :: cm(max(ns - 1, 1), max(ns - 1, 1)), pm(ns, ns)
    integer :: n, m, i, k, piv(max(ns - 1, 1)), ij(2), nmu
    n = model%n; m = model%mh
    nmu = ns - 1
    if (lw%comp) nmu = 1
    allocate(lw%a(ns, ns), lw%ah(ns, ns), lw%b(ns), lw%c(ns), lw%gcoef(ns, nmu))
    call sym_tableau(lw%kind, ns, lw%a, lw%ah, lw%b, lw%c, info)
    if (info /= 0) then
      info = STATUS_BAD_INPUT
      return
    end if
    allocate(lw%u(n, ns), lw%du(n, ns), lw%ru(n, ns), lw%qs(n, ns), lw%fs(n, ns), lw%gtm(n, ns), &
             lw%z(n, nmu), lw%gd(n, nmu), lw%mu(m, nmu), lw%dmu(m, nmu), lw%rg(m, nmu), &
             lw%xs(n + m), lw%zb(n), lw%zn(n), lw%zm(m), lw%q1(n), lw%xj(ns * n + nmu * m), lw%wk(n), &
             lw%mus(n, ns), lw%dpm(ns), lw%hf(n, ns), lw%wq(n, ns))
    lw%zn = 0; lw%zm = 0; lw%gtm = 0
    if (lw%comp) then
      lw%gcoef = 1
    else
      lw%gcoef = lw%ah(:, 1:ns - 1)
      call lobatto_elimination(info)
      if (info /= 0) return
    end if
    ! M (constant) through the model's structured hook, factored once
    call lw%mf%record(n)
    call model%add_qq(st%t, st%q, st%v, lw%zn, lw%zm, lw%zm(1:0), [1.0_wp, 0.0_wp, 0.0_wp, 0.0_wp, 0.0_wp, 0.0_wp], &
                      lw%mf, 0, 0)
    call lw%mf%setup(SOLVER_AUTO, info)
    if (info /= 0 .or. lw%mf%out_of_pattern) then
      info = STATUS_BAD_INPUT
      return
    end if
    call lw%mf%zero()
    call model%add_qq(st%t, st%q, st%v, lw%zn, lw%zm, lw%zm(1:0), [1.0_wp, 0.0_wp, 0.0_wp, 0.0_wp, 0.0_wp, 0.0_wp], &
                      lw%mf, 0, 0)
    call lw%mf%factor(info)
    if (info /= 0) then
      info = STATUS_SINGULAR
      return
    end if
    call rattle_init(model, rw, st, info)

  contains

    !> Lobatto IIIA-IIIB: C = A'' Ahat' (A'' rows 2..s of A, Ahat' columns 1..s-1 of Ahat),
    !> W = C^{-1} A'', and the rank-one P = I - Ahat' W = alpha beta^T
    subroutine lobatto_elimination(info)
      integer, intent(out) :: info
      cm = matmul(lw%a(2:, :), lw%ah(:, 1:ns - 1))
      allocate(lw%cinv(ns - 1, ns - 1), lw%wm(ns - 1, ns), lw%alpha(ns), lw%beta(ns))
      lw%cinv = 0
      do i = 1, ns - 1
        lw%cinv(i, i) = 1
      end do
      call lu_factor(cm, piv, info)
      if (info /= 0) then
        info = STATUS_BAD_INPUT
        return
      end if
      do i = 1, ns - 1
        call lu_solve(cm, piv, lw%cinv(:, i))
      end do
      lw%wm = matmul(lw%cinv, lw%a(2:, :))
      info = 0
      pm = -matmul(lw%ah(:, 1:ns - 1), lw%wm)
      do i = 1, ns
        pm(i, i) = pm(i, i) + 1
      end do
      ij = maxloc(abs(pm))
      i = ij(1); k = ij(2)
      lw%alpha = pm(:, k)
      lw%beta = pm(i, :) / pm(i, k)
      ! (an error here only slows the contraction: the residual, hence the fixed point, is exact;
      ! measured 2e-14 max |P| at s = 10)
      do k = 1, ns
        if (maxval(abs(pm(:, k) - lw%alpha * lw%beta(k))) > sqrt(epsilon(1.0_wp)) * maxval(abs(pm))) then
          info = STATUS_BAD_INPUT
          return
        end if
      end do
    end subroutine
  end subroutine

  !> The stage positions Q_j = q_k + h sum_i a_ji U_i of the reduced step, and with newf the forces
  !> f_j = f(t_k + c_j h, Q_j, U_j) (else fs is kept: a constant force); both reduced residuals.
  subroutine stage_points(model, lw, t, h, q, newf)
    class(model_t), intent(in) :: model
    type(red_work_t), intent(inout) :: lw
    real(wp), intent(in) :: t, h, q(:)
    logical, intent(in) :: newf
    integer :: j, ns
    ns = size(lw%b)
    call combine(model%n, ns, ns, ns, lw%u, lw%a, lw%qs)     ! (the sums, then Q_j from them)
    call shift_points(model%n, ns, h, q, lw%qs)
    if (newf) then
      do j = 1, ns
        call model%force(t + lw%c(j) * h, lw%qs(:, j), lw%u(:, j), lw%fs(:, j))
      end do
    end if
  end subroutine

  !> qs(:, j) = q + h qs(:, j), j = 1 .. ns (stage_points' Q_j from their sums; explicit shapes).
  pure subroutine shift_points(n, ns, h, q, qs)
    integer, intent(in) :: n, ns
    real(wp), intent(in) :: h, q(n)
    real(wp), intent(inout) :: qs(n, ns)
    integer :: j
    do j = 1, ns
      qs(:, j) = q + h * qs(:, j)
    end do
  end subroutine

  !> The residual of the reduced step at (U, mu) (module header: Lobatto IIIA-IIIB, constant M):
  !>   r_U,i = M U_i - p_k - sum_j ahat_ij (h f(t_k + c_j h, Q_j, U_j) - G(Q_j)^T mu_j),  i = 1..s,
  !>   r_g,i = g(t_k + c_i h, Q_i) / h,  i = 2..s,   Q_i = q_k + h sum_j a_ij U_j;
  !> leaves Q_j (qs), f_j (fs; with newf, else kept: a constant force) and G(Q_j)^T mu_j (gtm).
  !> Ahat's last column is zero (mu_s only enters the final kick).
  subroutine lob_residual(model, lw, rw, t, h, q, p, newf)
    class(model_t), intent(in) :: model
    type(red_work_t), intent(inout) :: lw
    type(rattle_work_t), intent(in) :: rw
    real(wp), intent(in) :: t, h, q(:), p(:)
    logical, intent(in) :: newf
    integer :: i, j, ns
    ns = size(lw%b)
    call stage_points(model, lw, t, h, q, newf)     ! Q_1 = q_k: IIIA's first row is zero
    do j = 1, ns - 1
      call kept_gtmul(model, rw, t + lw%c(j) * h, lw%qs(:, j), lw%mu(:, j), lw%gtm(:, j))
    end do
    do i = 1, ns
      call model%mass_mul(q, lw%u(:, i), lw%mus(:, i))
    end do
    call lob_rows(model%n, ns, h, lw%ah, p, lw%mus, lw%fs, lw%gtm, lw%hf, lw%ru)
    do i = 2, ns
      call model%hol(t + lw%c(i) * h, lw%qs(:, i), lw%rg(:, i - 1))
      lw%rg(:, i - 1) = lw%rg(:, i - 1) / h
    end do
  end subroutine

  !> lob_residual's rows r_U,i = M U_i - p_k - sum_j ahat_ij (h f_j - G(Q_j)^T mu_j), the sum in
  !> the order of j < s, with hf_j = h f_j - G^T mu_j formed once for all i (the same values) and
  !> explicit shapes (the derived type's descriptors cost more than the sums at the chain's n of a
  !> few).
  pure subroutine lob_rows(n, ns, h, ah, p, mus, fs, gtm, hf, ru)
    integer, intent(in) :: n, ns
    real(wp), intent(in) :: h, ah(ns, ns), p(n), mus(n, ns), fs(n, ns), gtm(n, ns)
    real(wp), intent(out) :: hf(n, ns), ru(n, ns)
    integer :: i, j
    do j = 1, ns - 1
      hf(:, j) = h * fs(:, j) - gtm(:, j)
    end do
    do i = 1, ns
      ru(:, i) = mus(:, i) - p
      do j = 1, ns - 1
        ru(:, i) = ru(:, i) - ah(i, j) * hf(:, j)
      end do
    end do
  end subroutine

  !> red_step's start values U_j = v + c_j h a, mu_j = h lam (explicit shapes, as lob_rows).
  pure subroutine start_values(n, m, ns, nmu, h, c, v, a, lam, u, mu)
    integer, intent(in) :: n, m, ns, nmu
    real(wp), intent(in) :: h, c(ns), v(n), a(n), lam(m)
    real(wp), intent(out) :: u(n, ns), mu(m, nmu)
    integer :: j
    do j = 1, ns
      u(:, j) = v + c(j) * h * a
    end do
    do j = 1, nmu
      mu(:, j) = h * lam
    end do
  end subroutine

  !> red_increment's end for Lobatto: dU_l = (sum_i ahat'_li z_i) - alpha_l zb (the sums in du on
  !> entry), U += dU, mu += dmu; explicit shapes, as lob_rows.
  pure subroutine lob_update(n, m, ns, nmu, alpha, zb, du, u, dmu, mu)
    integer, intent(in) :: n, m, ns, nmu
    real(wp), intent(in) :: alpha(ns), zb(n), dmu(m, nmu)
    real(wp), intent(inout) :: du(n, ns), u(n, ns), mu(m, nmu)
    integer :: j
    do j = 1, ns
      du(:, j) = du(:, j) - alpha(j) * zb
    end do
    u = u + du
    mu = mu + dmu
  end subroutine

  !> The residual of the composition's reduced step at (U, mu) (module header: the composition,
  !> constant M):
  !>   r_U,i = M U_i - p_k + G_k^T mu - h sum_j ahat_ij f(t_k + c_j h, Q_j, U_j),  i = 1..s,
  !>   r_g = g(t_k + h, q_{k+1}) / h,   Q_i = q_k + h sum_j a_ij U_j,  q_{k+1} = q_k + h sum_j b_j U_j;
  !> leaves Q_j (qs), f_j (fs, with newf), G_k^T mu (gtm(:, 1)) and q_{k+1} (q1).
  subroutine comp_residual(model, lw, rw, t, h, q, p, newf)
    class(model_t), intent(in) :: model
    type(red_work_t), intent(inout) :: lw
    type(rattle_work_t), intent(in) :: rw
    real(wp), intent(in) :: t, h, q(:), p(:)
    logical, intent(in) :: newf
    integer :: i, j, ns
    ns = size(lw%b)
    call kept_gtmul(model, rw, t, q, lw%mu(:, 1), lw%gtm(:, 1))
    call stage_points(model, lw, t, h, q, newf)
    do i = 1, ns
      call model%mass_mul(q, lw%u(:, i), lw%mus(:, i))
      call combine(model%n, ns, 1, ns, lw%fs, lw%ah(i, 1), lw%wk)
      lw%ru(:, i) = lw%mus(:, i) - p + lw%gtm(:, 1) - h * lw%wk
    end do
    call combine(model%n, ns, 1, 1, lw%u, lw%b, lw%wk)
    lw%q1 = q + h * lw%wk
    call model%hol(t + h, lw%q1, lw%rg(:, 1))
    lw%rg(:, 1) = lw%rg(:, 1) / h
  end subroutine

  !> The Jacobian of the reduced stage system (module header) at the iterate (U, mu) (its stage
  !> points qs and q1 current: red_residual), factored in lw%jm (its pattern recorded and the solver
  !> chosen at the first call: sparse or banded for a structured model).  Unknowns (U_1..U_s,
  !> mu_1..mu_nmu), rows (r_U,1..s, r_g); with Q_j = q_k + h sum_l a_jl U_l:
  !>   d r_U,i / d U_l = M delta_il - h ahat_il f_v(l) + sum_j ahat_ij a_jl (-h^2 f_q(j)
  !>                     + h (G^T mu_j)_q(j))       (the last term Lobatto's only: G at Q_j),
  !>   d r_U,i / d mu_j = ahat_ij G(Q_j)^T (Lobatto),  G_k^T (composition),
  !>   d r_g,i / d U_l = a_il G(Q_i) (Lobatto, i = 2..s),  b_l G(q_{k+1}) (composition);
  !> through the model's structured hooks (add_qq, add_hol_jac), as RATTLE's K.
  subroutine red_jacobian(model, lw, t, h, q, info)
    class(model_t), intent(in) :: model
    type(red_work_t), intent(inout) :: lw
    real(wp), intent(in) :: t, h, q(:)
    integer, intent(out) :: info
    integer :: n, ns, nmu
    n = model%n; ns = size(lw%b); nmu = size(lw%mu, 2)
    info = 0
    lw%jm_ok = .false.
    if (lw%jm%nx == 0) then
      call lw%jm%record(ns * n + nmu * model%mh)
      call assemble()
      call lw%jm%setup(SOLVER_AUTO, info)
      if (info /= 0 .or. lw%jm%out_of_pattern) then
        info = STATUS_BAD_INPUT
        return
      end if
      lw%jm%small = lw%jm%kind == SOLVER_DENSE .and. dense_lu_small(lw%jm%nx)
    end if
    call lw%jm%zero()
    call assemble()
    if (lw%jm%out_of_pattern) then
      info = STATUS_BAD_INPUT
      return
    end if
    call lw%jm%factor(info)
    if (info /= 0) then
      info = STATUS_SINGULAR
      return
    end if
    lw%jm_ok = .true.
    lw%jm_h = h

  contains

    subroutine assemble()
      integer :: i, j, l
      real(wp) :: c(6), tj
      do i = 1, ns
        do l = 1, ns
          if (i == l) call model%add_qq(t, q, lw%u(:, l), lw%zn, lw%zm, lw%zm(1:0), &
                                        [1.0_wp, 0.0_wp, 0.0_wp, 0.0_wp, 0.0_wp, 0.0_wp], lw%jm, (i - 1) * n, (l - 1) * n)
          do j = 1, ns
            c = 0
            c(3) = -h**2 * lw%ah(i, j) * lw%a(j, l)
            if (j == l) c(4) = -h * lw%ah(i, l)
            if (.not. lw%comp .and. j < ns) c(5) = h * lw%ah(i, j) * lw%a(j, l)
            if (all(c == 0)) cycle
            tj = t + lw%c(j) * h
            if (lw%comp .or. j == ns) then
              call model%add_qq(tj, lw%qs(:, j), lw%u(:, j), lw%zn, lw%zm, lw%zm(1:0), c, lw%jm, (i - 1) * n, (l - 1) * n)
            else
              call model%add_qq(tj, lw%qs(:, j), lw%u(:, j), lw%zn, lw%mu(:, j), lw%zm(1:0), c, lw%jm, &
                                (i - 1) * n, (l - 1) * n)
            end if
          end do
        end do
        if (lw%comp) then
          call model%add_hol_jac(t, q, 1.0_wp, .true., lw%jm, (i - 1) * n, ns * n)
          call model%add_hol_jac(t + h, lw%q1, lw%b(i), .false., lw%jm, ns * n, (i - 1) * n)
        else
          do j = 1, nmu
            if (lw%ah(i, j) /= 0) call model%add_hol_jac(t + lw%c(j) * h, lw%qs(:, j), lw%ah(i, j), .true., lw%jm, &
                                                         (i - 1) * n, ns * n + (j - 1) * model%mh)
          end do
          if (i > 1) then
            do l = 1, ns
              if (lw%a(i, l) /= 0) call model%add_hol_jac(t + lw%c(i) * h, lw%qs(:, i), lw%a(i, l), .false., lw%jm, &
                                                          ns * n + (i - 2) * model%mh, (l - 1) * n)
            end do
          end if
        end if
      end do
    end subroutine
  end subroutine

  !> The reduced step's residual (Lobatto IIIA-IIIB or the composition); leaves q_{k+1} in q1.
  subroutine red_residual(model, lw, rw, t, h, q, p, newf)
    class(model_t), intent(in) :: model
    type(red_work_t), intent(inout) :: lw
    type(rattle_work_t), intent(in) :: rw
    real(wp), intent(in) :: t, h, q(:), p(:)
    logical, intent(in) :: newf
    if (lw%comp) then
      call comp_residual(model, lw, rw, t, h, q, p, newf)
    else
      call lob_residual(model, lw, rw, t, h, q, p, newf)
      lw%q1 = lw%qs(:, size(lw%b))
    end if
  end subroutine

  !> One step (t, q, p, v, a, lam) -> t + h of Lobatto IIIA-IIIB or the composition with Gauss
  !> stages for a constant M: simplified Newton on the reduced stage system with the kept
  !> K(t_k, q_k) (module header), iterated until its increments are at round-off, then the kick
  !> and a, lam at the new state (kick_complete).  When the kept matrix does not contract as the
  !> rule wants (c%refresh, THETA_REFRESH, divergence) the iteration goes on (from the start
  !> values after a divergence) with the reduced system's Jacobian (red_jacobian: sparse, through
  !> newton_matrix.f90's solvers), kept across iterations and the steps of the same h, refreshed
  !> at the iterate when the rule asks or it contracts slower than THETA_REFRESH; every step still
  !> starts with the cheap kept K.  A step the Jacobian does not converge fails (q, p, v, a, lam
  !> untouched).  iters, nfact: Newton iterations and factorizations of the step.
  subroutine red_step(model, lw, rw, nc, t, h, q, p, v, a, lam, tol, maxit, iters, nfact, info)
    class(model_t), intent(in) :: model
    type(red_work_t), intent(inout) :: lw
    type(rattle_work_t), intent(inout) :: rw
    type(newton_control_t), intent(inout) :: nc
    real(wp), intent(in) :: t, h, tol
    ! (contiguous: the state's arrays; maxabs's contiguous dummy made a packed heap copy of q, p
    ! and v at every step and of p at every iteration else, as in rattle_step: chain2, Lobatto
    ! s = 3, 5.8 malloc / free pairs a step)
    real(wp), intent(inout), contiguous :: q(:), p(:), v(:), a(:), lam(:)
    integer, intent(in) :: maxit
    integer, intent(out) :: iters, nfact, info
    integer :: it, i, j, n, m, ns, status, extra, base
    logical :: newf, jmode, fresh, jnew
    real(wp) :: sq, sp, sp0, amp, est, gnow, gprev, dq, gdmax
    n = model%n; m = model%mh; ns = size(lw%b)
    iters = 0; nfact = 0; info = 0
    jmode = .false.; fresh = .false.; jnew = .false.
    if (lw%jm_h /= h) lw%jm_ok = .false.
    call red_start()
    newf = .not. model%const_force
    call red_residual(model, lw, rw, t, h, q, p, .true.)
    ! the groups' scales and floors as in sym_step (stage positions, momenta ~ p_k, impulses by
    ! the momenta they change)
    sq = max(maxabs(q), maxabs(lw%q1))
    sp = maxabs(p)
    sp0 = sp            ! (p is p_k until the step ends)
    amp = ns**3 * max(1.0_wp, sq / (h * max(maxabs(v), sq * epsilon(1.0_wp))))
    status = NEWTON_DIVERGED
    extra = 0
    base = 0            ! iters before the current matrix: each gets maxit iterations
    call nc%start()
    ! a step of a pass (sym_pass): the step's own Jacobian from the start.  The kept K(t_k, q_k)
    ! approximates the stages' Schur complement C (x) S by S = G_k M^-1 G_k^T, whose eigenvalues
    ! go as sigma^2 near the crossing: its first solve put 1e6 into the multipliers' near-null
    ! components (A02, N = 40, the step from t = 18.412), which G(Q_j) at the stages off q_k do
    ! not annihilate, and the iteration diverged; the Jacobian sees them through G(Q_j)^T mu_j,
    ! linear in sigma (converged in 2 iterations)
    if (lw%pass) then
      call to_jacobian(.false.)
      if (info /= 0) return
    end if
    do while (iters - base < maxit)
      if (.not. (all(abs(lw%ru) <= huge(1.0_wp)) .and. all(abs(lw%rg) <= huge(1.0_wp)))) then
        if (jmode) exit
        call to_jacobian(.true.)
        if (info /= 0) return
      end if
      call red_increment()
      ! groups: positions, impulses G_k^T dmu_i and the momenta M dU_l (with the kept K:
      ! -r_U,l - sum_i ahat'_li G_k^T dmu_i, the linear system's first rows).
      ! The positions' group is what the increment moves them by, the stage points' and
      ! q_{k+1}'s h sum_l a_jl dU_l, as sym_step's dQ (not h dU: at small h with many stages
      ! the constraint rows' round-off leaves dU_l noise that the weights cancel; measured:
      ! h max |dU| 1.2 times its floor 8 eps |q|, the points' increments 1e-16, Lobatto s = 8
      ! on chain2 at h = 1e-6: it never stopped)
      call combine(n, ns, 1, 1, lw%du, lw%b, lw%wk)
      dq = maxabs(lw%wk)
      call combine(n, ns, ns - 1, ns, lw%du, lw%a(2, 1), lw%wq)
      do j = 2, ns
        dq = max(dq, maxabs(lw%wq(:, j - 1)))
      end do
      do i = 1, size(lw%mu, 2)
        call kept_gtmul(model, rw, t, q, lw%dmu(:, i), lw%gd(:, i))
      end do
      gdmax = maxval(abs(lw%gd))
      do j = 1, ns
        if (jmode) then
          call model%mass_mul(q, lw%du(:, j), lw%zn)
        else
          call combine(n, size(lw%mu, 2), 1, ns, lw%gd, lw%gcoef(j, 1), lw%zn)
          lw%zn = lw%ru(:, j) + lw%zn       ! (the residual before this increment)
        end if
        lw%dpm(j) = maxabs(lw%zn)
      end do
      ! the residual at the new iterate; its M U_j (mus) give the momenta's scale: p_k's and the
      ! iterate's stage momenta M U_j's, as sym_step's (from rest, p_k = 0 left the impulses'
      ! floor at zero: their round-off, 1.5e-7 on chain2 at h = 1e-6, s = 9, never stopped)
      call red_residual(model, lw, rw, t, h, q, p, newf)
      sp = sp0
      do j = 1, ns
        sp = max(sp, maxabs(lw%mus(:, j)))
      end do
      call nc%clear()
      call nc%group_max(h * dq, 1 + sq, sq)
      call nc%group_max(gdmax, 1 + sp, amp * sp)
      do j = 1, ns
        call nc%group_max(lw%dpm(j), 1 + sp, amp * sp)
      end do
      status = nc%test(tol, maxit, .not. fresh, can_refresh=.true.)
      fresh = .false.
      ! a Jacobian of this step whose increments stopped contracting below the tolerance: the
      ! noise of its solve, cond(J) eps |x| (the rule's stagnation; measured 1e-9 of the scales
      ! on the 1024-link chain)
      if (jnew .and. status /= NEWTON_DIVERGED .and. (nc%refresh .or. nc%theta > THETA_REFRESH) .and. &
          nc%nrm <= NEWTON_STAGNATION * NEWTON_KAPPA * tol) status = NEWTON_CONVERGED
      ! increments at round-off (the rule asks for a fresh matrix once they stop contracting
      ! there: with the kept one they are the arithmetic's noise): the iterate is the solution
      if (nc%at_floor .and. status /= NEWTON_DIVERGED) status = NEWTON_CONVERGED
      ! a pass: the backward-error test (backward_converged); its iterate is taken as it is (the
      ! extra iterations would add the same noise)
      if (lw%pass .and. jnew .and. status /= NEWTON_CONVERGED) then
        if (backward_converged()) then
          status = NEWTON_CONVERGED
          exit
        end if
      end if
      if (status == NEWTON_CONVERGED) then
        ! what the kept matrix leaves, est = eta |dx|, would accumulate over the steps (sym_step):
        ! the iterations that take it to round-off at the observed rate eta / (1 + eta), a
        ! number fixed here (not by noise-level increments, which differ between evaluation
        ! paths of the same model)
        est = nc%eta * nc%nrm
        extra = 0
        if (est > NEWTON_FLOOR * epsilon(1.0_wp)) &
          extra = ceiling(log(NEWTON_FLOOR * epsilon(1.0_wp) / est) / log(nc%eta / (1 + nc%eta)))
        ! with a Jacobian of this step (Newton's method, or nearly: quadratic convergence) the
        ! last increment is the arithmetic's noise and so is its rate: one more iteration, a
        ! fixed number
        if (jnew) extra = 1
        exit
      end if
      if (status == NEWTON_DIVERGED .or. nc%refresh .or. nc%theta > THETA_REFRESH) then
        call to_jacobian(status == NEWTON_DIVERGED)
        if (info /= 0) return
      end if
    end do
    if (status /= NEWTON_CONVERGED) then
      info = STATUS_NEWTON_FAILED
      if (.not. (all(abs(lw%ru) <= huge(1.0_wp)) .and. all(abs(lw%rg) <= huge(1.0_wp)))) info = STATUS_NONFINITE
      lw%jm_ok = .false.
      return
    end if
    do it = 1, min(extra, maxit - (iters - base))
      call red_increment()
      call red_residual(model, lw, rw, t, h, q, p, newf)
    end do
    ! and the constraint rows at round-off, as RATTLE's (the rate above is the max-norm's, which
    ! a group other than these can set: measured g(q_{k+1}) ~ 1e-12 on the triple pendulum at
    ! h = 0.12 without this), or until they stop shrinking (their noise)
    gnow = h * maxval(abs(lw%rg))
    do
      gprev = huge(1.0_wp)
      do while (iters - base < maxit .and. gnow > 10 * epsilon(1.0_wp) * (1 + sq) .and. gnow < 0.5_wp * gprev)
        call red_increment()
        call red_residual(model, lw, rw, t, h, q, p, newf)
        gprev = gnow
        gnow = h * maxval(abs(lw%rg))
      end do
      ! a Jacobian kept from an earlier step can stall above round-off there (measured: g ~ 1e-12
      ! on the triple pendulum at h = 0.12 with the composition, s = 1): one at the iterate
      if (gnow <= 10 * epsilon(1.0_wp) * (1 + sq) .or. .not. jmode .or. jnew) exit
      call red_jacobian(model, lw, t, h, q, info)
      if (info /= 0) return
      nfact = nfact + 1
      jnew = .true.
      base = iters
    end do
    call finish(info)

  contains

    !> The start: U_j = v + c_j h a, mu_j = h lam (GNI VII.1: mu_j = h Lam_j; the composition's
    !> mu = h/2 Lam_k).  (Adding the extrapolated Newton corrections of the last steps, Hairer-Wanner
    !> II, IV.8, took Lobatto s = 3 from 4.1 to 2.75 iterations a step at h = 1e-3, but took IFToMM A02
    !> with N = 4 to the other branch at its crossing near t = 1.237, status ok: near a singular
    !> position the kept K amplifies the start's error along its near-null directions.)
    subroutine red_start()
      call start_values(n, m, ns, size(lw%mu, 2), h, lw%c, v, a, lam, lw%u, lw%mu)
      if (lw%comp) lw%mu = lw%mu / 2
    end subroutine

    !> Go on with the reduced system's Jacobian: the kept one (a step of the same h) the first
    !> time in a step, else (or when none is kept) a fresh one at the iterate; after a divergence
    !> from the start values.
    subroutine to_jacobian(restart)
      logical, intent(in) :: restart
      if (restart) then
        call red_start()
        call red_residual(model, lw, rw, t, h, q, p, .true.)
      end if
      if (.not. jmode .and. lw%jm_ok) then
        fresh = .false.        ! the kept Jacobian of an earlier step
      else
        call red_jacobian(model, lw, t, h, q, info)
        if (info /= 0) return
        nfact = nfact + 1
        jnew = .true.
        fresh = .true.
      end if
      if (.not. jmode) base = iters      ! the Jacobian's maxit iterations
      jmode = .true.
      call nc%start()
    end subroutine

    !> The convergence test of a pass (sym_pass), on what the stage system determines: its
    !> residual, the iterate's backward error, within the rule's KAPPA tol of the momenta in the
    !> rows r_U and at round-off, as the step ends it (g = 0 kept), in the constraint rows.
    !> Why: a step that ends within ~1e-4 of a crossing has a Jacobian with near-null directions,
    !> the multipliers' components along null(G(q_{k+1})^T) (A02, N = 40, t = 18.412, h = 1e-3: 80
    !> singular values, the 40 loops' rank drop times the s - 1 = 2 multiplier stages, between
    !> 7e-12 and 8e-7 of |J| = 2.3).  The residual's round-off, eps |q| / h in the rows g / h,
    !> divided by these gives increments of 1e-2 in mu and 1e-6 of the momenta's scale whatever the
    !> iterate: the rule's test on the increments (the forward error) cannot pass, while the
    !> residual sits at round-off from the fifth iteration on (|r_U| 2e-14, h |r_g| 1e-14).  An
    !> iterate whose residual is within the tolerance solves exactly the stage system of a state
    !> perturbed by that much (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed.,
    !> 1.10 and 7.1: the backward error), so the step is as accurate as that state's (Deuflhard,
    !> Newton Methods for Nonlinear Problems, 2004, 2.1.4 and 4.3: the residual-based test where
    !> the Jacobian is near-singular); the multipliers' undetermined components stay as noise in mu
    !> (not in the state: the end's a, lam are solved again, filtered: pass_multipliers).
    logical function backward_converged()
      backward_converged = maxval(abs(lw%ru)) <= NEWTON_KAPPA * tol * (1 + sp) .and. &
                           h * maxval(abs(lw%rg)) <= 10 * epsilon(1.0_wp) * (1 + sq)
    end function

    !> One simplified Newton iteration: with the reduced Jacobian (jmode), else with the kept
    !> matrix, (C^{-1} (x) S^{-1}) (module header): dmu_i and z_i = M^{-1} (w_i - G^T dmu_i) from
    !> K [z_i; dmu_i] = [-(W r_U)_i; -(C^{-1} r_g)_i], then dU_l = sum_i ahat'_li z_i - alpha_l
    !> M^{-1} (beta . r_U).
    subroutine red_increment()
      integer :: i, j, nmu
      if (jmode) then      ! (column by column: reshape made a heap temporary per call)
        nmu = size(lw%dmu, 2)
        do j = 1, ns
          lw%xj((j - 1) * n + 1:j * n) = -lw%ru(:, j)
        end do
        do j = 1, nmu
          lw%xj(ns * n + (j - 1) * m + 1:ns * n + j * m) = -lw%rg(:, j)
        end do
        call lw%jm%solve(lw%xj)
        do j = 1, ns
          lw%du(:, j) = lw%xj((j - 1) * n + 1:j * n)
        end do
        do j = 1, nmu
          lw%dmu(:, j) = lw%xj(ns * n + (j - 1) * m + 1:ns * n + j * m)
        end do
        lw%u = lw%u + lw%du
        lw%mu = lw%mu + lw%dmu
        iters = iters + 1
        return
      end if
      if (lw%comp) then
        call comp_increment()
        return
      end if
      do i = 1, ns - 1
        call combine(n, ns, 1, ns - 1, lw%ru, lw%wm(i, 1), lw%xs)
        call combine(m, ns - 1, 1, ns - 1, lw%rg, lw%cinv(i, 1), lw%xs(n + 1))
        lw%xs = -lw%xs
        call kept_solve(rw, lw%xs)
        lw%z(:, i) = lw%xs(1:n)
        lw%dmu(:, i) = lw%xs(n + 1:)
      end do
      call combine(n, ns, 1, 1, lw%ru, lw%beta, lw%zb)
      call minv_solve(lw, rw, lw%zb)
      call combine(n, ns - 1, ns, ns, lw%z, lw%ah, lw%du)
      call lob_update(n, m, ns, size(lw%mu, 2), lw%alpha, lw%zb, lw%du, lw%u, lw%dmu, lw%mu)
      iters = iters + 1
    end subroutine

    !> The composition's iteration (module header): K [z; dmu] = [-sum_j b_j r_U,j; -r_g] gives
    !> dmu and z = sum_j b_j dU_j; dU_l = z - M^{-1} (r_U,l - sum_j b_j r_U,j) (s - 1 solves with
    !> M: these differences have b-weighted sum zero).
    subroutine comp_increment()
      integer :: j
      call combine(n, ns, 1, 1, lw%ru, lw%b, lw%zb)
      lw%xs(1:n) = -lw%zb
      lw%xs(n + 1:) = -lw%rg(:, 1)
      call kept_solve(rw, lw%xs)
      lw%dmu(:, 1) = lw%xs(n + 1:)
      lw%zn = 0
      do j = 1, ns - 1
        lw%du(:, j) = lw%ru(:, j) - lw%zb
        call minv_solve(lw, rw, lw%du(:, j))
        lw%zn = lw%zn - lw%b(j) * lw%du(:, j)
      end do
      lw%du(:, ns) = lw%zn / lw%b(ns)
      do j = 1, ns
        lw%du(:, j) = lw%xs(1:n) - lw%du(:, j)
      end do
      lw%u = lw%u + lw%du
      lw%mu = lw%mu + lw%dmu
      iters = iters + 1
    end subroutine

    !> q_{k+1} = Q_s, pbar_{k+1} = p_k + sum_j b_j (h f_j - G(Q_j)^T mu_j) (j < s; mu_s is the
    !> kick's), then the kick (kick_complete)
    subroutine finish(info)
      integer, intent(out) :: info
      integer :: j
      if (lw%comp) then
        ! the composition: pbar_{k+1} = p_k - G_k^T mu + h sum_j b_j f_j, q_{k+1}
        p = p - lw%gtm(:, 1) + h * matmul(lw%fs, lw%b)
      else
        p = p + lw%b(ns) * h * lw%fs(:, ns)
        do j = 1, ns - 1
          p = p + lw%b(j) * (h * lw%fs(:, j) - lw%gtm(:, j))
        end do
      end if
      q = lw%q1
      call kick_complete(model, rw, t + h, q, p, v, a, lam, nfact, info)
    end subroutine
  end subroutine

  !> Options: iopt = [scheme, kind, s, maxit], ropt = [tol].  The start: p = M(q0) v0,
  !> the state's v = M^{-1} p, a and lam the consistent ones of (q, v).
  subroutine sym_init(self, s, info)
    class(sym_stepper_t), intent(inout) :: self
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    real(wp) :: mq(self%nq, self%nq)
    self%naux = self%nq                ! the momenta
    allocate(self%p(self%nq))
    if (.not. self%options_fit(nstats=NSTATS_SYMPLECTIC, niopt=NIOPT_SYMPLECTIC, nropt=NROPT_SYMPLECTIC, &
                               info=info)) return
    if (self%model%mn /= 0) return
    self%scheme = self%iopt(IOPT_SYMPLECTIC_SCHEME)
    self%tol = self%ropt(ROPT_SYMPLECTIC_TOL)
    self%maxit = self%iopt(IOPT_SYMPLECTIC_MAXIT)
    if (self%scheme /= SCHEME_COMPOSITION .and. self%scheme /= SCHEME_LOBATTO .or. self%maxit < 1) return
    if (self%scheme == SCHEME_LOBATTO .and. self%iopt(IOPT_SYMPLECTIC_TABLEAU) /= TAB_LOBATTO) return
    ! RATTLE (the composition with the Stormer-Verlet middle step) with a constant M: the
    ! reduced step in the multipliers (rattle_step), without the stage system's dense workspace
    self%rt%on = self%scheme == SCHEME_COMPOSITION .and. self%iopt(IOPT_SYMPLECTIC_TABLEAU) == TAB_LOBATTO &
                 .and. self%iopt(IOPT_SYMPLECTIC_STAGES) == 2 .and. self%model%const_mass .and. self%model%mh > 0
    if (self%rt%on) then
      call self%model%mass_mul(s%q, s%v, self%p)
      call rattle_init(self%model, self%rt, s, info)
      return
    end if
    ! Lobatto IIIA-IIIB and the composition with Gauss stages with a constant M: the reduced
    ! stage system (red_step)
    self%lw%comp = self%scheme == SCHEME_COMPOSITION
    self%lw%kind = self%iopt(IOPT_SYMPLECTIC_TABLEAU)
    self%lw%on = (self%scheme == SCHEME_LOBATTO .or. self%lw%kind == TAB_GAUSS) .and. self%model%const_mass &
                 .and. self%model%mh > 0
    if (self%lw%on) then
      call self%model%mass_mul(s%q, s%v, self%p)
      call red_init(self%model, self%lw, self%rt, self%iopt(IOPT_SYMPLECTIC_STAGES), s, info)
      self%passes_singular = .true.
      self%straddles = .true.
      return
    end if
    call work_init(self%w, self%model, self%scheme, self%iopt(IOPT_SYMPLECTIC_TABLEAU), self%iopt(IOPT_SYMPLECTIC_STAGES), &
                   s%q, info)
    if (info /= 0) return
    call kkt_init(self%kw, self%model)
    self%w%x = 0
    call self%model%mass(s%q, mq)
    self%p = matmul(mq, s%v)
    self%passes_singular = .not. self%rt%on     ! sym_pass (RATTLE's reduced step passes as it is)
    call complete(self, s, info)
  end subroutine

  !> One step of the scheme; then v = M^{-1} p and the consistent a, lam at the new state.
  subroutine sym_advance(self, h, t1, s, info)
    class(sym_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    integer :: iters, nfact
    if (self%rt%on) then
      call rattle_step(self%model, self%w, self%rt, s%t, h, s%q, self%p, s%v, s%a, s%lam, self%tol, self%maxit, &
                       iters, nfact, info)
    else if (self%lw%on) then
      call red_advance(self, h, s, iters, nfact, info)
    else
      call sym_step(self%model, self%w, s%t, h, s%q, self%p, self%tol, self%maxit, iters, nfact, info)
    end if
    self%stats(STAT_SYMPLECTIC_NEWTON_ITERATIONS) = self%stats(STAT_SYMPLECTIC_NEWTON_ITERATIONS) + iters
    self%stats(STAT_SYMPLECTIC_JACOBIAN_FACTORIZATIONS) = self%stats(STAT_SYMPLECTIC_JACOBIAN_FACTORIZATIONS) + nfact
    self%stats(STAT_SYMPLECTIC_MAX_NEWTON_ITERATIONS) = max(self%stats(STAT_SYMPLECTIC_MAX_NEWTON_ITERATIONS), real(iters, wp))
    if (self%rt%on .or. self%lw%on) then
      if (info == 0) s%t = t1
      return
    end if
    if (info /= 0) return
    s%t = t1
    call complete(self, s, info)
  end subroutine

  !> Lobatto IIIA-IIIB or the composition with Gauss stages with a constant M: the reduced step.
  subroutine red_advance(self, h, s, iters, nfact, info)
    class(sym_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h
    type(state_t), intent(inout) :: s
    integer, intent(out) :: iters, nfact, info
    call red_step(self%model, self%lw, self%rt, self%w%nc, s%t, h, s%q, self%p, s%v, s%a, s%lam, self%tol, &
                  self%maxit, iters, nfact, info)
  end subroutine

  !> s%v = M^{-1} p, and a, lam of the index-1 KKT system at (s%t, s%q, s%v).
  subroutine complete(self, s, info)
    class(sym_stepper_t), intent(inout) :: self
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    call ham_velocity(self%model, self%w%hw, s%q, self%p, s%v, info)
    if (info /= 0) return
    call kkt_accel(self%model, self%kw, s%t, s%q, s%v, 0.0_wp, 0.0_wp, s%a, s%lam, info)
  end subroutine

  !> The driver's pass_singular, for Lobatto IIIA-IIIB (RATTLE passes as it is): a step whose
  !> Newton iteration failed next to a singular position.  With a constant M (the reduced step) it is
  !> taken again as it is, in red_step's pass mode: the step's own Jacobian from the start (no kept
  !> K, whose S = G M^-1 G^T goes as sigma^2) and the convergence test on the residual, the
  !> backward error (backward_converged; the increments there are round-off amplified along the
  !> multipliers' near-null directions); its end's a, lam by the filtered solve
  !> (pass_multipliers).  The step's end is fixed by the driver, so halving cannot help a step
  !> that ends at the crossing (A02, N = 40, h = 1e-3: the step ending at t = 18.412 within ~1e-4
  !> of it failed at h, h / 2, h / 3 and 2h alike); the stages keep g = 0 (the scheme's own
  !> constraints), so the step stays on the branch (A02, N = 40, 20 s: 9.6e-10 from the reduced
  !> solution, 9 flagged steps passed; from the reduced state at t = 18.3, 2.1e-10 after the
  !> passed step against 1.4e-12 before it and 5.5e-12 at h = 1.2e-3, whose steps do not end at
  !> the crossing: what the undetermined multipliers leave).  Else, and when that fails,
  !> as two steps of h / 2, each from a fresh Newton matrix, so that no kept matrix sits where the
  !> failed one did.  A pass that fails restores the state and p, and the run stops naming the
  !> position.
  subroutine sym_pass(self, h, t1, s, info)
    class(sym_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    real(wp) :: p0(size(self%p))
    type(state_t) :: s0
    info = STATUS_SINGULAR_POSITION
    if (self%rt%on) return
    p0 = self%p
    if (self%lw%on) then
      ! the reduced step: the step itself in red_step's pass mode, then (if it fails) its halves
      s0 = s
      self%lw%pass = .true.
      self%lw%jm_ok = .false.
      call sym_advance(self, h, t1, s, info)
      if (info /= 0) then
        s = s0
        self%p = p0
      end if
    end if
    if (info /= 0) then
      self%w%have_jac = .false.
      call sym_advance(self, h / 2, s%t + h / 2, s, info)
      self%w%have_jac = .false.
      if (info == 0) call sym_advance(self, h / 2, t1, s, info)
      self%w%have_jac = .false.
    end if
    if (self%lw%on) then
      self%lw%pass = .false.
      self%lw%jm_ok = .false.      ! no Jacobian of the crossing is kept for the next steps
      if (info == 0) call pass_multipliers(self, s, info)
    end if
    if (info /= 0) self%p = p0
  end subroutine

  !> The driver's straddle, for the reduced step (Lobatto IIIA-IIIB, the composition with Gauss
  !> stages): s at t1 - 2 h, the state a step before a step that started at a singular position
  !> and jumped branch, its pass too (fortran/core/driver.f90 branch_check).  Started at the
  !> crossing, the step's stage equations have a solution on each branch (G(Q_1) = G(q_k) has lost
  !> rank: the forces along its near-null directions are gone from the first stage) and Newton's
  !> choice hangs on round-off; two steps of 0.6 h and 1.4 h from t1 - 2 h have no point there
  !> (their stage points are 0.3 h and 0.4 h from it).  The stepper starts again from s as init
  !> does: p = M v, the kept K factored at s (kept_at); s%a, s%lam are that step's own, consistent
  !> ones.  No reduced Jacobian carries over: red_step keeps one only for steps of its own length.
  subroutine sym_straddle(self, h, t1, s, info)
    class(sym_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    real(wp), parameter :: SPLIT = 0.6_wp
    info = STATUS_LEFT_BRANCH
    if (.not. self%lw%on) return
    call self%model%mass_mul(s%q, s%v, self%p)
    call kept_at(self%model, self%rt, s%t, s%q, info)
    if (info /= 0) then
      info = STATUS_LEFT_BRANCH
      return
    end if
    call sym_advance(self, SPLIT * h, s%t + SPLIT * h, s, info)
    if (info == 0) call sym_advance(self, (2 - SPLIT) * h, t1, s, info)
  end subroutine

  !> a and lam of a passed step's end (sym_pass, the reduced step) by the Tikhonov-filtered
  !> index-1 solve of pyint_kkt (TIKHONOV_MU; pyint_index1's pass uses the same): at a state
  !> this near the crossing the multipliers' components along G's near-null directions are fixed
  !> only by round-off amplified by 1 / sigma^2 (A02, N = 40, h = 1e-3, the step ending at
  !> t = 18.412: max |lam| 7.6e8 and max |a| 1060 against 135 and 23 a step before; filtered 327
  !> and 23.1), and lam starts the next step's multipliers (red_start).  The first call sets the
  !> solve up (the filter is switched on after it; its singular-position flag off).
  subroutine pass_multipliers(self, s, info)
    class(sym_stepper_t), intent(inout) :: self
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    if (.not. self%iw%ready) then
      call index1_init(self%iw, self%model)
      self%iw%sing_tol = 0
      call index1_accel(self%model, s%t, s%q, s%v, self%iw, s%a, s%lam, info)
      self%iw%kd%mu = TIKHONOV_MU
    end if
    call index1_accel(self%model, s%t, s%q, s%v, self%iw, s%a, s%lam, info)
  end subroutine

  !> The auxiliary vector of a sample: the momenta p.
  subroutine sym_aux(self, s, aux)
    class(sym_stepper_t), intent(inout) :: self
    type(state_t), intent(in) :: s
    real(wp), intent(out) :: aux(:)
    aux = self%p
  end subroutine

end module symplectic
