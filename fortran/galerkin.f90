!> Galerkin-Lobatto variational integrator for nonholonomic Hamiltonian systems
!> (seed 004: Man, Gao, Zhong 2020), any interpolation degree s = 1..GL_SMAX.
!>
!> Continuous system (dual variables, pyint's sign of the multiplier):
!>     q' = H_p(q, p),   p' = -H_q(q, p) - A(q)^T lam,   A(q) H_p(q, p) + b = 0,
!> H and its derivatives from the model (module pyint_dual).  Seed 004 writes
!> p' = -H_q + G^T lam: its lam is minus ours.
!>
!> Discretization (the paper's equations (10)-(16) were lost in the OCR; this is
!> our carried-multiplier reconstruction of seed 004's lost eqs. (10)-(16),
!> re-derived from the paper's text):  on a step
!> [t, t + h] with Lobatto nodes 0 = d_0 < ... < d_s = 1, weights b_i and
!> D_vj = l_j'(d_v) on [0, 1], q, p and lam are degree-s polynomials with
!> control points q_v, phat_v, lam_v.  Lobatto quadrature of the dual-variable
!> Lagrange-d'Alembert principle  int [p^T q' - H] dt + int (-A^T lam)^T dq dt
!> gives the discrete "action"
!>     S = sum_i b_i phat_i^T sum_j D_ij q_j - h sum_i b_i H(q_i, phat_i)
!> with the discrete force -h b_v A(q_v)^T lam_v at node v.  Its variations
!> with respect to phat_v, and to q_v with q_0, q_s as the independent
!> variables of a type-1 generating function (P_0 = -dS/dq_0, P_s = dS/dq_s),
!> are, with R_v = H_q(q_v, phat_v) + A(q_v)^T lam_v:
!>     E_v (v = 0..s):  sum_j D_vj q_j - h H_p(q_v, phat_v) = 0
!>     F_0:             P_0 + sum_i b_i D_i0 phat_i - h b_0 R_0 = 0
!>     F_v (0 < v < s): sum_i b_i D_iv phat_i - h b_v R_v = 0
!>     F_s:             P_s - sum_i b_i D_is phat_i + h b_s R_s = 0
!> and the constraints hold at the interior control points and, with the
!> canonical momentum, at the end of the step:
!>     C_v (0 < v < s): A(q_v) H_p(q_v, phat_v) + b = 0,   C_s: A(q_s) H_p(q_s, P_s) + b = 0.
!> Known: q_0, P_0, lam_0 (lam_0 = lam_s of the previous step).  Unknowns
!> x = (q_1..q_s, phat_0..phat_s, P_s, lam_1..lam_s): 2(s+1)n + s c of them, as
!> many as equations.  Output per step: (q_s, P_s, lam_s).
!>
!> Two variants of the multiplier (argument `variant`):
!> GL_SPEC (our reconstruction of seed 004's lost eqs. (10)-(16)): lam_0 is
!>   known, = lam_s of the previous step.  The
!>   multiplier is then part of the state and, for s = 1, the node impulse
!>   reflects the constraint-violating part of phat instead of projecting it;
!>   on the locked-steering snakeboard that part grows and the board reverses
!>   (docs/galerkin_snakeboard.md).
!> GL_REDUCED: lam_0 is an unknown too, and c more equations
!>     L: sum_j lw_j lam_j = 0,  lw_j = 1 / prod_{k /= j} (d_j - d_k)
!>   (the multiplier polynomial has degree s - 1: s c free parameters, the
!>   paper's count).  The step is a map (q_0, P_0) -> (q_s, P_s); lw_{s-j} =
!>   (-1)^s lw_j keeps it symmetric.  Same orders on the skate, no reversal.
!> After each step P_s gets one Newton correction onto A(q_s) H_p(q_s, P) + b = 0
!> with q_s fixed (see gl_advance: it removes the ulp(q_s) rounding of Newton's
!> last update from the constraint).
!>
!> Symmetry: d_v = 1 - d_{s-v}, b_v = b_{s-v}, D_vj = -D_{s-v,s-j} (enforced
!> exactly on the coefficients) map the system for (q_0, P_0, lam_0; h) onto
!> the one for (q_s, P_s, lam_s; -h) with the control points reversed.
!>
!> Simplified Newton with the analytic Jacobian (gl_jacobian; finite-difference
!> checked by tests/test_galerkin.py): the LU of its Schur complement with P_s and lam_0
!> eliminated (gl_factor: their rows F_s and L are linear in them with an identity
!> pivot) kept across iterations and steps and refreshed when the one Newton rule asks
!> (gl_newton); the start of each step extrapolated from the last steps (gl_advance).
module galerkin
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_driver, only: stepper_t, state_t
  use pyint_linalg, only: lu_factor, lu_solve, inf_norm, dense_lu_factor, dense_lu_solve
  use pyint_quadrature, only: lobatto_nodes
  use pyint_dual, only: dual_work_t, dual_init, dual_grad, dual_hess
  use pyint_newton_control, only: newton_control_t, maxabs, NEWTON_CONVERGED, NEWTON_DIVERGED
  use pyint_seam, only: NSTATS_GALERKIN, NIOPT_GALERKIN, NROPT_GALERKIN, IOPT_GALERKIN_STAGES, IOPT_GALERKIN_VARIANT, &
                        IOPT_GALERKIN_MAXIT, ROPT_GALERKIN_TOL, ROPT_GALERKIN_LAMBDA0
  use pyint_seam, only: STAT_GALERKIN_JACOBIAN_FACTORIZATIONS, STAT_GALERKIN_MAX_CONSTRAINT_RESIDUAL, &
                        STAT_GALERKIN_MAX_NEWTON_ITERATIONS, STAT_GALERKIN_NEWTON_ITERATIONS
  implicit none
  private
  public :: GL_SMAX, GL_SPEC, GL_REDUCED, lobatto_rule, gl_work_t, gl_work_init, gl_residual, &
            gl_jacobian, gl_stepper_t

  integer, parameter :: GL_SMAX = 8
  !> Variants of the multiplier treatment (see the header):
  !> GL_SPEC: lam_0 = lam_s of the previous step (the carried-multiplier
  !>   reconstruction of seed 004's lost eqs. (10)-(16));
  !> GL_REDUCED: lam_0 is an unknown of the step and the multiplier polynomial
  !> has degree s - 1 (its degree-s coefficient sum_j w_j lam_j vanishes).
  integer, parameter :: GL_SPEC = 0, GL_REDUCED = 1
  !> a kept Newton matrix is refreshed at the next iteration when the observed contraction exceeds
  !> this (as generalized-alpha's THETA_REFACTOR and the symplectic family's THETA_REFRESH), besides
  !> when the rule asks (c%refresh)
  real(wp), parameter :: THETA_REFRESH = 0.1_wp
  integer, parameter :: NPRED = 3

  !> Per-trajectory workspace (allocated once per call: the kernel is reentrant).
  type :: gl_work_t
    integer :: s = 0, n = 0, c = 0, nx = 0, variant = GL_SPEC
    type(newton_control_t) :: nc      !< the Newton termination rule (carried across steps)
    real(wp), allocatable :: d(:), b(:), dm(:, :)          !< Lobatto rule: d(0:s), b(0:s), dm(0:s, 0:s)
    real(wp), allocatable :: lw(:)                         !< lw(0:s): degree-s coefficient weights (GL_REDUCED)
    real(wp), allocatable :: x(:), dx(:), e(:), jac(:, :)  !< unknowns, increment, residual, Newton matrix
    !> the Newton matrix with P_s and lam_0 eliminated (gl_factor): nk = (2s + 1) n + s c unknowns
    !> q_1..q_s, phat_0..phat_s, lam_1..lam_s, LU factors and pivots
    integer :: nk = 0
    real(wp), allocatable :: sk(:, :)
    real(wp), allocatable :: fk(:, :), gcp(:, :), g0(:, :)  !< J(F_s, K)^T, J(C_s, P_s), J(F_0, lam_0) / lw_0
    integer, allocatable :: ipiv(:)
    logical :: have_lu = .false.      !< sk holds the LU factors of a Newton matrix built for h_lu
    real(wp) :: h_lu = 0
    real(wp), allocatable :: qn(:, :), pn(:, :), un(:, :), rn(:, :), ln(:, :)  !< nodal q, phat, H_p, R, lam
    real(wp), allocatable :: an(:, :, :), bn(:, :)         !< nodal A (c, n, 0:s) and b (c, 0:s)
    !> the point (t, q) whose A and b an(:, :, 0), bn(:, 0) hold (node 0 is the step's fixed start:
    !> gl_residual evaluates them once per step; gl_advance and gl_residuals leave them at the new point)
    real(wp) :: t_an0 = huge(1.0_wp)
    real(wp), allocatable :: q_an0(:)
    real(wp), allocatable :: ps(:), us(:), tmp(:)          !< P_s, H_p(q_s, P_s)
    !> gl_advance's and gl_solve's scratch (no allocation per step)
    real(wp), allocatable :: v0(:), dp(:), dl(:), mu(:), kc(:, :), y(:)
    integer, allocatable :: ipc(:)
    real(wp), allocatable :: hpq(:, :), hpp(:, :), hqq(:, :), hqp(:, :), atl(:, :), velq(:, :)
    type(dual_work_t) :: dw
  end type

  !> The method as a stepper of the one driver (fortran/core/driver.f90; options at
  !> gl_init).  The state: q = q_s, v = H_p(q_s, P_s), lam = the nodal lam_s, a = 0 (none);
  !> P_s is the auxiliary vector of a sample.  stats = [Newton iterations, LU
  !> factorizations, max iterations in a step, max over all steps of |A(q_s) H_p(q_s, P_s) + b|].
  type, extends(stepper_t) :: gl_stepper_t
    type(gl_work_t) :: w
    integer :: maxit = 0
    real(wp) :: tol = 0
    real(wp), allocatable :: p(:)      !< the canonical momentum P_s
    real(wp), allocatable :: xs1(:), xs2(:), xs3(:)  !< the solutions x of the last steps (predictor)
    integer :: nxs = 0                 !< how many of them are held
    real(wp) :: h_pred = 0             !< the step size they were taken with
  contains
    procedure :: init => gl_init
    procedure :: step => gl_advance
    procedure :: residuals => gl_residuals
    procedure :: aux => gl_aux
  end type

contains

  ! -- the Lobatto rule ------------------------------------------------------------

  !> Lobatto nodes d(0:s) on [0, 1], weights b(0:s) and differentiation matrix
  !> dm(v, j) = l_j'(d_v), computed and checked here.
  !> Nodes and weights: the (s + 1)-point Lobatto rule of core/quadrature.f90 mapped
  !> to [0, 1] (0, 1 and the roots of P_s'(2 d - 1); weights 1 / (s (s + 1) P_s(x)^2));
  !> dm from barycentric weights.  Symmetry is then imposed exactly (averaging with the reflected
  !> values).  Checks: sum b = 1, quadrature exact to degree 2s - 1, dm exact on
  !> polynomials of degree <= s, summation by parts
  !> b_i D_ij + b_j D_ji = [i = j = s] - [i = j = 0].
  !> info: 0 ok, 1 a check failed, 2 s outside 1..GL_SMAX.
  subroutine lobatto_rule(s, d, b, dm, info)
    integer, intent(in) :: s
    real(wp), intent(out) :: d(0:s), b(0:s), dm(0:s, 0:s)
    integer, intent(out) :: info
    real(wp) :: x(0:s), w(0:s), bw(0:s), r(0:s), tol, acc
    integer :: i, j, k
    info = 2
    d = 0; b = 0; dm = 0
    if (s < 1 .or. s > GL_SMAX) return
    info = 0
    call lobatto_nodes(s + 1, x, w)
    b = w / 2                                  ! weights on [0, 1]
    d = (x + 1) / 2
    ! exact symmetry d_v = 1 - d_{s-v}, b_v = b_{s-v}
    r = d
    do k = 0, s
      d(k) = (r(k) + 1 - r(s - k)) / 2
    end do
    d(0) = 0
    d(s) = 1
    r = b
    do k = 0, s
      b(k) = (r(k) + r(s - k)) / 2
    end do
    ! differentiation matrix from barycentric weights, then D_vj = -D_{s-v,s-j} exactly
    do j = 0, s
      bw(j) = 1
      do k = 0, s
        if (k /= j) bw(j) = bw(j) / (d(j) - d(k))
      end do
    end do
    do i = 0, s
      do j = 0, s
        if (i /= j) dm(i, j) = (bw(j) / bw(i)) / (d(i) - d(j))
      end do
      dm(i, i) = -(sum(dm(i, :)) - dm(i, i))
    end do
    block
      real(wp) :: dsym(0:s, 0:s)
      do i = 0, s
        do j = 0, s
          dsym(i, j) = (dm(i, j) - dm(s - i, s - j)) / 2
        end do
      end do
      dm = dsym
    end block
    ! -- checks -------------------------------------------------------------------
    tol = 1.0e-13_wp
    if (abs(sum(b) - 1) > tol) info = 1
    if (any(d(1:s) - d(0:s - 1) <= 0)) info = 1
    do k = 0, 2 * s - 1                        ! quadrature exact to degree 2s - 1
      if (abs(sum(b * d**k) - 1.0_wp / (k + 1)) > tol) info = 1
    end do
    tol = 1.0e-12_wp * maxval(abs(dm))
    do k = 0, s                                ! D exact on degree <= s
      do i = 0, s
        acc = sum(dm(i, :) * d**k)
        if (k == 0) then
          if (abs(acc) > tol) info = 1
        else
          if (abs(acc - k * d(i)**(k - 1)) > tol) info = 1
        end if
      end do
    end do
    do i = 0, s                                ! summation by parts
      do j = 0, s
        acc = b(i) * dm(i, j) + b(j) * dm(j, i)
        if (i == s .and. j == s) acc = acc - 1
        if (i == 0 .and. j == 0) acc = acc + 1
        if (abs(acc) > tol) info = 1
      end do
    end do
  end subroutine


  ! -- layout of unknowns and equations (0-based offsets) ------------------------
  !   x = (q_1..q_s | phat_0..phat_s | P_s | lam_1..lam_s [| lam_0])
  !   e = (E_0..E_s | F_0..F_s | C_1..C_s [| L])
  ! (the bracketed blocks with GL_REDUCED only; L = sum_j lw_j lam_j)

  pure integer function cq(w, j)       ! q_j, j = 1..s
    type(gl_work_t), intent(in) :: w
    integer, intent(in) :: j
    cq = (j - 1) * w%n
  end function

  pure integer function cp(w, i)       ! phat_i, i = 0..s (i = s + 1: P_s)
    type(gl_work_t), intent(in) :: w
    integer, intent(in) :: i
    cp = (w%s + i) * w%n
  end function

  pure integer function cl(w, v)       ! lam_v, v = 1..s (also C_v rows)
    type(gl_work_t), intent(in) :: w
    integer, intent(in) :: v
    cl = 2 * (w%s + 1) * w%n + (v - 1) * w%c
  end function

  pure integer function cl0(w)         ! lam_0 (also the L rows), GL_REDUCED only
    type(gl_work_t), intent(in) :: w
    cl0 = 2 * (w%s + 1) * w%n + w%s * w%c
  end function

  !> Allocate the workspace and build the rule (info: STATUS_BAD_INPUT for a bad
  !> s or a failed coefficient check, STATUS_SINGULAR for a singular M).
  subroutine gl_work_init(w, model, s, variant, q0, info)
    type(gl_work_t), intent(out) :: w
    class(model_t), intent(in) :: model
    integer, intent(in) :: s, variant
    real(wp), intent(in) :: q0(:)
    integer, intent(out) :: info
    integer :: n, c, j, k
    info = STATUS_BAD_INPUT
    if (s < 1 .or. s > GL_SMAX .or. model%mh > 0) return
    if (variant /= GL_SPEC .and. variant /= GL_REDUCED) return
    n = model%n
    c = model%mn
    w%s = s; w%n = n; w%c = c; w%variant = variant
    w%nx = 2 * (s + 1) * n + s * c
    if (variant == GL_REDUCED) w%nx = w%nx + c
    allocate(w%d(0:s), w%b(0:s), w%dm(0:s, 0:s), w%lw(0:s))
    call lobatto_rule(s, w%d, w%b, w%dm, info)
    if (info /= 0) then
      info = STATUS_BAD_INPUT
      return
    end if
    ! degree-s coefficient of the interpolant: sum_j lw_j f_j, lw_j = 1 / prod_{k /= j} (d_j - d_k),
    ! made exactly (anti)symmetric, lw_{s-j} = (-1)^s lw_j, and scaled to max |lw| = 1
    do j = 0, s
      w%lw(j) = 1
      do k = 0, s
        if (k /= j) w%lw(j) = w%lw(j) / (w%d(j) - w%d(k))
      end do
    end do
    w%lw = 0.5_wp * (w%lw + (-1)**s * w%lw(s:0:-1))
    w%lw = w%lw / maxval(abs(w%lw))
    w%nk = (2 * s + 1) * n + s * c
    allocate(w%x(w%nx), w%dx(w%nx), w%e(w%nx), w%jac(w%nx, w%nx), w%sk(w%nk, w%nk), w%ipiv(w%nk))
    allocate(w%fk(w%nk, n), w%gcp(c, n), w%g0(n, c), w%y(w%nk))
    allocate(w%v0(n), w%dp(n), w%dl(c), w%mu(c), w%kc(c, c), w%ipc(c))
    w%gcp = 0
    w%g0 = 0
    allocate(w%qn(n, 0:s), w%pn(n, 0:s), w%un(n, 0:s), w%rn(n, 0:s), w%ln(c, 0:s), &
             w%an(c, n, 0:s), w%bn(c, 0:s), w%ps(n), w%us(n), w%tmp(n), w%q_an0(n))
    allocate(w%hpq(n, n), w%hpp(n, n), w%hqq(n, n), w%hqp(n, n), w%atl(n, n), w%velq(c, n))
    call dual_init(w%dw, model, q0, info)
  end subroutine

  ! -- the step equations -----------------------------------------------------------

  !> Residual e(x) of the step from (q0, p0, l0) at t with step h (w%x holds x);
  !> leaves the nodal values in w for gl_jacobian.  info /= 0: singular M.
  !> The model's terms here, the sums over the nodes in residual_sums (explicit-shape arrays: it
  !> runs at every Newton iteration, and through the workspace's components its loops cost
  !> several times their arithmetic).
  subroutine gl_residual(model, t, h, q0, p0, l0, w, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, h, q0(:), p0(:), l0(:)
    type(gl_work_t), intent(inout) :: w
    integer, intent(out) :: info
    integer :: s, n, c, v, nl0
    s = w%s; n = w%n; c = w%c
    nl0 = merge(c, 0, w%variant == GL_REDUCED)
    call unpack_x(n, c, s, nl0, w%x, q0, l0, w%qn, w%pn, w%ps, w%ln)
    do v = 0, s
      call dual_grad(model, t + w%d(v) * h, w%qn(:, v), w%pn(:, v), w%dw, w%un(:, v), w%rn(:, v), info)
      if (info /= 0) return
      if (c > 0) then
        if (v > 0) then
          call model%nh(t + w%d(v) * h, w%qn(:, v), w%an(:, :, v), w%bn(:, v))
        else
          call nh_start(model, w, t, q0)
        end if
      end if
    end do
    if (c > 0) then
      call dual_vel(model, t + h, w%qn(:, s), w%ps, w%dw, w%us, w%tmp, info)   ! H_p(q_s, P_s)
      if (info /= 0) return
    end if
    call residual_sums(n, c, s, nl0, h, w%dm, w%b, w%lw, w%qn, w%pn, w%ps, w%un, w%us, w%ln, w%an, w%bn, &
                       p0, w%rn, w%e)
  end subroutine

  !> The nodal values of x = (q_1..q_s | phat_0..phat_s | P_s | lam_1..lam_s [| lam_0]) (see cq, cp,
  !> cl, cl0): qn(:, 0) = q0, ln(:, 0) = lam_0 (GL_REDUCED, nl0 = c) or l0.
  pure subroutine unpack_x(n, c, s, nl0, x, q0, l0, qn, pn, ps, ln)
    integer, intent(in) :: n, c, s, nl0
    real(wp), intent(in) :: x(2 * (s + 1) * n + s * c + nl0), q0(n), l0(c)
    real(wp), intent(out) :: qn(n, 0:s), pn(n, 0:s), ps(n), ln(c, 0:s)
    integer :: j, k, m
    do k = 1, n
      qn(k, 0) = q0(k)
    end do
    do j = 1, s
      do k = 1, n
        qn(k, j) = x((j - 1) * n + k)
      end do
    end do
    m = s * n
    do j = 0, s
      do k = 1, n
        pn(k, j) = x(m + j * n + k)
      end do
    end do
    m = m + (s + 1) * n
    do k = 1, n
      ps(k) = x(m + k)
    end do
    m = m + n
    do j = 1, s
      do k = 1, c
        ln(k, j) = x(m + (j - 1) * c + k)
      end do
    end do
    do k = 1, c
      if (nl0 > 0) then
        ln(k, 0) = x(m + s * c + k)
      else
        ln(k, 0) = l0(k)
      end if
    end do
  end subroutine

  !> v = H_p(t, q, p) (pyint_dual): M^{-1} p with the kept inverse of a constant M, else dual_grad
  !> (hq its scratch).
  subroutine dual_vel(model, t, q, p, dw, v, hq, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, q(:)
    real(wp), intent(in), contiguous :: p(:)
    type(dual_work_t), intent(inout) :: dw
    real(wp), intent(out), contiguous :: v(:)
    real(wp), intent(out) :: hq(:)
    integer, intent(out) :: info
    if (dw%const_mass) then
      call mat_vec(size(p), dw%minv, p, v)
      info = 0
    else
      call dual_grad(model, t, q, p, dw, v, hq, info)
    end if
  end subroutine

  !> y = a x, a n x n.
  pure subroutine mat_vec(n, a, x, y)
    integer, intent(in) :: n
    real(wp), intent(in) :: a(n, n), x(n)
    real(wp), intent(out) :: y(n)
    integer :: j
    y = 0
    do j = 1, n
      y = y + a(:, j) * x(j)
    end do
  end subroutine

  !> The step equations from the nodal values (un = H_p(q_v, phat_v); rn = H_q(q_v, phat_v) on entry,
  !> R_v = H_q + A_v^T lam_v on return; us = H_p(q_s, P_s)):
  !>   e = (E_0..E_s | F_0..F_s | C_1..C_s [| L])  (see the header).
  pure subroutine residual_sums(n, c, s, nl0, h, dm, b, lw, qn, pn, ps, un, us, ln, an, bn, p0, rn, e)
    integer, intent(in) :: n, c, s, nl0
    real(wp), intent(in) :: h, dm(0:s, 0:s), b(0:s), lw(0:s), qn(n, 0:s), pn(n, 0:s), ps(n), un(n, 0:s), &
                            us(n), ln(c, 0:s), an(c, n, 0:s), bn(c, 0:s), p0(n)
    real(wp), intent(inout) :: rn(n, 0:s)
    real(wp), intent(out) :: e(2 * (s + 1) * n + s * c + nl0)
    integer :: v, i, j, k, r
    real(wp) :: acc, f
    do v = 0, s                                           ! R_v = H_q + A^T lam_v
      do k = 1, n
        acc = 0
        do i = 1, c
          acc = acc + an(i, k, v) * ln(i, v)
        end do
        rn(k, v) = rn(k, v) + acc
      end do
    end do
    do v = 0, s
      r = v * n                                           ! E_v = sum_j D_vj q_j - h H_p(q_v, phat_v)
      do k = 1, n
        e(r + k) = -h * un(k, v)
      end do
      do j = 0, s
        do k = 1, n
          e(r + k) = e(r + k) + dm(v, j) * qn(k, j)
        end do
      end do
      r = (s + 1 + v) * n                                 ! F_v = [P_0 | 0 | P_s] + sig (sum_i b_i D_iv phat_i - h b_v R_v)
      f = -h * b(v)
      do k = 1, n
        e(r + k) = f * rn(k, v)
      end do
      do i = 0, s
        do k = 1, n
          e(r + k) = e(r + k) + (b(i) * dm(i, v)) * pn(k, i)
        end do
      end do
      if (v == 0) then
        do k = 1, n
          e(r + k) = e(r + k) + p0(k)
        end do
      else if (v == s) then
        do k = 1, n
          e(r + k) = ps(k) - e(r + k)
        end do
      end if
    end do
    if (c == 0) return
    r = 2 * (s + 1) * n                                   ! C_v = A(q_v) H_p(q_v, phat_v) + b, 0 < v < s
    do v = 1, s - 1
      do i = 1, c
        acc = bn(i, v)
        do k = 1, n
          acc = acc + an(i, k, v) * un(k, v)
        end do
        e(r + (v - 1) * c + i) = acc
      end do
    end do
    do i = 1, c                                           ! C_s = A(q_s) H_p(q_s, P_s) + b
      acc = bn(i, s)
      do k = 1, n
        acc = acc + an(i, k, s) * us(k)
      end do
      e(r + (s - 1) * c + i) = acc
    end do
    if (nl0 > 0) then                                     ! L = sum_j lw_j lam_j
      r = r + s * c
      do i = 1, c
        acc = 0
        do j = 0, s
          acc = acc + lw(j) * ln(i, j)
        end do
        e(r + i) = acc
      end do
    end if
  end subroutine

  !> A and b at the step's start (t, q0) into an(:, :, 0), bn(:, 0), unless they hold them already.
  subroutine nh_start(model, w, t, q0)
    class(model_t), intent(in) :: model
    type(gl_work_t), intent(inout) :: w
    real(wp), intent(in) :: t, q0(:)
    if (t == w%t_an0 .and. all(q0 == w%q_an0)) return
    call model%nh(t, q0, w%an(:, :, 0), w%bn(:, 0))
    w%t_an0 = t
    w%q_an0 = q0
  end subroutine

  !> Newton matrix de/dx at the iterate of the last gl_residual call.
  subroutine gl_jacobian(model, t, h, w, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, h
    type(gl_work_t), intent(inout) :: w
    integer, intent(out) :: info
    integer :: s, n, c, v, i, j, k, re, rf, rc
    real(wp) :: tv, sig
    s = w%s; n = w%n; c = w%c
    w%jac = 0
    do v = 0, s
      tv = t + w%d(v) * h
      call dual_hess(model, tv, w%qn(:, v), w%pn(:, v), w%dw, w%hpq, w%hpp, w%hqq, w%hqp, info)
      if (info /= 0) return
      re = v * n
      rf = (s + 1 + v) * n
      sig = merge(-1.0_wp, 1.0_wp, v == s)
      ! E_v = sum_j D_vj q_j - h H_p(q_v, phat_v)
      do j = 1, s
        do k = 1, n
          w%jac(re + k, cq(w, j) + k) = w%dm(v, j)
        end do
      end do
      if (v >= 1) w%jac(re + 1:re + n, cq(w, v) + 1:cq(w, v) + n) = &
                  w%jac(re + 1:re + n, cq(w, v) + 1:cq(w, v) + n) - h * w%hpq
      w%jac(re + 1:re + n, cp(w, v) + 1:cp(w, v) + n) = -h * w%hpp
      ! F_v = [P_0 | 0 | P_s] + sig (sum_i b_i D_iv phat_i - h b_v R_v)
      do i = 0, s
        do k = 1, n
          w%jac(rf + k, cp(w, i) + k) = sig * w%b(i) * w%dm(i, v)
        end do
      end do
      w%jac(rf + 1:rf + n, cp(w, v) + 1:cp(w, v) + n) = &
        w%jac(rf + 1:rf + n, cp(w, v) + 1:cp(w, v) + n) - sig * h * w%b(v) * w%hqp
      if (v >= 1) then
        w%atl = 0
        if (c > 0) call model%nh_atl_q(tv, w%qn(:, v), w%ln(:, v), w%atl)
        w%jac(rf + 1:rf + n, cq(w, v) + 1:cq(w, v) + n) = -sig * h * w%b(v) * (w%hqq + w%atl)
        if (c > 0) w%jac(rf + 1:rf + n, cl(w, v) + 1:cl(w, v) + c) = &
                   -sig * h * w%b(v) * transpose(w%an(:, :, v))
      else if (c > 0 .and. w%variant == GL_REDUCED) then
        w%jac(rf + 1:rf + n, cl0(w) + 1:cl0(w) + c) = -sig * h * w%b(0) * transpose(w%an(:, :, 0))
      end if
      if (v == s) then
        do k = 1, n
          w%jac(rf + k, cp(w, s + 1) + k) = 1
        end do
      end if
      ! C_v = A(q_v) H_p(q_v, phat_v) + b, interior control points
      if (c > 0 .and. v >= 1 .and. v < s) then
        rc = cl(w, v)
        call model%nh_vel_q(tv, w%qn(:, v), w%un(:, v), w%velq)
        w%jac(rc + 1:rc + c, cq(w, v) + 1:cq(w, v) + n) = w%velq + matmul(w%an(:, :, v), w%hpq)
        w%jac(rc + 1:rc + c, cp(w, v) + 1:cp(w, v) + n) = matmul(w%an(:, :, v), w%hpp)
      end if
    end do
    if (c == 0) return
    ! C_s = A(q_s) H_p(q_s, P_s) + b
    call dual_hess(model, t + h, w%qn(:, s), w%ps, w%dw, w%hpq, w%hpp, w%hqq, w%hqp, info)
    if (info /= 0) return
    rc = cl(w, s)
    call model%nh_vel_q(t + h, w%qn(:, s), w%us, w%velq)
    w%jac(rc + 1:rc + c, cq(w, s) + 1:cq(w, s) + n) = w%velq + matmul(w%an(:, :, s), w%hpq)
    w%jac(rc + 1:rc + c, cp(w, s + 1) + 1:cp(w, s + 1) + n) = matmul(w%an(:, :, s), w%hpp)
    if (w%variant == GL_REDUCED) then                      ! L = sum_j lw_j lam_j
      rc = cl0(w)
      do k = 1, c
        w%jac(rc + k, rc + k) = w%lw(0)
        do j = 1, s
          w%jac(rc + k, cl(w, j) + k) = w%lw(j)
        end do
      end do
    end if
  end subroutine

  !> Solve the step equations for w%x (start value on entry) by simplified Newton with a kept
  !> LU of gl_jacobian (Hairer & Wanner, Solving ODEs II, sec. IV.8, as RADAU5): the factors
  !> are kept across iterations and steps (w%have_lu, for the step size w%h_lu) and refreshed
  !> at the iterate when the one rule of every implicit kernel (pyint_newton_control,
  !> fortran/core/newton_control.f90) asks for it (c%refresh) or the kept matrix contracts
  !> slower than THETA_REFRESH; the rule stops the iteration.  Once it has converged with a
  !> kept matrix, one more kept iteration is applied (polish): it costs a residual and a
  !> back-substitution, and divides the iteration error eta |dx| the rule left by the
  !> observed rate theta <= THETA_REFRESH.  An iteration error repeated every step
  !> accumulates: without the polish tests/test_methods.py's order fit of galerkin_s3 on the
  !> skate measured a v slope of 3.39 instead of 4 (error 3.4e-12 at the finest h).  A step whose
  !> last increment is at the rule's round-off floor (c%at_floor) has nothing left to polish.
  !> (fortran/symplectic.f90 sym_step ends its steps with a fresh matrix instead, at one
  !> factorization a step.)
  !> Groups: the positions q_1..q_s; the momenta phat_0..phat_s, P_s; the multipliers as
  !> h lam (momentum units).  The momenta and multipliers come from rows that fix q to
  !> round-off (sum_j D_vj q_j = h H_p): their floor is what changes q by s^2 ulps
  !> (|D| ~ s^2), amp = s^2 |q| / |q_s - q_0| times their size.
  !> iters, nfact: iterations and LU factorizations of the step.
  !> info: 0, STATUS_NEWTON_FAILED, STATUS_SINGULAR, STATUS_NONFINITE.
  subroutine gl_newton(model, t, h, q0, p0, l0, tol, maxit, w, iters, nfact, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, h, q0(:), p0(:), l0(:), tol
    integer, intent(in) :: maxit
    type(gl_work_t), intent(inout) :: w
    integer, intent(out) :: iters, nfact, info
    integer :: it, m, status
    logical :: fresh, refresh, polish
    real(wp) :: sq, sp, sl, amp
    m = 2 * (w%s + 1) * w%n
    iters = 0
    nfact = 0
    polish = .false.
    ! a matrix built for another step size is not kept (its h enters every block)
    refresh = .not. (w%have_lu .and. h == w%h_lu)
    call w%nc%start()
    status = NEWTON_DIVERGED
    do it = 1, maxit + 1
      call gl_residual(model, t, h, q0, p0, l0, w, info)
      if (info /= 0) exit
      if (.not. all(abs(w%e) <= huge(1.0_wp))) then
        info = STATUS_NONFINITE
        exit
      end if
      if (polish) then                 ! the kept iteration after convergence (see above)
        w%dx = -w%e
        call gl_solve(w)
        w%x = w%x + w%dx
        iters = iters + 1
        exit
      end if
      fresh = refresh
      if (fresh) then
        call gl_jacobian(model, t, h, w, info)
        if (info /= 0) exit
        call gl_factor(w, info)
        if (info /= 0) exit
        w%h_lu = h
        nfact = nfact + 1
      end if
      w%dx = -w%e
      call gl_solve(w)
      w%x = w%x + w%dx
      iters = iters + 1
      if (.not. all(abs(w%x) <= huge(1.0_wp))) then
        info = STATUS_NONFINITE
        exit
      end if
      sq = maxabs(w%x(1:w%s * w%n))
      sp = maxabs(w%x(w%s * w%n + 1:m))
      sl = max(sp, abs(h) * maxabs(w%x(m + 1:)))
      amp = max(1.0_wp, w%s**2 * max(sq, maxabs(q0)) / max(maxval(abs(w%x(cq(w, w%s) + 1:cq(w, w%s) + w%n) - q0)), &
                                                         epsilon(1.0_wp) * sq))
      call w%nc%clear()
      call w%nc%group(w%dx(1:w%s * w%n), 1 + sq, sq)
      call w%nc%group(w%dx(w%s * w%n + 1:m), 1 + sp, amp * sp)
      if (m < w%nx) call w%nc%group_max(abs(h) * maxabs(w%dx(m + 1:)), 1 + sl, amp * sl)   ! (no temporary)
      status = w%nc%test(tol, maxit, .not. fresh, can_refresh=.true.)
      if (status == NEWTON_DIVERGED) exit
      if (status == NEWTON_CONVERGED) then
        ! a fresh matrix, or an increment at the round-off floor: nothing left to polish
        if (fresh .or. w%nc%at_floor) exit
        polish = .true.
      end if
      refresh = w%nc%refresh .or. (.not. fresh .and. w%nc%theta > THETA_REFRESH)
    end do
    if (info == 0 .and. status /= NEWTON_CONVERGED) info = STATUS_NEWTON_FAILED
    if (info /= 0) w%have_lu = .false.
  end subroutine

  !> LU of the Newton matrix w%jac with the unknowns P_s and lam_0 eliminated, into w%sk.
  !> Their rows are linear with a multiple of the identity for pivot (gl_jacobian): F_s =
  !> P_s - sum_i b_i D_is phat_i + h b_s R_s has dF_s/dP_s = I and no lam_0, L = sum_j lw_j lam_j has
  !> dL/dlam_0 = lw_0 I and no P_s.  So the Schur complement (block Gaussian elimination, Golub &
  !> Van Loan, Matrix Computations, sec. 3.2.10) of that diagonal block is
  !>     S = J_KK - J_KP J_PK - J_K0 J_LK / lw_0,
  !> K the other unknowns (and rows E_0..E_s, F_0..F_{s-1}, C_1..C_s), and P_s enters only the rows
  !> C_s, lam_0 only the rows F_0.  The same Newton step as the whole matrix's LU, on (2s + 1) n + s c
  !> unknowns instead of 2(s + 1) n + (s + 1) c (s = 1 on the snakeboard: 20 instead of 28, the
  !> solve at every iteration about half the work).  info: 0 or STATUS_SINGULAR.
  subroutine gl_factor(w, info)
    type(gl_work_t), intent(inout) :: w
    integer, intent(out) :: info
    integer :: m1, n, c, s, nk, k, i, j, rc, rf, r0
    m1 = (2 * w%s + 1) * w%n                  ! offset of P_s (and of the rows F_s)
    n = w%n; c = w%c; s = w%s; nk = w%nk
    do k = 1, nk                              ! S = J_KK
      j = kfull(k)
      do i = 1, m1
        w%sk(i, k) = w%jac(i, j)
      end do
      do i = m1 + 1, nk
        w%sk(i, k) = w%jac(i + n, j)
      end do
    end do
    if (c > 0) then
      rc = cl(w, s) - n                       ! rows C_s in S: - J(C_s, P_s) J(F_s, K)
      do k = 1, nk
        j = kfull(k)
        do i = 1, c
          w%sk(rc + i, k) = w%sk(rc + i, k) - dot_product(w%jac(cl(w, s) + i, m1 + 1:m1 + n), w%jac(m1 + 1:m1 + n, j))
        end do
      end do
    end if
    if (c > 0 .and. w%variant == GL_REDUCED) then
      rf = (s + 1) * n                        ! rows F_0: - J(F_0, lam_0) J(L, K) / lw_0
      r0 = cl0(w)
      do k = 1, nk
        j = kfull(k)
        do i = 1, n
          w%sk(rf + i, k) = w%sk(rf + i, k) - dot_product(w%jac(rf + i, r0 + 1:r0 + c), w%jac(r0 + 1:r0 + c, j)) / w%lw(0)
        end do
      end do
    end if
    do k = 1, nk                              ! kept for gl_solve (transposed: one dot product per P_s)
      w%fk(k, :) = w%jac(m1 + 1:m1 + n, kfull(k))
    end do
    if (c > 0) w%gcp = w%jac(cl(w, s) + 1:cl(w, s) + c, m1 + 1:m1 + n)
    if (c > 0 .and. w%variant == GL_REDUCED) w%g0 = w%jac((s + 1) * n + 1:(s + 2) * n, cl0(w) + 1:cl0(w) + c) / w%lw(0)
    call dense_lu_factor(w%sk, w%ipiv, info)
    w%have_lu = info == 0
    if (info /= 0) info = STATUS_SINGULAR
  contains
    pure integer function kfull(k)      ! column of w%jac of the k-th kept unknown
      integer, intent(in) :: k
      kfull = merge(k, k + n, k <= m1)
    end function
  end subroutine

  !> w%dx <- w%jac^{-1} w%dx with the factors of gl_factor: the right-hand side of S (P_s and
  !> lam_0 eliminated from the rows C_s and F_0), the kept unknowns, then P_s from F_s and lam_0
  !> from L (see gl_factor).  The work in elim_solve, on explicit-shape arrays (at every Newton
  !> iteration: through the workspace's components the loops cost several times their arithmetic).
  subroutine gl_solve(w)
    type(gl_work_t), intent(inout) :: w
    integer :: nl0
    nl0 = merge(w%c, 0, w%variant == GL_REDUCED)
    call elim_solve(w%n, w%c, w%s, nl0, w%nk, w%fk, w%gcp, w%g0, w%lw, w%sk, w%ipiv, w%dx, w%y)
  end subroutine

  !> The solve of gl_solve: dx = (phat-and-q part (m1) | P_s (n) | lam_1..lam_s (s c) | lam_0 (nl0)).
  !> fk = J(F_s, K)^T, gcp = J(C_s, P_s), g0 = J(F_0, lam_0) / lw_0 (kept by gl_factor).
  subroutine elim_solve(n, c, s, nl0, nk, fk, gcp, g0, lw, sk, ipiv, dx, y)
    integer, intent(in) :: n, c, s, nl0, nk, ipiv(nk)
    real(wp), intent(in) :: fk(nk, n), gcp(c, n), g0(n, c), lw(0:s), sk(nk, nk)
    real(wp), intent(inout) :: dx((2 * s + 2) * n + s * c + nl0)
    real(wp), intent(out) :: y(nk)
    integer :: m1, rc, rf, r0, i, j, k
    real(wp) :: acc
    m1 = (2 * s + 1) * n
    rc = m1 + n + (s - 1) * c                 ! rows C_s
    rf = (s + 1) * n                          ! rows F_0
    r0 = m1 + n + s * c                       ! lam_0, rows L
    do k = 1, n                               ! r_K -= J_KP r_{F_s}: rows C_s
      do i = 1, c
        dx(rc + i) = dx(rc + i) - gcp(i, k) * dx(m1 + k)
      end do
    end do
    do k = 1, nl0                             ! r_K -= J_K0 r_L / lw_0: rows F_0
      do i = 1, n
        dx(rf + i) = dx(rf + i) - g0(i, k) * dx(r0 + k)
      end do
    end do
    do j = 1, m1
      y(j) = dx(j)
    end do
    do j = m1 + 1, nk
      y(j) = dx(j + n)
    end do
    call dense_lu_solve(sk, ipiv, y)
    do j = 1, m1
      dx(j) = y(j)
    end do
    do j = m1 + 1, nk
      dx(j + n) = y(j)
    end do
    do i = 1, n                               ! P_s = r_{F_s} - J(F_s, K) x_K
      acc = 0
      do j = 1, nk
        acc = acc + fk(j, i) * y(j)
      end do
      dx(m1 + i) = dx(m1 + i) - acc
    end do
    if (nl0 > 0) then                         ! lam_0 = (r_L - sum_{j >= 1} lw_j lam_j) / lw_0
      do j = 1, s
        do i = 1, c
          dx(r0 + i) = dx(r0 + i) - lw(j) * dx(m1 + n + (j - 1) * c + i)
        end do
      end do
      dx(r0 + 1:r0 + c) = dx(r0 + 1:r0 + c) / lw(0)
    end if
  end subroutine

  !> Options: iopt = [s, variant, maxit], ropt = [tol, lam_0 (mn)]: the start multiplier is
  !> an option (pyint/methods/galerkin.py: the consistent one of (q0, v0), or a step's end when a test
  !> restarts from it).  The start: P_0 = M(q0) v0, v = H_p(q0, P_0); the predictor of the
  !> first step: a straight line in q, constant momentum and lam.
  subroutine gl_init(self, s, info)
    class(gl_stepper_t), intent(inout) :: self
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    real(wp) :: mq(self%nq, self%nq)
    integer :: n, c, j
    self%naux = self%nq                ! the momenta
    allocate(self%p(self%nq))
    self%nxs = 0
    n = self%nq; c = self%model%mn
    if (.not. self%options_fit(nstats=NSTATS_GALERKIN, niopt=NIOPT_GALERKIN, nropt=NROPT_GALERKIN + c, info=info)) return
    self%tol = self%ropt(ROPT_GALERKIN_TOL)
    self%maxit = self%iopt(IOPT_GALERKIN_MAXIT)
    if (self%maxit < 1) return
    call gl_work_init(self%w, self%model, self%iopt(IOPT_GALERKIN_STAGES), self%iopt(IOPT_GALERKIN_VARIANT), s%q, info)
    if (info /= 0) return
    allocate(self%xs1(self%w%nx), self%xs2(self%w%nx), self%xs3(self%w%nx))
    s%lam = self%ropt(ROPT_GALERKIN_LAMBDA0:ROPT_GALERKIN_LAMBDA0 + c - 1)
    call self%model%mass(s%q, mq)
    self%p = matmul(mq, s%v)
    call dual_grad(self%model, s%t, s%q, self%p, self%w%dw, s%v, self%w%tmp, info)
    if (info /= 0) return
    associate (w => self%w)
      do j = 1, w%s
        w%x(cq(w, j) + 1:cq(w, j) + n) = s%q + w%d(j) * self%h * s%v
        w%x(cl(w, j) + 1:cl(w, j) + c) = s%lam
      end do
      if (w%variant == GL_REDUCED) w%x(cl0(w) + 1:cl0(w) + c) = s%lam
      do j = 0, w%s + 1
        w%x(cp(w, j) + 1:cp(w, j) + n) = self%p
      end do
    end associate
  end subroutine

  !> One step from (q, P, lam) to (q_s, P_s, lam_s); v = H_p(q_s, P_s).  After it P_s gets
  !> one Newton correction onto A(q_s) H_p(q_s, P) + b = 0, and the predictor of the next
  !> step is extrapolated from this one (see below).
  subroutine gl_advance(self, h, t1, s, info)
    class(gl_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    integer :: iters, nfact, n, j, m
    n = self%nq
    associate (w => self%w, model => self%model, p => self%p, q => s%q, v => s%v, lam => s%lam, &
               dp => self%w%dp, v0 => self%w%v0, dl => self%w%dl)
      if (self%nxs > 0 .and. h /= self%h_pred) then      ! predicted for another h: positions
        do j = 1, w%s                                     ! along v, the extrapolation restarted
          w%x(cq(w, j) + 1:cq(w, j) + n) = q + w%d(j) * h * v
        end do
        self%nxs = 0
      end if
      self%h_pred = h
      v0 = v
      call gl_newton(model, s%t, h, q, p, lam, self%tol, self%maxit, w, iters, nfact, info)
      self%stats(STAT_GALERKIN_NEWTON_ITERATIONS) = self%stats(STAT_GALERKIN_NEWTON_ITERATIONS) + iters
      self%stats(STAT_GALERKIN_JACOBIAN_FACTORIZATIONS) = self%stats(STAT_GALERKIN_JACOBIAN_FACTORIZATIONS) + nfact
      self%stats(STAT_GALERKIN_MAX_NEWTON_ITERATIONS) = max(self%stats(STAT_GALERKIN_MAX_NEWTON_ITERATIONS), real(iters, wp))
      if (info /= 0) return
      ! the new point is the solution itself (q + (q_s - q) may differ from q_s by an
      ! ulp of q, which would put round-off of the size of |q| eps into the constraint)
      dp = w%x(cp(w, w%s + 1) + 1:cp(w, w%s + 1) + n) - p
      do j = 1, w%s                                       ! the step's increments q_j - q (predictor)
        w%dx(cq(w, j) + 1:cq(w, j) + n) = w%x(cq(w, j) + 1:cq(w, j) + n) - q
      end do
      q = w%x(cq(w, w%s) + 1:cq(w, w%s) + n)
      p = w%x(cp(w, w%s + 1) + 1:cp(w, w%s + 1) + n)
      dl = w%x(cl(w, w%s) + 1:cl(w, w%s) + w%c) - lam     ! the multiplier's change over the step
      lam = w%x(cl(w, w%s) + 1:cl(w, w%s) + w%c)
      ! constraint at the new point with the canonical momentum
      call dual_vel(model, t1, q, p, w%dw, v, w%tmp, info)
      if (w%c > 0) then
        call nh_start(model, w, t1, q)
        ! Newton's last update of q_s is rounded to an ulp of q_s (4.5e-13 at |theta| ~ 4000): one
        ! Newton step on P_s alone, P <- P - H_pp A^T (A H_pp A^T)^{-1} (A H_p + b), brings the
        ! constraint back to round-off at the stored point (a change of P at the level of that ulp).
        ! H_pp = M^{-1} for a constant M, kept by the dual form (no force Jacobian)
        if (w%dw%const_mass) then
          call momentum_correction(n, w%c, w%an(:, :, 0), w%bn(:, 0), w%dw%minv, v, p, w%mu, w%kc, w%ipc, info)
        else
          call dual_hess(model, t1, q, p, w%dw, w%hpq, w%hpp, w%hqq, w%hqp, info)
          if (info == 0) call momentum_correction(n, w%c, w%an(:, :, 0), w%bn(:, 0), w%hpp, v, p, w%mu, w%kc, &
                                                  w%ipc, info)
        end if
        if (info == 0) call dual_vel(model, t1, q, p, w%dw, v, w%tmp, info)
        info = 0                    ! A H_pp A^T singular (rank drop of A): no correction
        call constraint_value(n, w%c, w%an(:, :, 0), w%bn(:, 0), v, w%mu)
        self%stats(STAT_GALERKIN_MAX_CONSTRAINT_RESIDUAL) = max(self%stats(STAT_GALERKIN_MAX_CONSTRAINT_RESIDUAL), &
                                                                maxval(abs(w%mu)))
      end if
      ! predictor of the next step (the start of simplified Newton, whose iteration count grows
      ! with its error).  Momenta and multipliers: each control point extrapolated from its
      ! values at the last steps (linearly, quadratically, then cubically once four are held,
      ! error O(h^4); at the first step shifted by the step's change of P and of the nodal lam_s).
      ! Shifting them by the change of P alone left h^2 p'' and the difference between the changes
      ! of P and of phat (phat ~ P - h R / 2 for s = 1): 1e-5 of |P| on the snakeboard at h = 1e-3.
      ! Positions: for the first two steps from the velocity extrapolated linearly through the
      ! step's ends, q(t1 + d h) ~ q + d h v + (d h)^2 / 2 (v - v0) / h, error O(h^3) (the control
      ! points shifted by the step's increment left d h (v - v0) = O(h^2): 4e-5 of |q| there);
      ! then their increments q_j - q_0 over the step extrapolated as the momenta (O(h) values:
      ! no cancellation against |q|), error O(h^4).  On the snakeboard at h = 1e-3 the cubic
      ! extrapolation took s = 1 from 5.8 to 4.6 Newton iterations a step (the quadratic one,
      ! O(h^3): each factor 100 of the predictor's error costs one iteration, the contraction
      ! of the kept matrix being ~0.01).  The extrapolation assumes the next step has this h:
      ! gl_advance restarts it when h changes.
      m = w%s * n
      w%dx(m + 1:) = w%x(m + 1:)                          ! this step's solution (its q part: w%dx(1:m))
      select case (self%nxs)
      case (0)
        do j = 0, w%s + 1
          w%x(cp(w, j) + 1:cp(w, j) + n) = w%x(cp(w, j) + 1:cp(w, j) + n) + dp
        end do
        do j = 1, w%s
          w%x(cl(w, j) + 1:cl(w, j) + w%c) = w%x(cl(w, j) + 1:cl(w, j) + w%c) + dl
        end do
        if (w%variant == GL_REDUCED) w%x(cl0(w) + 1:cl0(w) + w%c) = w%x(cl0(w) + 1:cl0(w) + w%c) + dl
      case (1)
        w%x(m + 1:) = 2 * w%dx(m + 1:) - self%xs1(m + 1:)
      case (2)
        w%x = 3 * (w%dx - self%xs1) + self%xs2
      case default
        w%x = 4 * (w%dx + self%xs2) - 6 * self%xs1 - self%xs3
      end select
      self%xs3 = self%xs2
      self%xs2 = self%xs1
      self%xs1 = w%dx
      self%nxs = min(self%nxs + 1, NPRED)
      if (self%nxs <= 2) then
        do j = 1, w%s
          w%x(cq(w, j) + 1:cq(w, j) + n) = q + w%d(j) * h * v + (0.5_wp * w%d(j)**2 * h) * (v - v0)
        end do
      else
        do j = 1, w%s
          w%x(cq(w, j) + 1:cq(w, j) + n) = q + w%x(cq(w, j) + 1:cq(w, j) + n)
        end do
      end if
    end associate
  end subroutine

  !> One Newton step on P alone onto A v + b = 0, v = H_p: P <- P - A^T (A H_pp A^T)^{-1} (A v + b)
  !> (gl_advance; mu, kc, ipc scratch).  info: 0, or /= 0 when A H_pp A^T is singular (P unchanged).
  subroutine momentum_correction(n, c, a, bb, hpp, v, p, mu, kc, ipc, info)
    integer, intent(in) :: n, c
    real(wp), intent(in) :: a(c, n), bb(c), hpp(n, n), v(n)
    real(wp), intent(inout) :: p(n)
    real(wp), intent(out) :: mu(c), kc(c, c)
    integer, intent(out) :: ipc(c), info
    real(wp) :: ha(n)
    integer :: i, j, k
    call constraint_value(n, c, a, bb, v, mu)
    do j = 1, c                                ! kc = A H_pp A^T, column by column
      ha = 0
      do k = 1, n
        ha = ha + hpp(:, k) * a(j, k)
      end do
      do i = 1, c
        kc(i, j) = dot_product(a(i, :), ha)
      end do
    end do
    call dense_lu_factor(kc, ipc, info)       ! c x c: plain loops when small (pyint_linalg)
    if (info /= 0) return
    call dense_lu_solve(kc, ipc, mu)
    do k = 1, n
      p(k) = p(k) - dot_product(mu, a(:, k))
    end do
  end subroutine

  !> r = A v + b.
  pure subroutine constraint_value(n, c, a, bb, v, r)
    integer, intent(in) :: n, c
    real(wp), intent(in) :: a(c, n), bb(c), v(n)
    real(wp), intent(out) :: r(c)
    integer :: k
    r = bb
    do k = 1, n
      r = r + a(:, k) * v(k)
    end do
  end subroutine

  !> The residuals of a sample (the columns of metrics.f90) the method defines: |A v + b|
  !> (no holonomic constraints; no acceleration variable: pyint/methods/galerkin.py reports the
  !> acceleration levels as NaN) and the energy.
  subroutine gl_residuals(self, s, res, energy)
    class(gl_stepper_t), intent(inout) :: self
    type(state_t), intent(in) :: s
    real(wp), intent(out) :: res(:), energy
    res = 0
    energy = 0
    if (self%w%c > 0) then
      call nh_start(self%model, self%w, s%t, s%q)
      res(4) = inf_norm(matmul(self%w%an(:, :, 0), s%v) + self%w%bn(:, 0))
    end if
    if (self%model%has_energy) energy = self%model%energy(s%t, s%q, s%v)
  end subroutine

  !> The auxiliary vector of a sample: the canonical momentum P.
  subroutine gl_aux(self, s, aux)
    class(gl_stepper_t), intent(inout) :: self
    type(state_t), intent(in) :: s
    real(wp), intent(out) :: aux(:)
    aux = self%p
  end subroutine

end module galerkin
