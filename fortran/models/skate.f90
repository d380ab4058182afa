!> Skate (knife edge) on an inclined plane: seed 004 (Man, Gao, Zhong 2020), example 1.
!>
!> q = (x, y, theta), x down the slope; M = diag(m, m, J);
!> f = (m g sin alpha, 0, -k theta); A = [sin theta, -cos theta, 0], A v = 0;
!> energy = T - m g x sin alpha + k theta^2 / 2 (conserved).  k: a torsion spring on the
!> heading that seed 004 does not have (k = 0: the seed's skate).
!> ipar = []; rpar = [m, J, g, alpha, k].
!> NumPy twin (with the closed form and the multiplier sign): pyint/models/skate.py.
module model_skate
  use pyint_kinds
  use pyint_model, only: model_t, diagonal_matrix
  implicit none
  private
  public :: skate_t

  type, extends(model_t) :: skate_t
    real(wp) :: m = 0, j = 0, grav = 0, alpha = 0, k = 0
  contains
    procedure :: init => sk_init
    procedure :: force => sk_force
    procedure :: force_jac => sk_force_jac
    procedure :: nh => sk_nh
    procedure :: nh_vel_q => sk_nh_vel_q
    procedure :: nh_gamma => sk_nh_gamma
    procedure :: nh_atl_q => sk_nh_atl_q
    procedure :: energy => sk_energy
  end type

contains

  subroutine sk_init(self, ipar, rpar, ierr)
    class(skate_t), intent(inout) :: self
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    integer, intent(out) :: ierr
    ierr = 1
    if (size(rpar) /= 5) return
    if (any(rpar(1:2) <= 0) .or. rpar(5) < 0) return
    self%n = 3
    self%mh = 0
    self%mn = 1
    self%has_energy = .true.
    self%mconst = diagonal_matrix([rpar(1), rpar(1), rpar(2)])
    self%m = rpar(1); self%j = rpar(2); self%grav = rpar(3); self%alpha = rpar(4); self%k = rpar(5)
    ierr = 0
  end subroutine

  subroutine sk_force(self, t, q, v, f)
    class(skate_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: f(self%n)
    f = [self%m * self%grav * sin(self%alpha), 0.0_wp, -self%k * q(3)]
  end subroutine

  subroutine sk_force_jac(self, t, q, v, fq, fv)
    class(skate_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: fq(self%n, self%n), fv(self%n, self%n)
    fq = 0
    fq(3, 3) = -self%k
    fv = 0
  end subroutine

  subroutine sk_nh(self, t, q, a, b)
    class(skate_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: a(self%mn, self%n), b(self%mn)
    a(1, :) = [sin(q(3)), -cos(q(3)), 0.0_wp]
    b = 0
  end subroutine

  subroutine sk_nh_vel_q(self, t, q, v, d)
    class(skate_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mn, self%n)
    d(1, :) = [0.0_wp, 0.0_wp, cos(q(3)) * v(1) + sin(q(3)) * v(2)]
  end subroutine

  subroutine sk_nh_gamma(self, t, q, v, gam)
    class(skate_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mn)
    gam(1) = v(3) * (cos(q(3)) * v(1) + sin(q(3)) * v(2))
  end subroutine

  subroutine sk_nh_atl_q(self, t, q, lam, d)
    class(skate_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mn)
    real(wp), intent(out) :: d(self%n, self%n)
    d = 0
    d(1, 3) = lam(1) * cos(q(3))
    d(2, 3) = lam(1) * sin(q(3))
  end subroutine

  real(wp) function sk_energy(self, t, q, v)
    class(skate_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    sk_energy = 0.5_wp * self%m * (v(1)**2 + v(2)**2) + 0.5_wp * self%j * v(3)**2 &
                - self%m * self%grav * sin(self%alpha) * q(1) + 0.5_wp * self%k * q(3)**2
  end function

end module model_skate
