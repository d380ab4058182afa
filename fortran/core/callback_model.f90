!> A model whose items are computed by one Python callable (user prototypes).
!>
!> Every item of model_t is forwarded to the callback
!>     usercb(req, t, q, v, w, out)
!> with req one of the REQ_* codes below, w the extra vector the item needs
!> (a for REQ_MASS_DQ, lam for the *_TL_Q items; length max(n, mh, mn)) and
!> out the column-major buffer the callable fills in place.  The Python side
!> (pyint.models.base.Model.fortran_callback) maps req to the model's method,
!> so finite-difference fallbacks of the Python model apply here too.
module pyint_callback_model
  use pyint_kinds
  use pyint_model, only: model_t
  implicit none
  private
  public :: callback_model_t, usercb_i
  public :: REQ_MASS, REQ_MASS_DQ, REQ_FORCE, REQ_FORCE_Q, REQ_FORCE_V, REQ_HOL, REQ_HOL_JAC, &
            REQ_HOL_T, REQ_HOL_VEL_Q, REQ_HOL_GAMMA, REQ_HOL_GTL_Q, REQ_NH_A, REQ_NH_B, &
            REQ_NH_VEL_Q, REQ_NH_GAMMA, REQ_NH_ATL_Q, REQ_ENERGY

  ! Request codes (mirrored in pyint/models/base.py: CALLBACK_REQUESTS).
  integer, parameter :: REQ_MASS = 1, REQ_MASS_DQ = 2, REQ_FORCE = 3, REQ_FORCE_Q = 4, &
                        REQ_FORCE_V = 5, REQ_HOL = 6, REQ_HOL_JAC = 7, REQ_HOL_T = 8, &
                        REQ_HOL_VEL_Q = 9, REQ_HOL_GAMMA = 10, REQ_HOL_GTL_Q = 11, &
                        REQ_NH_A = 12, REQ_NH_B = 13, REQ_NH_VEL_Q = 14, REQ_NH_GAMMA = 15, &
                        REQ_NH_ATL_Q = 16, REQ_ENERGY = 17

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
  end type

contains

  !> Call the Python callable for item req; w is padded to max(n, mh, mn).
  subroutine call_cb(self, req, t, q, v, w, out)
    class(callback_model_t), intent(in) :: self
    integer, intent(in) :: req
    real(wp), intent(in) :: t, q(:), v(:), w(:)
    real(wp), intent(inout) :: out(:)
    real(wp) :: wpad(max(self%n, self%mh, self%mn, 1))
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
