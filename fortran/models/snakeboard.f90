!> Snakeboard of seed 000 (Ma, Chen, Zhang 2008, section 4).
!>
!> q = (x, y, theta, psi, phi_b, phi_f); constant mass matrix from
!>   T = 1/2 m (x'^2 + y'^2) + 1/2 J theta'^2 + 1/2 J_r (theta' + psi')^2
!>       + 1/2 J_w [(theta' + phi_b')^2 + (theta' + phi_f')^2];
!> forces f = (F cos theta, F sin theta, 0, -k_r psi, -k_w phi_b, -k_w phi_f);
!> no lateral slip of the wheels at (x, y) -/+ L (cos theta, sin theta):
!>   A = [[-sin(theta+phi_b), cos(theta+phi_b), -L cos phi_b, 0, 0, 0],
!>        [-sin(theta+phi_f), cos(theta+phi_f), +L cos phi_f, 0, 0, 0]].
!> energy = T + 1/2 k_r psi^2 + 1/2 k_w (phi_b^2 + phi_f^2) (not conserved: F does work).
!> ipar = []; rpar = [m, J, J_r, J_w, L, F, k_r, k_w].
!>
!> The wheel_* routines are the no-slip rows of wheels on a board whose
!> (x, y, theta) are q(1:3): wheel k sits at distance d(k) along the board axis
!> with heading theta + beta_k, beta_k = s(k) * q(iw(k)).  The coupled
!> snakeboard (snakeboard_coupled.f90) uses them too.
!> NumPy twin: pyint/models/snakeboard.py.
module model_snakeboard
  use pyint_kinds
  use pyint_model, only: model_t
  implicit none
  private
  public :: snakeboard_t, snakeboard_new
  public :: wheel_rows, wheel_vel_q, wheel_gamma, wheel_atl_q

  type, extends(model_t) :: snakeboard_t
    real(wp) :: m = 0, j = 0, jr = 0, jw = 0, l = 0, f = 0, kr = 0, kw = 0
    real(wp) :: d(2) = 0, s(2) = 1
    integer :: iw(2) = [5, 6]
  contains
    procedure :: mass => sb_mass
    procedure :: force => sb_force
    procedure :: mass_dq => sb_mass_dq
    procedure :: force_jac => sb_force_jac
    procedure :: nh => sb_nh
    procedure :: nh_vel_q => sb_nh_vel_q
    procedure :: nh_gamma => sb_nh_gamma
    procedure :: nh_atl_q => sb_nh_atl_q
    procedure :: energy => sb_energy
  end type

