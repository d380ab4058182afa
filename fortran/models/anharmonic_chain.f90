!> Planar pendulum chain with an anharmonic spring from the last mass to a
!> fixed anchor: V_s = k/2 |d|^2 + kappa/4 |d|^4, d = (x_N, y_N) - anchor.
!>
!> Extends pendulum_chain_t (same coordinates, constraints and gravity) with
!> the spring force f = -(k + kappa |d|^2) d on the last mass, its Jacobian
!> -(k + kappa |d|^2) I - 2 kappa d d^T, and the spring energy.
!> ipar = [N]; rpar = [grav, m_1..m_N, l_1..l_N, k, kappa, anchor_x, anchor_y].
!> NumPy twin: pyint/models/anharmonic_chain.py.
module model_anharmonic_chain
  use pyint_kinds
  use model_pendulum_chain, only: pendulum_chain_t
  implicit none
  private
  public :: anharmonic_chain_t

  type, extends(pendulum_chain_t) :: anharmonic_chain_t
    real(wp) :: k = 0, kappa = 0, anchor(2) = 0
  contains
    procedure :: init => spring_init
    procedure :: force => spring_force
    procedure :: force_jac => spring_force_jac
    procedure :: energy => spring_energy
  end type

contains

  subroutine spring_init(self, ipar, rpar, ierr)
    class(anharmonic_chain_t), intent(inout) :: self
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    integer, intent(out) :: ierr
    integer :: nc
    ierr = 1
    if (size(ipar) < 1) return
    nc = 1 + 2 * ipar(1)                  ! the chain's part of rpar
    if (ipar(1) < 1 .or. size(rpar) /= nc + 4) return
    call self%pendulum_chain_t%init(ipar, rpar(1:nc), ierr)
    if (ierr /= 0) return
    self%const_force = .false.
    self%k = rpar(nc + 1)
    self%kappa = rpar(nc + 2)
    self%anchor = rpar(nc + 3:nc + 4)
  end subroutine

  subroutine spring_force(self, t, q, v, f)
    class(anharmonic_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: f(self%n)
    real(wp) :: d(2)
    call self%pendulum_chain_t%force(t, q, v, f)
    d = q(self%n - 1:self%n) - self%anchor
    f(self%n - 1:self%n) = f(self%n - 1:self%n) - (self%k + self%kappa * sum(d * d)) * d
  end subroutine

  subroutine spring_force_jac(self, t, q, v, fq, fv)
    class(anharmonic_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: fq(self%n, self%n), fv(self%n, self%n)
    real(wp) :: d(2), c
    integer :: i, j, n
    n = self%n
    fq = 0
    fv = 0
    d = q(n - 1:n) - self%anchor
    c = self%k + self%kappa * sum(d * d)
    do j = 1, 2
      do i = 1, 2
        fq(n - 2 + i, n - 2 + j) = -2 * self%kappa * d(i) * d(j)
      end do
      fq(n - 2 + j, n - 2 + j) = fq(n - 2 + j, n - 2 + j) - c
    end do
  end subroutine

  real(wp) function spring_energy(self, t, q, v)
    class(anharmonic_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp) :: d2
    d2 = sum((q(self%n - 1:self%n) - self%anchor)**2)
    spring_energy = self%pendulum_chain_t%energy(t, q, v) + 0.5_wp * self%k * d2 + 0.25_wp * self%kappa * d2 * d2
  end function

end module model_anharmonic_chain
