!> The base of the Lie-group steppers on (R^3 x SO(3))^nb (fortran/core/driver.f90): the
!> configuration of rigid body i is (x_i, R_i), kept in the driver's state as
!> q(12 (i-1) + 1 : 12 i) = (x_i, R_i row by row) (nq = 12 nb, pyint's RigidBodySystem.pack),
!> the velocity V = (v_i world, Omega_i body) (nv = 6 nb), the multipliers of the m joint rows.
!> The model is a rigid_system_t read from (ipar, rpar) (pyint_rigid); the residuals per
!> step and sample are |Phi|, |B V|, |B A + Bdot V| and max_i |R_i^T R_i - I|_F, the energy
!> the total energy, over every joint row (a redundant system runs on the independent rows
!> lie_start keeps: rigid_drop_redundant_rows).  For the implicit Lie steppers (lie_genalpha.f90, lie_backward.f90): the
!> configuration (x, R) kept unpacked, their start (lie_start), their Newton iteration (newton)
!> and its workspace (lie_newton_work_t).
module pyint_lie_stepper
  use pyint_kinds
  use pyint_callback_model, only: usercb_i
  use pyint_driver, only: stepper_t, state_t
  use pyint_rigid, only: rigid_system_t, rigid_system_new, rigid_sample_residuals, rigid_mass_matrix, &
                         rigid_consistent_acc, rigid_advance, rigid_drop_redundant_rows, rigid_project, &
                         rigid_phi_all, rigid_bmat_all, rigid_bmat, PROJECT_INCONSISTENT_POSITION, &
                         PROJECT_INCONSISTENT_VELOCITY, PROJECT_TOL_DEPENDENT
  use pyint_so3, only: hat
  use pyint_newton_control, only: newton_control_t, newton_increment
  ! the Lie family (lie_backward, lie_genalpha) shares this stats layout
  use pyint_seam, only: TOL_LIE_NEAR_SINGULAR
  use pyint_seam, only: STAT_LIE_BACKWARD_JACOBIAN_FACTORIZATIONS, STAT_LIE_BACKWARD_MAX_NEWTON_ITERATIONS, &
                        STAT_LIE_BACKWARD_NEWTON_ITERATIONS
  implicit none
  private
  public :: lie_stepper_t, lie_work_init, lie_unpack, lie_pack, lie_checked_start, RIGID_MODEL_ID

  !> Near a singular configuration: sigma_min / sigma_max of the kept rows of B below this
  !> (seam/seam.toml's lie_near_singular, the test of pyint.methods.lie.integrator's singular_note too)
  real(wp), parameter :: NEAR_SINGULAR = TOL_LIE_NEAR_SINGULAR

  !> The model id of a rigid-body system in the driver's model block (pyint.lie_integrator).
  integer, parameter :: RIGID_MODEL_ID = -1

  !> The Newton workspace of an implicit Lie step (a method adds its own blocks): the unknowns
  !> z (nz), their increment dz, the residual res and its matrix jac (LU in place, pivots ipiv),
  !> the termination rule nc (carried across steps), the mass matrix mm, the increment psi
  !> and the iterate's configuration (x1, R1) = (x, R) o exp(psi), and
  !> scratch: the force qf, an nv x nv block kvv (Q_V, (B^T lam)_q) and an m x nv block kmv.
  type :: lie_newton_work_t
    integer :: nv = 0, m = 0, nz = 0
    type(newton_control_t) :: nc
    real(wp), allocatable :: z(:), dz(:), res(:), jac(:, :), mm(:, :), kvv(:, :), kmv(:, :), qf(:), psi(:)
    real(wp), allocatable :: x1(:, :), r1(:, :, :)
    integer, allocatable :: ipiv(:)
  end type

  !> A Lie stepper: an implicit step whose unknowns (w%z) solve one Newton iteration (newton),
  !> the method's residual and matrix (newton_eval) and its increment's groups (newton_measure).
  type, abstract, extends(stepper_t) :: lie_stepper_t
    type(rigid_system_t) :: sys
    real(wp), allocatable :: x(:, :), r(:, :, :)   !< the state's configuration (x_i, R_i) (lie_start)
    type(lie_newton_work_t) :: w                   !< the Newton workspace (lie_work_init)
    integer :: maxit = 1                           !< Newton's options (the method's init reads them)
    real(wp) :: tol = 0
  contains
    procedure :: setup => lie_setup
    procedure :: residuals => lie_residuals
    procedure :: rate => lie_rate
    procedure :: euler => lie_euler
    procedure :: lie_start
    procedure :: newton => lie_newton
    procedure(lie_eval_i), deferred :: newton_eval
    procedure(lie_measure_i), deferred :: newton_measure
    procedure :: residual_at_floor => lie_no_floor
  end type

  abstract interface
    !> The residual w%res and its matrix w%jac at the iterate w%z; u, u2: the step's two
    !> known velocity vectors (as the method names them).
    subroutine lie_eval_i(self, h, u, u2)
      import :: lie_stepper_t, wp
      class(lie_stepper_t), intent(inout) :: self
      real(wp), intent(in) :: h, u(:), u2(:)
    end subroutine
    !> The groups of the increment w%dz (w%nc%group), each against its scale and floor.
    subroutine lie_measure_i(self, h)
      import :: lie_stepper_t, wp
      class(lie_stepper_t), intent(inout) :: self
      real(wp), intent(in) :: h
    end subroutine
  end interface