contains

  subroutine snakeboard_new(ipar, rpar, m, ierr)
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    type(snakeboard_t), intent(out) :: m
    integer, intent(out) :: ierr
    ierr = 1
    if (size(rpar) /= 8) return
    if (any(rpar(1:5) <= 0) .or. any(rpar(7:8) < 0)) return
    m%n = 6
    m%mh = 0
    m%mn = 2
    m%const_mass = .true.
    m%has_energy = .true.
    m%m = rpar(1); m%j = rpar(2); m%jr = rpar(3); m%jw = rpar(4); m%l = rpar(5)
    m%f = rpar(6); m%kr = rpar(7); m%kw = rpar(8)
    m%d = [-m%l, m%l]
    m%s = [1.0_wp, 1.0_wp]
    m%iw = [5, 6]
    ierr = 0
  end subroutine

  ! -- no-slip rows of wheels on a board -----------------------------------------

  !> A: row k = [-sin(th+b), cos(th+b), d cos b] on (x, y, theta).
  pure subroutine wheel_rows(q, d, iw, s, a)
    real(wp), intent(in) :: q(:), d(:), s(:)
    integer, intent(in) :: iw(:)
    real(wp), intent(out) :: a(:, :)
    real(wp) :: b
    integer :: k
    a = 0
    do k = 1, size(d)
      b = s(k) * q(iw(k))
      a(k, 1) = -sin(q(3) + b)
      a(k, 2) = cos(q(3) + b)
      a(k, 3) = d(k) * cos(b)
    end do
  end subroutine

  !> (A v)_q: by theta -P, by the wheel coordinate s (-P - d sin(b) theta'),
  !> P = cos(th+b) x' + sin(th+b) y' the speed along the wheel heading.
  pure subroutine wheel_vel_q(q, v, d, iw, s, dq)
    real(wp), intent(in) :: q(:), v(:), d(:), s(:)
    integer, intent(in) :: iw(:)
    real(wp), intent(out) :: dq(:, :)
    real(wp) :: b, p
    integer :: k
    dq = 0
    do k = 1, size(d)
      b = s(k) * q(iw(k))
      p = cos(q(3) + b) * v(1) + sin(q(3) + b) * v(2)
      dq(k, 3) = -p
      dq(k, iw(k)) = dq(k, iw(k)) + s(k) * (-p - d(k) * sin(b) * v(3))
    end do
  end subroutine

  !> (A v)_q v = -P (theta' + b') - d sin(b) theta' b'.
  pure subroutine wheel_gamma(q, v, d, iw, s, gam)
    real(wp), intent(in) :: q(:), v(:), d(:), s(:)
    integer, intent(in) :: iw(:)
    real(wp), intent(out) :: gam(:)
    real(wp) :: b, bd, p
    integer :: k
    do k = 1, size(d)
      b = s(k) * q(iw(k))
      bd = s(k) * v(iw(k))
      p = cos(q(3) + b) * v(1) + sin(q(3) + b) * v(2)
      gam(k) = -p * (v(3) + bd) - d(k) * sin(b) * v(3) * bd
    end do
  end subroutine

  !> (A^T lam)_q: columns theta and the wheel coordinates.
  pure subroutine wheel_atl_q(q, lam, d, iw, s, dq)
    real(wp), intent(in) :: q(:), lam(:), d(:), s(:)
    integer, intent(in) :: iw(:)
    real(wp), intent(out) :: dq(:, :)
    real(wp) :: b, c(2)
    integer :: k, i
    dq = 0
    do k = 1, size(d)
      i = iw(k)
      b = s(k) * q(i)
      c = lam(k) * [-cos(q(3) + b), -sin(q(3) + b)]
      dq(1:2, 3) = dq(1:2, 3) + c
      dq(1:2, i) = dq(1:2, i) + s(k) * c
      dq(3, i) = dq(3, i) - s(k) * lam(k) * d(k) * sin(b)
    end do
  end subroutine

  ! -- the model ------------------------------------------------------------------

  subroutine sb_mass(self, q, mq)
    class(snakeboard_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n)
    real(wp), intent(out) :: mq(self%n, self%n)
    mq = 0
    mq(1, 1) = self%m
    mq(2, 2) = self%m
    mq(3, 3) = self%j + self%jr + 2 * self%jw
    mq(3, 4) = self%jr; mq(4, 3) = self%jr; mq(4, 4) = self%jr
    mq(3, 5) = self%jw; mq(5, 3) = self%jw; mq(5, 5) = self%jw
    mq(3, 6) = self%jw; mq(6, 3) = self%jw; mq(6, 6) = self%jw
  end subroutine

  subroutine sb_mass_dq(self, q, a, d)
    class(snakeboard_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n)
    real(wp), intent(out) :: d(self%n, self%n)
    d = 0
  end subroutine

  subroutine sb_force(self, t, q, v, f)
    class(snakeboard_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: f(self%n)
    f = [self%f * cos(q(3)), self%f * sin(q(3)), 0.0_wp, -self%kr * q(4), -self%kw * q(5), -self%kw * q(6)]
  end subroutine

  subroutine sb_force_jac(self, t, q, v, fq, fv)
    class(snakeboard_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: fq(self%n, self%n), fv(self%n, self%n)
    fq = 0
    fv = 0
    fq(1, 3) = -self%f * sin(q(3))
    fq(2, 3) = self%f * cos(q(3))
    fq(4, 4) = -self%kr
    fq(5, 5) = -self%kw
    fq(6, 6) = -self%kw
  end subroutine

  subroutine sb_nh(self, t, q, a, b)
    class(snakeboard_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: a(self%mn, self%n), b(self%mn)
    call wheel_rows(q, self%d, self%iw, self%s, a)
    b = 0
  end subroutine

  subroutine sb_nh_vel_q(self, t, q, v, d)
    class(snakeboard_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mn, self%n)
    call wheel_vel_q(q, v, self%d, self%iw, self%s, d)
  end subroutine

  subroutine sb_nh_gamma(self, t, q, v, gam)
    class(snakeboard_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mn)
    call wheel_gamma(q, v, self%d, self%iw, self%s, gam)
  end subroutine

  subroutine sb_nh_atl_q(self, t, q, lam, d)
    class(snakeboard_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mn)
    real(wp), intent(out) :: d(self%n, self%n)
    call wheel_atl_q(q, lam, self%d, self%iw, self%s, d)
  end subroutine

  real(wp) function sb_energy(self, t, q, v)
    class(snakeboard_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp) :: mq(self%n, self%n)
    call sb_mass(self, q, mq)
    sb_energy = 0.5_wp * dot_product(v, matmul(mq, v)) &
                + 0.5_wp * self%kr * q(4)**2 + 0.5_wp * self%kw * (q(5)**2 + q(6)**2)
  end function

end module model_snakeboard
