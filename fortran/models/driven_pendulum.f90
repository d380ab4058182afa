!> Pendulum with a moving suspension point: a rheonomic holonomic constraint.
!>
!> q = (x, y) of a point mass m on a rod of length l hanging from
!> s(t) = (A_x, A_y) sin(W t); gravity g along -y; d = q - s(t):
!>   g = 1/2 (|d|^2 - l^2),  G = d^T,  g_t = -d . s',
!>   (G v + g_t)_q = (v - s')^T,  hol_gamma = |v - s'|^2 - d . s'',
!>   (G^T lam)_q = lam I.
!> energy = 1/2 m |v|^2 + m g y (not conserved: the support does work).
!> ipar = []; rpar = [m, l, g, A_x, A_y, W].
!> NumPy twin: pyint/models/driven_pendulum.py.
module model_driven_pendulum
  use pyint_kinds
  use pyint_model, only: model_t, diagonal_matrix, rpar_error
  implicit none
  private
  public :: driven_pendulum_t

  type, extends(model_t) :: driven_pendulum_t
    real(wp) :: m = 0, l = 0, grav = 0, amp(2) = 0, freq = 0
  contains
    procedure :: init => dp_init
    procedure :: force => dp_force
    procedure :: hol => dp_hol
    procedure :: hol_jac => dp_hol_jac
    procedure :: hol_t => dp_hol_t
    procedure :: hol_vel_q => dp_hol_vel_q
    procedure :: hol_gamma => dp_hol_gamma
    procedure :: hol_gtl_q => dp_hol_gtl_q
    procedure :: energy => dp_energy
  end type

contains

  subroutine dp_init(self, ipar, rpar, ierr)
    class(driven_pendulum_t), intent(inout) :: self
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    integer, intent(out) :: ierr
    ierr = rpar_error(rpar, 'pp...n')   ! m, l > 0; W >= 0
    if (ierr /= 0) return
    self%n = 2
    self%mh = 1
    self%mn = 0
    self%has_energy = .true.
    self%const_force = .true.
    self%mconst = diagonal_matrix([rpar(1), rpar(1)])
    self%m = rpar(1); self%l = rpar(2); self%grav = rpar(3); self%amp = rpar(4:5); self%freq = rpar(6)
    ierr = 0
  end subroutine

  !> k-th time derivative of the support position (k = 0, 1, 2).
  pure function support(self, t, k) result(s)
    class(driven_pendulum_t), intent(in) :: self
    real(wp), intent(in) :: t
    integer, intent(in) :: k
    real(wp) :: s(2), w
    w = self%freq
    select case (k)
    case (0)
      s = self%amp * sin(w * t)
    case (1)
      s = self%amp * w * cos(w * t)
    case default
      s = -self%amp * w**2 * sin(w * t)
    end select
  end function

  subroutine dp_force(self, t, q, v, f)
    class(driven_pendulum_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: f(self%n)
    f = [0.0_wp, -self%m * self%grav]
  end subroutine

  subroutine dp_hol(self, t, q, g)
    class(driven_pendulum_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: g(self%mh)
    real(wp) :: d(2)
    d = q - support(self, t, 0)
    g(1) = 0.5_wp * (dot_product(d, d) - self%l**2)
  end subroutine

  subroutine dp_hol_jac(self, t, q, gq)
    class(driven_pendulum_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: gq(self%mh, self%n)
    gq(1, :) = q - support(self, t, 0)
  end subroutine

  subroutine dp_hol_t(self, t, q, gt)
    class(driven_pendulum_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: gt(self%mh)
    gt(1) = -dot_product(q - support(self, t, 0), support(self, t, 1))
  end subroutine

  subroutine dp_hol_vel_q(self, t, q, v, d)
    class(driven_pendulum_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mh, self%n)
    d(1, :) = v - support(self, t, 1)
  end subroutine

  subroutine dp_hol_gamma(self, t, q, v, gam)
    class(driven_pendulum_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mh)
    real(wp) :: r(2)
    r = v - support(self, t, 1)
    gam(1) = dot_product(r, r) - dot_product(q - support(self, t, 0), support(self, t, 2))
  end subroutine

  subroutine dp_hol_gtl_q(self, t, q, lam, d)
    class(driven_pendulum_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mh)
    real(wp), intent(out) :: d(self%n, self%n)
    d = 0
    d(1, 1) = lam(1)
    d(2, 2) = lam(1)
  end subroutine

  real(wp) function dp_energy(self, t, q, v)
    class(driven_pendulum_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    dp_energy = 0.5_wp * self%m * (v(1)**2 + v(2)**2) + self%m * self%grav * q(2)
  end function

end module model_driven_pendulum
