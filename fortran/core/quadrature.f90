!> Gauss and Lobatto quadrature on [-1, 1]: the one place pyint computes their nodes and
!> weights (used by the Runge-Kutta tableaux, core/tableaux.f90, and by the
!> Galerkin-Lobatto variational integrator of seed 004, galerkin.f90).
!>
!> gauss_nodes(s):   x_i the roots of the Legendre polynomial P_s (Newton from
!>                   -cos(pi (i - 1/4) / (s + 1/2))), w_i = 2 / ((1 - x_i^2) P_s'(x_i)^2).
!> lobatto_nodes(s): x = -1, 1 and the roots of P_{s-1}' (Newton from the
!>                   Chebyshev-Lobatto points), w_i = 2 / (s (s - 1) P_{s-1}(x_i)^2); exact to
!>                   degree 2s - 3.
!> The callers check what they build from them (tableaux: the order conditions; galerkin:
!> the quadrature's degree of exactness).
module pyint_quadrature
  use pyint_kinds
  implicit none
  private
  public :: legendre, gauss_nodes, lobatto_nodes

  real(wp), parameter :: PI = 3.14159265358979323846264338327950288_wp

contains

  !> P_k(x) and P_k'(x) (|x| < 1 for the derivative) by the three-term recurrence.
  pure subroutine legendre(k, x, p, dp, pm1)
    integer, intent(in) :: k
    real(wp), intent(in) :: x
    real(wp), intent(out) :: p, dp, pm1     !< P_k, P_k', P_{k-1}
    real(wp) :: p0, p1
    integer :: j
    p0 = 1; p1 = x
    if (k == 0) then
      p = 1; dp = 0; pm1 = 0
      return
    end if
    do j = 2, k
      p = ((2 * j - 1) * x * p1 - (j - 1) * p0) / j
      p0 = p1; p1 = p
    end do
    p = p1; pm1 = p0
    dp = k * (pm1 - x * p) / (1 - x * x)
  end subroutine

  !> Gauss nodes x (ascending, in (-1, 1)) and weights w on [-1, 1].
  pure subroutine gauss_nodes(s, x, w)
    integer, intent(in) :: s
    real(wp), intent(out) :: x(s), w(s)
    real(wp) :: z, p, dp, pm1, dz
    integer :: i, it
    do i = 1, s
      z = -cos(PI * (i - 0.25_wp) / (s + 0.5_wp))
      do it = 1, 100
        call legendre(s, z, p, dp, pm1)
        dz = p / dp
        z = z - dz
        if (abs(dz) <= 4 * epsilon(z)) exit
      end do
      call legendre(s, z, p, dp, pm1)
      x(i) = z
      w(i) = 2 / ((1 - z * z) * dp * dp)
    end do
  end subroutine

  !> Lobatto nodes x (ascending, x(1) = -1, x(s) = 1) and weights w on [-1, 1], s >= 2.
  !> Interior nodes: roots of P_N', N = s - 1, by Newton with P_N'' from Legendre's
  !> equation (1 - x^2) P_N'' = 2 x P_N' - N (N + 1) P_N.
  pure subroutine lobatto_nodes(s, x, w)
    integer, intent(in) :: s
    real(wp), intent(out) :: x(s), w(s)
    real(wp) :: z, p, dp, pm1, d2p, dz
    integer :: i, it, nn
    nn = s - 1
    x(1) = -1; x(s) = 1
    do i = 2, s - 1
      z = -cos(PI * (i - 1) / nn)
      do it = 1, 100
        call legendre(nn, z, p, dp, pm1)
        d2p = (2 * z * dp - nn * (nn + 1) * p) / (1 - z**2)
        dz = dp / d2p
        z = z - dz
        if (abs(dz) <= 4 * epsilon(z)) exit
      end do
      x(i) = z
    end do
    w(1) = 2.0_wp / (nn * (nn + 1))    ! P_N(+-1)^2 = 1
    w(s) = w(1)
    do i = 2, s - 1
      call legendre(nn, x(i), p, dp, pm1)
      w(i) = 2 / (nn * (nn + 1) * p**2)
    end do
  end subroutine

end module pyint_quadrature
