!> Redundant constraints: a model seen through an independent subset of its constraint rows.
!>
!> A mechanism with redundant constraints (a parallelogram with a third crank, a planar
!> loop built in space from revolute joints) has a constraint Jacobian C = [G; A] of
!> constant rank r below its m rows.  Every Newton and index-1 matrix of the kernels,
!> [K C^T; C 0], is then singular, and the multipliers are not unique; the motion is,
!> and so are the constraint forces C^T lam = M a - f.
!>
!> pyint takes the route of eliminating the dependent equations (García de Jalón and
!> Bayo, Kinematic and Dynamic Simulation of Multibody Systems, 1994, sec. 3.4: Gaussian
!> elimination with full pivoting picks r independent rows; Wojtyra and Frączek, J.
!> Comput. Nonlinear Dynam. 8 (2013) 021007, compare it with the pseudo-inverse and the
!> augmented Lagrangian): at the start (pyint/_constraint_basis.py) a column-pivoted QR
!> of C^T at (t0, q0) chooses r rows whose Jacobian has full rank; by the constant-rank
!> theorem these r equations describe the same constraint manifold near q0, so the
!> dependent rows stay satisfied whenever the kept ones are (their residuals are still
!> measured: the driver's residuals use `base`).  Every kernel, dense, banded or KLU,
!> then runs unchanged on a full-rank model: this wrapper.  Why elimination rather than
!> an augmented Lagrangian (ALI3-P: Bayo and Ledesma, Nonlinear Dyn. 9 (1996) 113) or a
!> regularised KKT solve: it keeps each method's own equations, hence its order,
!> symmetry and symplecticity and the constraint levels it claims, exactly; a penalty
!> changes the discrete equations and leaves the constraints at the penalty's accuracy.
!>
!> The multipliers returned are those of the kept rows, zero on the dependent rows (a
!> basic solution of C^T lam = M a - f, the multipliers of the non-redundant twin made
!> of the kept equations).  The wrapper forwards every item to `base`, selecting rows of
!> the constraint items and scattering multipliers into the full rows; the structured
!> add_* items are the base's own, their constraint rows mapped onto the kept ones and the
!> dropped rows' entries skipped by the assembler's remap (newton_matrix_t%set_remap), so a
!> redundant model keeps the sparsity of its base (the natural-coordinate IFToMM A04: the KLU
!> path instead of a dense LU of its 119 unknowns).
module pyint_reduced_model
  use pyint_kinds
  use pyint_model, only: model_t, index1_matrix, impose_constraints
  use pyint_newton_matrix, only: newton_matrix_t, SOLVER_AUTO, insertion_sort, REMAP_NONE, REMAP_ROWS, REMAP_COLS
  implicit none
  private
  public :: reduced_model_t, reduce_model, drop_redundant_rows, full_rank, RANK_TOL, near_singular_position
  public :: SIGMA_TOL, independent_rows, dense_rank

  !> full_rank's test of C = [G; A]: the LU of [I C^T; C 0], whose last pivots
  !> are those of the Schur complement -C C^T (~ the squared singular values of C,
  !> independent of the masses), is flagged when min |pivot| / max |pivot| <= RANK_TOL.
  !> A redundant constraint leaves a pivot at round-off, O(eps |C|^2); 1e-14 flags
  !> sigma_min / sigma_max below about 1e-7.
  real(wp), parameter :: RANK_TOL = 1e-14_wp
  !> drop_redundant_rows' rank of C: the diagonal of R in the column-pivoted QR of C^T
  !> (|R_kk| estimates sigma_k within a modest factor) counted above SIGMA_TOL |R_11|, the
  !> square root of RANK_TOL (the same threshold on sigma).
  real(wp), parameter :: SIGMA_TOL = 1e-7_wp

  interface
    subroutine dgeqp3(mm, nn, a, lda, jpvt, tau, work, lwork, info)
      import :: wp
      integer, intent(in) :: mm, nn, lda, lwork
      real(wp), intent(inout) :: a(lda, *)
      integer, intent(inout) :: jpvt(*)
      real(wp), intent(out) :: tau(*), work(*)
      integer, intent(out) :: info
    end subroutine
    subroutine dormqr(side, trans, mm, nn, k, a, lda, tau, c, ldc, work, lwork, info)
      import :: wp
      character, intent(in) :: side, trans
      integer, intent(in) :: mm, nn, k, lda, ldc, lwork
      real(wp), intent(in) :: a(lda, *), tau(*)
      real(wp), intent(inout) :: c(ldc, *)
      real(wp), intent(out) :: work(*)
      integer, intent(out) :: info
    end subroutine
  end interface

  type, extends(model_t) :: reduced_model_t
    class(model_t), allocatable :: base
    integer, allocatable :: ih(:)   !< kept holonomic rows of base (mh of them)
    integer, allocatable :: in(:)   !< kept nonholonomic rows of base (mn of them)
    integer, allocatable :: hpos(:), npos(:)   !< position of a base row among the kept ones (0: dropped)
  contains
    procedure :: mass => r_mass
    procedure :: force => r_force
    procedure :: mass_dq => r_mass_dq
    procedure :: mass_dqq => r_mass_dqq
    procedure :: force_jac => r_force_jac
    procedure :: hol => r_hol
    procedure :: hol_jac => r_hol_jac
    procedure :: hol_t => r_hol_t
    procedure :: hol_vel => r_hol_vel
    procedure :: hol_vel_q => r_hol_vel_q
    procedure :: hol_gamma => r_hol_gamma
    procedure :: hol_gtl_q => r_hol_gtl_q
    procedure :: hol_jac_tmul => r_hol_jac_tmul
    procedure :: nh => r_nh
    procedure :: nh_vel => r_nh_vel
    procedure :: nh_vel_q => r_nh_vel_q
    procedure :: nh_gamma => r_nh_gamma
    procedure :: nh_atl_q => r_nh_atl_q
    procedure :: nh_jac_tmul => r_nh_jac_tmul
    procedure :: energy => r_energy
    procedure :: potential => r_potential
    procedure :: mass_mul => r_mass_mul
    procedure :: add_qq => r_add_qq
    procedure :: add_hol_jac => r_add_hol_jac
    procedure :: add_hol_vel_q => r_add_hol_vel_q
    procedure :: add_nh_jac => r_add_nh_jac
    procedure :: add_nh_vel_q => r_add_nh_vel_q
    procedure :: expect_residual_items => r_expect_residual_items
  end type

contains

  !> Does C = [G; A] at (t, q) have full row rank (see RANK_TOL)?  O(nnz) for a model with
  !> structured hooks: [I C^T; C 0] goes through the structured solvers.
  logical function full_rank(model, t, q, v)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, q(:), v(:)
    type(newton_matrix_t) :: nm
    integer :: info
    full_rank = .true.
    if (model%mh + model%mn == 0) return
    full_rank = .false.
    call index1_matrix(model, t, q, v, .false., SOLVER_AUTO, nm, info)
    if (info /= 0) return
    call nm%factor(info)
    if (info == 0 .and. .not. nm%out_of_pattern) full_rank = nm%pivot_ratio() > RANK_TOL
    call nm%release()
  end function

  !> Is (t, q) near a singular position: sigma_min / sigma_max of C below 1e-2 (the pivot ratio of
  !> [I C^T; C 0], full_rank's test, below 1e-4)?  The driver asks it after a step failed (Newton,
  !> a singular matrix), to name the position as the cause (STATUS_SINGULAR_POSITION).
  logical function near_singular_position(model, t, q, v) result(near)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, q(:), v(:)
    type(newton_matrix_t) :: nm
    integer :: info
    near = .false.
    if (model%mh + model%mn < 1) return
    call index1_matrix(model, t, q, v, .false., SOLVER_AUTO, nm, info)
    if (info /= 0) return
    call nm%factor(info)
    near = info /= 0
    if (info == 0 .and. .not. nm%out_of_pattern) near = nm%pivot_ratio() <= 1e-4_wp
    call nm%release()
  end function

  !> The start of a redundant mechanism: when C = [G; A] at (t, q) is rank deficient, m is
  !> replaced by m seen through r = rank(C) independent rows (reduce_model), chosen by the
  !> column-pivoted QR of C^T (LAPACK dgeqp3: Golub and Van Loan, Matrix Computations, 5.4.2;
  !> the pivots take the best conditioned rows first).  rows: the kept rows (1-based in
  !> [g; A]), left unallocated when C has full rank (m untouched, no dense work).
  !>
  !> Redundant or singular?  A rank drop at an isolated configuration (a start exactly at a
  !> singular position: the N-four-bar's horizontal cranks, the coupled snakeboard's wheels
  !> perpendicular to the board) looks the same at q0, but there the dropped rows are NOT
  !> implied by the kept ones: running on the kept rows would leave them violated.  So the
  !> rank is measured again at a nearby configuration q1 on the kept rows' manifold (q0 moved
  !> by 1e-3 (1 + max|q0|) along a fixed combination of the directions orthogonal to the
  !> kept rows, then projected back: impose_constraints): constant rank (a redundant
  !> mechanism) keeps rank r there, a singular configuration has a larger rank.
  !> info: 0, or STATUS_RANK_DEFICIENT for a singular configuration (or a set with no
  !> independent subset of full rank): the run is refused, start away from it.
  subroutine drop_redundant_rows(m, t, q, v, rows, info)
    class(model_t), allocatable, intent(inout) :: m
    real(wp), intent(in) :: t, q(:), v(:)
    integer, allocatable, intent(out) :: rows(:)
    integer, intent(out) :: info
    real(wp), allocatable :: ct(:, :), tau(:), d(:, :)
    integer, allocatable :: jpvt(:)
    real(wp) :: q1(size(q)), v1(size(v)), a1(size(q)), lam1(m%mh + m%mn)
    integer :: n, mt, r, r1, k
    info = 0
    n = m%n; mt = m%mh + m%mn
    if (mt == 0) return
    if (full_rank(m, t, q, v)) return
    info = STATUS_RANK_DEFICIENT
    call pivoted_qr(m, t, q, ct, jpvt, tau, r)
    if (r == 0) return                          ! C = 0 (or NaN): nothing to keep
    rows = jpvt(1:r)
    call insertion_sort(rows)   ! r <= a few hundred, once per run
    call reduce_model(m, rows, k)
    if (k /= 0) return
    if (.not. full_rank(m, t, q, v)) return
    if (r < n) then
      ! a direction orthogonal to the kept rows: Q_r [0; w] of the QR (away_direction)
      allocate(d(n, 1))
      call away_direction(ct, tau, r, d(:, 1))
      q1 = q + 1e-3_wp * max(1.0_wp, maxval(abs(q))) * d(:, 1)
      v1 = v
      call impose_constraints(m, t, q1, v1, SOLVER_AUTO, a1, lam1(1:r), k, position_only=.true.)
      if (k /= 0) return
      select type (m)
      type is (reduced_model_t)
        call pivoted_qr(m%base, t, q1, ct, jpvt, tau, r1)
      end select
      if (r1 /= r) return                       ! a singular configuration, not redundancy
    end if
    info = 0
  end subroutine

  !> The column-pivoted QR of C^T, C = [G; A] at (t, q) (dense, n x m: LAPACK dgeqp3): ct holds
  !> R and the reflectors, jpvt the pivots, tau the reflectors' factors, and r the rank: the
  !> count of |R_kk| > SIGMA_TOL |R_11| (0 when R_11 is 0 or NaN).
  subroutine pivoted_qr(m, t, q, ct, jpvt, tau, r)
    class(model_t), intent(in) :: m
    real(wp), intent(in) :: t, q(:)
    real(wp), allocatable, intent(out) :: ct(:, :), tau(:)
    integer, allocatable, intent(out) :: jpvt(:)
    integer, intent(out) :: r
    real(wp), allocatable :: c(:, :), bn(:)
    integer :: mh, mt
    mh = m%mh; mt = m%mh + m%mn
    allocate(c(mt, m%n), bn(m%mn))
    if (mh > 0) call m%hol_jac(t, q, c(1:mh, :))
    if (m%mn > 0) call m%nh(t, q, c(mh + 1:mt, :), bn)
    call dense_pivoted_qr(c, ct, jpvt, tau, r)
  end subroutine

  !> pivoted_qr of a dense C (mt x n): the column-pivoted QR of C^T, its rank (SIGMA_TOL).
  subroutine dense_pivoted_qr(c, ct, jpvt, tau, r)
    real(wp), intent(in) :: c(:, :)
    real(wp), allocatable, intent(out) :: ct(:, :), tau(:)
    integer, allocatable, intent(out) :: jpvt(:)
    integer, intent(out) :: r
    real(wp), allocatable :: work(:)
    real(wp) :: wq(1)
    integer :: n, mt, k, info
    mt = size(c, 1); n = size(c, 2)
    allocate(jpvt(mt), tau(min(n, mt)))
    ct = transpose(c)
    jpvt = 0
    r = 0
    if (mt == 0 .or. n == 0) return
    call dgeqp3(n, mt, ct, n, jpvt, tau, wq, -1, info)
    allocate(work(max(1, int(wq(1)))))
    call dgeqp3(n, mt, ct, n, jpvt, tau, work, size(work), info)
    if (.not. abs(ct(1, 1)) > 0) return
    do k = 1, min(n, mt)
      if (abs(ct(k, k)) > SIGMA_TOL * abs(ct(1, 1))) r = k
    end do
  end subroutine

  !> A fixed direction (n, max norm 1) orthogonal to the first r rows chosen by the pivoted QR of
  !> C^T (ct, tau of dense_pivoted_qr, r < n): Q_r [0; w] with a fixed w, the same on every run.
  subroutine away_direction(ct, tau, r, d)
    real(wp), intent(in) :: ct(:, :), tau(:)
    integer, intent(in) :: r
    real(wp), intent(out) :: d(:)
    real(wp) :: dd(size(d), 1), work(1)
    integer :: n, j, k
    n = size(d)
    dd = 0
    do j = r + 1, n
      dd(j, 1) = sin(1.7_wp * j) + 0.5_wp
    end do
    call dormqr('L', 'N', n, 1, r, ct, n, tau, dd, n, work, 1, k)
    d = dd(:, 1) / max(maxval(abs(dd(:, 1))), tiny(1.0_wp))
  end subroutine

  !> The independent rows of a dense C (mt x n), as drop_redundant_rows picks them for a model:
  !> rows = the first r = rank(C) pivots of the column-pivoted QR of C^T (SIGMA_TOL), sorted
  !> (all rows when C has full row rank); dir (optional, size n): a fixed direction orthogonal
  !> to the kept rows (max norm 1; 0 when r = n), along which a caller moves to a nearby
  !> configuration to measure the rank again (redundant or singular: drop_redundant_rows).
  !> For a system with its own configuration space (the rigid bodies on (R^3 x SO(3))^nb,
  !> fortran/core/rigid_body.f90: rigid_independent_rows) where model_t does not apply.
  subroutine independent_rows(c, rows, r, dir)
    real(wp), intent(in) :: c(:, :)
    integer, allocatable, intent(out) :: rows(:)
    integer, intent(out) :: r
    real(wp), intent(out), optional :: dir(:)
    real(wp), allocatable :: ct(:, :), tau(:)
    integer, allocatable :: jpvt(:)
    call dense_pivoted_qr(c, ct, jpvt, tau, r)
    rows = jpvt(1:r)
    call insertion_sort(rows)   ! r <= a few hundred, once per run
    if (present(dir)) then
      dir = 0
      if (r < size(c, 2) .and. r > 0) call away_direction(ct, tau, r, dir)
    end if
  end subroutine

  !> rank(C) of a dense C (SIGMA_TOL on the pivoted QR of C^T).
  integer function dense_rank(c) result(r)
    real(wp), intent(in) :: c(:, :)
    real(wp), allocatable :: ct(:, :), tau(:)
    integer, allocatable :: jpvt(:)
    call dense_pivoted_qr(c, ct, jpvt, tau, r)
  end function

  !> Replace m by m seen through its constraint rows `rows` (1-based in [g; A] order,
  !> increasing; holonomic rows are those <= m%mh).  ierr = 1: a row out of range or
  !> not increasing.  m is moved into the wrapper (no copy: a callback model keeps its buffers).
  subroutine reduce_model(m, rows, ierr)
    class(model_t), allocatable, intent(inout) :: m
    integer, intent(in) :: rows(:)
    integer, intent(out) :: ierr
    class(model_t), allocatable :: w
    integer :: mh, k
    ierr = 1
    mh = m%mh
    if (any(rows < 1) .or. any(rows > m%mh + m%mn)) return
    if (size(rows) > 1) then
      if (any(rows(2:) <= rows(:size(rows) - 1))) return
    end if
    allocate(reduced_model_t :: w)
    select type (w)
    type is (reduced_model_t)
      w%ih = pack(rows, rows <= mh)
      w%in = pack(rows, rows > mh) - mh
      allocate(w%hpos(mh), w%npos(m%mn))
      w%hpos = 0
      w%npos = 0
      w%hpos(w%ih) = [(k, k = 1, size(w%ih))]
      w%npos(w%in) = [(k, k = 1, size(w%in))]
      w%n = m%n
      w%mh = size(w%ih)
      w%mn = size(w%in)
      w%const_mass = m%const_mass
      w%has_energy = m%has_energy
      w%const_force = m%const_force
      w%scleronomic = m%scleronomic
      call move_alloc(m, w%base)
    end select
    call move_alloc(w, m)
    ierr = 0
  end subroutine

  !> lam of the kept holonomic rows scattered into the base's mh rows (zero elsewhere).
  pure function full_h(self, lam) result(l)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: lam(:)
    real(wp) :: l(self%base%mh)
    l = 0
    l(self%ih) = lam
  end function

  pure function full_n(self, lam) result(l)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: lam(:)
    real(wp) :: l(self%base%mn)
    l = 0
    l(self%in) = lam
  end function

  subroutine r_mass(self, q, mq)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n)
    real(wp), intent(out) :: mq(self%n, self%n)
    call self%base%mass(q, mq)
  end subroutine

  subroutine r_force(self, t, q, v, f)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: f(self%n)
    call self%base%force(t, q, v, f)
  end subroutine

  subroutine r_mass_dq(self, q, a, d)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n)
    real(wp), intent(out) :: d(self%n, self%n)
    call self%base%mass_dq(q, a, d)
  end subroutine

  subroutine r_mass_dqq(self, q, a, w, k)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n), w(self%n)
    real(wp), intent(out) :: k(self%n, self%n)
    call self%base%mass_dqq(q, a, w, k)
  end subroutine

  subroutine r_force_jac(self, t, q, v, fq, fv)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: fq(self%n, self%n), fv(self%n, self%n)
    call self%base%force_jac(t, q, v, fq, fv)
  end subroutine

  subroutine r_hol(self, t, q, g)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: g(self%mh)
    real(wp) :: gb(self%base%mh)
    call self%base%hol(t, q, gb)
    g = gb(self%ih)
  end subroutine

  subroutine r_hol_jac(self, t, q, gq)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: gq(self%mh, self%n)
    real(wp), allocatable :: gb(:, :)
    allocate(gb(self%base%mh, self%n))
    call self%base%hol_jac(t, q, gb)
    gq = gb(self%ih, :)
  end subroutine

  subroutine r_hol_t(self, t, q, gt)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: gt(self%mh)
    real(wp) :: gb(self%base%mh)
    call self%base%hol_t(t, q, gb)
    gt = gb(self%ih)
  end subroutine

  subroutine r_hol_vel(self, t, q, v, w)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: w(self%mh)
    real(wp) :: wb(self%base%mh)
    call self%base%hol_vel(t, q, v, wb)
    w = wb(self%ih)
  end subroutine

  subroutine r_hol_vel_q(self, t, q, v, d)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mh, self%n)
    real(wp), allocatable :: db(:, :)
    allocate(db(self%base%mh, self%n))
    call self%base%hol_vel_q(t, q, v, db)
    d = db(self%ih, :)
  end subroutine

  subroutine r_hol_gamma(self, t, q, v, gam)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mh)
    real(wp) :: gb(self%base%mh)
    call self%base%hol_gamma(t, q, v, gb)
    gam = gb(self%ih)
  end subroutine

  subroutine r_hol_gtl_q(self, t, q, lam, d)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mh)
    real(wp), intent(out) :: d(self%n, self%n)
    call self%base%hol_gtl_q(t, q, full_h(self, lam), d)
  end subroutine

  subroutine r_hol_jac_tmul(self, t, q, lam, r)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mh)
    real(wp), intent(out) :: r(self%n)
    call self%base%hol_jac_tmul(t, q, full_h(self, lam), r)
  end subroutine

  subroutine r_nh(self, t, q, a, b)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: a(self%mn, self%n), b(self%mn)
    real(wp), allocatable :: ab(:, :), bb(:)
    allocate(ab(self%base%mn, self%n), bb(self%base%mn))
    call self%base%nh(t, q, ab, bb)
    a = ab(self%in, :)
    b = bb(self%in)
  end subroutine

  subroutine r_nh_vel(self, t, q, v, w)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: w(self%mn)
    real(wp) :: wb(self%base%mn)
    call self%base%nh_vel(t, q, v, wb)
    w = wb(self%in)
  end subroutine

  subroutine r_nh_vel_q(self, t, q, v, d)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mn, self%n)
    real(wp), allocatable :: db(:, :)
    allocate(db(self%base%mn, self%n))
    call self%base%nh_vel_q(t, q, v, db)
    d = db(self%in, :)
  end subroutine

  subroutine r_nh_gamma(self, t, q, v, gam)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mn)
    real(wp) :: gb(self%base%mn)
    call self%base%nh_gamma(t, q, v, gb)
    gam = gb(self%in)
  end subroutine

  subroutine r_nh_atl_q(self, t, q, lam, d)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mn)
    real(wp), intent(out) :: d(self%n, self%n)
    call self%base%nh_atl_q(t, q, full_n(self, lam), d)
  end subroutine

  subroutine r_nh_jac_tmul(self, t, q, lam, r)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mn)
    real(wp), intent(out) :: r(self%n)
    call self%base%nh_jac_tmul(t, q, full_n(self, lam), r)
  end subroutine

  real(wp) function r_energy(self, t, q, v)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    r_energy = self%base%energy(t, q, v)
  end function

  real(wp) function r_potential(self, t, q)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    r_potential = self%base%potential(t, q)
  end function

  subroutine r_mass_mul(self, q, a, ma)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n)
    real(wp), intent(out) :: ma(self%n)
    call self%base%mass_mul(q, a, ma)
  end subroutine

  !> The base's own (structured) n x n block, its multiplier terms with the full multipliers.
  subroutine r_add_qq(self, t, q, v, a, lh, ln, c, asm, r0, c0)
    use pyint_newton_matrix, only: newton_matrix_t
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n), a(self%n), lh(self%mh), ln(self%mn), c(6)
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    call self%base%add_qq(t, q, v, a, full_h(self, lh), full_n(self, ln), c, asm, r0, c0)
  end subroutine

  !> The base's structured constraint blocks, its rows (trans: columns) remapped onto the kept ones.
  subroutine r_add_hol_jac(self, t, q, s, trans, asm, r0, c0)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), s
    logical, intent(in) :: trans
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    if (self%mh == 0) return
    if (trans) then
      call asm%set_remap(REMAP_COLS, c0, self%hpos)
    else
      call asm%set_remap(REMAP_ROWS, r0, self%hpos)
    end if
    call self%base%add_hol_jac(t, q, s, trans, asm, r0, c0)
    call asm%set_remap(REMAP_NONE, 0)
  end subroutine

  subroutine r_add_hol_vel_q(self, t, q, v, s, asm, r0, c0)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n), s
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    if (self%mh == 0) return
    call asm%set_remap(REMAP_ROWS, r0, self%hpos)
    call self%base%add_hol_vel_q(t, q, v, s, asm, r0, c0)
    call asm%set_remap(REMAP_NONE, 0)
  end subroutine

  subroutine r_add_nh_jac(self, t, q, s, trans, asm, r0, c0)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), s
    logical, intent(in) :: trans
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    if (self%mn == 0) return
    if (trans) then
      call asm%set_remap(REMAP_COLS, c0, self%npos)
    else
      call asm%set_remap(REMAP_ROWS, r0, self%npos)
    end if
    call self%base%add_nh_jac(t, q, s, trans, asm, r0, c0)
    call asm%set_remap(REMAP_NONE, 0)
  end subroutine

  subroutine r_add_nh_vel_q(self, t, q, v, s, asm, r0, c0)
    class(reduced_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n), s
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    if (self%mn == 0) return
    call asm%set_remap(REMAP_ROWS, r0, self%npos)
    call self%base%add_nh_vel_q(t, q, v, s, asm, r0, c0)
    call asm%set_remap(REMAP_NONE, 0)
  end subroutine

  subroutine r_expect_residual_items(self)
    class(reduced_model_t), intent(in) :: self
    call self%base%expect_residual_items()
  end subroutine

end module pyint_reduced_model
