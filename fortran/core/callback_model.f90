!> A model whose items are computed by one Python callable (user prototypes).
!>
!> Every item of model_t is forwarded (fortran/core/item_model.f90) to the callback
!>     usercb(req, t, q, v, w, out)
!> with req one of the REQ_* codes below, w the extra vector the item needs
!> (a for REQ_MASS_DQ, lam for the *_TL_Q items, w for REQ_MASS_DQQ whose a is v;
!> length max(n, mh, mn)) and
!> out the buffer the callable fills in place, matrices row by row (NumPy's
!> C order: what ndarray.ravel() gives without a copy).  The Python side
!> (pyint.models.base.Model.fortran_callback) maps req to the model's method,
!> so finite-difference fallbacks of the Python model apply here too.
!>
!> Bundled requests (the default; mflags(3) /= 0 turns them off): the items of
!> one evaluation point are served from a cache, so a Newton iteration costs
!> one Python call and the driver's per-step residuals one more.  The first
!> item requested at a new point (q, and t, v where the item depends on them)
!> calls Python once with
!>     req = -(k + BUNDLE_SHIFT * mask)
!> k the item needed now, mask the bitmask (bit k-1 for item k) of the items
!> expected at this point: those requested at both of the two previous points
!> (a Newton iteration asks for the same items at every iterate; a Jacobian
!> update's items, asked at one point only, are not computed ahead), the
!> residual items announced by expect_residual_items, and the partner of an
!> item that the Python model computes with it (f_q with f_v, A with b).  The
!> items' slots of the cache (the fixed offsets of bundle_layout) are NaN
!> before the call and the callback writes every item it computes into its
!> slot (Python checks shapes, finiteness is checked here): an item it could
!> not compute (it raised) or that is not finite is asked again on its own
!> when the kernel needs it, where the per-item path reports the error (the
!> same message either way; a non-finite energy is returned as it is).  Items with a w argument (mass_dq, mass_dqq,
!> the *_TL_Q items)
!> are never cached.  A model declaring a constant mass matrix (const_mass,
!> which the kernels already trust: mass_dq = 0, a factorization kept) has it
!> asked once per kernel call.
module pyint_callback_model
  use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan
  use pyint_kinds
  use pyint_item_model, only: item_model_t
  use pyint_seam, only: REQ_MASS, REQ_MASS_DQ, REQ_FORCE, REQ_FORCE_Q, REQ_FORCE_V, REQ_HOL, REQ_HOL_JAC, &
                        REQ_HOL_T, REQ_HOL_VEL_Q, REQ_HOL_GAMMA, REQ_HOL_GTL_Q, REQ_NH_A, REQ_NH_B, &
                        REQ_NH_VEL_Q, REQ_NH_GAMMA, REQ_NH_ATL_Q, REQ_ENERGY, REQ_MASS_DQQ, NREQ, BUNDLE_SHIFT
  implicit none
  private
  public :: callback_model_t, usercb_i, callback_model_start
  public :: REQ_MASS, REQ_MASS_DQ, REQ_FORCE, REQ_FORCE_Q, REQ_FORCE_V, REQ_HOL, REQ_HOL_JAC, &
            REQ_HOL_T, REQ_HOL_VEL_Q, REQ_HOL_GAMMA, REQ_HOL_GTL_Q, REQ_NH_A, REQ_NH_B, &
            REQ_NH_VEL_Q, REQ_NH_GAMMA, REQ_NH_ATL_Q, REQ_ENERGY, REQ_MASS_DQQ, NREQ, BUNDLE_SHIFT

  ! The request codes, NREQ and BUNDLE_SHIFT: seam/seam.toml's [callback] (pyint_seam).
  ! What each item depends on besides q: DEP_T (t), DEP_V (v), DEP_W (w: never cached).
  integer, parameter :: DEP_T = 1, DEP_V = 2, DEP_W = 4
  integer, parameter :: ITEM_DEPS(NREQ) = [0, DEP_W, 3, 3, 3, DEP_T, DEP_T, DEP_T, 3, 3, &
                                          DEP_T + DEP_W, DEP_T, DEP_T, 3, 3, DEP_T + DEP_W, 3, DEP_V + DEP_W]
  ! The item one Python method computes with it (Model.force_jac: f_q and f_v; nh_A, nh_b).
  integer, parameter :: PARTNER(NREQ) = [0, 0, 0, REQ_FORCE_V, REQ_FORCE_Q, 0, 0, 0, 0, 0, 0, &
                                         REQ_NH_B, REQ_NH_A, 0, 0, 0, 0, 0]
  ! the residual items of expect_residual_items, by the kind of constraint they belong to
  integer, parameter :: HOL_RESIDUAL_ITEMS = ibset(ibset(ibset(ibset(0, REQ_HOL - 1), REQ_HOL_JAC - 1), &
                                                         REQ_HOL_T - 1), REQ_HOL_GAMMA - 1)
  integer, parameter :: NH_RESIDUAL_ITEMS = ibset(ibset(ibset(0, REQ_NH_A - 1), REQ_NH_B - 1), REQ_NH_GAMMA - 1)

  !> The per-kernel-call state of a callback model: the items of the current
  !> point (item k at buf(off(k)+1 .. off(k)+siz(k))).
  type :: cb_cache_t
    logical :: bundled = .true.
    real(wp), allocatable :: q(:), v(:), w(:), buf(:)
    real(wp) :: t = 0
    logical :: have_point = .false., have_t = .false., have_v = .false.
    logical :: mass_kept = .false.   !< a constant mass matrix in its slot
    logical :: valid(NREQ) = .false.
    integer :: off(NREQ) = 0, siz(NREQ) = 0
    integer :: asked = 0, asked_prev = 0, expect = 0   ! bitmasks of items
    integer :: hint = 0    !< items announced for the next point asked (expect_residual_items)
  end type

  abstract interface
    subroutine usercb_i(req, t, n, q, v, nw, w, nout, out)
      include 'usercb_args.inc'
    end subroutine
  end interface

  type, extends(item_model_t) :: callback_model_t
    procedure(usercb_i), pointer, nopass :: cb => null()
    type(cb_cache_t), pointer :: cache => null()
  contains
    procedure :: item_vec => get_vec
    procedure :: item_mat => get_mat
    procedure :: expect_residual_items => cb_expect_residual_items
    final :: cb_free
  end type

contains

  !> Make m's buffers (after it has its sizes and callback); bundled: items served per point.
  subroutine callback_model_start(m, bundled)
    type(callback_model_t), intent(inout) :: m
    logical, intent(in) :: bundled
    integer :: k, pos, n, mh, mn
    n = m%n
    mh = m%mh
    mn = m%mn
    allocate(m%cache)
    associate (c => m%cache)
      c%bundled = bundled
      c%siz = [n * n, n * n, n, n * n, n * n, mh, mh * n, mh, mh * n, mh, n * n, mn * n, mn, &
               mn * n, mn, n * n, 1, n * n]
      pos = 0
      do k = 1, NREQ
        c%off(k) = pos
        pos = pos + c%siz(k)
      end do
      allocate(c%q(n), c%v(n), c%w(max(n, mh, mn, 1)), c%buf(pos))
      c%buf = 0
      c%w = 0
      c%q = 0
      c%v = 0
    end associate
  end subroutine

  subroutine cb_free(self)
    type(callback_model_t), intent(inout) :: self
    if (associated(self%cache)) deallocate(self%cache)
  end subroutine

  !> Make the cache's slot of item req hold its value at (t, q, v, w): from the
  !> cache, or one Python call (a bundle, or this item alone).
  subroutine fetch(self, req, t, q, v, w)
    class(callback_model_t), intent(in) :: self
    integer, intent(in) :: req
    real(wp), intent(in) :: t, q(:), v(:), w(:)
    integer :: dep, k, mask
    dep = ITEM_DEPS(req)
    associate (c => self%cache)
      if (c%siz(req) == 0) return
      if (iand(dep, DEP_W) /= 0 .or. .not. c%bundled) then
        c%w(1:size(w)) = w
        c%w(size(w) + 1:) = 0
        call call_python(self, req, t, q, v, c%buf(c%off(req) + 1:c%off(req) + c%siz(req)))
        return
      end if
      if (req == REQ_MASS .and. c%mass_kept) return
      if (.not. c%have_point) then
        call new_point()
      else if (any(q /= c%q)) then
        call new_point()
      end if
      if (iand(dep, DEP_T) /= 0) then
        if (.not. c%have_t) then
          c%t = t
          c%have_t = .true.
        else if (t /= c%t) then
          call forget(DEP_T)
          c%t = t
        end if
      end if
      if (iand(dep, DEP_V) /= 0) then
        if (.not. c%have_v) then
          c%v = v
          c%have_v = .true.
        else if (any(v /= c%v)) then
          call forget(DEP_V)
          c%v = v
        end if
      end if
      c%asked = ibset(c%asked, req - 1)
      if (c%valid(req)) return
      ! the item, its partner, and the expected items computable now (their t and v known)
      mask = ibset(0, req - 1)
      if (PARTNER(req) > 0) mask = ibset(mask, PARTNER(req) - 1)
      do k = 1, NREQ
        if (c%valid(k) .or. c%siz(k) == 0 .or. .not. btest(ior(c%expect, c%hint), k - 1)) cycle
        if (iand(ITEM_DEPS(k), DEP_T) /= 0 .and. .not. c%have_t) cycle
        if (iand(ITEM_DEPS(k), DEP_V) /= 0 .and. .not. c%have_v) cycle
        mask = ibset(mask, k - 1)
      end do
      c%hint = 0
      do k = 1, NREQ
        if (btest(mask, k - 1)) c%buf(c%off(k) + 1:c%off(k) + c%siz(k)) = ieee_value(1.0_wp, ieee_quiet_nan)
      end do
      ! t and v of an item that does not depend on them are never looked at
      call self%cb(int(-(req + BUNDLE_SHIFT * mask), c_int), c%t, int(self%n, c_int), c%q, c%v, &
                   int(size(c%w), c_int), c%w, int(size(c%buf), c_int), c%buf)
      do k = 1, NREQ
        if (btest(mask, k - 1)) c%valid(k) = finite_item(k)
      end do
      if (.not. c%valid(req)) then
        ! not computed or not finite: the item alone, whose error is reported as on the per-item path
        call call_python(self, req, c%t, c%q, c%v, c%buf(c%off(req) + 1:c%off(req) + c%siz(req)))
        c%valid(req) = .true.   ! as Python left it (NaN on an error: the kernel stops)
      end if
      if (self%const_mass .and. c%valid(REQ_MASS) .and. .not. c%mass_kept) c%mass_kept = finite_item(REQ_MASS)
    end associate

  contains

    subroutine new_point()
      associate (c => self%cache)
        ! expect what the last two points both asked for
        if (c%have_point) then
          c%expect = iand(c%asked, c%asked_prev)
          c%asked_prev = c%asked
        end if
        c%asked = 0
        c%valid = .false.
        c%q = q
        c%have_point = .true.
        c%have_t = .false.
        c%have_v = .false.
        c%v = 0
        c%t = 0
      end associate
    end subroutine

    subroutine forget(flag)
      integer, intent(in) :: flag
      integer :: j
      do j = 1, NREQ
        if (iand(ITEM_DEPS(j), flag) /= 0) self%cache%valid(j) = .false.
      end do
    end subroutine

    !> Item j's slot holds finite numbers (NaN: not computed).
    logical function finite_item(j)
      integer, intent(in) :: j
      associate (x => self%cache%buf(self%cache%off(j) + 1:self%cache%off(j) + self%cache%siz(j)))
        finite_item = all(abs(x) <= huge(1.0_wp))
      end associate
    end function

  end subroutine

  !> One Python call for item req alone into out (req > 0: Python checks it).
  subroutine call_python(self, req, t, q, v, out)
    class(callback_model_t), intent(in) :: self
    integer, intent(in) :: req
    real(wp), intent(in) :: t, q(:), v(:)
    real(wp), intent(inout) :: out(:)
    call self%cb(int(req, c_int), t, int(self%n, c_int), q, v, int(size(self%cache%w), c_int), &
                 self%cache%w, int(size(out), c_int), out)
  end subroutine

  !> The driver's residuals at a point follow (fortran/core/metrics.f90: point_residuals):
  !> the next bundle fetches them all (bundled requests only).
  subroutine cb_expect_residual_items(self)
    class(callback_model_t), intent(in) :: self
    integer :: mask
    mask = 0
    if (self%mh > 0) mask = HOL_RESIDUAL_ITEMS
    if (self%mn > 0) mask = ior(mask, NH_RESIDUAL_ITEMS)
    if (self%has_energy) mask = ibset(mask, REQ_ENERGY - 1)
    self%cache%hint = mask
  end subroutine

  !> Vector item req at (t, q, v, w) into x (zero when the item is empty).
  subroutine get_vec(self, req, t, q, v, w, x)
    class(callback_model_t), intent(in) :: self
    integer, intent(in) :: req
    real(wp), intent(in) :: t, q(:), v(:), w(:)
    real(wp), intent(out) :: x(:)
    integer :: lo
    x = 0
    if (size(x) == 0) return
    call fetch(self, req, t, q, v, w)
    lo = self%cache%off(req)
    x = self%cache%buf(lo + 1:lo + size(x))
  end subroutine

  !> Matrix item req at (t, q, v, w) into a (stored row by row in the cache).
  subroutine get_mat(self, req, t, q, v, w, a)
    class(callback_model_t), intent(in) :: self
    integer, intent(in) :: req
    real(wp), intent(in) :: t, q(:), v(:), w(:)
    real(wp), intent(out) :: a(:, :)
    integer :: lo
    a = 0
    if (size(a) == 0) return
    call fetch(self, req, t, q, v, w)
    lo = self%cache%off(req)
    a = transpose(reshape(self%cache%buf(lo + 1:lo + size(a)), [size(a, 2), size(a, 1)]))
  end subroutine

end module pyint_callback_model
