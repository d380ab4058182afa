!> Multistep block method (seed 003 §2) for the index-1 form (7) of a
!> constrained mechanical system; coefficients from pyint/methods/block_coefficients.py.
!>
!> Block b spans [t_b, t_b + h] with nodes t_b + c_k h (k = 1..r, c_r = 1).
!> With y = (q, z), z = qdot, eq. (9) reads node by node
!>     z_k = h sum_l A_kl a_l + sum_l U_kl zold_l,
!>     q_k = h sum_l A_kl z_l + sum_l U_kl qold_l,
!> where (qold, zold) are the previous block's node values.  The stage
!> derivatives of a block are (qdot_k, qddot_k, lam_k); the qdot rows of (7)
!> (qdot_k = z_k) are linear and are eliminated exactly, so Newton solves for
!> X_k = (a_k, lam_k), k = 1..r, the r (n + m) equations R_k(X) = 0:
!>     M(q_k) a_k + G_k^T lam_h,k + A_k^T lam_n,k - f(t_k, q_k, z_k) = 0
!>     G(q_k) a_k + gamma_h(t_k, q_k, z_k) = 0,  A(q_k) a_k + gamma_n(t_k, q_k, z_k) = 0.
!>
!> Newton matrix.  The exact one is J_kl = delta_kl K0_k + h A_kl K1_k + h^2 (A^2)_kl K2_k,
!>     K0 = [[M, G^T, A^T], [G, 0, 0], [A, 0, 0]]              (the KKT matrix of node k)
!>     K1 = d/dz = [[-f_v], [2 (G v)_q], [2 (A v + b)_q]]     (columns of a only)
!>     K2 = d/dq = [[(M a)_q - f_q + (G^T lam)_q + (A^T lam)_q], [(G a)_q], [(A a)_q]].
!> The KKT matrices change fast across a block (G moves with the bodies), the
!> coupling terms are O(h).  So the iteration matrix is
!>     J ~ diag(K0_k) (I + h A (x) P1 + h^2 A^2 (x) P2),  P1 = K0^(-1) K1, P2 = K0^(-1) K2
!> with K0_k exact at every node (factorized once per block, at the
!> predictor) and P1, P2 frozen at a reference node (refreshed when the
!> observed contraction exceeds theta_refresh).  With A = T diag(mu) T^(-1) the
!> coupling factor splits into r systems I + h mu_j P1_aa + h^2 mu_j^2 P2_aa of
!> size n (complex).  gamma_v = 2 (G v)_q is exact for scleronomic holonomic
!> constraints; the nonholonomic one and (G a)_q ~ (G a + g_t)_q, gamma_q ~ 0
!> are approximations: they change the convergence rate, not the solution.
!> A block whose iteration fails is retried with a fresh P1, P2, then with the
!> exact Newton matrix (full_newton).  Newton starts from the extrapolation of
!> (a, lam) through the last two blocks' nodes (degree 2r - 1); termination:
!> the one rule of every implicit kernel, pyint_newton_control
!> (fortran/core/newton_control.f90), the group in measure_block_a.  The KKT
!> matrices are factorized through their Schur complement when M is constant
!> (pyint_kkt).
!>
!> The state at a block end (node r): q_r, z_r from (9), and a, lam from the index-1
!> system at (q_r, z_r) (one KKT solve; differs from Newton's a_r by less than
!> the Newton tolerance), so the acceleration constraint holds to round-off.
!>
!> A stepper of the one driver (fortran/core/driver.f90): one step = one block.
!>
!> Start-up: the first block's node values come from classical RK4 on the
!> index-1 form with start_substeps steps per node interval (local error
!> O((h / start_substeps)^5) per node).  That error enters the global error
!> once, so the start keeps order 5 (and 4).
!>
!> Variable block lengths (drive_adaptive; docs/adaptive_steps.md section 3), with
!> p = the scheme's degree, the option degree = p, ropt's tail = E (r), the block's error constants
!>     Y_k - y(t_i + c_k h) = -E_k h^(p+1) y^(p+1) + O(h^(p+2)),                           (14)
!>     E_k = c_k^(p+1)/(p+1)! - sum_l A_kl c_l^p / p! - sum_l U_kl (c_l - 1)^(p+1)/(p+1)!.
!> The history is the last two blocks' 2r nodes (q, z, and (a, lam) for Newton's start) at
!> their own times.  Milne's device (Hairer, Wanner, Solving ODEs II, III.5): the predictor
!> P_k is the Lagrange extrapolation of degree p through the last p + 1 history nodes
!> x_j (in units of the new h, relative to the block start), P_k - y = -pi_k h^(p+1) y^(p+1),
!> pi_k = prod_j (c_k - x_j) / (p+1)!, so that
!>     est_k = -E_k / (pi_k - E_k) (Y_k - P_k) = Y_k - y + O(h^(p+2))                       (15)
!> node by node, for q and z alike; err_q, err_v = the max over the nodes of |est_k|
!> (every node feeds the next block).  A change of block length h -> h': the previous
!> block's nodes at (c - 1) h' (the inputs of (9)) are re-interpolated from the
!> degree-(2r - 1) polynomial through the 2r history nodes: error O(H^(2r)) in the old
!> length H, at most the order of the last block's accepted local error (p + 1 <= 2r), so
!> the order is kept (as in a Nordsieck rescaling).  It is not charged to the new block:
!> shrinking h' cannot reduce it (charged through E_k + sum_l U_kl om_l, the controller
!> rejected block 3 of the manipulator forty times at rtol 1e-5).  Milne's factor then tends
!> to 0 like (h'/H)^(p+1) and the estimate to the new block's own error.  A block shorter
!> than RESTART_RATIO H (after a large rejection) restarts instead: the RK4 start blocks from
!> the current state (block_legendre on the manipulator: without, the error at rtol 1e-6
!> exceeded that at 1e-5; with, it falls monotonically).  The start takes two blocks by RK4 (the 2r history
!> nodes), with the sum of |h/6 (k4 - k5)| over its substeps as the estimate (the error of
!> the embedded order-3 solution: a bound of RK4's).  est_power p + 1, order p.  Fixed
!> steps run none of this (the results are bit-identical to the fixed-step kernel's).
module block_method
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_small_lu, only: slu_factor, slu_solve, zlu_factor, zlu_solve
  use pyint_kkt, only: kkt_data_t, kkt_factor_t, kkt_setup, kkt_factor, kkt_solve, SING_TOL_PASS
  use pyint_index1, only: index1_work_t, index1_init, index1_accel, rk4_step, project_step, pass_begin, pass_end, &
                          kkt_structured
  use pyint_newton_control, only: newton_control_t, NEWTON_CONVERGED, NEWTON_DIVERGED, keep_matrix
  use pyint_driver, only: stepper_t, state_t
  use pyint_seam, only: NSTATS_BLOCK, NIOPT_BLOCK, NROPT_BLOCK, IOPT_BLOCK_STAGES, IOPT_BLOCK_MAXIT, &
                        IOPT_BLOCK_START_SUBSTEPS, IOPT_BLOCK_DEGREE, ROPT_BLOCK_TOL, ROPT_BLOCK_THETA_REFRESH, &
                        ROPT_BLOCK_TABLEAU
  use pyint_seam, only: STAT_BLOCK_COUPLING_REFRESHES, STAT_BLOCK_EXACT_NEWTON_BLOCKS, &
                        STAT_BLOCK_HISTORY_RESTARTS, STAT_BLOCK_MAX_CONTRACTION, &
                        STAT_BLOCK_MAX_NEWTON_ITERATIONS, STAT_BLOCK_NEWTON_ITERATIONS, &
                        STAT_BLOCK_RETRIED_BLOCKS, STAT_BLOCK_STARTUP_RK4_STEPS
  implicit none
  private
  public :: block_stepper_t

  !> Variable steps: a block shorter than RESTART_RATIO times the last restarts the history.
  real(wp), parameter :: RESTART_RATIO = 0.5_wp

  type :: block_work_t
    integer :: n, mh, mn, nx, r, ref
    type(newton_control_t) :: nc      !< the Newton termination rule (carried across blocks)
    real(wp), allocatable :: ca(:, :), cu(:, :), ca2(:, :), cw(:, :), cw2(:, :), cc(:)
    complex(wp), allocatable :: mu(:), tm(:, :), tinv(:, :)
    real(wp), allocatable :: x(:, :), res(:, :), xold(:, :), xold2(:, :), y(:, :), da(:, :), e1(:), e2(:)
    real(wp), allocatable :: q(:, :), z(:, :), qold(:, :), zold(:, :)
    real(wp), allocatable :: p1(:, :), p2(:, :), k1(:, :), k2(:, :)
    type(kkt_data_t) :: kd                      !< the node KKT matrices K0_k, factorized
    type(kkt_factor_t), allocatable :: kf(:)
    integer, allocatable :: bpiv(:, :), jpiv(:)
    real(wp), allocatable :: jfull(:, :), dxf(:)
    complex(wp), allocatable :: b(:, :, :), yt(:, :)
    real(wp), allocatable :: mq(:, :), ch(:, :), cn(:, :), bn(:), f(:), fq(:, :), fv(:, :), dtmp(:, :)
    real(wp), allocatable :: dh(:, :), dn(:, :)
    logical :: have_mass = .false.
    real(wp) :: href = -1                       !< the h the coupling blocks w%b were built at
  end type

  !> The variable-step state the driver saves and restores around a step (save_state).
  type :: block_var_t
    integer :: b = 0
    logical :: stale = .true.
    real(wp) :: hprev = 0
    type(newton_control_t) :: nc
    real(wp), allocatable :: ht(:), hq(:, :), hz(:, :), hx(:, :)
  end type

  !> Options: iopt = [r, maxit, start_substeps]; ropt = [tol, theta_refresh, c (r), A (r x r),
  !> U (r x r), the predictor weights from one block (r x r) and from two (r x 2r),
  !> Re mu, Im mu (r), Re T, Im T, Re T^-1, Im T^-1 (r x r)] with A = T diag(mu) T^-1, the
  !> matrices column by column.  stats = [Newton iterations, coupling refreshes, max
  !> iterations in a block, start-up RK4 steps, blocks retried with a fresh coupling
  !> matrix, max observed contraction, blocks solved with the exact Newton matrix,
  !> restarts of the variable-step history].
  type, extends(stepper_t) :: block_stepper_t
    type(block_work_t) :: w
    type(index1_work_t) :: iw
    integer :: r = 1, maxit = 1, start_substeps = 1, b = 0
    real(wp) :: tol = 0, theta_refresh = 0
    logical :: stale = .true.
    logical :: passing = .false.     !< a block through a singular position (block_pass)
    ! variable steps: p, E (14), the history (2r nodes, oldest first: times, q, z, (a, lam)),
    ! the last block's length, the step's predictor (pq, pz), Newton's start weights lx and
    ! Milne's factors fac (15); slots: the driver's save_state
    integer :: p = 0
    real(wp) :: hprev = 0
    real(wp), allocatable :: econst(:), fac(:), ht(:), hq(:, :), hz(:, :), hx(:, :), pq(:, :), pz(:, :), lx(:, :)
    type(block_var_t) :: slots(2)
  contains
    procedure :: init => block_init
    procedure :: step => block_step
    procedure :: aux => block_aux
    procedure :: save_state => block_save
    procedure :: restore_state => block_restore
    procedure :: pass_singular => block_pass
  end type

contains

  subroutine work_init(w, model, r, ca, cu, cc, cw, cw2, mu, tm, tinv)
    type(block_work_t), intent(out) :: w
    class(model_t), intent(in) :: model
    integer, intent(in) :: r
    real(wp), intent(in) :: ca(:, :), cu(:, :), cc(:), cw(:, :), cw2(:, :)
    complex(wp), intent(in) :: mu(:), tm(:, :), tinv(:, :)
    integer :: n, nx
    n = model%n
    nx = model%n + model%mh + model%mn
    w%n = n; w%mh = model%mh; w%mn = model%mn; w%nx = nx; w%r = r
    w%ref = (r + 1) / 2
    w%ca = ca; w%cu = cu; w%cc = cc; w%cw = cw; w%cw2 = cw2
    w%ca2 = matmul(ca, ca)
    w%mu = mu; w%tm = tm; w%tinv = tinv
    allocate(w%x(nx, r), w%res(nx, r), w%xold(nx, r), w%xold2(nx, r), w%y(nx, r), w%da(n, r), &
             w%e1(n), w%e2(n))
    allocate(w%q(n, r), w%z(n, r), w%qold(n, r), w%zold(n, r))
    allocate(w%kf(r), w%p1(nx, n), w%p2(nx, n), w%k1(nx, n), w%k2(nx, n))
    allocate(w%b(n, n, r), w%bpiv(n, r), w%yt(n, r))
    allocate(w%mq(n, n), w%ch(w%mh, n), w%cn(w%mn, n), w%bn(w%mn), w%f(n), w%fq(n, n), &
             w%fv(n, n), w%dtmp(n, n), w%dh(w%mh, n), w%dn(w%mn, n))
    w%have_mass = .false.
  end subroutine

  !> (q, z) of the block from X by eq. (9), written out (no array temporaries).
  pure subroutine block_update(h, w)
    real(wp), intent(in) :: h
    type(block_work_t), intent(inout) :: w
    integer :: k, l
    do k = 1, w%r
      w%z(:, k) = 0
      do l = 1, w%r
        w%z(:, k) = w%z(:, k) + (h * w%ca(k, l)) * w%x(1:w%n, l) + w%cu(k, l) * w%zold(:, l)
      end do
    end do
    do k = 1, w%r
      w%q(:, k) = 0
      do l = 1, w%r
        w%q(:, k) = w%q(:, k) + (h * w%ca(k, l)) * w%z(:, l) + w%cu(k, l) * w%qold(:, l)
      end do
    end do
  end subroutine

  !> (q, z) of the block from X by eq. (9), and the residual of (7) at every
  !> node; with build, also the node KKT matrices K0_k, factorized (info /= 0:
  !> singular).
  subroutine block_residual(model, tb, h, build, w, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: tb, h
    logical, intent(in) :: build
    type(block_work_t), intent(inout) :: w
    integer, intent(out) :: info
    integer :: k, l, i, n, mh, mn, nx
    real(wp) :: tk
    n = w%n; mh = w%mh; mn = w%mn; nx = w%nx
    info = 0
    call block_update(h, w)
    do k = 1, w%r
      tk = tb + w%cc(k) * h
      if (.not. (model%const_mass .and. w%have_mass)) then
        call model%mass(w%q(:, k), w%mq)
        w%have_mass = .true.
      end if
      call model%force(tk, w%q(:, k), w%z(:, k), w%f)
      w%res(1:n, k) = -w%f
      do l = 1, n
        w%res(1:n, k) = w%res(1:n, k) + w%mq(:, l) * w%x(l, k)
      end do
      if (mh > 0) then
        call model%hol_jac(tk, w%q(:, k), w%ch)
        call model%hol_gamma(tk, w%q(:, k), w%z(:, k), w%res(n + 1:n + mh, k))
        do l = 1, n
          w%res(n + 1:n + mh, k) = w%res(n + 1:n + mh, k) + w%ch(:, l) * w%x(l, k)
          do i = 1, mh
            w%res(l, k) = w%res(l, k) + w%ch(i, l) * w%x(n + i, k)
          end do
        end do
      end if
      if (mn > 0) then
        call model%nh(tk, w%q(:, k), w%cn, w%bn)
        call model%nh_gamma(tk, w%q(:, k), w%z(:, k), w%res(n + mh + 1:nx, k))
        do l = 1, n
          w%res(n + mh + 1:nx, k) = w%res(n + mh + 1:nx, k) + w%cn(:, l) * w%x(l, k)
          do i = 1, mn
            w%res(l, k) = w%res(l, k) + w%cn(i, l) * w%x(n + mh + i, k)
          end do
        end do
      end if
      if (build) then
        call kkt_factor(w%kd, w%mq, w%ch, w%cn, w%kf(k), info)
        if (info /= 0) return
      end if
    end do
  end subroutine

  !> K1 = d(residual)/dz and K2 = d(residual)/dq (columns of a) at node k of the
  !> current iterate, into w%k1, w%k2.
  subroutine node_k12(model, tb, h, k, w)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: tb, h
    integer, intent(in) :: k
    type(block_work_t), intent(inout) :: w
    integer :: n, mh, mn, nx
    real(wp) :: t
    n = w%n; mh = w%mh; mn = w%mn; nx = w%nx
    t = tb + w%cc(k) * h
    associate (q => w%q(:, k), v => w%z(:, k), a => w%x(1:n, k), lh => w%x(n + 1:n + mh, k), &
               ln => w%x(n + mh + 1:nx, k))
      call model%force_jac(t, q, v, w%fq, w%fv)
      w%k1 = 0
      w%k2 = 0
      w%k1(1:n, :) = -w%fv
      w%k2(1:n, :) = -w%fq
      if (.not. model%const_mass) then
        call model%mass_dq(q, a, w%dtmp)
        w%k2(1:n, :) = w%k2(1:n, :) + w%dtmp
      end if
      if (mh > 0) then
        call model%hol_gtl_q(t, q, lh, w%dtmp)
        w%k2(1:n, :) = w%k2(1:n, :) + w%dtmp
        call model%hol_vel_q(t, q, v, w%dh)
        w%k1(n + 1:n + mh, :) = 2 * w%dh
        call model%hol_vel_q(t, q, a, w%dh)
        w%k2(n + 1:n + mh, :) = w%dh
      end if
      if (mn > 0) then
        call model%nh_atl_q(t, q, ln, w%dtmp)
        w%k2(1:n, :) = w%k2(1:n, :) + w%dtmp
        call model%nh_vel_q(t, q, v, w%dn)
        w%k1(n + mh + 1:nx, :) = 2 * w%dn
        call model%nh_vel_q(t, q, a, w%dn)
        w%k2(n + mh + 1:nx, :) = w%dn
      end if
    end associate
  end subroutine

  !> P1 = K0^(-1) K1, P2 = K0^(-1) K2 at the reference node (current iterate)
  !> and the factorized coupling blocks I + h mu_j P1_aa + h^2 mu_j^2 P2_aa.
  subroutine coupling_refresh(model, tb, h, w, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: tb, h
    type(block_work_t), intent(inout) :: w
    integer, intent(out) :: info
    integer :: n, k, j, l
    n = w%n
    k = w%ref
    call node_k12(model, tb, h, k, w)
    w%p1 = w%k1
    w%p2 = w%k2
    do l = 1, n
      call kkt_solve(w%kd, w%kf(k), w%p1(:, l))
      call kkt_solve(w%kd, w%kf(k), w%p2(:, l))
    end do
    do j = 1, w%r
      w%b(:, :, j) = h * w%mu(j) * w%p1(1:n, :) + (h * w%mu(j))**2 * w%p2(1:n, :)
      do l = 1, n
        w%b(l, l, j) = w%b(l, l, j) + 1
      end do
      call zlu_factor(w%b(:, :, j), w%bpiv(:, j), info)
      if (info /= 0) then
        info = STATUS_SINGULAR
        w%href = -1
        return
      end if
    end do
    w%href = h
    info = 0
  end subroutine

  !> Newton step: X += dX with J dX = -R, J = diag(K0_k) (I + coupling).
  subroutine newton_step(h, w)
    real(wp), intent(in) :: h
    type(block_work_t), intent(inout) :: w
    integer :: k, j, l, n, nx
    n = w%n; nx = w%nx
    w%y = -w%res
    do k = 1, w%r
      call kkt_solve(w%kd, w%kf(k), w%y(:, k))
    end do
    ! a-part: (I + h A (x) P1_aa + h^2 A^2 (x) P2_aa) dA = Y_a, diagonalized by A = T diag(mu) T^-1:
    ! Yt = Y_a T^-T, (I + h mu_j P1_aa + h^2 mu_j^2 P2_aa) dt_j = yt_j, dA = Re(Dt T^T)
    do j = 1, w%r
      w%yt(:, j) = 0
      do k = 1, w%r
        w%yt(:, j) = w%yt(:, j) + w%tinv(j, k) * w%y(1:n, k)
      end do
      call zlu_solve(w%b(:, :, j), w%bpiv(:, j), w%yt(:, j))
    end do
    do k = 1, w%r
      w%da(:, k) = 0
      do j = 1, w%r
        w%da(:, k) = w%da(:, k) + real(w%tm(k, j) * w%yt(:, j), wp)
      end do
    end do
    ! lam-part: dLam_k = Y_lam,k - P1_la e1_k - P2_la e2_k, e1 = h dA A^T, e2 = h^2 dA (A^2)^T
    if (nx > n) then
      do k = 1, w%r
        w%e1 = 0
        w%e2 = 0
        do l = 1, w%r
          w%e1 = w%e1 + (h * w%ca(k, l)) * w%da(:, l)
          w%e2 = w%e2 + (h * h * w%ca2(k, l)) * w%da(:, l)
        end do
        do j = 1, n
          w%y(n + 1:nx, k) = w%y(n + 1:nx, k) - w%e1(j) * w%p1(n + 1:nx, j) - w%e2(j) * w%p2(n + 1:nx, j)
        end do
      end do
    end if
    w%x(1:n, :) = w%x(1:n, :) + w%da
    w%x(n + 1:nx, :) = w%x(n + 1:nx, :) + w%y(n + 1:nx, :)
  end subroutine

  !> The exact Newton matrix J_kl = delta_kl K0_k + h A_kl K1_k + h^2 (A^2)_kl K2_k at
  !> the current iterate, factorized in w%jfull (the fallback when the split
  !> iteration fails: large h, strong coupling).
  subroutine full_jacobian(model, tb, h, w, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: tb, h
    type(block_work_t), intent(inout) :: w
    integer, intent(out) :: info
    integer :: n, mh, mn, nx, k, l, rk, cl
    real(wp) :: t
    n = w%n; mh = w%mh; mn = w%mn; nx = w%nx
    if (.not. allocated(w%jfull)) allocate(w%jfull(w%r * nx, w%r * nx), w%jpiv(w%r * nx), w%dxf(w%r * nx))
    w%jfull = 0
    do k = 1, w%r
      rk = (k - 1) * nx
      t = tb + w%cc(k) * h
      call model%mass(w%q(:, k), w%mq)
      w%jfull(rk + 1:rk + n, rk + 1:rk + n) = w%mq
      if (mh > 0) then
        call model%hol_jac(t, w%q(:, k), w%ch)
        w%jfull(rk + 1:rk + n, rk + n + 1:rk + n + mh) = transpose(w%ch)
        w%jfull(rk + n + 1:rk + n + mh, rk + 1:rk + n) = w%ch
      end if
      if (mn > 0) then
        call model%nh(t, w%q(:, k), w%cn, w%bn)
        w%jfull(rk + 1:rk + n, rk + n + mh + 1:rk + nx) = transpose(w%cn)
        w%jfull(rk + n + mh + 1:rk + nx, rk + 1:rk + n) = w%cn
      end if
      call node_k12(model, tb, h, k, w)
      do l = 1, w%r
        cl = (l - 1) * nx
        w%jfull(rk + 1:rk + nx, cl + 1:cl + n) = w%jfull(rk + 1:rk + nx, cl + 1:cl + n) &
                                                 + h * w%ca(k, l) * w%k1 + h * h * w%ca2(k, l) * w%k2
      end do
    end do
    call slu_factor(w%jfull, w%jpiv, info)
    if (info /= 0) info = STATUS_SINGULAR
  end subroutine

  !> Newton with the exact matrix, refactorized at every iterate (the robust
  !> fallback); the same termination rule (pyint_newton_control).
  subroutine full_newton(model, tb, h, tol, maxit, w, iters, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: tb, h, tol
    integer, intent(in) :: maxit
    type(block_work_t), intent(inout) :: w
    integer, intent(out) :: iters, info
    integer :: it, k
    iters = 0
    call w%nc%start()
    do it = 1, maxit
      call block_residual(model, tb, h, .false., w, info)
      if (info /= 0) return
      if (.not. all(abs(w%res) <= huge(1.0_wp))) then
        info = STATUS_NONFINITE
        return
      end if
      call full_jacobian(model, tb, h, w, info)
      if (info /= 0) return
      w%dxf = -reshape(w%res, [size(w%dxf)])
      call slu_solve(w%jfull, w%jpiv, w%dxf)
      w%x = w%x + reshape(w%dxf, [w%nx, w%r])
      iters = iters + 1
      call w%nc%clear()
      do k = 1, w%r
        call measure_a(w%dxf((k - 1) * w%nx + 1:(k - 1) * w%nx + w%n))
      end do
      if (w%nc%done(tol, maxit, info)) then
        if (info == 0) call block_update(h, w)
        return
      end if
    end do
    info = STATUS_NEWTON_FAILED

  contains

    subroutine measure_a(da)
      real(wp), intent(in) :: da(:)
      call measure_block_a(w, h, da)
    end subroutine
  end subroutine

  !> The accelerations' increment of one node, in the units of the velocities
  !> they change (h |da| against 1 + max|z|; floor: what changes z by an ulp).
  !> The multipliers follow from a through the node KKT systems: not measured.
  subroutine measure_block_a(w, h, da)
    type(block_work_t), intent(inout) :: w
    real(wp), intent(in) :: h, da(:)
    real(wp) :: zmax
    zmax = maxval(abs(w%z))
    call w%nc%group(da, (1 + zmax) / h, max(maxval(abs(w%x(1:w%n, :))), zmax / h))
  end subroutine

  !> Newton iteration for the block at tb from the predictor in w%x (the
  !> approximate matrix: linear convergence), stopped by pyint_newton_control.
  !> info: 0, STATUS_NEWTON_FAILED (maxit or divergence), STATUS_SINGULAR,
  !> STATUS_NONFINITE.
  subroutine block_newton(model, tb, h, tol, maxit, refresh, w, iters, theta_max, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: tb, h, tol
    integer, intent(in) :: maxit
    logical, intent(in) :: refresh
    type(block_work_t), intent(inout) :: w
    integer, intent(out) :: iters, info
    real(wp), intent(out) :: theta_max
    integer :: it, status, k
    iters = 0; info = 0; theta_max = 0
    call w%nc%start()
    do it = 1, maxit
      call block_residual(model, tb, h, it == 1, w, info)
      if (info /= 0) return
      if (.not. all(abs(w%res) <= huge(1.0_wp))) then
        info = STATUS_NONFINITE
        return
      end if
      if (it == 1 .and. refresh) then
        call coupling_refresh(model, tb, h, w, info)
        if (info /= 0) return
      end if
      call newton_step(h, w)
      iters = iters + 1
      call w%nc%clear()
      do k = 1, w%r
        call measure_block_a(w, h, w%da(:, k))
      end do
      status = w%nc%test(tol, maxit, .true.)
      if (it > 1) theta_max = max(theta_max, w%nc%theta)
      if (status == NEWTON_CONVERGED) then      ! the final (q, z); the residual is not needed
        call block_update(h, w)
        return
      end if
      if (status == NEWTON_DIVERGED) exit
    end do
    info = STATUS_NEWTON_FAILED
  end subroutine

  !> Read the scheme, set up the node KKT matrices; a, lam at the start from the index-1 system.
  subroutine block_init(self, s, info)
    class(block_stepper_t), intent(inout) :: self
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    integer :: r, k, n
    real(wp), allocatable :: cc(:), ca(:, :), cu(:, :), cw(:, :), cw2(:, :), mure(:), muim(:), tre(:, :), &
                             tim(:, :), tire(:, :), tiim(:, :)
    self%passes_singular = .true.     ! block_pass
    self%drift_check = .true.         ! the driver's manifold check (the index-1 form)
    if (.not. self%options_fit(nstats=NSTATS_BLOCK, niopt=NIOPT_BLOCK, nropt=NROPT_BLOCK, info=info)) return
    r = self%iopt(IOPT_BLOCK_STAGES); self%maxit = self%iopt(IOPT_BLOCK_MAXIT)
    self%start_substeps = self%iopt(IOPT_BLOCK_START_SUBSTEPS)
    if (r < 1 .or. self%maxit < 1 .or. self%start_substeps < 1 .or. size(self%ropt) < NROPT_BLOCK + 3 * r + 9 * r * r) return
    self%r = r
    self%tol = self%ropt(ROPT_BLOCK_TOL); self%theta_refresh = self%ropt(ROPT_BLOCK_THETA_REFRESH)
    k = ROPT_BLOCK_TABLEAU
    cc = take(r); ca = mat(r); cu = mat(r); cw = mat(r); cw2 = mat(2 * r)
    mure = take(r); muim = take(r); tre = mat(r); tim = mat(r); tire = mat(r); tiim = mat(r)
    call work_init(self%w, self%model, r, ca, cu, cc, cw, cw2, cmplx(mure, muim, wp), cmplx(tre, tim, wp), &
                   cmplx(tire, tiim, wp))
    n = self%model%n
    call index1_init(self%iw, self%model)
    call self%model%mass(s%q, self%w%mq)
    call kkt_setup(self%w%kd, n, self%model%mh + self%model%mn, self%model%const_mass, self%w%mq, self%w%kf, info)
    self%w%have_mass = self%model%const_mass
    if (info /= 0) return
    call kkt_structured(self%model, s%q, self%w%kd, self%w%kf)
    self%w%kd%sing_tol = SING_TOL_PASS     ! fixed and variable steps pass a singular position (block_pass)
    self%iw%sing_tol = SING_TOL_PASS
    call index1_accel(self%model, s%t, s%q, s%v, self%iw, s%a, s%lam, info)
    if (info /= 0 .or. .not. self%adaptive) return
    info = STATUS_BAD_INPUT     ! variable steps: p and E (14) after the fixed-step options
    if (size(self%iopt) < IOPT_BLOCK_DEGREE .or. size(self%ropt) < k - 1 + r) return
    self%p = self%iopt(IOPT_BLOCK_DEGREE)
    if (self%p < 1 .or. self%p + 1 > 2 * r) return
    self%econst = take(r)
    self%est_power = self%p + 1
    self%order = self%p
    self%naux = 2 * n
    allocate(self%fac(r), self%ht(2 * r), self%hq(n, 2 * r), self%hz(n, 2 * r), &
             self%hx(self%w%nx, 2 * r), self%pq(n, r), self%pz(n, r), self%lx(r, 2 * r))
    self%ht = 0; self%hq = 0; self%hz = 0; self%hx = 0
    allocate(self%err_q(n), self%err_v(n))
    self%err_q = 0; self%err_v = 0
    info = 0

  contains

    !> The next m values of ropt.
    function take(m) result(x)
      integer, intent(in) :: m
      real(wp) :: x(m)
      x = self%ropt(k:k + m - 1)
      k = k + m
    end function

    !> The next r x m matrix of ropt, column by column.
    function mat(m) result(x)
      integer, intent(in) :: m
      real(wp) :: x(r, m)
      x = reshape(self%ropt(k:k + r * m - 1), [r, m])
      k = k + r * m
    end function

  end subroutine block_init

  !> One block: the first by RK4 on the index-1 form (start_substeps steps per node interval;
  !> with variable steps the first two), the others by the block Newton iteration, retried with
  !> a fresh coupling matrix, then with the exact Newton matrix; a, lam at the block end from
  !> the index-1 system.  With variable steps: the inputs re-interpolated after a change of h,
  !> the estimate (15), the history shifted (see the module comment).
  subroutine block_step(self, h, t1, s, info)
    class(block_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    real(wp) :: t, tb, dt, theta
    real(wp) :: v4(self%model%n), a4(self%model%n)
    integer :: k, j, iters, n, r
    logical :: fresh
    n = self%model%n
    r = self%r
    self%b = self%b + 1
    ! a block much shorter than the last (a large rejection): the history's nodes are too far
    ! apart for the re-interpolation (its error O(H^(2r)) in the old length H is not charged to
    ! the new block, see the module comment): restart from s with the RK4 start blocks
    if (self%adaptive .and. self%b > 2 .and. h < RESTART_RATIO * self%hprev) then
      self%b = 1
      self%stats(STAT_BLOCK_HISTORY_RESTARTS) = self%stats(STAT_BLOCK_HISTORY_RESTARTS) + 1
    end if
    associate (model => self%model, w => self%w, stats => self%stats, cc => self%w%cc)
      if (self%b == 1 .or. (self%adaptive .and. self%b == 2)) then     ! the start-up block(s) by RK4
        t = s%t
        tb = s%t
        if (self%adaptive) then
          self%err_q = 0; self%err_v = 0
        end if
        do k = 1, r
          dt = (cc(k) - merge(0.0_wp, cc(max(k - 1, 1)), k == 1)) * h / self%start_substeps
          do j = 1, self%start_substeps
            call rk4_step(model, t, dt, s%q, s%v, s%a, self%iw, info, v4, a4)
            t = t + dt
            if (info == 0 .and. self%passing) then
              call project_step(model, t, s%q, s%v, self%iw, s%a, s%lam, info)
            else if (info == 0) then
              call index1_accel(model, t, s%q, s%v, self%iw, s%a, s%lam, info)
            end if
            stats(STAT_BLOCK_STARTUP_RK4_STEPS) = stats(STAT_BLOCK_STARTUP_RK4_STEPS) + 1
            if (info /= 0) return
            if (self%adaptive) then      ! the embedded estimate h/6 (k4 - k5) of each substep
              self%err_q = self%err_q + abs((dt / 6) * (v4 - s%v))
              self%err_v = self%err_v + abs((dt / 6) * (a4 - s%a))
            end if
          end do
          w%qold(:, k) = s%q; w%zold(:, k) = s%v
          w%xold(1:n, k) = s%a; w%xold(n + 1:, k) = s%lam
        end do
        if (self%adaptive) then
          call push_history(tb, w%qold, w%zold, w%xold)
          self%has_err_v = .true.
        end if
        return     ! s holds node r of the start-up block
      end if
      tb = s%t
      fresh = self%stale
      if (self%adaptive) then
        call adaptive_inputs(self, tb, h)
        ! the coupling factors I + h mu_j P1 + (h mu_j)^2 P2 kept at a new h while IDA's cj-ratio
        ! test allows (pyint_newton_control's keep_matrix, on h: the coupling is O(h)); a slow
        ! contraction (stale) refreshes them.  Measured on stiff_fast at rtol 1e-6 over 0.2 s:
        ! coupling refreshes 2420 -> 69 in 2377 blocks, CPU per block 6.49 -> 5.28 us
        ! (block_uniform_rk; 1.58 -> 1.29 times the fixed block at the mean h)
        fresh = fresh .or. .not. (w%href > 0 .and. keep_matrix(h, w%href))
      end if
      call predict()
      call block_newton(model, tb, h, self%tol, self%maxit, fresh, w, iters, theta, info)
      call count(iters, theta, fresh)
      ! a singular position (fortran/core/kkt.f90) or matrix: no retry, the run stops naming it
      if (info /= 0 .and. info /= STATUS_SINGULAR .and. info /= STATUS_SINGULAR_POSITION .and. .not. fresh) then
        stats(STAT_BLOCK_RETRIED_BLOCKS) = stats(STAT_BLOCK_RETRIED_BLOCKS) + 1
        call predict()
        call block_newton(model, tb, h, self%tol, self%maxit, .true., w, iters, theta, info)
        call count(iters, theta, .true.)
      end if
      if (info /= 0 .and. info /= STATUS_SINGULAR .and. info /= STATUS_SINGULAR_POSITION) then   ! exact matrix,
        ! from the last node's values
        stats(STAT_BLOCK_EXACT_NEWTON_BLOCKS) = stats(STAT_BLOCK_EXACT_NEWTON_BLOCKS) + 1
        w%x = spread(w%xold(:, r), 2, r)
        call full_newton(model, tb, h, self%tol, 4 * self%maxit, w, iters, info)
        call count(iters, 0.0_wp, .false.)
        theta = 1
      end if
      if (info /= 0) return
      self%stale = theta > self%theta_refresh
      if (self%adaptive) then      ! the estimate (15), max over the nodes
        do j = 1, n
          self%err_q(j) = maxval(abs(self%fac * (w%q(j, :) - self%pq(j, :))))
          self%err_v(j) = maxval(abs(self%fac * (w%z(j, :) - self%pz(j, :))))
        end do
        self%has_err_v = .true.
        call push_history(tb, w%q, w%z, w%x)
      end if
      w%qold = w%q; w%zold = w%z; w%xold2 = w%xold; w%xold = w%x
      s%q = w%q(:, r); s%v = w%z(:, r)
      call index1_accel(model, tb + h, s%q, s%v, self%iw, s%a, s%lam, info)
    end associate

  contains

    !> Newton's start: extrapolation of (a, lam) from the last block (degree r - 1)
    !> or the last two blocks (degree 2 r - 1; with variable steps at the history's times).
    subroutine predict()
      associate (w => self%w)
        if (self%adaptive) then
          w%x = matmul(self%hx, transpose(self%lx))
        else if (self%b == 2) then
          w%x = matmul(w%xold, transpose(w%cw))
        else
          w%x = matmul(w%xold2, transpose(w%cw2(:, 1:r))) + matmul(w%xold, transpose(w%cw2(:, r + 1:2 * r)))
        end if
      end associate
    end subroutine

    !> The block just taken (start tb, length h) becomes the newest half of the history.
    subroutine push_history(tb, q, z, x)
      real(wp), intent(in) :: tb, q(:, :), z(:, :), x(:, :)
      self%ht(1:r) = self%ht(r + 1:2 * r); self%ht(r + 1:2 * r) = tb + self%w%cc * h
      self%hq(:, 1:r) = self%hq(:, r + 1:2 * r); self%hq(:, r + 1:2 * r) = q
      self%hz(:, 1:r) = self%hz(:, r + 1:2 * r); self%hz(:, r + 1:2 * r) = z
      self%hx(:, 1:r) = self%hx(:, r + 1:2 * r); self%hx(:, r + 1:2 * r) = x
      self%hprev = h
    end subroutine

    subroutine count(iters, theta, refreshed)
      integer, intent(in) :: iters
      real(wp), intent(in) :: theta
      logical, intent(in) :: refreshed
      self%stats(STAT_BLOCK_NEWTON_ITERATIONS) = self%stats(STAT_BLOCK_NEWTON_ITERATIONS) + iters
      if (refreshed) self%stats(STAT_BLOCK_COUPLING_REFRESHES) = self%stats(STAT_BLOCK_COUPLING_REFRESHES) + 1
      self%stats(STAT_BLOCK_MAX_NEWTON_ITERATIONS) = max(self%stats(STAT_BLOCK_MAX_NEWTON_ITERATIONS), real(iters, wp))
      self%stats(STAT_BLOCK_MAX_CONTRACTION) = max(self%stats(STAT_BLOCK_MAX_CONTRACTION), theta)
    end subroutine

  end subroutine block_step

  !> A variable-step block from tb of length h: the inputs of (9) (w%qold, w%zold: the
  !> history's newest nodes, re-interpolated at (c - 1) h when h changed), Newton's start
  !> weights lx, the predictor (pq, pz) of degree p at the history's times and Milne's
  !> factors (15) (module comment).
  subroutine adaptive_inputs(self, tb, h)
    class(block_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: tb, h
    real(wp) :: xs(2 * self%r), pik(self%r), l(self%r, 2 * self%r), lp(self%r, self%p + 1)
    integer :: r, m, p, k
    r = self%r; m = 2 * r; p = self%p
    associate (w => self%w, cc => self%w%cc)
      xs = (self%ht - tb) / h
      if (h == self%hprev) then
        w%qold = self%hq(:, r + 1:m); w%zold = self%hz(:, r + 1:m)
      else
        l = lagrange(xs, cc - 1)
        w%qold = matmul(self%hq, transpose(l)); w%zold = matmul(self%hz, transpose(l))
      end if
      self%lx = lagrange(xs, cc)
      lp = lagrange(xs(m - p:m), cc)
      self%pq = matmul(self%hq(:, m - p:m), transpose(lp))
      self%pz = matmul(self%hz(:, m - p:m), transpose(lp))
      do k = 1, r
        pik(k) = product(cc(k) - xs(m - p:m)) / gamma(real(p + 2, wp))
      end do
      self%fac = -self%econst / (pik - self%econst)
    end associate
  end subroutine

  !> l(k, j) = the j-th Lagrange basis polynomial of the points x at xe(k).
  pure function lagrange(x, xe) result(l)
    real(wp), intent(in) :: x(:), xe(:)
    real(wp) :: l(size(xe), size(x))
    integer :: j, m
    l = 1
    do j = 1, size(x)
      do m = 1, size(x)
        if (m /= j) l(:, j) = l(:, j) * (xe - x(m)) / (x(j) - x(m))
      end do
    end do
  end function

  !> With variable steps the auxiliary vector of a sample is the estimate of the step into it
  !> (err_q, err_v; zero at the start).
  subroutine block_aux(self, s, aux)
    class(block_stepper_t), intent(inout) :: self
    type(state_t), intent(in) :: s
    real(wp), intent(out) :: aux(:)
    integer :: n
    n = self%model%n
    aux = 0
    if (self%adaptive) then
      aux(1:n) = self%err_q
      aux(n + 1:2 * n) = self%err_v
    end if
  end subroutine

  !> The driver's pass_singular: a block flagged at a singular position (its node KKT matrices,
  !> pyint_kkt) is taken again as a start-up block from its start projected onto the constraints,
  !> by projected RK4 substeps (pyint_index1: pass_begin explains why this passes); the history
  !> then restarts from there.  The next blocks run as usual, and restart so again while they are
  !> flagged.  The start-up's local error O((h / start_substeps)^5) enters once per crossing, as
  !> the start's does: the order is kept over a run with a fixed number of crossings.  With variable
  !> steps the restart's RK4 substeps give the block's estimate (the driver's error test decides)
  !> and the history restarts from the passed block (b = 1: the second start-up block follows).
  subroutine block_pass(self, h, t1, s, info)
    class(block_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    real(wp) :: tol
    call pass_begin(self%model, s%t, s%q, s%v, self%iw, s%a, s%lam, tol, info)
    if (info == 0) then
      self%passing = .true.
      self%b = 0
      call block_step(self, h, t1, s, info)
      self%passing = .false.
    end if
    call pass_end(self%iw, tol)
  end subroutine

  !> The driver's save / restore of the variable-step state (slot 1: before the step tried,
  !> 2: the start): the block count, the history, the refresh flag, Newton's rate.
  subroutine block_save(self, slot)
    class(block_stepper_t), intent(inout) :: self
    integer, intent(in) :: slot
    self%slots(slot) = block_var_t(self%b, self%stale, self%hprev, self%w%nc, self%ht, self%hq, self%hz, self%hx)
  end subroutine

  subroutine block_restore(self, slot)
    class(block_stepper_t), intent(inout) :: self
    integer, intent(in) :: slot
    associate (v => self%slots(slot))
      self%b = v%b; self%stale = v%stale; self%hprev = v%hprev; self%w%nc = v%nc
      self%ht = v%ht; self%hq = v%hq; self%hz = v%hz; self%hx = v%hx
    end associate
  end subroutine

end module block_method
