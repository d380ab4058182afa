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
!> board_t holds the no-slip constraints of two wheels on a board whose
!> (x, y, theta) are q(1:3): wheel k sits at distance d(k) along the board axis
!> with heading theta + beta_k, beta_k = s(k) * q(iw(k)).  The coupled
!> snakeboard (snakeboard_coupled.f90) extends it too.
!> NumPy twin: pyint/models/snakeboard.py.
module model_snakeboard
  use pyint_kinds
  use pyint_model, only: model_t
  implicit none
  private
  public :: board_t, board_init, snakeboard_t

  !> Mass, inertias and wheel layout of a snakeboard; nonholonomic items for any layout.
  type, abstract, extends(model_t) :: board_t
    real(wp) :: m = 0, j = 0, jr = 0, jw = 0, l = 0
    real(wp) :: d(2) = 0, s(2) = 1
    integer :: iw(2) = 0
  contains
    procedure :: nh => board_nh
    procedure :: nh_vel_q => board_nh_vel_q
    procedure :: nh_gamma => board_nh_gamma
    procedure :: nh_atl_q => board_nh_atl_q
  end type

  type, extends(board_t) :: snakeboard_t
    real(wp) :: f = 0, kr = 0, kw = 0
  contains
    procedure :: init => sb_init
    procedure :: force => sb_force
    procedure :: force_jac => sb_force_jac
    procedure :: potential => sb_potential
  end type

contains

  subroutine sb_init(self, ipar, rpar, ierr)
    class(snakeboard_t), intent(inout) :: self
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    integer, intent(out) :: ierr
    ierr = 1
    if (size(rpar) /= 8) return
    if (any(rpar(1:5) <= 0) .or. any(rpar(7:8) < 0)) return
    call board_init(self, 6, rpar(1:5), [1.0_wp, 1.0_wp], [5, 6])
    self%f = rpar(6); self%kr = rpar(7); self%kw = rpar(8)
    ierr = 0
  end subroutine

  !> Sizes, board data and the constant mass matrix: rpar = [m, J, J_r, J_w, L]; the rotor
  !> angle is q(4); back wheel at -L with heading theta + s(1) q(iw(1)), front wheel at +L
  !> with theta + s(2) q(iw(2)).
  subroutine board_init(b, n, rpar, s, iw)
    class(board_t), intent(inout) :: b
    integer, intent(in) :: n, iw(2)
    real(wp), intent(in) :: rpar(5), s(2)
    integer :: k
    b%n = n
    b%mh = 0
    b%mn = 2
    b%has_energy = .true.
    b%m = rpar(1); b%j = rpar(2); b%jr = rpar(3); b%jw = rpar(4); b%l = rpar(5)
    b%d = [-b%l, b%l]
    b%s = s
    b%iw = iw
    allocate(b%mconst(n, n))
    b%mconst = 0
    b%mconst(1, 1) = b%m
    b%mconst(2, 2) = b%m
    b%mconst(3, 3) = b%j + b%jr + 2 * b%jw
    b%mconst(3, 4) = b%jr; b%mconst(4, 3) = b%jr; b%mconst(4, 4) = b%jr
    do k = 1, 2      ! wheel k: 1/2 J_w (theta' + s(k) q(iw(k))')^2
      b%mconst(3, iw(k)) = b%mconst(3, iw(k)) + s(k) * b%jw
      b%mconst(iw(k), 3) = b%mconst(iw(k), 3) + s(k) * b%jw
      b%mconst(iw(k), iw(k)) = b%mconst(iw(k), iw(k)) + s(k)**2 * b%jw
    end do
  end subroutine

  ! -- the board: no-slip rows of its wheels -----------------------------------

  !> A: row k = [-sin(th+b), cos(th+b), d cos b] on (x, y, theta).
  subroutine board_nh(self, t, q, a, b)
    class(board_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: a(self%mn, self%n), b(self%mn)
    real(wp) :: be
    integer :: k
    a = 0
    b = 0
    do k = 1, 2
      be = self%s(k) * q(self%iw(k))
      a(k, 1) = -sin(q(3) + be)
      a(k, 2) = cos(q(3) + be)
      a(k, 3) = self%d(k) * cos(be)
    end do
  end subroutine

  !> (A v)_q: by theta -P, by the wheel coordinate s (-P - d sin(b) theta'),
  !> P = cos(th+b) x' + sin(th+b) y' the speed along the wheel heading.
  subroutine board_nh_vel_q(self, t, q, v, d)
    class(board_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mn, self%n)
    real(wp) :: be, p
    integer :: k, i
    d = 0
    do k = 1, 2
      i = self%iw(k)
      be = self%s(k) * q(i)
      p = cos(q(3) + be) * v(1) + sin(q(3) + be) * v(2)
      d(k, 3) = -p
      d(k, i) = d(k, i) + self%s(k) * (-p - self%d(k) * sin(be) * v(3))
    end do
  end subroutine

  !> (A v)_q v = -P (theta' + b') - d sin(b) theta' b'.
  subroutine board_nh_gamma(self, t, q, v, gam)
    class(board_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mn)
    real(wp) :: be, bd, p
    integer :: k
    do k = 1, 2
      be = self%s(k) * q(self%iw(k))
      bd = self%s(k) * v(self%iw(k))
      p = cos(q(3) + be) * v(1) + sin(q(3) + be) * v(2)
      gam(k) = -p * (v(3) + bd) - self%d(k) * sin(be) * v(3) * bd
    end do
  end subroutine

  !> (A^T lam)_q: columns theta and the wheel coordinates.
  subroutine board_nh_atl_q(self, t, q, lam, d)
    class(board_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mn)
    real(wp), intent(out) :: d(self%n, self%n)
    real(wp) :: be, c(2)
    integer :: k, i
    d = 0
    do k = 1, 2
      i = self%iw(k)
      be = self%s(k) * q(i)
      c = lam(k) * [-cos(q(3) + be), -sin(q(3) + be)]
      d(1:2, 3) = d(1:2, 3) + c
      d(1:2, i) = d(1:2, i) + self%s(k) * c
      d(3, i) = d(3, i) - self%s(k) * lam(k) * self%d(k) * sin(be)
    end do
  end subroutine

  ! -- the model ------------------------------------------------------------------

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

  !> The springs on psi and the axles.
  real(wp) function sb_potential(self, t, q)
    class(snakeboard_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    sb_potential = 0.5_wp * self%kr * q(4)**2 + 0.5_wp * self%kw * (q(5)**2 + q(6)**2)
  end function

end module model_snakeboard
