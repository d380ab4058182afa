!> A model whose items are computed by one Python callable (user prototypes).
!>
!> Every item of model_t is forwarded to the callback
!>     usercb(req, t, q, v, w, out)
!> with req one of the REQ_* codes below, w the extra vector the item needs
!> (a for REQ_MASS_DQ, lam for the *_TL_Q items; length max(n, mh, mn)) and
!> out the column-major buffer the callable fills in place.  The Python side
!> (pyint.models.base.Model.fortran_callback) maps req to the model's method,
!> so finite-difference fallbacks of the Python model apply here too.
!>
!> Bundled requests (the default; mflags(3) /= 0 turns them off): the items of
!> one evaluation point are served from a cache.  The first item requested at a
!> new point (q, and t, v where the item depends on them) calls Python once with
!>     req = -(k + BUNDLE_SHIFT * mask)
!> k the item needed now, mask the bitmask (bit k-1 for item k) of the items
!> expected at this point: those requested at both of the two previous points
!> (a Newton iteration asks for the same items at every iterate; a Jacobian
!> update's items, asked at one point only, are not computed ahead).  Python
!> fills out(1:NREQ) with 1 for each item it computed and the items at the
!> fixed offsets of bundle_layout; an item it could not compute ahead (it
!> raised) is asked again on its own when the kernel needs it, so an error is
!> reported exactly as on the per-item path.  A miss is one more call for that
!> item.  Items with a w argument (mass_dq, the *_TL_Q items) are never
!> cached.  A model declaring a constant mass matrix (const_mass, which the
!> kernels already trust: mass_dq = 0, a factorization kept) has it asked once.
module pyint_callback_model
  use pyint_kinds
  use pyint_model, only: model_t
  implicit none
  private
  public :: callback_model_t, usercb_i
  public :: REQ_MASS, REQ_MASS_DQ, REQ_FORCE, REQ_FORCE_Q, REQ_FORCE_V, REQ_HOL, REQ_HOL_JAC, &
            REQ_HOL_T, REQ_HOL_VEL_Q, REQ_HOL_GAMMA, REQ_HOL_GTL_Q, REQ_NH_A, REQ_NH_B, &
            REQ_NH_VEL_Q, REQ_NH_GAMMA, REQ_NH_ATL_Q, REQ_ENERGY, NREQ, BUNDLE_SHIFT, &
            callback_cache_start

  ! Request codes (mirrored in pyint/models/base.py: CALLBACK_REQUESTS).
  integer, parameter :: REQ_MASS = 1, REQ_MASS_DQ = 2, REQ_FORCE = 3, REQ_FORCE_Q = 4, &
                        REQ_FORCE_V = 5, REQ_HOL = 6, REQ_HOL_JAC = 7, REQ_HOL_T = 8, &
                        REQ_HOL_VEL_Q = 9, REQ_HOL_GAMMA = 10, REQ_HOL_GTL_Q = 11, &
                        REQ_NH_A = 12, REQ_NH_B = 13, REQ_NH_VEL_Q = 14, REQ_NH_GAMMA = 15, &
                        REQ_NH_ATL_Q = 16, REQ_ENERGY = 17, NREQ = 17, BUNDLE_SHIFT = 32
  ! What each item depends on besides q: DEP_T (t), DEP_V (v), DEP_W (w: never cached).
  integer, parameter :: DEP_T = 1, DEP_V = 2, DEP_W = 4
  integer, parameter :: ITEM_DEPS(NREQ) = [0, DEP_W, 3, 3, 3, DEP_T, DEP_T, DEP_T, 3, 3, &
                                          DEP_T + DEP_W, DEP_T, DEP_T, 3, 3, DEP_T + DEP_W, 3]

  !> The per-evaluation-point cache of a callback model (one per kernel call).
  type :: cb_cache_t
    real(wp), allocatable :: q(:), v(:), buf(:), wpad(:), mass(:)
    real(wp) :: t = 0
    logical :: have_point = .false., have_t = .false., have_v = .false., have_mass = .false.
    logical :: valid(NREQ) = .false.
    integer :: off(NREQ) = 0, siz(NREQ) = 0
    integer :: asked = 0, asked_prev = 0, expect = 0   ! bitmasks of items
    integer :: hint = 0    !< items announced for the next point asked (expect_residual_items)
  end type

  abstract interface
    subroutine usercb_i(req, t, n, q, v, nw, w, nout, out)
      import :: c_double, c_int
      integer(c_int), intent(in) :: req, n, nw, nout
      real(c_double), intent(in) :: t, q(n), v(n), w(nw)
      real(c_double), intent(inout) :: out(nout)
    end subroutine
  end interface

  type, extends(model_t) :: callback_model_t
    procedure(usercb_i), pointer, nopass :: cb => null()
    type(cb_cache_t), pointer :: cache => null()   ! null: one Python call per item
  contains
    procedure :: mass => cb_mass
    procedure :: force => cb_force
    procedure :: mass_dq => cb_mass_dq
    procedure :: force_jac => cb_force_jac
    procedure :: hol => cb_hol
    procedure :: hol_jac => cb_hol_jac
    procedure :: hol_t => cb_hol_t
    procedure :: hol_vel_q => cb_hol_vel_q
    procedure :: hol_gamma => cb_hol_gamma
    procedure :: hol_gtl_q => cb_hol_gtl_q
    procedure :: nh => cb_nh
    procedure :: nh_vel_q => cb_nh_vel_q
    procedure :: nh_gamma => cb_nh_gamma
    procedure :: nh_atl_q => cb_nh_atl_q
    procedure :: energy => cb_energy
    procedure :: expect_residual_items => cb_expect_residual_items
    final :: cb_free
  end type

contains

  !> Turn on bundled requests for m (after it has its sizes and callback).
  subroutine callback_cache_start(m)
    type(callback_model_t), intent(inout) :: m
    integer :: k, pos, n, mh, mn
    n = m%n
    mh = m%mh
    mn = m%mn
    allocate(m%cache)
    associate (c => m%cache)
      c%siz = [n * n, n * n, n, n * n, n * n, mh, mh * n, mh, mh * n, mh, n * n, mn * n, mn, &
               mn * n, mn, n * n, 1]
      pos = NREQ
      do k = 1, NREQ
        c%off(k) = pos
        pos = pos + c%siz(k)
      end do
      allocate(c%q(n), c%v(n), c%buf(pos), c%wpad(max(n, mh, mn, 1)), c%mass(n * n))
      c%buf = 0
      c%wpad = 0
    end associate
  end subroutine

  subroutine cb_free(self)
    type(callback_model_t), intent(inout) :: self
    if (associated(self%cache)) deallocate(self%cache)
  end subroutine

  !> Item req at (t, q, v) into out: from the cache, or one bundled Python call.
  subroutine cached_item(self, req, t, q, v, out)
    class(callback_model_t), intent(in) :: self
    integer, intent(in) :: req
    real(wp), intent(in) :: t, q(:), v(:)
    real(wp), intent(inout) :: out(:)
    integer :: dep, k, mask, tag
    dep = ITEM_DEPS(req)
    associate (c => self%cache)
      if (req == REQ_MASS .and. self%const_mass .and. c%have_mass) then
        out = c%mass   ! a model declaring a constant mass matrix: once per kernel call
        return
      end if
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
      c%asked = ior(c%asked, ishft(1, req - 1))
      if (.not. c%valid(req)) then
        ! the expected items computable now (their t and v known) and not yet here
        mask = ishft(1, req - 1)
        do k = 1, NREQ
          if (c%valid(k) .or. .not. btest(ior(c%expect, c%hint), k - 1)) cycle
          if (iand(ITEM_DEPS(k), DEP_T) /= 0 .and. .not. c%have_t) cycle
          if (iand(ITEM_DEPS(k), DEP_V) /= 0 .and. .not. c%have_v) cycle
          mask = ibset(mask, k - 1)
        end do
        tag = -(req + BUNDLE_SHIFT * mask)
        c%hint = 0
        c%buf(1:NREQ) = 0
        ! t and v of an item that does not depend on them are never looked at
        call self%cb(int(tag, c_int), c%t, int(self%n, c_int), c%q, c%v, int(size(c%wpad), c_int), &
                     c%wpad, int(size(c%buf), c_int), c%buf)
        do k = 1, NREQ
          if (btest(mask, k - 1) .and. c%buf(k) == 1) c%valid(k) = .true.
        end do
        c%valid(req) = .true.   ! the requested item itself: as Python left it (NaN on an error)
        if (req == REQ_MASS .and. self%const_mass .and. c%buf(req) == 1) then   ! computed (NaN: failed)
          c%mass = c%buf(c%off(req) + 1:c%off(req) + c%siz(req))
          c%have_mass = .true.
        end if
      end if
      out = c%buf(c%off(req) + 1:c%off(req) + c%siz(req))
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

  end subroutine

  !> The driver's residuals at a point follow (fortran/core/metrics.f90: point_residuals):
  !> the next bundle fetches them all (bundled requests only).
  subroutine cb_expect_residual_items(self)
    class(callback_model_t), intent(in) :: self
    integer :: mask
    if (.not. associated(self%cache)) return
    mask = 0
    if (self%mh > 0) mask = ior(mask, ior(ishft(1, REQ_HOL - 1), ior(ishft(1, REQ_HOL_JAC - 1), &
                                 ior(ishft(1, REQ_HOL_T - 1), ishft(1, REQ_HOL_GAMMA - 1)))))
    if (self%mn > 0) mask = ior(mask, ior(ishft(1, REQ_NH_A - 1), ior(ishft(1, REQ_NH_B - 1), &
                                 ishft(1, REQ_NH_GAMMA - 1))))
    if (self%has_energy) mask = ior(mask, ishft(1, REQ_ENERGY - 1))
    self%cache%hint = mask
  end subroutine

  !> Call the Python callable for item req; w is padded to max(n, mh, mn).
  subroutine call_cb(self, req, t, q, v, w, out)
    class(callback_model_t), intent(in) :: self
    integer, intent(in) :: req
    real(wp), intent(in) :: t, q(:), v(:), w(:)
    real(wp), intent(inout) :: out(:)
    real(wp) :: wpad(max(self%n, self%mh, self%mn, 1))
    if (associated(self%cache)) then
      if (iand(ITEM_DEPS(req), DEP_W) == 0) then
        call cached_item(self, req, t, q, v, out)
        return
      end if
    end if
    wpad = 0
    wpad(1:size(w)) = w
    call self%cb(int(req, c_int), t, int(self%n, c_int), q, v, int(size(wpad), c_int), wpad, &
                 int(size(out), c_int), out)
  end subroutine

  subroutine cb_mass(self, q, mq)
    class(callback_model_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n)
    real(wp), intent(out) :: mq(self%n, self%n)
    real(wp) :: buf(self%n * self%n)
    buf = 0
    call call_cb(self, REQ_MASS, 0.0_wp, q, q, [real(wp) ::], buf)
    mq = reshape(buf, [self%n, self%n])
  end subroutine

  subroutine cb_mass_dq(self, q, a, d)
    class(callback_model_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n)
    real(wp), intent(out) :: d(self%n, self%n)
    real(wp) :: buf(self%n * self%n)
    if (self%const_mass) then
      d = 0
      return
    end if
    buf = 0
    call call_cb(self, REQ_MASS_DQ, 0.0_wp, q, q, a, buf)
    d = reshape(buf, [self%n, self%n])
  end subroutine

  subroutine cb_force(self, t, q, v, f)
    class(callback_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: f(self%n)
    f = 0
    call call_cb(self, REQ_FORCE, t, q, v, [real(wp) ::], f)
  end subroutine

  subroutine cb_force_jac(self, t, q, v, fq, fv)
    class(callback_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: fq(self%n, self%n), fv(self%n, self%n)
    real(wp) :: buf(self%n * self%n)
    buf = 0
    call call_cb(self, REQ_FORCE_Q, t, q, v, [real(wp) ::], buf)
    fq = reshape(buf, [self%n, self%n])
    buf = 0
    call call_cb(self, REQ_FORCE_V, t, q, v, [real(wp) ::], buf)
    fv = reshape(buf, [self%n, self%n])
  end subroutine

  subroutine cb_hol(self, t, q, g)
    class(callback_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: g(self%mh)
    g = 0
    if (self%mh > 0) call call_cb(self, REQ_HOL, t, q, q, [real(wp) ::], g)
  end subroutine

  subroutine cb_hol_jac(self, t, q, gq)
    class(callback_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: gq(self%mh, self%n)
    real(wp) :: buf(self%mh * self%n)
    buf = 0
    if (self%mh > 0) call call_cb(self, REQ_HOL_JAC, t, q, q, [real(wp) ::], buf)
    gq = reshape(buf, [self%mh, self%n])
  end subroutine

  subroutine cb_hol_t(self, t, q, gt)
    class(callback_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: gt(self%mh)
    gt = 0
    if (self%mh > 0) call call_cb(self, REQ_HOL_T, t, q, q, [real(wp) ::], gt)
  end subroutine

  subroutine cb_hol_vel_q(self, t, q, v, d)
    class(callback_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mh, self%n)
    real(wp) :: buf(self%mh * self%n)
    buf = 0
    if (self%mh > 0) call call_cb(self, REQ_HOL_VEL_Q, t, q, v, [real(wp) ::], buf)
    d = reshape(buf, [self%mh, self%n])
  end subroutine

  subroutine cb_hol_gamma(self, t, q, v, gam)
    class(callback_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mh)
    gam = 0
    if (self%mh > 0) call call_cb(self, REQ_HOL_GAMMA, t, q, v, [real(wp) ::], gam)
  end subroutine

  subroutine cb_hol_gtl_q(self, t, q, lam, d)
    class(callback_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mh)
    real(wp), intent(out) :: d(self%n, self%n)
    real(wp) :: buf(self%n * self%n)
    buf = 0
    if (self%mh > 0) call call_cb(self, REQ_HOL_GTL_Q, t, q, q, lam, buf)
    d = reshape(buf, [self%n, self%n])
  end subroutine

  subroutine cb_nh(self, t, q, a, b)
    class(callback_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: a(self%mn, self%n), b(self%mn)
    real(wp) :: buf(self%mn * self%n)
    buf = 0
    b = 0
    if (self%mn > 0) then
      call call_cb(self, REQ_NH_A, t, q, q, [real(wp) ::], buf)
      call call_cb(self, REQ_NH_B, t, q, q, [real(wp) ::], b)
    end if
    a = reshape(buf, [self%mn, self%n])
  end subroutine

  subroutine cb_nh_vel_q(self, t, q, v, d)
    class(callback_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mn, self%n)
    real(wp) :: buf(self%mn * self%n)
    buf = 0
    if (self%mn > 0) call call_cb(self, REQ_NH_VEL_Q, t, q, v, [real(wp) ::], buf)
    d = reshape(buf, [self%mn, self%n])
  end subroutine

  subroutine cb_nh_gamma(self, t, q, v, gam)
    class(callback_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mn)
    gam = 0
    if (self%mn > 0) call call_cb(self, REQ_NH_GAMMA, t, q, v, [real(wp) ::], gam)
  end subroutine

  subroutine cb_nh_atl_q(self, t, q, lam, d)
    class(callback_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mn)
    real(wp), intent(out) :: d(self%n, self%n)
    real(wp) :: buf(self%n * self%n)
    buf = 0
    if (self%mn > 0) call call_cb(self, REQ_NH_ATL_Q, t, q, q, lam, buf)
    d = reshape(buf, [self%n, self%n])
  end subroutine

  real(wp) function cb_energy(self, t, q, v)
    class(callback_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp) :: buf(1)
    buf = 0
    if (self%has_energy) call call_cb(self, REQ_ENERGY, t, q, v, [real(wp) ::], buf)
    cb_energy = buf(1)
  end function

end module pyint_callback_model
