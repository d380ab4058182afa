!> Runge-Kutta coefficients computed in one place, each checked where it is built
!> (Gauss and Lobatto nodes and weights: core/quadrature.f90).
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
  use pyint_quadrature, only: gauss_nodes, lobatto_nodes
  implicit none
  private
  public :: gauss_legendre, lobatto_iiia_iiib, explicit_midpoint, TAB_MAX_STAGES, TAB_TOL

  integer, parameter :: TAB_MAX_STAGES = 10
  real(wp), parameter :: TAB_TOL = 1.0e-13_wp

contains

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

  !> Outputs zeroed; info = STATUS_BAD_INPUT unless smin <= s <= TAB_MAX_STAGES (smin = 2 for
  !> Lobatto, 1 for Gauss), else 0 and the nodes c and weights b of the s-point rule on [0, 1].
  pure subroutine rule_on_unit_interval(s, lobatto, a, ahat, b, c, info)
    integer, intent(in) :: s
    logical, intent(in) :: lobatto
    real(wp), intent(out) :: a(s, s), ahat(s, s), b(s), c(s)
    integer, intent(out) :: info
    real(wp) :: x(s), w(s)
    a = 0; ahat = 0; b = 0; c = 0
    info = STATUS_BAD_INPUT
    if (s < merge(2, 1, lobatto) .or. s > TAB_MAX_STAGES) return
    if (lobatto) then
      call lobatto_nodes(s, x, w)
    else
      call gauss_nodes(s, x, w)
    end if
    c = (1 + x) / 2
    b = w / 2
    info = 0
  end subroutine

  !> s-stage Gauss-Legendre: a = ahat (s, s), b, c (s).  info: 0 ok, 1 identity failed, 3 bad s.
  pure subroutine gauss_legendre(s, a, ahat, b, c, info)
    integer, intent(in) :: s
    real(wp), intent(out) :: a(s, s), ahat(s, s), b(s), c(s)
    integer, intent(out) :: info
    call rule_on_unit_interval(s, .false., a, ahat, b, c, info)
    if (info /= 0) return
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
    real(wp) :: xg(s), wg(s)
    call rule_on_unit_interval(s, .true., a, ahat, b, c, info)
    if (info /= 0) return
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
