!> The Newton termination rule of every implicit kernel (generalized-alpha and
!> alpha-RATTLE, the Lie-group alpha and backward forms, the symplectic
!> composition / RATTLE / Lobatto IIIA-IIIB, the Galerkin variational
!> integrators, the block method): one rule, here.
!>
!> Per iteration k the kernel measures its increment dx_k group by group
!> (positions, velocities, accelerations, multipliers, each against its own
!> scale; rows the kernel scales by 1/h or 1/(beta h^2), the index-2/index-3
!> variables, are measured in the units of the state they change):
!>   nrm_k = max over groups of  max|dx_g| / scale_g            (a max norm)
!> and the rule (Hairer & Wanner, Solving ODEs II, sec. IV.8, as RADAU5):
!>   theta_k = nrm_k / nrm_{k-1}              the observed contraction rate
!>   eta_k   = theta_k / (1 - theta_k)         (k >= 2); in the first iteration
!>   eta_1   = max(eta_old, eps)**0.8          the previous step's rate
!>             (at least 0.1**0.8 with a kept matrix: eta_old may come from
!>             a fresh matrix, whose rate a kept one does not have)
!>   converged   when eta_k nrm_k <= KAPPA tol (the estimated remaining error
!>               theta/(1 - theta) |dx| of a linearly converging iteration,
!>               a fraction KAPPA of the kernel's tol).  With a matrix
!>               evaluated at this iterate (Newton's method) eta_k is at least
!>               1: the increment itself must be below KAPPA tol, and the
!>               error left after it is O(|dx|^2), far below; the carried
!>               rate is a simplified-Newton device (RADAU5's), used only
!>               with a kept matrix.  Methods that keep constraint levels at
!>               round-off rely on this;
!>   round-off   when every group's increment is at most FLOOR eps times its
!>   floor       floor scale (the size of the unknowns, or of what an
!>               increment changes in the state): the increments are noise,
!>               the iteration stops as converged: at once after a fresh
!>               matrix (Newton's error is then ~ |dx|^2); with a kept matrix
!>               when eta <= ETA_FLOOR (or the tolerance test holds); once
!>               its increments stop contracting (theta >= THETA_NOISE) the
!>               kernel is asked for a fresh matrix (c%refresh) or, if it
!>               cannot refresh inside a step (the block method), the
!>               iteration stops.  (A kept
!>               matrix stopped at the floor leaves eta times a floor-level
!>               increment, a bias repeated every step: at the floor of the
!>               index-3 accelerations, eps |q| / (beta h^2), it capped
!>               generalized-alpha at ~4e-10 on stiff_fast.)
!>               No step size fails because its increments reached round-off;
!>   stagnation  (Newton's method, a fresh matrix) theta_k >= THETA_NOISE and
!>               nrm_k <= STAGNATION KAPPA tol: the increments stopped
!>               contracting quadratically, so they are the noise of the linear
!>               solve (cond(J) eps |x|) above the kernel's floor estimate;
!>               converged (as accurate as the arithmetic allows);
!>   diverging   (simplified Newton, a kept matrix) theta_k >= 1, or
!>               theta_k**(maxit - k) / (1 - theta_k) nrm_k > KAPPA tol
!>               (predicted not to converge within maxit): a kernel that can
!>               refresh its matrix inside a step (generalized-alpha) is asked
!>               for a fresh one (c%refresh) and goes on, the others stop; with
!>               a fresh matrix every iteration (Newton's method) only when
!>               maxit is reached.  (Failing on the prediction made alpha-RATTLE
!>               fail on the violent snakeboard at t = 1, h = 0.01, where a
!>               fresh matrix converges in 14 iterations.)
!> The kernels' tol defaults are far below the methods' local errors at any
!> step size in their asymptotic range; KAPPA = 0.1 leaves a further margin
!> (RADAU5: 0.03 ... 0.1 of its error tolerance).
!>
!> Local error (Hairer & Wanner II, sec. IV.8: the iteration error need only be
!> a fraction KAPPA of the local discretization error).  tol is the accuracy
!> floor the rule guarantees at every step size; a kernel that can estimate its
!> method's local error le_g in a group's unknowns (absolute, in the group's
!> units) measures the group against local_error_scale(scale_g, le_g, tol) =
!> max(scale_g, le_g / tol) instead of scale_g: the group then stops when
!>   eta |dx_g| <= KAPPA max(tol scale_g, le_g),
!> the looser of the floor and a tenth of the local error.  le_g -> 0 with h:
!> the Newton error stays a fraction KAPPA of the discretization error at every
!> h (the order is kept) and tol takes over as h -> 0; the rule is never
!> stricter than without le_g.  An estimate made of differences of the unknowns
!> is only trusted (local_error_trusted) when it is at least 1/ETA_FLOOR
!> floor-level increments: round-off in it, even amplified by the method's
!> weakly damped modes, is then a small part of it.  (Generalized-alpha's
!> index-3 accelerations at h = 6e-7 on stiff_fast carry a round-off sawtooth
!> 6 ... 17 floor-level increments high, 100 ... 400 times their true second difference:
!> taken as the local error it let the Newton error grow to 15 times the
!> discretization error.)
!>
!> A kept matrix across a change of step size (variable steps): the iteration
!> matrix of an implicit step is C(x) + cj D(x), cj the coefficient of the
!> derivative (IDA's cj = alpha_s / h; generalized-alpha's M + beta h^2 D_q +
!> gamma h D_v over beta h^2: cj = 1 / (beta h^2)).  A matrix built for cj_old
!> is used at cj_new as long as cj_new / cj_old stays in [CJ_LOW, 1 / CJ_LOW],
!> CJ_LOW = (1 - XRATE) / (1 + XRATE), XRATE = 0.25 (SUNDIALS IDA's test,
!> Hindmarsh et al., ACM TOMS 31 (2005), and DASSL's, Brenan, Campbell,
!> Petzold, Numerical Solution of IVPs in DAEs, sec. 5.2), beyond it the kernel
!> builds a fresh one (keep_matrix).  It is simplified Newton with a wrong
!> matrix and nothing more: the termination test above and its tolerance are
!> the same, so the accuracy is; the contraction rate decides (the rule asks
!> for a fresh matrix on slow contraction, c%refresh, or the kernel stops
!> and retries with one).
module pyint_newton_control
  use pyint_kinds, only: wp, STATUS_NEWTON_FAILED, STATUS_NONFINITE, STATUS_SINGULAR
  use pyint_linalg, only: lu_factor, lu_solve
  implicit none
  private
  public :: newton_control_t, NEWTON_CONTINUE, NEWTON_CONVERGED, NEWTON_DIVERGED, newton_increment
  public :: NEWTON_KAPPA, NEWTON_STAGNATION, NEWTON_FLOOR, maxabs, local_error_scale, local_error_trusted, keep_matrix

  integer, parameter :: NEWTON_CONTINUE = 0, NEWTON_CONVERGED = 1, NEWTON_DIVERGED = 2
  real(wp), parameter :: NEWTON_KAPPA = 0.1_wp
  !> "a few eps": an increment below FLOOR eps of its floor scale is round-off
  real(wp), parameter :: NEWTON_FLOOR = 8.0_wp
  !> a kept matrix at the floor stops when eta <= ETA_FLOOR (what it leaves is a
  !> thousandth of a floor-level increment) or, when the kernel cannot refresh its
  !> matrix inside a step, once its increments stop contracting (theta >= THETA_NOISE)
  real(wp), parameter :: NEWTON_ETA_FLOOR = 1.0e-3_wp
  real(wp), parameter :: NEWTON_THETA_NOISE = 0.5_wp
  !> Newton's method (a fresh matrix every iteration) converges quadratically: when
  !> its increments stop contracting (theta >= THETA_NOISE) they are the noise of the
  !> linear solve, cond(J) eps |x|, which the floor scales of a kernel may
  !> underestimate (the Galerkin matrix's condition grows like s^4 / h: s = 7, 8 at
  !> tol 1e-12 stagnated a few hundred eps above the floor and failed).  Such an
  !> iteration stops as converged when its increment is within STAGNATION times the
  !> tolerance test: the iterate is then as accurate as the arithmetic allows.
  real(wp), parameter :: NEWTON_STAGNATION = 1.0e4_wp
  !> the least eta_1 of an iteration with a kept matrix (the rate of the last
  !> step may come from a fresh one, which contracts far faster)
  real(wp), parameter :: NEWTON_ETA_KEPT = 0.1_wp**0.8_wp
  !> a matrix built for cj_old is kept at cj_new while cj_new / cj_old is within
  !> [CJ_LOW, 1 / CJ_LOW] (IDA's XRATE = 0.25: 0.6, see the header)
  real(wp), parameter :: NEWTON_CJ_LOW = (1 - 0.25_wp) / (1 + 0.25_wp)

  type :: newton_control_t
    real(wp) :: eta = 1         !< the last contraction factor theta/(1-theta), carried across steps
    real(wp) :: theta = 0       !< the last observed contraction rate
    real(wp) :: nrm = 0, nrm_prev = 0
    integer :: it = 0
    logical :: at_floor = .true.
    logical :: refresh = .false.  !< the rule asks the kernel for a fresh matrix at the next iteration
  contains
    procedure :: start => nc_start
    procedure :: clear => nc_clear
    procedure :: group => nc_group
    procedure :: group_max => nc_group_max
    procedure :: test => nc_test
    procedure :: done => nc_done
  end type

contains

  !> max |x|, 0 for an empty x.  In four independent running maxima: maxval's one is a chain of
  !> dependent compares, one element per latency (the driver's max_abs; RATTLE takes some 14 a
  !> step).  A NaN fails every compare, so it is skipped as maxval skips it; a result 0 (every
  !> element 0 or NaN) is maxval's own, which also gives maxval's NaN for an x of NaNs only.
  pure real(wp) function maxabs(x)
    real(wp), intent(in), contiguous :: x(:)
    real(wp) :: m4(4), d
    integer :: i, k, n
    n = size(x)
    m4 = 0
    do i = 1, n - 3, 4
      do k = 1, 4
        d = abs(x(i + k - 1))
        if (d > m4(k)) m4(k) = d
      end do
    end do
    maxabs = max(max(m4(1), m4(2)), max(m4(3), m4(4)))
    do i = 4 * (n / 4) + 1, n
      d = abs(x(i))
      if (d > maxabs) maxabs = d
    end do
    if (maxabs == 0 .and. n > 0) maxabs = maxval(abs(x))
  end function

  !> The scale of a group whose method's local error le (absolute, >= 0) is known:
  !> the group stops at eta |dx| <= KAPPA max(tol scale, le) (see the header).
  pure real(wp) function local_error_scale(scale, le, tol)
    real(wp), intent(in) :: scale, le, tol
    local_error_scale = max(scale, le / tol)
  end function

  !> A local-error estimate d made of differences of unknowns whose round-off
  !> floor scale is floor_scale is trusted when d >= FLOOR eps floor_scale / ETA_FLOOR.
  pure logical function local_error_trusted(d, floor_scale)
    real(wp), intent(in) :: d, floor_scale
    local_error_trusted = d * NEWTON_ETA_FLOOR >= NEWTON_FLOOR * epsilon(1.0_wp) * floor_scale
  end function

  !> May an iteration matrix built for the derivative coefficient cj_old serve at cj_new
  !> (a new step size)?  IDA's cj-ratio test (see the header).
  pure logical function keep_matrix(cj_new, cj_old)
    real(wp), intent(in) :: cj_new, cj_old
    keep_matrix = cj_new >= NEWTON_CJ_LOW * cj_old .and. cj_new * NEWTON_CJ_LOW <= cj_old
  end function

  !> One Newton update z <- z + dz, jac dz = -res (jac is overwritten by its LU factors).
  !> info: 0, STATUS_NONFINITE (res has NaN/Inf) or STATUS_SINGULAR.
  subroutine newton_increment(res, jac, ipiv, dz, z, info)
    real(wp), intent(in) :: res(:)
    real(wp), intent(inout) :: jac(:, :), z(:)
    integer, intent(out) :: ipiv(:), info
    real(wp), intent(out) :: dz(:)
    info = 0
    if (.not. all(abs(res) <= huge(1.0_wp))) then
      info = STATUS_NONFINITE
      return
    end if
    call lu_factor(jac, ipiv, info)
    if (info /= 0) then
      info = STATUS_SINGULAR
      return
    end if
    dz = -res
    call lu_solve(jac, ipiv, dz)
    z = z + dz
  end subroutine

  !> Start the iteration of a step (eta from the previous step's rate, RADAU5).
  subroutine nc_start(c)
    class(newton_control_t), intent(inout) :: c
    c%it = 0
    c%nrm_prev = 0
    c%theta = 0         ! the rate observed in this step (eta carries the last one)
    c%eta = max(c%eta, epsilon(1.0_wp))**0.8_wp
  end subroutine

  !> Start measuring the increment of one iteration.
  subroutine nc_clear(c)
    class(newton_control_t), intent(inout) :: c
    c%nrm = 0
    c%at_floor = .true.
  end subroutine

  !> One group of unknowns: its increment dx, the scale against which it is
  !> measured (|dx| = scale counts as 1), and its floor scale (see above).
  subroutine nc_group(c, dx, scale, floor_scale)
    class(newton_control_t), intent(inout) :: c
    real(wp), intent(in), contiguous :: dx(:)
    real(wp), intent(in) :: scale, floor_scale
    if (size(dx) == 0) return
    call c%group_max(maxval(abs(dx)), scale, floor_scale)
  end subroutine

  !> nc_group of a non-empty group given d = max |dx| over it (a kernel's hot path
  !> computes d in place, without passing a section)
  subroutine nc_group_max(c, d, scale, floor_scale)
    class(newton_control_t), intent(inout) :: c
    real(wp), intent(in) :: d, scale, floor_scale
    c%nrm = max(c%nrm, d / scale)
    c%at_floor = c%at_floor .and. d <= NEWTON_FLOOR * epsilon(1.0_wp) * floor_scale
  end subroutine

  !> The decision after an iteration's increment was measured.  kept: the
  !> iteration matrix was not re-evaluated at this iterate (simplified Newton).
  integer function nc_test(c, tol, maxit, kept, can_refresh) result(status)
    class(newton_control_t), intent(inout) :: c
    real(wp), intent(in) :: tol
    integer, intent(in) :: maxit
    logical, intent(in) :: kept
    logical, intent(in), optional :: can_refresh
    real(wp) :: eta
    logical :: refreshable
    refreshable = .false.
    if (present(can_refresh)) refreshable = can_refresh
    c%it = c%it + 1
    c%refresh = .false.
    status = NEWTON_CONTINUE
    if (.not. (c%nrm <= huge(1.0_wp))) then
      status = NEWTON_DIVERGED
      return
    end if
    if (c%it > 1) then
      c%theta = c%nrm / max(c%nrm_prev, tiny(1.0_wp))
      if (c%theta < 1) c%eta = c%theta / (1 - c%theta)
    else if (kept) then
      c%eta = max(c%eta, NEWTON_ETA_KEPT)
    end if
    eta = c%eta
    if (.not. kept) eta = max(1.0_wp, eta)
    if (c%nrm == 0) then
      status = NEWTON_CONVERGED           ! nothing changed: a fixed point in floating point
    else if (c%at_floor) then
      ! at the floor: a fresh matrix stops at once; a kept one when what it leaves,
      ! eta |dx|, is a thousandth of a floor-level increment or below KAPPA tol;
      ! once its increments stop contracting (theta >= THETA_NOISE: noise) it asks
      ! for a fresh matrix (refreshable) or stops (not refreshable); else it goes on
      if (.not. kept .or. (c%it > 1 .and. c%eta <= NEWTON_ETA_FLOOR)) then
        status = NEWTON_CONVERGED
      else if (c%theta < 1 .and. eta * c%nrm <= NEWTON_KAPPA * tol) then
        status = NEWTON_CONVERGED        ! the tolerance test itself
      else if (c%it >= maxit) then
        status = NEWTON_DIVERGED
      else if (c%it > 1 .and. c%theta >= NEWTON_THETA_NOISE) then
        if (refreshable) then
          c%refresh = .true.
        else
          status = NEWTON_CONVERGED
        end if
      end if
    else if (.not. kept .and. c%it > 1 .and. c%theta >= NEWTON_THETA_NOISE &
             .and. c%nrm <= NEWTON_STAGNATION * NEWTON_KAPPA * tol) then
      status = NEWTON_CONVERGED           ! Newton's method stagnating at the noise of its solve
    else if (c%it > 1 .and. c%theta >= 1) then
      if (c%it >= maxit .or. (kept .and. .not. refreshable)) then
        status = NEWTON_DIVERGED
      else if (kept) then
        c%refresh = .true.                ! a kept matrix that stopped contracting: a fresh one
      end if
    else if (eta * c%nrm <= NEWTON_KAPPA * tol) then
      status = NEWTON_CONVERGED
    else if (c%it >= maxit) then
      status = NEWTON_DIVERGED
    else if (kept .and. c%it > 1) then
      if (c%theta**(maxit - c%it) / (1 - c%theta) * c%nrm > NEWTON_KAPPA * tol) then
        if (refreshable) then
          c%refresh = .true.              ! too slow to converge in time: a fresh matrix
        else
          status = NEWTON_DIVERGED
        end if
      end if
    end if
    if (c%theta >= 1) c%eta = 1
    c%nrm_prev = c%nrm
  end function

  !> The end of an iteration of Newton's method (a fresh matrix at every iterate) whose
  !> increment was measured (group): .true. when the iteration stops (nc%test), with info = 0
  !> (converged) or STATUS_NEWTON_FAILED (diverging, or maxit reached).
  logical function nc_done(c, tol, maxit, info)
    class(newton_control_t), intent(inout) :: c
    real(wp), intent(in) :: tol
    integer, intent(in) :: maxit
    integer, intent(out) :: info
    integer :: status
    status = c%test(tol, maxit, .false.)
    nc_done = status /= NEWTON_CONTINUE
    info = 0
    if (status == NEWTON_DIVERGED) info = STATUS_NEWTON_FAILED
  end function
end module
