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
  use pyint_model, only: rpar_error
  use model_knife_edge, only: knife_edge_t, knife_edge_layout
  implicit none
  private
  public :: chaplygin_sleigh_t

  !> The blade at P: a knife edge at the origin of (x, y).
  type, extends(knife_edge_t) :: chaplygin_sleigh_t
    real(wp) :: m = 0, j = 0, a = 0, k = 0, cd = 0
  contains
    procedure :: init => cs_init
    procedure :: mass => cs_mass
    procedure :: force => cs_force
    procedure :: mass_dq => cs_mass_dq
    procedure :: mass_dqq => cs_mass_dqq
    procedure :: force_jac => cs_force_jac
    procedure :: potential => cs_potential
  end type

contains

  subroutine cs_init(self, ipar, rpar, ierr)
    class(chaplygin_sleigh_t), intent(inout) :: self
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    integer, intent(out) :: ierr
    ierr = rpar_error(rpar, 'pp.nn')   ! m, J > 0; k, c_d >= 0
    if (ierr /= 0) return
    self%n = 3
    call knife_edge_layout(self, [0.0_wp], [1.0_wp], [0], 1.0_wp)
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

  !> d/dq [D(q, a) w]: D w = w(3) D(:, 3), a function of q(3) only.
  subroutine cs_mass_dqq(self, q, a, w, k)
    class(chaplygin_sleigh_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n), w(self%n)
    real(wp), intent(out) :: k(self%n, self%n)
    real(wp) :: ma, s, c
    ma = self%m * self%a
    s = sin(q(3)); c = cos(q(3))
    k = 0
    k(:, 3) = w(3) * [ma * s * a(3), -ma * c * a(3), ma * (s * a(1) - c * a(2))]
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

  !> The spring's 1/2 k |r_C|^2.
  real(wp) function cs_potential(self, t, q)
    class(chaplygin_sleigh_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp) :: rc(2)
    rc = [q(1) + self%a * cos(q(3)), q(2) + self%a * sin(q(3))]
    cs_potential = 0.5_wp * self%k * dot_product(rc, rc)
  end function

end module model_chaplygin_sleigh
