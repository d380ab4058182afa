!> The planar two-link manipulator in independent coordinates (seed 003 eq. (14)):
!> q = (theta1, theta2), theta1 from the horizontal, theta2 relative to link 1;
!> uniform bars, I_i = m_i L_i^2 / 3 + m_i width^2 / 12, k = m2 L1 L2 / 2;
!> width = 0 is eq. (14) as printed.  rpar = [m1, m2, L1, L2, width, g].
!> NumPy twin (with the equations): pyint/models/two_link_angles.py.
module model_two_link_angles
  use pyint_kinds
  use pyint_model, only: model_t, rpar_error
  implicit none
  private
  public :: two_link_angles_t

  type, extends(model_t) :: two_link_angles_t
    real(wp) :: m1 = 0, m2 = 0, l1 = 0, l2 = 0, g = 0, i1 = 0, i2 = 0, k = 0
  contains
    procedure :: init => tl_init
    procedure :: mass => tl_mass
    procedure :: mass_dq => tl_mass_dq
    procedure :: mass_dqq => tl_mass_dqq
    procedure :: force => tl_force
    procedure :: force_jac => tl_force_jac
    procedure :: potential => tl_potential
  end type

contains

  subroutine tl_init(self, ipar, rpar, ierr)
    class(two_link_angles_t), intent(inout) :: self
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    integer, intent(out) :: ierr
    ierr = rpar_error(rpar, 'ppppn.')   ! m1, m2, L1, L2 > 0; width >= 0
    if (ierr /= 0) return
    self%n = 2; self%mh = 0; self%mn = 0
    self%const_mass = .false.
    self%has_energy = .true.
    self%m1 = rpar(1); self%m2 = rpar(2); self%l1 = rpar(3); self%l2 = rpar(4); self%g = rpar(6)
    self%i1 = self%m1 * self%l1**2 / 3 + self%m1 * rpar(5)**2 / 12
    self%i2 = self%m2 * self%l2**2 / 3 + self%m2 * rpar(5)**2 / 12
    self%k = 0.5_wp * self%m2 * self%l1 * self%l2
    ierr = 0
  end subroutine

  subroutine tl_mass(self, q, mq)
    class(two_link_angles_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n)
    real(wp), intent(out) :: mq(self%n, self%n)
    real(wp) :: c2
    c2 = cos(q(2))
    mq(1, 1) = self%i1 + self%m2 * self%l1**2 + self%i2 + 2 * self%k * c2
    mq(1, 2) = self%i2 + self%k * c2
    mq(2, 1) = mq(1, 2)
    mq(2, 2) = self%i2
  end subroutine

  subroutine tl_mass_dq(self, q, a, d)
    class(two_link_angles_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n)
    real(wp), intent(out) :: d(self%n, self%n)
    real(wp) :: s2
    s2 = sin(q(2))
    d(:, 1) = 0
    d(1, 2) = -self%k * s2 * (2 * a(1) + a(2))
    d(2, 2) = -self%k * s2 * a(1)
  end subroutine

  !> d/dq [D(q, a) w]: only q(2) enters, D w = -k sin(q2) w(2) [2 a(1) + a(2), a(1)].
  subroutine tl_mass_dqq(self, q, a, w, k)
    class(two_link_angles_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n), w(self%n)
    real(wp), intent(out) :: k(self%n, self%n)
    real(wp) :: c2
    c2 = cos(q(2))
    k(:, 1) = 0
    k(1, 2) = -self%k * c2 * (2 * a(1) + a(2)) * w(2)
    k(2, 2) = -self%k * c2 * a(1) * w(2)
  end subroutine

  subroutine tl_force(self, t, q, v, f)
    class(two_link_angles_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: f(self%n)
    real(wp) :: g2, s2
    g2 = 0.5_wp * self%m2 * self%g * self%l2 * cos(q(1) + q(2))
    s2 = sin(q(2))
    f(1) = -(0.5_wp * self%m1 + self%m2) * self%g * self%l1 * cos(q(1)) - g2 &
           + self%k * s2 * (2 * v(1) * v(2) + v(2)**2)
    f(2) = -g2 - self%k * s2 * v(1)**2
  end subroutine

  subroutine tl_force_jac(self, t, q, v, fq, fv)
    class(two_link_angles_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: fq(self%n, self%n), fv(self%n, self%n)
    real(wp) :: g2, g1, s2, c2
    g2 = 0.5_wp * self%m2 * self%g * self%l2 * sin(q(1) + q(2))
    g1 = (0.5_wp * self%m1 + self%m2) * self%g * self%l1 * sin(q(1)) + g2
    s2 = sin(q(2)); c2 = cos(q(2))
    fq(1, 1) = g1
    fq(1, 2) = g2 + self%k * c2 * (2 * v(1) * v(2) + v(2)**2)
    fq(2, 1) = g2
    fq(2, 2) = g2 - self%k * c2 * v(1)**2
    fv(1, 1) = 2 * self%k * s2 * v(2)
    fv(1, 2) = 2 * self%k * s2 * (v(1) + v(2))
    fv(2, 1) = -2 * self%k * s2 * v(1)
    fv(2, 2) = 0
  end subroutine

  !> Gravity on the links' centres.
  real(wp) function tl_potential(self, t, q)
    class(two_link_angles_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    tl_potential = self%g * (self%m1 * self%l1 / 2 * sin(q(1)) &
                            + self%m2 * (self%l1 * sin(q(1)) + self%l2 / 2 * sin(q(1) + q(2))))
  end function

end module model_two_link_angles
