!> Chaplygin sleigh in contact-point coordinates: a nonholonomic model with M(q).
!>
!> q = (x, y, theta): contact point P and blade heading; the mass centre C is
!> at P + a (cos theta, sin theta).  With s = sin theta, c = cos theta:
!>   M(q) = [[m, 0, -m a s], [0, m, m a c], [-m a s, m a c, J + m a^2]]   (det = m^2 J)
!>   f    = (m a c theta'^2 - k (x + a c), m a s theta'^2 - k (y + a s),
!>           -k a (c y - s x) - c_d theta')
!>          (centrifugal term of Lagrange's equations, spring k from the origin
!>          to C, rotational damper c_d)
!>   A    = [-s, c, 0],  A v = 0 (no lateral slip at P)
!>   energy = 1/2 v^T M v + 1/2 k |r_C|^2 (conserved when c_d = 0).
!> ipar = []; rpar = [m, J, a, k, c_d].
!> NumPy twin (with the derivation): pyint/models/chaplygin_sleigh.py.
module model_chaplygin_sleigh
  use pyint_kinds
  use pyint_model, only: model_t
  implicit none
  private
  public :: chaplygin_sleigh_t

  type, extends(model_t) :: chaplygin_sleigh_t
    real(wp) :: m = 0, j = 0, a = 0, k = 0, cd = 0
  contains
    procedure :: init => cs_init
    procedure :: mass => cs_mass
    procedure :: force => cs_force
    procedure :: mass_dq => cs_mass_dq
    procedure :: force_jac => cs_force_jac
    procedure :: nh => cs_nh
    procedure :: nh_vel_q => cs_nh_vel_q
    procedure :: nh_gamma => cs_nh_gamma
    procedure :: nh_atl_q => cs_nh_atl_q
    procedure :: potential => cs_potential
  end type

contains

  subroutine cs_init(self, ipar, rpar, ierr)
    class(chaplygin_sleigh_t), intent(inout) :: self
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    integer, intent(out) :: ierr
    ierr = 1
    if (size(rpar) /= 5) return
    if (any(rpar(1:2) <= 0) .or. any(rpar(4:5) < 0)) return
    self%n = 3
    self%mh = 0
    self%mn = 1
    self%const_mass = .false.
    self%has_energy = .true.
    self%m = rpar(1); self%j = rpar(2); self%a = rpar(3); self%k = rpar(4); self%cd = rpar(5)
    ierr = 0
  end subroutine

  subroutine cs_mass(self, q, mq)
    class(chaplygin_sleigh_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n)
    real(wp), intent(out) :: mq(self%n, self%n)
    real(wp) :: ma
    ma = self%m * self%a
    mq(:, 1) = [self%m, 0.0_wp, -ma * sin(q(3))]
    mq(:, 2) = [0.0_wp, self%m, ma * cos(q(3))]
    mq(:, 3) = [-ma * sin(q(3)), ma * cos(q(3)), self%j + self%m * self%a**2]
  end subroutine

  subroutine cs_mass_dq(self, q, a, d)
    class(chaplygin_sleigh_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n)
    real(wp), intent(out) :: d(self%n, self%n)
    real(wp) :: ma, s, c
    ma = self%m * self%a
    s = sin(q(3)); c = cos(q(3))
    d = 0
    d(:, 3) = [-ma * c * a(3), -ma * s * a(3), -ma * (c * a(1) + s * a(2))]
  end subroutine

  subroutine cs_force(self, t, q, v, f)
    class(chaplygin_sleigh_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: f(self%n)
    real(wp) :: ma, s, c
    ma = self%m * self%a
    s = sin(q(3)); c = cos(q(3))
    f(1) = ma * c * v(3)**2 - self%k * (q(1) + self%a * c)
    f(2) = ma * s * v(3)**2 - self%k * (q(2) + self%a * s)
    f(3) = -self%k * self%a * (c * q(2) - s * q(1)) - self%cd * v(3)
  end subroutine

  subroutine cs_force_jac(self, t, q, v, fq, fv)
    class(chaplygin_sleigh_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: fq(self%n, self%n), fv(self%n, self%n)
    real(wp) :: ma, ka, s, c, w
    ma = self%m * self%a
    ka = self%k * self%a
    s = sin(q(3)); c = cos(q(3)); w = v(3)
    fq(:, 1) = [-self%k, 0.0_wp, ka * s]
    fq(:, 2) = [0.0_wp, -self%k, -ka * c]
    fq(:, 3) = [-ma * s * w**2 + ka * s, ma * c * w**2 - ka * c, ka * (c * q(1) + s * q(2))]
    fv = 0
    fv(:, 3) = [2 * ma * c * w, 2 * ma * s * w, -self%cd]
  end subroutine

  subroutine cs_nh(self, t, q, a, b)
    class(chaplygin_sleigh_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: a(self%mn, self%n), b(self%mn)
    a(1, :) = [-sin(q(3)), cos(q(3)), 0.0_wp]
    b = 0
  end subroutine

  subroutine cs_nh_vel_q(self, t, q, v, d)
    class(chaplygin_sleigh_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mn, self%n)
    d(1, :) = [0.0_wp, 0.0_wp, -cos(q(3)) * v(1) - sin(q(3)) * v(2)]
  end subroutine

  subroutine cs_nh_gamma(self, t, q, v, gam)
    class(chaplygin_sleigh_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mn)
    gam(1) = -v(3) * (cos(q(3)) * v(1) + sin(q(3)) * v(2))
  end subroutine

  subroutine cs_nh_atl_q(self, t, q, lam, d)
    class(chaplygin_sleigh_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mn)
    real(wp), intent(out) :: d(self%n, self%n)
    d = 0
    d(1, 3) = -lam(1) * cos(q(3))
    d(2, 3) = -lam(1) * sin(q(3))
  end subroutine

  !> The spring's 1/2 k |r_C|^2.
  real(wp) function cs_potential(self, t, q)
    class(chaplygin_sleigh_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp) :: rc(2)
    rc = [q(1) + self%a * cos(q(3)), q(2) + self%a * sin(q(3))]
    cs_potential = 0.5_wp * self%k * dot_product(rc, rc)
  end function

end module model_chaplygin_sleigh
