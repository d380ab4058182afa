!> The iteration (Newton) matrix of an implicit step: assembled entry by entry,
!> factored and solved by one of three solvers chosen once per trajectory.
!>
!>   SOLVER_DENSE   LAPACK dgetrf/dgetrs on the full nx x nx matrix;
!>   SOLVER_BANDED  band LU after a reverse Cuthill-McKee ordering of the
!>                  recorded pattern (chains, ropes, tracks): LAPACK's dgbtf2 and
!>                  dgbtrs in plain loops (pyint_small_lu band_factor, band_solve);
!>   SOLVER_SPARSE  SuiteSparse KLU (fortran/core/klu_shim.c): fill-reducing
!>                  ordering computed once, numeric refactorization per call.
!>
!> Life cycle (one per trajectory, owned by the kernel's workspace):
!>   call nm%record(nx)        start recording the pattern
!>   ... the kernel's assembly: every entry it may ever add, through nm%add ...
!>   call nm%setup(requested, info)   choose the solver, order, allocate
!>   loop: nm%zero(); nm%add(...); nm%factor(info); nm%solve(b)
!>   call nm%release()          frees the KLU handle (C memory)
!> Indices passed to add/solve are always the natural ones (1..nx); the
!> banded solver permutes internally.  An entry outside the recorded pattern
!> sets out_of_pattern (the kernels report it as bad input): an assembly
!> routine must add every entry it can touch whatever its value.
!> No module state: any number of matrices may live in different threads.
module pyint_newton_matrix
  use iso_c_binding, only: c_ptr, c_null_ptr, c_associated, c_int, c_double
  use pyint_kinds, only: wp
  use pyint_linalg, only: lu_factor, lu_solve, SMALL_MAX
  use pyint_small_lu, only: slu_factor, slu_solve, band_factor, band_solve
  implicit none
  private
  public :: newton_matrix_t, klu_available, choose_solver, insertion_sort
  public :: SOLVER_AUTO, SOLVER_DENSE, SOLVER_BANDED, SOLVER_SPARSE, SMALL_MAX

  integer, parameter :: SOLVER_AUTO = 0, SOLVER_DENSE = 1, SOLVER_BANDED = 2, SOLVER_SPARSE = 3
  integer, parameter :: RECORDING = -1, UNSET = -2
  integer, parameter, public :: REMAP_NONE = 0, REMAP_ROWS = 1, REMAP_COLS = 2

  !> Automatic choice: KLU when built in, except for a matrix of more than
  !> DENSE_MIN unknowns with more than DENSE_FILL of its entries nonzero (dense
  !> LU), and for a wide band (below); without KLU, banded when its flop count is
  !> below half the dense one.
  !> Measured on the chain (bench/run.py, solvers table): KLU with Jacobian
  !> reuse is the fastest from N = 2 (6 unknowns, where reference LAPACK's
  !> call overhead dominates) up; banded LU is within 10-30 %, dense far behind.
  integer, parameter :: DENSE_MIN = 40
  !> Banded instead of KLU when the RCM band is at least BAND_WIDE wide on both sides (and its
  !> flops below the dense ones): KLU's partial pivoting (klu_shim.c: tol = 1) fills a
  !> saddle-point matrix [K C^T; C 0] within that band, and its indexed updates then cost more
  !> than dgbtrf's column operations.  Measured (generalized-alpha, whole call): IFToMM A04's
  !> natural coordinates (119 unknowns, kl = ku = 24; KLU's factors 40 % dense): a refactorization
  !> 57 us by KLU, 17 us by LAPACK's dgbtrf, the run 28 % faster; A02 (kl = ku = 9) and the chains
  !> (kl <= 5): KLU 5 % ... 30 % faster than banded, kept.
  integer, parameter :: BAND_WIDE = 16
  real(wp), parameter :: DENSE_FILL = 0.3_wp

  type :: newton_matrix_t
    integer :: kind = UNSET
    integer :: nx = 0, kl = 0, ku = 0, ldab = 0, nnz = 0
    logical :: out_of_pattern = .false.
    !> dense: factor and solve by pyint_small_lu's plain loops instead of LAPACK (set by a kernel
    !> for a matrix of at most SMALL_MAX unknowns, before its first factor)
    logical :: small = .false.
    integer :: np = 0
    integer, allocatable :: pi(:), pj(:)          !< recorded (row, col) pairs
    integer, allocatable :: perm(:), iperm(:)     !< band order: position k holds unknown perm(k)
    real(wp), allocatable :: a(:, :), ab(:, :), tmp(:)
    integer, allocatable :: ipiv(:)
    integer, allocatable :: prof(:, :)           !< banded: the factors' profile (band_factor)
    integer(c_int), allocatable :: colptr(:), rowind(:)   !< CSC pattern, 0-based (KLU)
    real(c_double), allocatable :: vals(:)
    integer, allocatable :: slot(:)     !< sparse: position of the k-th add of an assembly (replayed)
    integer :: nadd = 0                  !< adds since the last zero()
    type(c_ptr) :: klu = c_null_ptr
    !> Index remap of the adds (set_remap; 0: none): while set, an add's row (REMAP_ROWS) or column
    !> (REMAP_COLS) index i = remap_off + k is replaced by remap_off + remap_to(k), the add skipped
    !> where remap_to(k) is 0.
    !> For a wrapper that forwards a base model's structured add_* items onto a subset of its
    !> rows (fortran/core/reduced_model.f90: the kept rows of a redundant mechanism).
    integer :: remap = 0, remap_off = 0
    integer, allocatable :: remap_to(:)
    !> While set (set_mirror), an add at (i, j), i /= j, also adds at (j, i): a block and its
    !> transpose from one evaluation (the symmetric KKT matrix [M G^T; G 0] from one add_hol_jac).
    logical :: mirror = .false.
    !> Values kept by keep_base, restored by zero_base (a constant block assembled once).
    real(wp), allocatable :: base(:)
  contains
    procedure :: record => nm_record
    procedure :: add => nm_add
    procedure, private :: add_any => nm_add_any
    procedure :: setup => nm_setup
    procedure :: zero => nm_zero
    procedure :: factor => nm_factor
    procedure :: solve => nm_solve
    procedure :: release => nm_release
    procedure :: pivot_ratio => nm_pivot_ratio
    procedure :: set_remap => nm_set_remap
    procedure :: set_mirror => nm_set_mirror
    procedure :: keep_base => nm_keep_base
    procedure :: zero_base => nm_zero_base
    procedure :: recording => nm_recording
  end type

  interface
    integer(c_int) function pyint_klu_available() bind(c)
      import :: c_int
    end function
    type(c_ptr) function pyint_klu_new(n, ap, ai, info) bind(c)
      import :: c_ptr, c_int
      integer(c_int), value :: n
      integer(c_int), intent(in) :: ap(*), ai(*)
      integer(c_int), intent(out) :: info
    end function
    integer(c_int) function pyint_klu_factor(h, ap, ai, ax) bind(c)
      import :: c_ptr, c_int, c_double
      type(c_ptr), value :: h
      integer(c_int), intent(in) :: ap(*), ai(*)
      real(c_double), intent(in) :: ax(*)
    end function
    integer(c_int) function pyint_klu_solve(h, b) bind(c)
      import :: c_ptr, c_int, c_double
      type(c_ptr), value :: h
      real(c_double), intent(inout) :: b(*)
    end function
    real(c_double) function pyint_klu_pivot_ratio(h) bind(c)
      import :: c_ptr, c_double
      type(c_ptr), value :: h
    end function
    subroutine pyint_klu_free(h) bind(c)
      import :: c_ptr
      type(c_ptr), value :: h
    end subroutine
  end interface

contains

  logical function klu_available()
    klu_available = pyint_klu_available() /= 0
  end function

  !> The solver the automatic choice picks for nx unknowns, nnz pattern
  !> entries and band (kl, ku) after RCM.
  integer function choose_solver(nx, nnz, kl, ku) result(kind)
    integer, intent(in) :: nx, nnz, kl, ku
    real(wp) :: band_flops, dense_flops
    dense_flops = real(nx, wp)**3 / 3
    band_flops = 2 * real(nx, wp) * (kl + 1) * (kl + ku + 1)
    if (klu_available()) then
      kind = SOLVER_SPARSE
      if (min(kl, ku) >= BAND_WIDE .and. band_flops < dense_flops) kind = SOLVER_BANDED
      if (nx > DENSE_MIN .and. real(nnz, wp) > DENSE_FILL * real(nx, wp)**2) kind = SOLVER_DENSE
    else
      kind = merge(SOLVER_BANDED, SOLVER_DENSE, band_flops < dense_flops / 2)
    end if
  end function

  !> Start recording the pattern of an nx x nx matrix.
  subroutine nm_record(self, nx)
    class(newton_matrix_t), intent(inout) :: self
    integer, intent(in) :: nx
    call self%release()
    if (allocated(self%pi)) deallocate(self%pi, self%pj)
    if (allocated(self%perm)) deallocate(self%perm, self%iperm)
    if (allocated(self%a)) deallocate(self%a)
    if (allocated(self%ab)) deallocate(self%ab)
    if (allocated(self%tmp)) deallocate(self%tmp)
    if (allocated(self%ipiv)) deallocate(self%ipiv)
    if (allocated(self%prof)) deallocate(self%prof)
    if (allocated(self%base)) deallocate(self%base)
    self%mirror = .false.
    if (allocated(self%colptr)) deallocate(self%colptr, self%rowind, self%vals, self%slot)
    self%nx = nx
    self%kl = 0
    self%ku = 0
    self%kind = RECORDING
    self%np = 0
    self%out_of_pattern = .false.
    allocate(self%pi(max(64, 8 * nx)), self%pj(max(64, 8 * nx)))
  end subroutine

  !> A(i, j) += v (natural indices).  The common add, a sparse assembly's k-th add at the position
  !> its k-th add had the last time (an assembly adds its entries in the same order every time),
  !> is the whole body here, small enough to need no saved registers; every other add goes to
  !> nm_add_any (a kernel's assembly calls this once per entry: its cost is per entry).
  recursive subroutine nm_add(self, i, j, v)
    class(newton_matrix_t), intent(inout) :: self
    integer, intent(in) :: i, j
    real(wp), intent(in) :: v
    integer :: k, pos
    if (self%kind == SOLVER_SPARSE .and. self%remap == REMAP_NONE .and. .not. self%mirror) then
      k = self%nadd + 1
      if (k <= size(self%slot)) then
        pos = self%slot(k)
        if (pos > self%colptr(j) .and. pos <= self%colptr(j + 1)) then
          if (self%rowind(pos) == i - 1) then
            self%vals(pos) = self%vals(pos) + v
            self%nadd = k
            return
          end if
        end if
      end if
    end if
    call self%add_any(i, j, v)   ! through the binding: not inlined here, the fast path stays lean
  end subroutine

  !> nm_add's other adds: remapped or mirrored ones (nm_add_mapped), the dense and banded stores,
  !> a sparse add whose position is searched (and remembered for the next assembly's k-th add),
  !> the recording of the pattern.
  recursive subroutine nm_add_any(self, i, j, v)
    class(newton_matrix_t), intent(inout) :: self
    integer, intent(in) :: i, j
    real(wp), intent(in) :: v
    integer :: k, p1, p2
    if (self%mirror .and. self%remap == REMAP_NONE .and. self%kind == SOLVER_SPARSE .and. i /= j) then
      ! a mirrored pair at the positions its two adds had the last time (nm_add's replay, for a
      ! pair: a kept KKT matrix's G and G^T refilled at every step, RATTLE's kick_assemble)
      k = self%nadd + 2
      if (k <= size(self%slot)) then
        p1 = self%slot(k - 1)
        p2 = self%slot(k)
        if (p1 > self%colptr(j) .and. p1 <= self%colptr(j + 1) .and. p2 > self%colptr(i) .and. &
            p2 <= self%colptr(i + 1)) then
          if (self%rowind(p1) == i - 1 .and. self%rowind(p2) == j - 1) then
            self%vals(p1) = self%vals(p1) + v
            self%vals(p2) = self%vals(p2) + v
            self%nadd = k
            return
          end if
        end if
      end if
    end if
    if (self%remap /= REMAP_NONE .or. self%mirror) then
      call nm_add_mapped(self, i, j, v)
    else
      call nm_store(self, i, j, v)
    end if
  end subroutine

  !> A(i, j) += v, no remap or mirror: nm_add's sparse fast path, else the store by kind.
  subroutine nm_store(self, i, j, v)
    type(newton_matrix_t), intent(inout) :: self
    integer, intent(in) :: i, j
    real(wp), intent(in) :: v
    integer :: r, c, lo, hi, mid, key, k, pos
    select case (self%kind)
    case (SOLVER_DENSE)
      self%a(i, j) = self%a(i, j) + v
    case (SOLVER_BANDED)
      r = self%iperm(i)
      c = self%iperm(j)
      if (r - c > self%kl .or. c - r > self%ku) then
        self%out_of_pattern = .true.
      else
        self%ab(self%kl + self%ku + 1 + r - c, c) = self%ab(self%kl + self%ku + 1 + r - c, c) + v
      end if
    case (SOLVER_SPARSE)
      k = self%nadd + 1
      if (k <= size(self%slot)) then      ! nm_add's fast path: the k-th add's position of the last time
        pos = self%slot(k)
        if (pos > self%colptr(j) .and. pos <= self%colptr(j + 1)) then
          if (self%rowind(pos) == i - 1) then
            self%vals(pos) = self%vals(pos) + v
            self%nadd = k
            return
          end if
        end if
      end if
      self%nadd = k
      key = i - 1
      lo = self%colptr(j) + 1
      hi = self%colptr(j + 1)
      do while (lo <= hi)
        mid = (lo + hi) / 2
        if (self%rowind(mid) == key) then
          self%vals(mid) = self%vals(mid) + v
          if (self%nadd <= size(self%slot)) self%slot(self%nadd) = mid
          return
        else if (self%rowind(mid) < key) then
          lo = mid + 1
        else
          hi = mid - 1
        end if
      end do
      self%out_of_pattern = .true.
    case (RECORDING)
      if (i < 1 .or. i > self%nx .or. j < 1 .or. j > self%nx) then
        self%out_of_pattern = .true.
        return
      end if
      if (self%np == size(self%pi)) call nm_grow(self)
      self%np = self%np + 1
      self%pi(self%np) = i
      self%pj(self%np) = j
    case default
      self%out_of_pattern = .true.
    end select
  end subroutine

  !> nm_add's remapped (set_remap) and mirrored (set_mirror) add: the row or column index i0 or
  !> j0 = remap_off + k moved to remap_off + remap_to(k) (dropped where that is 0), then stored
  !> (nm_store) at (i, j) and, mirroring, at (j, i) when i /= j.
  subroutine nm_add_mapped(self, i0, j0, v)
    class(newton_matrix_t), intent(inout) :: self
    integer, intent(in) :: i0, j0
    real(wp), intent(in) :: v
    integer :: i, j
    i = i0
    j = j0
    if (self%remap == REMAP_ROWS) then
      i = self%remap_to(i0 - self%remap_off)
      if (i == 0) return
      i = i + self%remap_off
    else if (self%remap == REMAP_COLS) then
      j = self%remap_to(j0 - self%remap_off)
      if (j == 0) return
      j = j + self%remap_off
    end if
    call nm_store(self, i, j, v)
    if (self%mirror .and. i /= j) call nm_store(self, j, i, v)
  end subroutine

  !> Double the recorded pattern's room.
  subroutine nm_grow(self)
    type(newton_matrix_t), intent(inout) :: self
    integer, allocatable :: tmp(:)
    allocate(tmp(2 * self%np))
    tmp(1:self%np) = self%pi
    call move_alloc(tmp, self%pi)
    allocate(tmp(2 * self%np))
    tmp(1:self%np) = self%pj
    call move_alloc(tmp, self%pj)
  end subroutine

  !> Choose the solver (requested: SOLVER_AUTO or one of the three) from the
  !> recorded pattern, compute the ordering and allocate the storage.
  !> info: 0 ok; 1 sparse requested but KLU not built in; 2 KLU analysis failed;
  !> 3 nothing recorded / entry out of range.
  subroutine nm_setup(self, requested, info)
    class(newton_matrix_t), intent(inout) :: self
    integer, intent(in) :: requested
    integer, intent(out) :: info
    integer :: nx, k, c, r
    integer, allocatable :: cp(:), ri(:)
    integer(c_int) :: kinfo
    info = 0
    nx = self%nx
    if (self%kind /= RECORDING .or. self%out_of_pattern .or. nx < 1) then
      info = 3
      return
    end if
    ! every diagonal entry belongs to the pattern (pivoting may need it; it costs nothing)
    do k = 1, nx
      call self%add(k, k, 0.0_wp)
    end do
    call compress(nx, self%pi(1:self%np), self%pj(1:self%np), cp, ri)
    self%nnz = cp(nx + 1) - 1
    deallocate(self%pi, self%pj)
    self%np = 0
    allocate(self%perm(nx), self%iperm(nx))
    if (requested == SOLVER_DENSE) then
      self%perm = [(k, k = 1, nx)]
    else
      call rcm(nx, cp, ri, self%perm)
    end if
    do k = 1, nx
      self%iperm(self%perm(k)) = k
    end do
    self%kl = 0
    self%ku = 0
    do c = 1, nx
      do k = cp(c), cp(c + 1) - 1
        r = ri(k)
        self%kl = max(self%kl, self%iperm(r) - self%iperm(c))
        self%ku = max(self%ku, self%iperm(c) - self%iperm(r))
      end do
    end do
    self%kind = requested
    if (requested == SOLVER_AUTO) self%kind = choose_solver(nx, self%nnz, self%kl, self%ku)
    select case (self%kind)
    case (SOLVER_DENSE)
      allocate(self%a(nx, nx), self%ipiv(nx))
    case (SOLVER_BANDED)
      self%ldab = 2 * self%kl + self%ku + 1
      allocate(self%ab(self%ldab, nx), self%ipiv(nx), self%tmp(nx), self%prof(2, nx))
    case (SOLVER_SPARSE)
      if (.not. klu_available()) then
        info = 1
        return
      end if
      allocate(self%colptr(nx + 1), self%rowind(self%nnz), self%vals(self%nnz), self%slot(4 * self%nnz))
      self%slot = 0
      self%colptr = int(cp - 1, c_int)
      self%rowind = int(ri - 1, c_int)
      self%klu = pyint_klu_new(int(nx, c_int), self%colptr, self%rowind, kinfo)
      if (kinfo /= 0) info = 2
    case default
      info = 3
    end select
  end subroutine

  subroutine nm_zero(self)
    class(newton_matrix_t), intent(inout) :: self
    select case (self%kind)
    case (SOLVER_DENSE)
      self%a = 0
    case (SOLVER_BANDED)
      self%ab = 0
    case (SOLVER_SPARSE)
      self%vals = 0
      self%nadd = 0
    end select
  end subroutine

  !> Factor in place; info = 0 ok, > 0 singular, < 0 other failure.
  subroutine nm_factor(self, info)
    class(newton_matrix_t), intent(inout) :: self
    integer, intent(out) :: info
    select case (self%kind)
    case (SOLVER_DENSE)
      if (self%small) then
        call slu_factor(self%a, self%ipiv, info)
      else
        call lu_factor(self%a, self%ipiv, info)
      end if
    case (SOLVER_BANDED)
      call band_factor(self%nx, self%kl, self%ku, self%ab, self%ipiv, self%prof, info)
    case (SOLVER_SPARSE)
      info = pyint_klu_factor(self%klu, self%colptr, self%rowind, self%vals)
    case default
      info = -1
    end select
  end subroutine

  !> b := A^{-1} b with the current factors (natural order).
  subroutine nm_solve(self, b)
    class(newton_matrix_t), intent(inout) :: self
    real(wp), intent(inout) :: b(:)
    integer :: info, k
    select case (self%kind)
    case (SOLVER_DENSE)
      if (self%small) then
        call slu_solve(self%a, self%ipiv, b)
      else
        call lu_solve(self%a, self%ipiv, b)
      end if
    case (SOLVER_BANDED)
      do k = 1, self%nx
        self%tmp(k) = b(self%perm(k))
      end do
      call band_solve(self%nx, self%kl, self%ku, self%ab, self%ipiv, self%prof, self%tmp)
      do k = 1, self%nx
        b(self%perm(k)) = self%tmp(k)
      end do
    case (SOLVER_SPARSE)
      info = pyint_klu_solve(self%klu, b)
    end select
  end subroutine

  !> min |u_kk| / max |u_kk| over the pivots of the current LU factors (0 when a
  !> pivot is zero; 1 for an empty matrix): a cheap test for a (numerically)
  !> singular matrix, not a condition number.
  real(wp) function nm_pivot_ratio(self) result(r)
    class(newton_matrix_t), intent(in) :: self
    real(wp) :: lo, hi, d
    integer :: k
    r = 1
    if (self%nx == 0) return
    if (self%kind == SOLVER_SPARSE) then
      r = pyint_klu_pivot_ratio(self%klu)
      return
    end if
    lo = huge(1.0_wp); hi = 0
    do k = 1, self%nx
      if (self%kind == SOLVER_DENSE) then
        d = abs(self%a(k, k))
      else
        d = abs(self%ab(self%kl + self%ku + 1, k))
      end if
      lo = min(lo, d); hi = max(hi, d)
    end do
    r = 0
    if (hi > 0) r = lo / hi
  end function

  !> Is the pattern being recorded (record called, setup not yet)?  An assembly that knows some of
  !> its entries to be identically zero adds them only then (after setup, adding 0 changes nothing).
  logical pure function nm_recording(self)
    class(newton_matrix_t), intent(in) :: self
    nm_recording = self%kind == RECORDING
  end function

  !> Mirror the adds (see the component mirror) while on.
  subroutine nm_set_mirror(self, on)
    class(newton_matrix_t), intent(inout) :: self
    logical, intent(in) :: on
    self%mirror = on
  end subroutine

  !> Keep the current (assembled, not yet factored) values as the base zero_base restores.
  subroutine nm_keep_base(self)
    class(newton_matrix_t), intent(inout) :: self
    select case (self%kind)
    case (SOLVER_DENSE)
      self%base = reshape(self%a, [size(self%a)])
    case (SOLVER_BANDED)
      self%base = reshape(self%ab, [size(self%ab)])
    case (SOLVER_SPARSE)
      self%base = self%vals
    end select
  end subroutine

  !> As zero, but to the values keep_base kept.
  subroutine nm_zero_base(self)
    class(newton_matrix_t), intent(inout) :: self
    select case (self%kind)
    case (SOLVER_DENSE)
      self%a = reshape(self%base, shape(self%a))
    case (SOLVER_BANDED)
      self%ab = reshape(self%base, shape(self%ab))
    case (SOLVER_SPARSE)
      self%vals = self%base
      self%nadd = 0
    end select
  end subroutine

  !> Remap the following adds (what: REMAP_ROWS or REMAP_COLS) of indices off + k, k = 1..size(to),
  !> to off + to(k) (to(k) = 0: dropped); what = REMAP_NONE ends it.
  subroutine nm_set_remap(self, what, off, to)
    class(newton_matrix_t), intent(inout) :: self
    integer, intent(in) :: what, off
    integer, intent(in), optional :: to(:)
    self%remap = what
    self%remap_off = off
    if (what /= REMAP_NONE) self%remap_to = to
  end subroutine

  !> Free the C-side factorization (the Fortran arrays go with the object).
  subroutine nm_release(self)
    class(newton_matrix_t), intent(inout) :: self
    if (c_associated(self%klu)) call pyint_klu_free(self%klu)
    self%klu = c_null_ptr
  end subroutine

  !> Compressed sparse column form (1-based) of the pairs (pi, pj), rows
  !> sorted and duplicates removed: a counting sort by row, then by column
  !> (stable), so O(np + nx).
  subroutine compress(nx, pi, pj, cp, ri)
    integer, intent(in) :: nx, pi(:), pj(:)
    integer, allocatable, intent(out) :: cp(:), ri(:)
    integer :: np, k, r, c, pos
    integer, allocatable :: rp(:), byrow(:), cnt(:), tmp(:), last(:)
    np = size(pi)
    ! sort entry indices by row
    allocate(rp(nx + 1), byrow(np))
    rp = 0
    do k = 1, np
      rp(pi(k) + 1) = rp(pi(k) + 1) + 1
    end do
    rp(1) = 1
    do r = 1, nx
      rp(r + 1) = rp(r + 1) + rp(r)
    end do
    allocate(cnt(nx))
    cnt = rp(1:nx)
    do k = 1, np
      byrow(cnt(pi(k))) = k
      cnt(pi(k)) = cnt(pi(k)) + 1
    end do
    ! then stably by column, dropping duplicates (last(c) = last row put in column c)
    allocate(cp(nx + 1), tmp(np), last(nx))
    cp = 0
    last = 0
    do pos = 1, np
      k = byrow(pos)
      c = pj(k)
      if (last(c) /= pi(k)) then
        cp(c + 1) = cp(c + 1) + 1
        last(c) = pi(k)
      end if
    end do
    cp(1) = 1
    do c = 1, nx
      cp(c + 1) = cp(c + 1) + cp(c)
    end do
    cnt = cp(1:nx)
    last = 0
    do pos = 1, np
      k = byrow(pos)
      c = pj(k)
      if (last(c) /= pi(k)) then
        tmp(cnt(c)) = pi(k)
        cnt(c) = cnt(c) + 1
        last(c) = pi(k)
      end if
    end do
    allocate(ri(cp(nx + 1) - 1))
    ri = tmp(1:cp(nx + 1) - 1)
  end subroutine

  !> Reverse Cuthill-McKee ordering of the symmetrized pattern (cp, ri):
  !> breadth-first search from a pseudo-peripheral node of each component,
  !> neighbours in order of increasing degree, reversed.  perm(k) = unknown
  !> placed at position k.
  subroutine rcm(nx, cp, ri, perm)
    integer, intent(in) :: nx, cp(:), ri(:)
    integer, intent(out) :: perm(:)
    integer, allocatable :: ap(:), aj(:), deg(:), fill(:), order(:), level(:), mark(:)
    integer :: c, k, r, nadj, head, tail, u, s, nv, start, cand, j, pass, lastlev
    logical, allocatable :: done(:)
    ! adjacency of A + A^T without the diagonal (duplicates kept: harmless)
    allocate(deg(nx))
    deg = 0
    do c = 1, nx
      do k = cp(c), cp(c + 1) - 1
        r = ri(k)
        if (r /= c) then
          deg(r) = deg(r) + 1
          deg(c) = deg(c) + 1
        end if
      end do
    end do
    allocate(ap(nx + 1))
    ap(1) = 1
    do c = 1, nx
      ap(c + 1) = ap(c) + deg(c)
    end do
    nadj = ap(nx + 1) - 1
    allocate(aj(max(nadj, 1)), fill(nx))
    fill = ap(1:nx)
    do c = 1, nx
      do k = cp(c), cp(c + 1) - 1
        r = ri(k)
        if (r /= c) then
          aj(fill(r)) = c
          fill(r) = fill(r) + 1
          aj(fill(c)) = r
          fill(c) = fill(c) + 1
        end if
      end do
    end do
    allocate(order(nx), level(nx), done(nx), mark(nx))
    done = .false.
    level = 0
    nv = 0
    do while (nv < nx)
      ! start: the unvisited node of least degree, then move to a node of least
      ! degree in the last BFS level (twice: George-Liu pseudo-peripheral node)
      start = minloc(deg, dim=1, mask=.not. done)     ! the first of least degree
      do pass = 1, 2
        mark = 0
        call bfs_levels(start, lastlev)
        cand = minloc(deg, dim=1, mask=mark == 1 .and. level == lastlev)   ! 0: none
        if (cand /= 0) start = cand
      end do
      ! Cuthill-McKee from start
      head = nv + 1
      tail = nv + 1
      order(tail) = start
      done(start) = .true.
      do while (head <= tail)
        u = order(head)
        head = head + 1
        s = tail
        do k = ap(u), ap(u + 1) - 1
          j = aj(k)
          if (.not. done(j)) then
            done(j) = .true.
            tail = tail + 1
            order(tail) = j
          end if
        end do
        call insertion_sort(order(s + 1:tail), deg)
      end do
      nv = tail
    end do
    do k = 1, nx
      perm(k) = order(nx + 1 - k)
    end do

  contains

    subroutine bfs_levels(s0, maxlev)
      integer, intent(in) :: s0
      integer, intent(out) :: maxlev
      integer :: q(nx), h, t, uu, kk, jj
      h = 1
      t = 1
      q(1) = s0
      mark(s0) = 1
      level(s0) = 0
      maxlev = 0
      do while (h <= t)
        uu = q(h)
        h = h + 1
        do kk = ap(uu), ap(uu + 1) - 1
          jj = aj(kk)
          if (mark(jj) == 0 .and. .not. done(jj)) then
            mark(jj) = 1
            level(jj) = level(uu) + 1
            maxlev = max(maxlev, level(jj))
            t = t + 1
            q(t) = jj
          end if
        end do
      end do
    end subroutine

  end subroutine rcm

  !> Sort x in place, stably, ascending by key(x(i)) (by the values x(i) without key): insertion
  !> sort, for the short lists of a set-up (the neighbours of a node in rcm, by degree; the rows a
  !> start keeps, pyint_reduced_model).
  pure subroutine insertion_sort(x, key)
    integer, intent(inout) :: x(:)
    integer, intent(in), optional :: key(:)
    integer :: a, b, y
    do a = 2, size(x)
      y = x(a)
      b = a - 1
      do while (b >= 1)
        if (sort_key(x(b)) <= sort_key(y)) exit
        x(b + 1) = x(b)
        b = b - 1
      end do
      x(b + 1) = y
    end do

  contains

    pure integer function sort_key(i)
      integer, intent(in) :: i
      sort_key = i
      if (present(key)) sort_key = key(i)
    end function

  end subroutine insertion_sort

end module pyint_newton_matrix
