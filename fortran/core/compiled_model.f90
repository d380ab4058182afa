!> A model compiled at run time (pyint.models.SymbolicModel): every item is
!> evaluated by one bind(C) routine of a shared library that pyint generated
!> from SymPy expressions and compiled with gfortran (pyint/models/symbolic.py),
!>
!>     eval(req, t, q, v, w, rpar, out)
!>
!> req one of the request codes of callback_model.f90 (REQ_MASS ... REQ_MASS_DQQ),
!> w the extra vector of the item (a for REQ_MASS_DQ, lam for the *_TL_Q
!> items, w for REQ_MASS_DQQ = d/dq [(M a)_q w] whose a is v), rpar the model's parameters (runtime inputs: a parameter sweep does
!> not recompile).  Vector items fill out(1:len); matrix items fill
!> out(1:nnz) with their structural nonzeros in the order of the pattern below,
!> so the Newton-matrix hooks add O(nnz) entries (the sparsity the symbolic
!> derivation found) and no item is a finite difference.  The dense items are model_t's through
!> the request codes, as the callback model's (fortran/core/item_model.f90).
!>
!> The Python side passes the routine's address and the patterns in ipar
!> (setup_model's model_id COMPILED_MODEL_ID):
!>     ipar = [addr_lo, addr_hi, n, mh, mn, nnz(1:NMAT), rows(1:sum nnz), cols(1:sum nnz)]
!> with addr the routine's address as two 32-bit halves (low first) and the
!> matrix items in the order MAT_REQ.  The time loop never enters Python.
module pyint_compiled_model
  use iso_c_binding, only: c_intptr_t, c_funptr, c_f_procpointer
  use pyint_kinds
  use pyint_item_model, only: item_model_t
  use pyint_newton_matrix, only: newton_matrix_t
  use pyint_callback_model, only: REQ_MASS, REQ_MASS_DQ, REQ_FORCE_Q, REQ_FORCE_V, REQ_HOL_JAC, REQ_HOL_T, &
       REQ_HOL_VEL_Q, REQ_HOL_GTL_Q, REQ_NH_A, REQ_NH_B, REQ_NH_VEL_Q, REQ_NH_ATL_Q, REQ_MASS_DQQ
  implicit none
  private
  public :: compiled_model_t, compiled_model_new, COMPILED_MODEL_ID

  !> The model_id of a compiled model (above every built-in id).
  integer, parameter :: COMPILED_MODEL_ID = 1000
  integer, parameter :: NMAT = 11
  !> Matrix items, in the order of their patterns in ipar.
  integer, parameter :: MAT_REQ(NMAT) = [REQ_MASS, REQ_MASS_DQ, REQ_FORCE_Q, REQ_FORCE_V, REQ_HOL_JAC, &
                                         REQ_HOL_VEL_Q, REQ_HOL_GTL_Q, REQ_NH_A, REQ_NH_VEL_Q, REQ_NH_ATL_Q, &
                                         REQ_MASS_DQQ]
  integer, parameter :: K_MASS = 1, K_MASS_DQ = 2, K_FQ = 3, K_FV = 4, K_G = 5, K_GVQ = 6, K_GTL = 7, &
                        K_A = 8, K_AVQ = 9, K_ATL = 10, K_MASS_DQQ = 11
  !> An item's nonzeros are evaluated into a local buffer of this many entries, larger ones into an
  !> allocated one: gfortran puts an automatic array of run-time size on the heap (a malloc / free
  !> pair at every G^T lam, M a, ...: 8 % of a composition step's instructions on seed 002's triple
  !> pendulum).
  integer, parameter :: NNZ_LOCAL = 256

  abstract interface
    subroutine eval_i(req, t, q, v, w, rpar, out) bind(C)
      import :: c_int, c_double
      integer(c_int), value :: req
      real(c_double), value :: t
      real(c_double), intent(in) :: q(*), v(*), w(*), rpar(*)
      real(c_double), intent(inout) :: out(*)
    end subroutine
  end interface

  type, extends(item_model_t) :: compiled_model_t
    procedure(eval_i), pointer, nopass :: ev => null()
    real(wp), allocatable :: rpar(:)
    integer :: off(NMAT + 1) = 0           !< item k's nonzeros are off(k)+1 .. off(k+1)
    integer, allocatable :: pr(:), pc(:)   !< their rows and columns (1-based)
    real(wp), allocatable :: mass_vals(:)  !< a constant M's nonzeros, evaluated once
  contains
    procedure :: item_vec => cm_item_vec
    procedure :: item_mat => cm_item_mat
    procedure :: mass_mul => cm_mass_mul
    procedure :: hol_vel => cm_hol_vel
    procedure :: hol_jac_tmul => cm_hol_jac_tmul
    procedure :: nh_vel => cm_nh_vel
    procedure :: nh_jac_tmul => cm_nh_jac_tmul
    procedure :: add_qq => cm_add_qq
    procedure :: add_hol_jac => cm_add_hol_jac
    procedure :: add_hol_vel_q => cm_add_hol_vel_q
    procedure :: add_nh_jac => cm_add_nh_jac
    procedure :: add_nh_vel_q => cm_add_nh_vel_q
  end type

contains

  !> Decode ipar (layout in the module header); ierr = 1 on a malformed block.
  subroutine compiled_model_new(ipar, rpar, mflags, m, ierr)
    integer, intent(in) :: ipar(:), mflags(:)
    real(wp), intent(in) :: rpar(:)
    type(compiled_model_t), intent(out) :: m
    integer, intent(out) :: ierr
    integer(c_intptr_t) :: addr
    type(c_funptr) :: fp
    integer :: k, nnz, p0, i
    real(wp), allocatable :: z(:), mv(:)
    ierr = 1
    if (size(ipar) < 5 + NMAT) return
    addr = ior(iand(int(ipar(1), c_intptr_t), int(z'FFFFFFFF', c_intptr_t)), &
               ishft(int(ipar(2), c_intptr_t), 32))
    if (addr == 0) return
    m%n = ipar(3); m%mh = ipar(4); m%mn = ipar(5)
    if (m%n < 1 .or. m%mh < 0 .or. m%mn < 0) return
    m%off(1) = 0
    do k = 1, NMAT
      if (ipar(5 + k) < 0) return
      m%off(k + 1) = m%off(k) + ipar(5 + k)
    end do
    nnz = m%off(NMAT + 1)
    if (size(ipar) /= 5 + NMAT + 2 * nnz) return
    p0 = 5 + NMAT
    m%pr = ipar(p0 + 1:p0 + nnz)
    m%pc = ipar(p0 + nnz + 1:p0 + 2 * nnz)
    do k = 1, NMAT
      do i = m%off(k) + 1, m%off(k + 1)
        if (m%pr(i) < 1 .or. m%pr(i) > rows_of(m, k) .or. m%pc(i) < 1 .or. m%pc(i) > m%n) return
      end do
    end do
    m%const_mass = mflags(1) /= 0
    m%has_energy = mflags(2) /= 0
    ! f_q and f_v without a structural nonzero: SymPy found f free of q and v (the items' patterns
    ! are the derivatives' nonzeros), so the kernels evaluate f once per point in time
    m%const_force = m%off(K_FQ + 1) == m%off(K_FQ) .and. m%off(K_FV + 1) == m%off(K_FV)
    m%rpar = rpar
    fp = transfer(addr, fp)
    call c_f_procpointer(fp, m%ev)
    if (m%const_mass) then        ! (M depends on neither q nor t: any point gives it)
      allocate(mv(m%off(K_MASS + 1) - m%off(K_MASS)), z(m%n))
      z = 0
      call vals(m, K_MASS, 0.0_wp, z, z, z, mv)
      call move_alloc(mv, m%mass_vals)
    end if
    ierr = 0
  end subroutine

  pure integer function rows_of(m, k)
    type(compiled_model_t), intent(in) :: m
    integer, intent(in) :: k
    select case (k)
    case (K_G, K_GVQ)
      rows_of = m%mh
    case (K_A, K_AVQ)
      rows_of = m%mn
    case default
      rows_of = m%n
    end select
  end function

  !> Item k's nonzeros at (t, q, v, w).
  subroutine vals(self, k, t, q, v, w, x)
    class(compiled_model_t), intent(in) :: self
    integer, intent(in) :: k
    real(wp), intent(in) :: t, q(:), v(:), w(:)
    real(wp), intent(out) :: x(:)
    real(wp) :: dummy(1)
    if (k == K_MASS .and. allocated(self%mass_vals)) then
      x = self%mass_vals
      return
    end if
    if (size(x) == 0) then
      call self%ev(int(MAT_REQ(k), c_int), t, q, v, w, self%rpar, dummy)
      return
    end if
    call self%ev(int(MAT_REQ(k), c_int), t, q, v, w, self%rpar, x)
  end subroutine

  !> Dense matrix of item k.
  subroutine dense(self, k, t, q, v, w, d)
    class(compiled_model_t), intent(in) :: self
    integer, intent(in) :: k
    real(wp), intent(in) :: t, q(:), v(:), w(:)
    real(wp), intent(out) :: d(:, :)
    real(wp) :: local(NNZ_LOCAL)
    real(wp), allocatable :: big(:)
    integer :: nb
    d = 0
    nb = self%off(k + 1) - self%off(k)
    if (nb == 0) return
    if (nb <= NNZ_LOCAL) then
      call fill(local(1:nb))
    else
      allocate(big(nb))
      call fill(big)
    end if
  contains
    subroutine fill(b)
      real(wp), intent(out) :: b(:)
      integer :: i, o
      call vals(self, k, t, q, v, w, b)
      o = self%off(k)
      do i = 1, size(b)
        d(self%pr(o + i), self%pc(o + i)) = b(i)
      end do
    end subroutine
  end subroutine

  !> y = s B x (trans false) or y = s B^T x (trans true) for item k, accumulated.
  subroutine spmv(self, k, t, q, v, w, x, trans, y)
    class(compiled_model_t), intent(in) :: self
    integer, intent(in) :: k
    real(wp), intent(in) :: t, q(:), v(:), w(:), x(:)
    logical, intent(in) :: trans
    real(wp), intent(inout) :: y(:)
    real(wp) :: local(NNZ_LOCAL)
    real(wp), allocatable :: big(:)
    integer :: nb
    nb = self%off(k + 1) - self%off(k)
    if (nb == 0) return
    if (nb <= NNZ_LOCAL) then
      call apply(local(1:nb))
    else
      allocate(big(nb))
      call apply(big)
    end if
  contains
    subroutine apply(b)
      real(wp), intent(out) :: b(:)
      integer :: i, o
      call vals(self, k, t, q, v, w, b)
      o = self%off(k)
      if (trans) then
        do i = 1, size(b)
          y(self%pc(o + i)) = y(self%pc(o + i)) + b(i) * x(self%pr(o + i))
        end do
      else
        do i = 1, size(b)
          y(self%pr(o + i)) = y(self%pr(o + i)) + b(i) * x(self%pc(o + i))
        end do
      end if
    end subroutine
  end subroutine

  !> asm += s B (or s B^T) for item k: every structural nonzero, zeros included.
  subroutine add_item(self, k, t, q, v, w, s, trans, asm, r0, c0)
    class(compiled_model_t), intent(in) :: self
    integer, intent(in) :: k
    real(wp), intent(in) :: t, q(:), v(:), w(:), s
    logical, intent(in) :: trans
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    real(wp) :: local(NNZ_LOCAL)
    real(wp), allocatable :: big(:)
    integer :: nb
    nb = self%off(k + 1) - self%off(k)
    if (nb == 0) return
    if (nb <= NNZ_LOCAL) then
      call add(local(1:nb))
    else
      allocate(big(nb))
      call add(big)
    end if
  contains
    subroutine add(b)
      real(wp), intent(out) :: b(:)
      integer :: i, o
      call vals(self, k, t, q, v, w, b)
      o = self%off(k)
      do i = 1, size(b)
        if (trans) then
          call asm%add(r0 + self%pc(o + i), c0 + self%pr(o + i), s * b(i))
        else
          call asm%add(r0 + self%pr(o + i), c0 + self%pc(o + i), s * b(i))
        end if
      end do
    end subroutine
  end subroutine

  !> Vector item req at (t, q, v, w) into x (the dense items of model_t: fortran/core/item_model.f90).
  subroutine cm_item_vec(self, req, t, q, v, w, x)
    class(compiled_model_t), intent(in) :: self
    integer, intent(in) :: req
    real(wp), intent(in) :: t, q(:), v(:), w(:)
    real(wp), intent(out) :: x(:)
    if (size(x) == 0) return
    call self%ev(int(req, c_int), t, q, v, w, self%rpar, x)
  end subroutine

  !> Matrix item req at (t, q, v, w), dense, from its nonzeros (its slot k: MAT_REQ(k) = req).
  subroutine cm_item_mat(self, req, t, q, v, w, a)
    class(compiled_model_t), intent(in) :: self
    integer, intent(in) :: req
    real(wp), intent(in) :: t, q(:), v(:), w(:)
    real(wp), intent(out) :: a(:, :)
    call dense(self, findloc(MAT_REQ, req, 1), t, q, v, w, a)
  end subroutine

  ! --- structured items: O(nnz) -------------------------------------------------

  subroutine cm_mass_mul(self, q, a, ma)
    class(compiled_model_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n)
    real(wp), intent(out) :: ma(self%n)
    ma = 0
    call spmv(self, K_MASS, 0.0_wp, q, q, q, a, .false., ma)
  end subroutine

  subroutine cm_hol_vel(self, t, q, v, w)
    class(compiled_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: w(self%mh)
    if (self%mh == 0) return
    call cm_item_vec(self, REQ_HOL_T, t, q, q, q, w)
    call spmv(self, K_G, t, q, q, q, v, .false., w)
  end subroutine

  subroutine cm_hol_jac_tmul(self, t, q, lam, r)
    class(compiled_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mh)
    real(wp), intent(out) :: r(self%n)
    r = 0
    if (self%mh == 0) return
    call spmv(self, K_G, t, q, q, q, lam, .true., r)
  end subroutine

  subroutine cm_nh_vel(self, t, q, v, w)
    class(compiled_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: w(self%mn)
    if (self%mn == 0) return
    call cm_item_vec(self, REQ_NH_B, t, q, q, q, w)
    call spmv(self, K_A, t, q, q, q, v, .false., w)
  end subroutine

  subroutine cm_nh_jac_tmul(self, t, q, lam, r)
    class(compiled_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mn)
    real(wp), intent(out) :: r(self%n)
    r = 0
    if (self%mn == 0) return
    call spmv(self, K_A, t, q, q, q, lam, .true., r)
  end subroutine

  !> c1 M + c2 (M a)_q + c3 f_q + c4 f_v + c5 (G^T lh)_q + c6 (A^T ln)_q, item by
  !> item over its structural nonzeros (an item with a zero coefficient is skipped).
  subroutine cm_add_qq(self, t, q, v, a, lh, ln, c, asm, r0, c0)
    class(compiled_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n), a(self%n), lh(self%mh), ln(self%mn), c(6)
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    if (c(1) /= 0) call add_item(self, K_MASS, t, q, v, q, c(1), .false., asm, r0, c0)
    if (c(2) /= 0 .and. .not. self%const_mass) &
      call add_item(self, K_MASS_DQ, t, q, v, a, c(2), .false., asm, r0, c0)
    if (c(3) /= 0) call add_item(self, K_FQ, t, q, v, q, c(3), .false., asm, r0, c0)
    if (c(4) /= 0) call add_item(self, K_FV, t, q, v, q, c(4), .false., asm, r0, c0)
    if (c(5) /= 0 .and. self%mh > 0) call add_item(self, K_GTL, t, q, v, lh, c(5), .false., asm, r0, c0)
    if (c(6) /= 0 .and. self%mn > 0) call add_item(self, K_ATL, t, q, v, ln, c(6), .false., asm, r0, c0)
  end subroutine

  subroutine cm_add_hol_jac(self, t, q, s, trans, asm, r0, c0)
    class(compiled_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), s
    logical, intent(in) :: trans
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    if (self%mh > 0) call add_item(self, K_G, t, q, q, q, s, trans, asm, r0, c0)
  end subroutine

  subroutine cm_add_hol_vel_q(self, t, q, v, s, asm, r0, c0)
    class(compiled_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n), s
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    if (self%mh > 0) call add_item(self, K_GVQ, t, q, v, q, s, .false., asm, r0, c0)
  end subroutine

  subroutine cm_add_nh_jac(self, t, q, s, trans, asm, r0, c0)
    class(compiled_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), s
    logical, intent(in) :: trans
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    if (self%mn > 0) call add_item(self, K_A, t, q, q, q, s, trans, asm, r0, c0)
  end subroutine

  subroutine cm_add_nh_vel_q(self, t, q, v, s, asm, r0, c0)
    class(compiled_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n), s
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    if (self%mn > 0) call add_item(self, K_AVQ, t, q, v, q, s, .false., asm, r0, c0)
  end subroutine

end module pyint_compiled_model
