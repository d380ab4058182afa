!> Planar N-link pendulum chain of point masses in Cartesian coordinates.
!>
!> q = (x1, y1, ..., xN, yN); link i joins point i-1 to point i (point 0 is
!> the fixed origin); holonomic constraints g_i = ((xi - x_{i-1})^2 +
!> (yi - y_{i-1})^2 - l_i^2) / 2; gravity -grav along y.
!> ipar = [N]; rpar = [grav, m_1..m_N, l_1..l_N].
!> NumPy twin: pyint/models/pendulum_chain.py.
module model_pendulum_chain
  use pyint_kinds
  use pyint_model, only: model_t
  implicit none
  private
  public :: pendulum_chain_t, pendulum_chain_new

  type, extends(model_t) :: pendulum_chain_t
    integer :: nlink = 0
    real(wp) :: grav = 0
    real(wp), allocatable :: mass_(:), len_(:)
  contains
    procedure :: mass => chain_mass
    procedure :: force => chain_force
    procedure :: force_jac => chain_force_jac
    procedure :: hol => chain_hol
    procedure :: hol_jac => chain_hol_jac
    procedure :: hol_t => chain_hol_t
    procedure :: hol_vel_q => chain_hol_vel_q
    procedure :: hol_gamma => chain_hol_gamma
    procedure :: hol_gtl_q => chain_hol_gtl_q
    procedure :: energy => chain_energy
  end type

contains

  subroutine pendulum_chain_new(ipar, rpar, m, ierr)
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    type(pendulum_chain_t), intent(out) :: m
    integer, intent(out) :: ierr
    integer :: nl
    ierr = 1
    if (size(ipar) < 1) return
    nl = ipar(1)
    if (nl < 1 .or. size(rpar) /= 1 + 2 * nl) return
    m%nlink = nl
    m%n = 2 * nl
    m%mh = nl
    m%mn = 0
    m%const_mass = .true.
    m%has_energy = .true.
    m%grav = rpar(1)
    m%mass_ = rpar(2:nl + 1)
    m%len_ = rpar(nl + 2:2 * nl + 1)
    ierr = 0
  end subroutine

  !> Relative position (dx, dy) of link i.
  pure function rel(q, i) result(d)
    real(wp), intent(in) :: q(:)
    integer, intent(in) :: i
    real(wp) :: d(2)
    d = q(2 * i - 1:2 * i)
    if (i > 1) d = d - q(2 * i - 3:2 * i - 2)
  end function

  subroutine chain_mass(self, q, mq)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n)
    real(wp), intent(out) :: mq(self%n, self%n)
    integer :: i
    mq = 0
    do i = 1, self%nlink
      mq(2 * i - 1, 2 * i - 1) = self%mass_(i)
      mq(2 * i, 2 * i) = self%mass_(i)
    end do
  end subroutine

  subroutine chain_force(self, t, q, v, f)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: f(self%n)
    f(1::2) = 0
    f(2::2) = -self%grav * self%mass_
  end subroutine

  subroutine chain_force_jac(self, t, q, v, fq, fv)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: fq(self%n, self%n), fv(self%n, self%n)
    fq = 0
    fv = 0
  end subroutine

  subroutine chain_hol(self, t, q, g)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: g(self%mh)
    real(wp) :: d(2)
    integer :: i
    do i = 1, self%nlink
      d = rel(q, i)
      g(i) = 0.5_wp * (d(1)**2 + d(2)**2 - self%len_(i)**2)
    end do
  end subroutine

  subroutine chain_hol_jac(self, t, q, gq)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: gq(self%mh, self%n)
    real(wp) :: d(2)
    integer :: i
    gq = 0
    do i = 1, self%nlink
      d = rel(q, i)
      gq(i, 2 * i - 1:2 * i) = d
      if (i > 1) gq(i, 2 * i - 3:2 * i - 2) = -d
    end do
  end subroutine

  subroutine chain_hol_t(self, t, q, gt)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: gt(self%mh)
    gt = 0
  end subroutine

  subroutine chain_hol_vel_q(self, t, q, v, d)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mh, self%n)
    call chain_hol_jac(self, t, v, d)   ! (G(q) v)_q = G(v): the constraints are quadratic
  end subroutine

  subroutine chain_hol_gamma(self, t, q, v, gam)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mh)
    real(wp) :: dv(2)
    integer :: i
    do i = 1, self%nlink
      dv = rel(v, i)
      gam(i) = dv(1)**2 + dv(2)**2
    end do
  end subroutine

  subroutine chain_hol_gtl_q(self, t, q, lam, d)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mh)
    real(wp), intent(out) :: d(self%n, self%n)
    integer :: i, k
    d = 0
    do i = 1, self%nlink
      do k = 0, 1
        d(2 * i - 1 + k, 2 * i - 1 + k) = d(2 * i - 1 + k, 2 * i - 1 + k) + lam(i)
        if (i > 1) then
          d(2 * i - 3 + k, 2 * i - 3 + k) = d(2 * i - 3 + k, 2 * i - 3 + k) + lam(i)
          d(2 * i - 1 + k, 2 * i - 3 + k) = d(2 * i - 1 + k, 2 * i - 3 + k) - lam(i)
          d(2 * i - 3 + k, 2 * i - 1 + k) = d(2 * i - 3 + k, 2 * i - 1 + k) - lam(i)
        end if
      end do
    end do
  end subroutine

  real(wp) function chain_energy(self, t, q, v)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    chain_energy = sum(self%mass_ * (0.5_wp * (v(1::2)**2 + v(2::2)**2) + self%grav * q(2::2)))
  end function

end module model_pendulum_chain