contains

  !> The rigid system of (ipar, rpar) (model_id = RIGID_MODEL_ID; usercb, mflags unused); n: the
  !> velocity dimension 6 nb, mh: the joint rows m (checked).
  subroutine lie_setup(self, model_id, ipar, rpar, usercb, n, mh, mn, mflags, info)
    class(lie_stepper_t), intent(inout) :: self
    integer, intent(in) :: model_id, n, mh, mn
    integer, intent(in) :: ipar(:), mflags(:)
    real(wp), intent(in) :: rpar(:)
    procedure(usercb_i) :: usercb
    integer, intent(out) :: info
    info = 3
    if (model_id /= RIGID_MODEL_ID) return
    call rigid_system_new(ipar, rpar, self%sys, info)
    if (info /= 0) return
    if (self%sys%nv /= n .or. self%sys%m /= mh .or. mn /= 0) then
      info = 2
      return
    end if
    self%nq = 12 * self%sys%nb; self%nv = self%sys%nv; self%nl = self%sys%m
    self%nres = 4
  end subroutine

  subroutine lie_residuals(self, s, res, energy)
    class(lie_stepper_t), intent(inout) :: self
    type(state_t), intent(in) :: s
    real(wp), intent(out) :: res(:), energy
    real(wp) :: x(3, self%sys%nb), r(3, 3, self%sys%nb)
    call lie_unpack(s%q, x, r)                  ! every joint row, the dropped ones of a redundant system too
    call rigid_sample_residuals(self%sys, x, r, s%v, s%a, res, energy)
  end subroutine

  !> The starting step's probe (driver: drive_adaptive): qd = dq/dt of the packed q (x_i' = v_i,
  !> R_i' = R_i hat(Omega_i)) and a = Vdot from the index-3 system at (q, V).
  subroutine lie_rate(self, t, q, v, qd, a, info)
    class(lie_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: t, q(:), v(:)
    real(wp), intent(out) :: qd(:), a(:)
    integer, intent(out) :: info
    real(wp) :: x(3, self%sys%nb), r(3, 3, self%sys%nb), rd(3, 3, self%sys%nb), lam(self%sys%m)
    integer :: i
    call lie_unpack(q, x, r)
    do i = 1, self%sys%nb
      x(:, i) = v(6 * i - 5:6 * i - 3)
      rd(:, :, i) = matmul(r(:, :, i), hat(v(6 * i - 2:6 * i)))
    end do
    call lie_pack(x, rd, qd)
    call rigid_consistent_acc(self%sys, r, v, a, lam, info)
  end subroutine

  !> The starting step's Euler step on the group: q o exp(h V), V + h a.
  subroutine lie_euler(self, q, v, h, a, q1, v1)
    class(lie_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: q(:), v(:), h, a(:)
    real(wp), intent(out) :: q1(:), v1(:)
    real(wp) :: x(3, self%sys%nb), r(3, 3, self%sys%nb), x1(3, self%sys%nb), r1(3, 3, self%sys%nb)
    call lie_unpack(q, x, r)
    call rigid_advance(self%sys, x, r, h * v, x1, r1)
    call lie_pack(x1, r1, q1)
    v1 = v + h * a
  end subroutine

  !> The start of a Lie stepper's init, before anything sized by the joint rows: (x, R) from the
  !> state's q; a redundant system's independent rows (rigid_drop_redundant_rows: self%sys then
  !> has m = r kept rows, self%rows lists them for the driver, which scatters lam into every row
  !> and reports the others as redundant; s%lam has r entries); then V'(t0) = s%a and lam = s%lam
  !> from the index-3 system at (q, V) (rigid_consistent_acc).  info /= 0: a singular start
  !> (STATUS_RANK_DEFICIENT: a singular configuration; STATUS_SINGULAR: the index-3 matrix).
  subroutine lie_start(self, s, info)
    class(lie_stepper_t), intent(inout) :: self
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    integer :: r0, r1
    allocate(self%x(3, self%sys%nb), self%r(3, 3, self%sys%nb))
    call lie_unpack(s%q, self%x, self%r)
    call rigid_drop_redundant_rows(self%sys, self%x, self%r, info, r0, r1)
    if (info /= 0) return
    if (allocated(self%sys%keep)) then
      self%rows = self%sys%keep
      self%nl = self%sys%m
      deallocate(s%lam)
      allocate(s%lam(self%nl))
    end if
    call rigid_consistent_acc(self%sys, self%r, s%v, s%a, s%lam, info)
  end subroutine

  !> The start of a Lie-group run on the rigid system (ipar, rpar), before any step (fortran/api/api_run.f90,
  !> where a vector model's start levels are checked): the rank test of the joint rows at (q, V)
  !> (rigid_drop_redundant_rows, the one lie_start repeats), then the levels max|Phi|, max|B V| over
  !> every row checked against tol_q, tol_v or, with project, projected onto Phi = 0 and B V = 0 where
  !> they exceed them (rigid_project on the kept rows, M-orthogonal; q and V replaced).
  !> start = [max|Phi|, max|B V|, code, a, b, c] for pyint/models/rigid_states.py to word a refusal
  !> (info = STATUS_BAD_INPUT): code 0 the levels (as given) exceed the tolerances; STATUS_RANK_DEFICIENT
  !> a singular configuration (a, b: the ranks of B at q and nearby); rigid_project's failure (the levels
  !> as reached; for inconsistent joints a = the first dependent row (1-based) still violated, b its
  !> residual, c the number of such rows).  A system (ipar, rpar) that does not decode, or sizes that
  !> do not fit, are left to the stepper's setup (info = 0).
  subroutine lie_checked_start(ipar, rpar, q, v, tol_q, tol_v, project, start, info)
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:), tol_q, tol_v
    logical, intent(in) :: project
    real(wp), intent(inout) :: q(:), v(:)
    real(wp), intent(out) :: start(6)
    integer, intent(out) :: info
    type(rigid_system_t) :: s
    real(wp), allocatable :: x(:, :), r(:, :, :), res(:), bm(:, :)
    logical, allocatable :: dropped(:)
    integer :: rank0, rank1, i
    real(wp) :: scale_q, scale_v, tol
    start = 0
    call rigid_system_new(ipar, rpar, s, info)
    if (info /= 0) then
      info = 0
      return
    end if
    if (size(q) /= 12 * s%nb .or. size(v) /= s%nv) return
    allocate(x(3, s%nb), r(3, 3, s%nb), res(s%mall), bm(s%mall, s%nv), dropped(s%mall))
    call lie_unpack(q, x, r)
    call rigid_drop_redundant_rows(s, x, r, info, rank0, rank1)
    if (info /= 0) then
      start(3:5) = [real(STATUS_RANK_DEFICIENT, wp), real(rank0, wp), real(rank1, wp)]
      info = STATUS_BAD_INPUT
      return
    end if
    call levels()
    if (.not. project) then
      if (.not. (start(1) <= tol_q .and. start(2) <= tol_v)) info = STATUS_BAD_INPUT
      return
    end if
    scale_q = max(1.0_wp, maxval(abs(x)))        ! the start's scales, as rigid_project measures them
    scale_v = max(1.0_wp, maxval(abs(v)))
    call rigid_project(s, x, r, v, tol_q, tol_v, info)
    if (info /= 0) then
      start(3) = info
      call levels()
      if (info == PROJECT_INCONSISTENT_POSITION .or. info == PROJECT_INCONSISTENT_VELOCITY) then
        ! the dependent rows left violated at that level (the kept ones hold; the scales of the start)
        if (info == PROJECT_INCONSISTENT_POSITION) then
          call rigid_phi_all(s, x, r, res)
          tol = max(tol_q, PROJECT_TOL_DEPENDENT * scale_q)
        else
          res = matmul(bm, v)
          tol = max(tol_v, PROJECT_TOL_DEPENDENT * scale_v)
        end if
        dropped = .true.
        if (allocated(s%keep)) then
          dropped(s%keep) = .false.
        else
          dropped = .false.
        end if
        dropped = dropped .and. abs(res) > tol
        start(6) = count(dropped)
        do i = 1, s%mall
          if (dropped(i)) then
            start(4:5) = [real(i, wp), res(i)]
            exit
          end if
        end do
      end if
      info = STATUS_BAD_INPUT
      return
    end if
    call lie_pack(x, r, q)

  contains

    !> start(1:2) = max|Phi|, max|B V| over every row at (x, R, V); bm = B there.
    subroutine levels()
      call rigid_phi_all(s, x, r, res)
      call rigid_bmat_all(s, r, bm)
      start(1) = maxval(abs(res), mask=.true.)
      start(2) = maxval(abs(matmul(bm, v)), mask=.true.)
      if (s%mall == 0) start(1:2) = 0
    end subroutine

  end subroutine

  !> Is w%res (at the iterate newton_eval left; u, u2 as newton_eval's) at its round-off floor?  A
  !> method that knows its residual's scales overrides this (lie_newton); the default never says so.
  logical function lie_no_floor(self, h, u, u2)
    class(lie_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, u(:), u2(:)
    lie_no_floor = .false.
  end function

  !> Allocate the common part of a Lie step's Newton workspace for nz unknowns (fresh w) and
  !> set its mass matrix.
  subroutine lie_work_init(w, s, nz)
    type(lie_newton_work_t), intent(inout) :: w
    type(rigid_system_t), intent(in) :: s
    integer, intent(in) :: nz
    w%nv = s%nv; w%m = s%m; w%nz = nz
    allocate(w%z(nz), w%dz(nz), w%res(nz), w%jac(nz, nz), w%ipiv(nz), w%mm(s%nv, s%nv), w%kvv(s%nv, s%nv), &
             w%kmv(s%m, s%nv), w%qf(s%nv), w%psi(s%nv), w%x1(3, s%nb), w%r1(3, 3, s%nb))
    call rigid_mass_matrix(s, w%mm)
  end subroutine

  !> Newton's method (a fresh matrix at every iterate) on w%z from its start value, the one
  !> termination rule (pyint_newton_control); the iterations into the stats = [iterations,
  !> factorizations, max iterations in a step].  info: 0, STATUS_NEWTON_FAILED, STATUS_SINGULAR,
  !> STATUS_NONFINITE.
  !> Next to a singular configuration of the joints (B loses rank: the mechanism's mobility
  !> jumps) the Newton matrix is ill conditioned along the direction of the branch that crosses
  !> there: the residual reaches its round-off floor, the increments stay at cond(J) eps (above
  !> the rule's stagnation test) and the iteration runs to maxit.  Only then, if an iterate's
  !> residual (from the third on) was at its round-off floor (residual_at_floor: the equations hold as far as the
  !> arithmetic evaluates them), that iterate is the step's solution (the last such one): a
  !> backward-stable answer, not a failure.  A run that converges is not changed.
  !> A failure with B's kept rows at the last iterate near rank loss (lie_near_singular) sets
  !> self%near_singular: drive_adaptive then tries a longer step from the same start, across.
  !> (A Tikhonov-filtered retry of the iteration, mu = 1e-10 ... 1e-6 of s_1 of the equilibrated
  !> matrix, rescued a few such steps on IFToMM A02 in space but not the run: the variable-step run
  !> still stopped at a crossing, and with the step across it changed no step over 20 s.)
  subroutine lie_newton(self, h, u, u2, info)
    class(lie_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, u(:), u2(:)
    integer, intent(out) :: info
    integer :: it, iters
    real(wp) :: zfloor(size(self%w%z))
    logical :: floor
    iters = 0
    floor = .false.
    info = STATUS_NEWTON_FAILED
    call self%w%nc%start()
    do it = 1, self%maxit
      call self%newton_eval(h, u, u2)
      if (it >= 3) then            ! a converging step has mostly stopped by then: it pays nothing
        if (self%residual_at_floor(h, u, u2)) then
          floor = .true.
          zfloor = self%w%z
        end if
      end if
      call newton_increment(self%w%res, self%w%jac, self%w%ipiv, self%w%dz, self%w%z, info)
      if (info /= 0) exit
      iters = iters + 1
      call self%w%nc%clear()
      call self%newton_measure(h)
      if (self%w%nc%done(self%tol, self%maxit, info)) exit
      info = STATUS_NEWTON_FAILED
    end do
    if (info == STATUS_NEWTON_FAILED .and. floor) then
      self%w%z = zfloor
      info = 0
    end if
    self%near_singular = .false.
    if (info == STATUS_NEWTON_FAILED .and. self%w%m > 0) self%near_singular = lie_near_singular(self)
    self%stats(STAT_LIE_BACKWARD_NEWTON_ITERATIONS) = self%stats(STAT_LIE_BACKWARD_NEWTON_ITERATIONS) + iters
    self%stats(STAT_LIE_BACKWARD_JACOBIAN_FACTORIZATIONS) = self%stats(STAT_LIE_BACKWARD_JACOBIAN_FACTORIZATIONS) + iters
    self%stats(STAT_LIE_BACKWARD_MAX_NEWTON_ITERATIONS) = max(self%stats(STAT_LIE_BACKWARD_MAX_NEWTON_ITERATIONS), real(iters, wp))
  end subroutine

  !> sigma_min / sigma_max of the kept rows of B at the last iterate's configuration (w%r1) below
  !> NEAR_SINGULAR: the mechanism is next to a singular configuration (its mobility jumps).
  logical function lie_near_singular(self)
    class(lie_stepper_t), intent(inout) :: self
    real(wp) :: bm(self%w%m, self%w%nv), sv(min(self%w%m, self%w%nv)), dum(1, 1), work(8 * (self%w%m + self%w%nv))
    integer :: info
    lie_near_singular = .false.
    call rigid_bmat(self%sys, self%w%r1, bm)
    call dgesvd('N', 'N', self%w%m, self%w%nv, bm, self%w%m, sv, dum, 1, dum, 1, work, size(work), info)
    if (info /= 0) return
    lie_near_singular = sv(size(sv)) < NEAR_SINGULAR * sv(1)
  end function

  !> (x, R) of every body from the state's q.
  pure subroutine lie_unpack(q, x, r)
    real(wp), intent(in) :: q(:)
    real(wp), intent(out) :: x(:, :), r(:, :, :)
    integer :: i, o
    do i = 1, size(x, 2)
      o = 12 * (i - 1)
      x(:, i) = q(o + 1:o + 3)
      r(:, :, i) = transpose(reshape(q(o + 4:o + 12), [3, 3]))
    end do
  end subroutine

  !> The state's q from (x, R) of every body.
  pure subroutine lie_pack(x, r, q)
    real(wp), intent(in) :: x(:, :), r(:, :, :)
    real(wp), intent(out) :: q(:)
    integer :: i, o
    do i = 1, size(x, 2)
      o = 12 * (i - 1)
      q(o + 1:o + 3) = x(:, i)
      q(o + 4:o + 12) = reshape(transpose(r(:, :, i)), [9])
    end do
  end subroutine

end module pyint_lie_stepper
