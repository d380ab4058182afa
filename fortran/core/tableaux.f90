!> Runge-Kutta coefficients computed in one place, each checked where it is built.
!>
!> gauss_legendre(s): the s-stage Gauss-Legendre collocation method (order 2s,
!>   symplectic; s = 1 is the implicit midpoint rule).  Nodes c_i = (1 + x_i)/2
!>   with x_i the roots of the Legendre polynomial P_s, weights b_i = 1/((1 - x_i^2) P_s'(x_i)^2).
!> lobatto_iiia_iiib(s): the s-stage Lobatto IIIA-IIIB partitioned pair (order
!>   2s - 2; s = 2 is the Stormer-Verlet / RATTLE pair).  Nodes: 0, 1 and the
!>   roots of P_{s-1}' mapped to [0, 1]; weights b_i = 1/(s (s - 1) P_{s-1}(x_i)^2).
!>
!> explicit_midpoint: the explicit midpoint rule (order 2, NOT symplectic:
!>   b_i a_ij + b_j a_ji - b_i b_j /= 0), the negative control of the tests.
!>
!> In the first two, A is the collocation matrix a_ij = int_0^{c_i} l_j(tau) dtau
!> (l_j the Lagrange polynomial of the nodes; the integral is evaluated with
!> the s-point Gauss rule, exact for degree 2s - 1 >= s - 1).  The partner
!> matrix (the one applied to p) is ahat_ij = b_j (1 - a_ji / b_i), the
!> symplectic conjugate: for Gauss it equals A, for Lobatto IIIA it is IIIB.
!>
!> Identities checked (info = 1 if any fails by more than TAB_TOL):
!>   row sums:   sum_j a_ij = c_i
!>   B(p):       sum_i b_i c_i^(k-1) = 1/k, k = 1..2s (Gauss), 1..2s-2 (Lobatto)
!>   C(s) of A:  sum_j a_ij c_j^(k-1) = c_i^k / k, k = 1..s
!>   D(s) of Ahat: sum_i b_i c_i^(k-1) ahat_ij = b_j (1 - c_j^k) / k, k = 1..s
!>   symplectic: b_i ahat_ij + b_j a_ji - b_i b_j = 0 (and ahat = A for Gauss)
!>   Lobatto:    first row of A zero, last row of A = b (stiffly accurate),
!>               last column of ahat zero.
module pyint_tableaux
  use pyint_kinds
  implicit none
  private
  public :: gauss_legendre, lobatto_iiia_iiib, explicit_midpoint, TAB_MAX_STAGES, TAB_TOL

  integer, parameter :: TAB_MAX_STAGES = 10
  real(wp), parameter :: TAB_TOL = 1.0e-13_wp
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
  !> Interior nodes: roots of F(x) = P_{N-1}(x) - x P_N(x) = (1 - x^2) P_N'(x) / N, N = s - 1.
  pure subroutine lobatto_nodes(s, x, w)
    integer, intent(in) :: s
    real(wp), intent(out) :: x(s), w(s)
    real(wp) :: z, p, dp, pm1, pa, dpa, pm2, f, df, dz
    integer :: i, it, nn
    nn = s - 1
    x(1) = -1; x(s) = 1
    do i = 2, s - 1
      z = -cos(PI * (i - 1) / nn)
      do it = 1, 100
        call legendre(nn, z, p, dp, pm1)
        call legendre(nn - 1, z, pa, dpa, pm2)
        f = pm1 - z * p
        df = dpa - p - z * dp
        dz = f / df
        z = z - dz
        if (abs(dz) <= 4 * epsilon(z)) exit
      end do
      x(i) = z
    end do
    w(1) = 2.0_wp / (nn * (nn + 1))    ! P_N(+-1)^2 = 1
    w(s) = w(1)
    do i = 2, s - 1
      call legendre(nn, x(i), p, dp, pm1)
      w(i) = 2 / (nn * (nn + 1) * p * p)
    end do
  end subroutine

  !> a_ij = int_0^{c_i} l_j(tau) dtau by the s-point Gauss rule (xg, wg on [0, 1]).
  pure subroutine collocation_matrix(c, xg, wg, a)
    real(wp), intent(in) :: c(:), xg(:), wg(:)
    real(wp), intent(out) :: a(size(c), size(c))
    real(wp) :: tau, l
    integer :: i, j, k, m, s
    s = size(c)
    do i = 1, s
      do j = 1, s
        a(i, j) = 0
        do m = 1, size(xg)
          tau = c(i) * xg(m)
          l = 1
          do k = 1, s
            if (k /= j) l = l * (tau - c(k)) / (c(j) - c(k))
          end do
          a(i, j) = a(i, j) + c(i) * wg(m) * l
        end do
      end do
    end do
  end subroutine

  !> ahat_ij = b_j (1 - a_ji / b_i): the partner that makes the pair symplectic.
  pure subroutine symplectic_partner(a, b, ahat)
    real(wp), intent(in) :: a(:, :), b(:)
    real(wp), intent(out) :: ahat(size(b), size(b))
    integer :: i, j
    do i = 1, size(b)
      do j = 1, size(b)
        ahat(i, j) = b(j) * (1 - a(j, i) / b(i))
      end do
    end do
  end subroutine

  !> The identities shared by both families; info = 1 if one fails.
  pure subroutine check_common(a, ahat, b, c, border, info)
    real(wp), intent(in) :: a(:, :), ahat(:, :), b(:), c(:)
    integer, intent(in) :: border
    integer, intent(out) :: info
    real(wp) :: err
    integer :: i, j, k, s
    s = size(b)
    err = 0
    do i = 1, s
      err = max(err, abs(sum(a(i, :)) - c(i)))
      do k = 1, s
        err = max(err, abs(sum(a(i, :) * c**(k - 1)) - c(i)**k / k))                   ! C(s) of A
        err = max(err, abs(sum(b * c**(k - 1) * ahat(:, i)) - b(i) * (1 - c(i)**k) / k))  ! D(s) of Ahat
      end do
      do j = 1, s
        err = max(err, abs(b(i) * ahat(i, j) + b(j) * a(j, i) - b(i) * b(j)))
      end do
    end do
    do k = 1, border
      err = max(err, abs(sum(b * c**(k - 1)) - 1.0_wp / k))
    end do
    info = merge(0, 1, err <= TAB_TOL)
  end subroutine

  !> s-stage Gauss-Legendre: a = ahat (s, s), b, c (s).  info: 0 ok, 1 identity failed, 3 bad s.
  pure subroutine gauss_legendre(s, a, ahat, b, c, info)
    integer, intent(in) :: s
    real(wp), intent(out) :: a(s, s), ahat(s, s), b(s), c(s)
    integer, intent(out) :: info
    real(wp) :: x(s), w(s)
    info = STATUS_BAD_INPUT
    a = 0; ahat = 0; b = 0; c = 0
    if (s < 1 .or. s > TAB_MAX_STAGES) return
    call gauss_nodes(s, x, w)
    c = (1 + x) / 2
    b = w / 2
    call collocation_matrix(c, c, b, a)
    call symplectic_partner(a, b, ahat)
    call check_common(a, ahat, b, c, 2 * s, info)
    if (info == 0 .and. maxval(abs(ahat - a)) > TAB_TOL) info = 1
  end subroutine

  !> s-stage Lobatto IIIA (a) - IIIB (ahat) pair, s >= 2.  info: 0 ok, 1 identity failed, 3 bad s.
  pure subroutine lobatto_iiia_iiib(s, a, ahat, b, c, info)
    integer, intent(in) :: s
    real(wp), intent(out) :: a(s, s), ahat(s, s), b(s), c(s)
    integer, intent(out) :: info
    real(wp) :: x(s), w(s), xg(s), wg(s)
    info = STATUS_BAD_INPUT
    a = 0; ahat = 0; b = 0; c = 0
    if (s < 2 .or. s > TAB_MAX_STAGES) return
    call lobatto_nodes(s, x, w)
    c = (1 + x) / 2
    b = w / 2
    call gauss_nodes(s, xg, wg)
    call collocation_matrix(c, (1 + xg) / 2, wg / 2, a)
    a(1, :) = 0                     ! c_1 = 0: exactly zero
    call symplectic_partner(a, b, ahat)
    call check_common(a, ahat, b, c, 2 * s - 2, info)
    if (info == 0) then
      if (maxval(abs(a(s, :) - b)) > TAB_TOL .or. maxval(abs(ahat(:, s))) > TAB_TOL) info = 1
    end if
  end subroutine

  !> The explicit midpoint rule as a 2-stage tableau (ahat = a); info: 0 ok, 1 identity failed.
  pure subroutine explicit_midpoint(a, ahat, b, c, info)
    real(wp), intent(out) :: a(2, 2), ahat(2, 2), b(2), c(2)
    integer, intent(out) :: info
    real(wp) :: err
    a = reshape([0.0_wp, 0.5_wp, 0.0_wp, 0.0_wp], [2, 2])
    ahat = a
    b = [0.0_wp, 1.0_wp]
    c = [0.0_wp, 0.5_wp]
    err = max(maxval(abs(sum(a, dim=2) - c)), abs(sum(b) - 1), abs(sum(b * c) - 0.5_wp))
    info = merge(0, 1, err <= TAB_TOL)
  end subroutine

end module pyint_tableaux
