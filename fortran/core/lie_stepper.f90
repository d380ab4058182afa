!> The base of the Lie-group steppers on (R^3 x SO(3))^nb (fortran/core/driver.f90): the
!> configuration of rigid body i is (x_i, R_i), kept in the driver's state as
!> q(12 (i-1) + 1 : 12 i) = (x_i, R_i row by row) (nq = 12 nb, pyint's RigidBodySystem.pack),
!> the velocity V = (v_i world, Omega_i body) (nv = 6 nb), the multipliers of the m joint rows.
!> The model is a rigid_system_t read from (ipar, rpar) (pyint_rigid); the residuals per
!> step and sample are |Phi|, |B V|, |B A + Bdot V| and max_i |R_i^T R_i - I|_F, the energy
!> the total energy, over every joint row (a redundant system runs on the independent rows
!> lie_start keeps: rigid_drop_redundant_rows).  For the implicit Lie steppers (lie_genalpha.f90, lie_backward.f90): the
!> configuration (x, R) kept unpacked, their start (lie_start), their Newton iteration (newton)
!> and its workspace (lie_newton_work_t), whose matrix is dense for a small system and otherwise
!> assembled entry by entry from the bodies' 6 x 6 blocks and the joints' rows on their two bodies
!> into a newton_matrix_t (fortran/core/newton_matrix.f90: banded or KLU), by the lie_add_* helpers.
module pyint_lie_stepper
  use pyint_kinds
  use pyint_callback_model, only: usercb_i
  use pyint_driver, only: stepper_t, state_t
  use pyint_rigid, only: rigid_system_t, rigid_system_new, rigid_sample_residuals, rigid_mass_matrix, &
                         rigid_force_v_block, rigid_consistent_acc, rigid_advance, rigid_drop_redundant_rows, rigid_project, &
                         rigid_phi_all, rigid_bmat_all, rigid_bmat, PROJECT_INCONSISTENT_POSITION, &
                         PROJECT_INCONSISTENT_VELOCITY, PROJECT_TOL_DEPENDENT
  use pyint_so3, only: hat, tangent
  use pyint_newton_matrix, only: newton_matrix_t, SOLVER_AUTO, SOLVER_DENSE, SMALL_MAX
  use pyint_newton_control, only: newton_control_t, newton_increment
  ! the Lie family (lie_backward, lie_genalpha) shares this stats layout
  use pyint_seam, only: TOL_LIE_NEAR_SINGULAR
  use pyint_seam, only: STAT_LIE_BACKWARD_JACOBIAN_FACTORIZATIONS, STAT_LIE_BACKWARD_MAX_NEWTON_ITERATIONS, &
                        STAT_LIE_BACKWARD_NEWTON_ITERATIONS
  implicit none
  private
  public :: lie_stepper_t, lie_work_init, lie_unpack, lie_pack, lie_checked_start, RIGID_MODEL_ID
  public :: lie_near_null_split
  public :: lie_newton_work_t, lie_blocks_t, lie_structure_record, lie_structure_setup, lie_tangents, lie_add_mass, &
            lie_add_force_v, lie_add_vv, lie_add_mv, lie_add_vm, lie_add_identity, lie_mass_times, lie_b_times, &
            lie_bt_times

  !> Near a singular configuration: sigma_min / sigma_max of the kept rows of B below this
  !> (seam/seam.toml's lie_near_singular, the test of pyint.methods.lie.integrator's singular_note too)
  real(wp), parameter :: NEAR_SINGULAR = TOL_LIE_NEAR_SINGULAR

  !> The model id of a rigid-body system in the driver's model block (pyint.lie_integrator).
  integer, parameter :: RIGID_MODEL_ID = -1

  !> Where the joints' and bodies' blocks sit (lie_structure_record): rowb(:, r), the bodies a, b
  !> of kept row r (b = 0: the ground); pairs(:, p), the pairs of distinct bodies a joint couples
  !> (each once); tq(:, :, i) = T(psi_theta_i) of the iterate (lie_tangents); m kept rows.
  type :: lie_blocks_t
    integer :: m = 0
    integer, allocatable :: rowb(:, :), pairs(:, :)
    real(wp), allocatable :: tq(:, :, :)
  end type

  !> The Newton workspace of an implicit Lie step (a method adds its own blocks): the unknowns
  !> z (nz), their increment dz, the residual res and its matrix jac (LU in place, pivots ipiv),
  !> the termination rule nc (carried across steps), the mass matrix mm, the increment psi
  !> and the iterate's configuration (x1, R1) = (x, R) o exp(psi), and
  !> scratch: the force qf, an nv x nv block kvv (Q_V, (B^T lam)_q) and an m x nv block kmv.
  !> The structured matrix (structured: lie_structure_record, lie_structure_setup): jm, nx = nz +
  !> the method's auxiliary unknowns (a product such as B(q_n)^T mu kept as an unknown y of its
  !> own, with the rows y - B(q_n)^T mu = 0: the matrix stays as sparse as the joints; the step's
  !> increment is unchanged, the rows' residual being 0), assembled entry by entry from the
  !> joints' and bodies' blocks (lie_add_*): jac is then unused.  solver: the kind used
  !> (pyint_newton_matrix's SOLVER_*; SOLVER_DENSE for jac); blk: where the blocks sit; rhs: the
  !> solve's vector.
  type :: lie_newton_work_t
    integer :: nv = 0, m = 0, nz = 0
    type(newton_control_t) :: nc
    real(wp), allocatable :: z(:), dz(:), res(:), jac(:, :), mm(:, :), kvv(:, :), kmv(:, :), qf(:), psi(:)
    real(wp), allocatable :: x1(:, :), r1(:, :, :)
    integer, allocatable :: ipiv(:)
    logical :: structured = .false.
    integer :: nx = 0, solver = SOLVER_DENSE
    type(newton_matrix_t) :: jm
    type(lie_blocks_t) :: blk
    real(wp), allocatable :: rhs(:)
  end type

  !> A Lie stepper: an implicit step whose unknowns (w%z) solve one Newton iteration (newton),
  !> the method's residual and matrix (newton_eval) and its increment's groups (newton_measure).
  type, abstract, extends(stepper_t) :: lie_stepper_t
    type(rigid_system_t) :: sys
    real(wp), allocatable :: x(:, :), r(:, :, :)   !< the state's configuration (x_i, R_i) (lie_start)
    type(lie_newton_work_t) :: w                   !< the Newton workspace (lie_work_init)
    integer :: maxit = 1                           !< Newton's options (the method's init reads them)
    real(wp) :: tol = 0
    !> Newton's increments from the method's filtered solve (filtered_increment) instead of the Newton
    !> matrix's: a step retaken next to a singular configuration (lie_newton)
    logical :: filtered = .false.
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
    procedure :: filtered_increment => lie_no_filter
    procedure :: finish => lie_finish
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
  !> backward: the test of a step next to a singular configuration instead (lie_newton): the
  !> momentum rows within NEWTON_KAPPA tol of the momenta (the iterate's backward error), the
  !> constraint rows at their floor.
  logical function lie_no_floor(self, h, u, u2, backward)
    class(lie_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, u(:), u2(:)
    logical, intent(in) :: backward
    lie_no_floor = .false.
  end function

  !> The filtered increment (lie_newton with self%filtered) of a method that has none: never asked
  !> for (info = STATUS_SINGULAR).
  subroutine lie_no_filter(self, h, info)
    class(lie_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h
    integer, intent(out) :: info
    info = STATUS_SINGULAR
  end subroutine

  !> The end of a run: the structured matrix's KLU handle (C memory) freed.
  subroutine lie_finish(self)
    class(lie_stepper_t), intent(inout) :: self
    call self%w%jm%release()
  end subroutine

  !> Allocate the common part of a Lie step's Newton workspace for nz unknowns (fresh w) and
  !> set its mass matrix.
  subroutine lie_work_init(w, s, nz)
    type(lie_newton_work_t), intent(inout) :: w
    type(rigid_system_t), intent(in) :: s
    integer, intent(in) :: nz
    w%nv = s%nv; w%m = s%m; w%nz = nz; w%nx = nz
    allocate(w%z(nz), w%dz(nz), w%res(nz), w%ipiv(nz), w%mm(s%nv, s%nv), w%kvv(s%nv, s%nv), &
             w%kmv(s%m, s%nv), w%qf(s%nv), w%psi(s%nv), w%x1(3, s%nb), w%r1(3, 3, s%nb))
    w%kvv = 0; w%kmv = 0; w%psi = 0; w%z = 0; w%x1 = 0; w%r1 = 0
    call rigid_mass_matrix(s, w%mm)
  end subroutine

  !> Start the structured Newton matrix (true: then record its pattern by the method's assembly and
  !> call lie_structure_setup), or keep the dense jac (false; allocated here): requested, the
  !> linear_solver option (pyint.models.structured.LINEAR_SOLVERS); automatic: dense up to
  !> SMALL_MAX unknowns (a small model's LU is cheapest dense, as generalized-alpha's stabilized
  !> variant decides), else structured.  naux: the method's auxiliary unknowns (see the type).
  logical function lie_structure_record(w, s, requested, naux) result(structured)
    type(lie_newton_work_t), intent(inout) :: w
    type(rigid_system_t), intent(in) :: s
    integer, intent(in) :: requested, naux
    integer :: r, k, j, p, a, b
    integer, allocatable :: pr(:, :)
    structured = .not. (requested == SOLVER_DENSE .or. (requested == SOLVER_AUTO .and. w%nz <= SMALL_MAX))
    w%structured = .false.
    w%solver = SOLVER_DENSE
    w%nx = w%nz
    if (.not. structured) then
      allocate(w%jac(w%nz, w%nz))
      return
    end if
    w%nx = w%nz + naux
    allocate(w%blk%rowb(2, s%m), w%rhs(w%nx), w%blk%tq(3, 3, s%nb), pr(2, s%nj))
    w%blk%tq = 0
    w%blk%m = s%m
    do r = 1, s%m                                  ! the joint of kept row r: the last starting at or before it
      j = r
      if (allocated(s%keep)) j = s%keep(r)
      k = count(s%row(1:s%nj) <= j)
      w%blk%rowb(:, r) = [s%ja(k), s%jb(k)]
    end do
    p = 0
    do k = 1, s%nj                                 ! the coupled pairs, each once
      a = min(s%ja(k), s%jb(k)); b = max(s%ja(k), s%jb(k))
      if (a == 0) cycle
      if (p > 0) then
        if (any(pr(1, 1:p) == a .and. pr(2, 1:p) == b)) cycle
      end if
      p = p + 1
      pr(:, p) = [a, b]
    end do
    w%blk%pairs = pr(:, 1:p)
    call w%jm%record(w%nx)
  end function

  !> After the pattern's recording: choose the solver (requested, or pyint_newton_matrix's
  !> choose_solver); a dense choice goes back to the dense jac (w%structured false).  info:
  !> STATUS_BAD_INPUT when the set-up fails or an entry fell outside the pattern.
  subroutine lie_structure_setup(w, requested, info)
    type(lie_newton_work_t), intent(inout) :: w
    integer, intent(in) :: requested
    integer, intent(out) :: info
    call w%jm%setup(requested, info)
    if (info /= 0 .or. w%jm%out_of_pattern) then
      info = STATUS_BAD_INPUT
      return
    end if
    w%solver = w%jm%kind
    w%structured = w%jm%kind /= SOLVER_DENSE
    if (.not. w%structured) then
      call w%jm%release()
      w%nx = w%nz
      w%solver = SOLVER_DENSE
      allocate(w%jac(w%nz, w%nz))
    end if
  end subroutine

  !> w%blk%tq(:, :, i) = T(psi_theta_i), the right tangents of the iterate's increment w%psi.
  subroutine lie_tangents(w, nb)
    type(lie_newton_work_t), intent(inout) :: w
    integer, intent(in) :: nb
    integer :: i
    do i = 1, nb
      w%blk%tq(:, :, i) = tangent(w%psi(6 * i - 2:6 * i))
    end do
  end subroutine

  !> nm(ro + body rows, co + body cols) += f M: the bodies' diagonal blocks m_i I, J_i.
  subroutine lie_add_mass(nm, s, ro, co, f)
    type(newton_matrix_t), intent(inout) :: nm
    type(rigid_system_t), intent(in) :: s
    integer, intent(in) :: ro, co
    real(wp), intent(in) :: f
    integer :: i, l, c, o
    do i = 1, s%nb
      o = 6 * (i - 1)
      do l = 1, 3
        call nm%add(ro + o + l, co + o + l, f * s%mass(i))
      end do
      do c = 1, 3
        do l = 1, 3
          call nm%add(ro + o + 3 + l, co + o + 3 + c, f * s%inertia(l, c, i))
        end do
      end do
    end do
  end subroutine

  !> nm(ro + body rows, co + body cols) += f dQ/dV at v: each body's rotational block
  !> (rigid_force_v_block).
  subroutine lie_add_force_v(nm, s, v, ro, co, f)
    type(newton_matrix_t), intent(inout) :: nm
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: v(:), f
    integer, intent(in) :: ro, co
    real(wp) :: k(3, 3)
    integer :: i, l, c, o
    do i = 1, s%nb
      o = 6 * (i - 1) + 3
      k = f * rigid_force_v_block(s, v, i)
      do c = 1, 3
        do l = 1, 3
          call nm%add(ro + o + l, co + o + c, k(l, c))
        end do
      end do
    end do
  end subroutine

  !> nm(ro + 1 : ro + nv, co + 1 : co + nv) += f K P' for K (nv x nv) of rotational blocks on the
  !> bodies' diagonal and the coupled pairs only, as (B^T lam)_q (rigid_btl_q); P' = diag(I, T(psi_theta_i))
  !> (bk%tq).  K is read at those blocks only.
  subroutine lie_add_vv(bk, nm, s, k, ro, co, f)
    type(lie_blocks_t), intent(in) :: bk
    type(newton_matrix_t), intent(inout) :: nm
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: k(:, :), f
    integer, intent(in) :: ro, co
    integer :: i, p
    do i = 1, s%nb
      call add_block(i, i)
    end do
    do p = 1, size(bk%pairs, 2)
      call add_block(bk%pairs(1, p), bk%pairs(2, p))
      call add_block(bk%pairs(2, p), bk%pairs(1, p))
    end do

  contains

    subroutine add_block(i, j)
      integer, intent(in) :: i, j
      real(wp) :: blk(3, 3)
      integer :: oi, oj, l, c
      oi = 6 * (i - 1) + 3; oj = 6 * (j - 1) + 3
      blk = f * matmul(k(oi + 1:oi + 3, oj + 1:oj + 3), bk%tq(:, :, j))
      do c = 1, 3
        do l = 1, 3
          call nm%add(ro + oi + l, co + oj + c, blk(l, c))
        end do
      end do
    end subroutine

  end subroutine

  !> nm(ro + r, co + body cols) += f K(r, :) [P'] for K (m x nv) with the pattern of B (row r on
  !> its bodies' 6 columns: bk%rowb), as B, (B V)_q, d(Bdot V)/dq; tang: times P' (bk%tq).
  subroutine lie_add_mv(bk, nm, k, ro, co, f, tang)
    type(lie_blocks_t), intent(in) :: bk
    type(newton_matrix_t), intent(inout) :: nm
    real(wp), intent(in) :: k(:, :), f
    integer, intent(in) :: ro, co
    logical, intent(in) :: tang
    real(wp) :: e(3)
    integer :: r, side, i, o, c
    do r = 1, bk%m
      do side = 1, 2
        i = bk%rowb(side, r)
        if (i == 0) cycle
        o = 6 * (i - 1)
        do c = 1, 3
          call nm%add(ro + r, co + o + c, f * k(r, o + c))
        end do
        e = k(r, o + 4:o + 6)
        if (tang) e = matmul(e, bk%tq(:, :, i))
        do c = 1, 3
          call nm%add(ro + r, co + o + 3 + c, f * e(c))
        end do
      end do
    end do
  end subroutine

  !> nm(ro + body rows, co + r) += f K(r, :)^T for K (m x nv) with the pattern of B: B^T.
  subroutine lie_add_vm(bk, nm, k, ro, co, f)
    type(lie_blocks_t), intent(in) :: bk
    type(newton_matrix_t), intent(inout) :: nm
    real(wp), intent(in) :: k(:, :), f
    integer, intent(in) :: ro, co
    integer :: r, side, i, o, c
    do r = 1, bk%m
      do side = 1, 2
        i = bk%rowb(side, r)
        if (i == 0) cycle
        o = 6 * (i - 1)
        do c = 1, 6
          call nm%add(ro + o + c, co + r, f * k(r, o + c))
        end do
      end do
    end do
  end subroutine

  !> nm(o + l, o + l) += f, l = 1..n.
  subroutine lie_add_identity(nm, o, n, f)
    type(newton_matrix_t), intent(inout) :: nm
    integer, intent(in) :: o, n
    real(wp), intent(in) :: f
    integer :: l
    do l = 1, n
      call nm%add(o + l, o + l, f)
    end do
  end subroutine

  !> M v by the bodies' blocks.
  pure function lie_mass_times(s, v) result(y)
    type(rigid_system_t), intent(in) :: s
    real(wp), intent(in) :: v(:)
    real(wp) :: y(size(v))
    integer :: i, o
    do i = 1, s%nb
      o = 6 * (i - 1)
      y(o + 1:o + 3) = s%mass(i) * v(o + 1:o + 3)
      y(o + 4:o + 6) = matmul(s%inertia(:, :, i), v(o + 4:o + 6))
    end do
  end function

  !> B v (B m x nv with the pattern of the joints, bk%rowb), by rows on their bodies' columns.
  pure function lie_b_times(bk, b, v) result(y)
    type(lie_blocks_t), intent(in) :: bk
    real(wp), intent(in) :: b(:, :), v(:)
    real(wp) :: y(size(b, 1))
    integer :: r, side, o
    y = 0
    do r = 1, bk%m
      do side = 1, 2
        if (bk%rowb(side, r) == 0) cycle
        o = 6 * (bk%rowb(side, r) - 1)
        y(r) = y(r) + dot_product(b(r, o + 1:o + 6), v(o + 1:o + 6))
      end do
    end do
  end function

  !> B^T lam, by rows on their bodies' columns.
  pure function lie_bt_times(bk, b, lam) result(y)
    type(lie_blocks_t), intent(in) :: bk
    real(wp), intent(in) :: b(:, :), lam(:)
    real(wp) :: y(size(b, 2))
    integer :: r, side, o
    y = 0
    do r = 1, bk%m
      do side = 1, 2
        if (bk%rowb(side, r) == 0) cycle
        o = 6 * (bk%rowb(side, r) - 1)
        y(o + 1:o + 6) = y(o + 1:o + 6) + lam(r) * b(r, o + 1:o + 6)
      end do
    end do
  end function

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
  !> A failure with B's kept rows at the last iterate near rank loss (lie_near_singular) is taken,
  !> as symplectic.f90's sym_pass takes such a step, with the convergence test on what the step
  !> determines (residual_at_floor, backward): the last iterate (from the third on) whose momentum
  !> rows are within NEWTON_KAPPA tol of the momenta and whose constraint rows are at their floor
  !> solves exactly the step of a state perturbed by that much (Higham, Accuracy and Stability of
  !> Numerical Algorithms, 2nd ed., 1.10, 7.1: the backward error; Deuflhard, Newton Methods for
  !> Nonlinear Problems, 2004, 2.1.4: the residual-based test where the Jacobian is near-singular).
  !> Why: with sigma_min / sigma_max of B ~ 1e-6 the increments along B's near-null directions are
  !> the residual's round-off times the inverse's norm; through (B^T lam)_q the multipliers' noise
  !> (IFToMM A02 in space, N = 40, h = 1e-3, t = 1.244: |dlam| 1 ... 20 per iteration) keeps the
  !> momentum rows at 1e-9, above their floor 1e-11, however long Newton runs, while the
  !> constraint rows sit at theirs.  The undetermined parts stay as noise in W and lam, not in the
  !> positions (beta h^2 |dW| ~ 1e-10).  With no such iterate it sets self%near_singular:
  !> drive_adaptive then tries a longer step from the same start, across.
  !> (A Tikhonov-filtered retry of the iteration, mu = 1e-10 ... 1e-6 of s_1 of the equilibrated
  !> matrix, rescued a few such steps on IFToMM A02 in space but not the run: the variable-step run
  !> still stopped at a crossing, and with the step across it changed no step over 20 s.)
  !> self%filtered (a method's retake of such a step, lie_genalpha.f90 lga_step): the increments from
  !> the method's filtered solve (filtered_increment: B's near-null directions left out), which
  !> converge as Newton's on the rows they solve; the step is the first iterate (from the second on)
  !> that passes the backward test on every row (residual_at_floor, backward), taken as it is (the
  !> further iterations add the multipliers' noise along those directions: symplectic.f90 sym_pass).
  subroutine lie_newton(self, h, u, u2, info)
    class(lie_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, u(:), u2(:)
    integer, intent(out) :: info
    integer :: it, iters
    real(wp) :: zfloor(size(self%w%z)), zpass(size(self%w%z))
    logical :: floor, pass, taken
    iters = 0
    taken = .false.
    floor = .false.
    pass = .false.
    info = STATUS_NEWTON_FAILED
    call self%w%nc%start()
    do it = 1, self%maxit
      call self%newton_eval(h, u, u2)
      if (self%filtered .and. it >= 2) then
        taken = self%residual_at_floor(h, u, u2, .true.)
        if (taken) then
          info = 0
          exit
        end if
      end if
      if (it >= 3) then            ! a converging step has mostly stopped by then: it pays nothing
        if (self%residual_at_floor(h, u, u2, .false.)) then
          floor = .true.
          zfloor = self%w%z
        else if (self%residual_at_floor(h, u, u2, .true.)) then
          pass = .true.
          zpass = self%w%z
        end if
      end if
      if (self%filtered) then
        call self%filtered_increment(h, info)
      else if (self%w%structured) then
        call structured_increment(self%w, info)
      else
        call newton_increment(self%w%res, self%w%jac, self%w%ipiv, self%w%dz, self%w%z, info)
      end if
      if (info /= 0) exit
      iters = iters + 1
      call self%w%nc%clear()
      call self%newton_measure(h)
      if (self%w%nc%done(self%tol, self%maxit, info)) exit
      info = STATUS_NEWTON_FAILED
    end do
    if (info == 0 .and. self%filtered .and. .not. taken) then
      call self%newton_eval(h, u, u2)
      if (.not. self%residual_at_floor(h, u, u2, .true.)) info = STATUS_NEWTON_FAILED
    end if
    if (info == STATUS_NEWTON_FAILED .and. floor) then
      self%w%z = zfloor
      info = 0
    end if
    self%near_singular = .false.
    if (info == STATUS_NEWTON_FAILED .and. self%w%m > 0) self%near_singular = lie_near_singular(self)
    if (info == STATUS_NEWTON_FAILED .and. self%near_singular .and. pass) then
      self%w%z = zpass              ! the step next to a singular configuration (above)
      info = 0
      self%near_singular = .false.
    end if
    self%stats(STAT_LIE_BACKWARD_NEWTON_ITERATIONS) = self%stats(STAT_LIE_BACKWARD_NEWTON_ITERATIONS) + iters
    self%stats(STAT_LIE_BACKWARD_JACOBIAN_FACTORIZATIONS) = self%stats(STAT_LIE_BACKWARD_JACOBIAN_FACTORIZATIONS) + iters
    self%stats(STAT_LIE_BACKWARD_MAX_NEWTON_ITERATIONS) = max(self%stats(STAT_LIE_BACKWARD_MAX_NEWTON_ITERATIONS), real(iters, wp))
  end subroutine

  !> newton_increment on the structured matrix w%jm (assembled by the method's newton_eval): dz
  !> solves jm dz = -res (the auxiliary rows' residual 0), z += dz.
  subroutine structured_increment(w, info)
    type(lie_newton_work_t), intent(inout) :: w
    integer, intent(out) :: info
    info = 0
    if (.not. all(abs(w%res) <= huge(1.0_wp))) then
      info = STATUS_NONFINITE
      return
    end if
    call w%jm%factor(info)
    if (info /= 0) then
      info = STATUS_SINGULAR
      return
    end if
    w%rhs = 0
    w%rhs(1:w%nz) = -w%res
    call w%jm%solve(w%rhs)
    w%dz = w%rhs(1:w%nz)
    w%z = w%z + w%dz
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

  !> B (m x nv, m <= nv) = U diag(sigma) V^T split at NEAR_SINGULAR sigma_max (lie_near_singular's
  !> test): u1 (m x r), the left singular vectors with sigma >= NEAR_SINGULAR sigma_max, and vc (nv x
  !> (nv - m + r)), the right ones with them and B's null space: the complements of B's near-null
  !> directions u0, v0 (B^T u0 = sigma v0, sigma < NEAR_SINGULAR sigma_max), the combinations of the
  !> rows a singular configuration makes dependent and the motions it frees.  info /= 0: LAPACK dgesvd
  !> failed.
  subroutine lie_near_null_split(b, u1, vc, info)
    real(wp), intent(in) :: b(:, :)
    real(wp), allocatable, intent(out) :: u1(:, :), vc(:, :)
    integer, intent(out) :: info
    real(wp) :: query(1)
    real(wp), allocatable :: bm(:, :), u(:, :), vt(:, :), sv(:), work(:)
    integer :: m, n, r
    m = size(b, 1); n = size(b, 2)
    info = 0
    bm = b                                       ! (heap arrays: m, n in the hundreds)
    allocate(u(m, m), vt(n, n), sv(max(1, m)))
    sv = 0
    call dgesvd('A', 'A', m, n, bm, max(1, m), sv, u, max(1, m), vt, n, query, -1, info)
    if (info /= 0) return
    allocate(work(max(1, int(query(1)))))
    call dgesvd('A', 'A', m, n, bm, max(1, m), sv, u, max(1, m), vt, n, work, size(work), info)
    if (info /= 0) return
    r = 0
    if (m > 0) r = count(sv(1:m) >= NEAR_SINGULAR * sv(1))
    u1 = u(:, 1:r)
    allocate(vc(n, n - m + r))
    vc(:, 1:r) = transpose(vt(1:r, :))
    vc(:, r + 1:) = transpose(vt(m + 1:n, :))
  end subroutine

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
