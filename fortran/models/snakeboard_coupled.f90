!> Snakeboard of seed 004 (Man, Gao, Zhong 2020): the seed-000 snakeboard with
!> the axle angles coupled, phi_f = -phi_b = phi, and no forces.
!>
!> q = (x, y, theta, psi, phi).  Substituting phi_b = -phi, phi_f = phi into the
!> seed-000 T gives the constant
!>   M = [[m,0,0,0,0], [0,m,0,0,0], [0,0,J+J_r+2J_w,J_r,0], [0,0,J_r,J_r,0], [0,0,0,0,2J_w]]
!> and the constraints
!>   A = [[-sin(theta-phi), cos(theta-phi), -l cos phi, 0, 0],
!>        [-sin(theta+phi), cos(theta+phi), +l cos phi, 0, 0]].
!> f = 0; energy = T (conserved).
!> ipar = []; rpar = [m, J, J_r, J_w, l].
!> NumPy twin (with the derivation): pyint/models/snakeboard_coupled.py.
module model_snakeboard_coupled
  use pyint_kinds
  use pyint_model, only: model_t
  use model_snakeboard, only: wheel_rows, wheel_vel_q, wheel_gamma, wheel_atl_q
  implicit none
  private
  public :: snakeboard_coupled_t, snakeboard_coupled_new

  type, extends(model_t) :: snakeboard_coupled_t
    real(wp) :: m = 0, j = 0, jr = 0, jw = 0, l = 0
    real(wp) :: d(2) = 0, s(2) = 1
    integer :: iw(2) = [5, 5]
  contains
    procedure :: mass => sbc_mass
    procedure :: force => sbc_force
    procedure :: mass_dq => sbc_mass_dq
    procedure :: force_jac => sbc_force_jac
    procedure :: nh => sbc_nh
    procedure :: nh_vel_q => sbc_nh_vel_q
    procedure :: nh_gamma => sbc_nh_gamma
    procedure :: nh_atl_q => sbc_nh_atl_q
    procedure :: energy => sbc_energy
  end type

contains

  subroutine snakeboard_coupled_new(ipar, rpar, m, ierr)
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    type(snakeboard_coupled_t), intent(out) :: m
    integer, intent(out) :: ierr
    ierr = 1
    if (size(rpar) /= 5) return
    if (any(rpar <= 0)) return
    m%n = 5
    m%mh = 0
    m%mn = 2
    m%const_mass = .true.
    m%has_energy = .true.
    m%m = rpar(1); m%j = rpar(2); m%jr = rpar(3); m%jw = rpar(4); m%l = rpar(5)
    m%d = [-m%l, m%l]
    m%s = [-1.0_wp, 1.0_wp]     ! phi_b = -phi, phi_f = +phi
    m%iw = [5, 5]
    ierr = 0
  end subroutine

  subroutine sbc_mass(self, q, mq)
    class(snakeboard_coupled_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n)
    real(wp), intent(out) :: mq(self%n, self%n)
    mq = 0
    mq(1, 1) = self%m
    mq(2, 2) = self%m
    mq(3, 3) = self%j + self%jr + 2 * self%jw
    mq(3, 4) = self%jr; mq(4, 3) = self%jr; mq(4, 4) = self%jr
    mq(5, 5) = 2 * self%jw
  end subroutine

  subroutine sbc_mass_dq(self, q, a, d)
    class(snakeboard_coupled_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n)
    real(wp), intent(out) :: d(self%n, self%n)
    d = 0
  end subroutine

  subroutine sbc_force(self, t, q, v, f)
    class(snakeboard_coupled_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: f(self%n)
    f = 0
  end subroutine

  subroutine sbc_force_jac(self, t, q, v, fq, fv)
    class(snakeboard_coupled_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: fq(self%n, self%n), fv(self%n, self%n)
    fq = 0
    fv = 0
  end subroutine

  subroutine sbc_nh(self, t, q, a, b)
    class(snakeboard_coupled_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: a(self%mn, self%n), b(self%mn)
    call wheel_rows(q, self%d, self%iw, self%s, a)
    b = 0
  end subroutine

  subroutine sbc_nh_vel_q(self, t, q, v, d)
    class(snakeboard_coupled_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mn, self%n)
    call wheel_vel_q(q, v, self%d, self%iw, self%s, d)
  end subroutine

  subroutine sbc_nh_gamma(self, t, q, v, gam)
    class(snakeboard_coupled_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mn)
    call wheel_gamma(q, v, self%d, self%iw, self%s, gam)
  end subroutine

  subroutine sbc_nh_atl_q(self, t, q, lam, d)
    class(snakeboard_coupled_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mn)
    real(wp), intent(out) :: d(self%n, self%n)
    call wheel_atl_q(q, lam, self%d, self%iw, self%s, d)
  end subroutine

  real(wp) function sbc_energy(self, t, q, v)
    class(snakeboard_coupled_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp) :: mq(self%n, self%n)
    call sbc_mass(self, q, mq)
    sbc_energy = 0.5_wp * dot_product(v, matmul(mq, v))
  end function

end module model_snakeboard_coupled
