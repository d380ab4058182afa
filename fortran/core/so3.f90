!> SO(3) kernels: hat/vee, the exponential (Rodrigues), its tangent operator.
!>
!> Conventions (shared by every Lie-group integrator and by pyint/models/so3.py):
!>   hat(w) u = w x u;  vee(hat(w)) = w.
!>   expm(psi) = I + a hat(psi) + b hat(psi)^2,  a = sin(phi)/phi,
!>               b = (1 - cos(phi))/phi^2 = (sin(phi/2)/(phi/2))^2 / 2,  phi = |psi|.
!>   tangent(psi) = I - b hat(psi) + c hat(psi)^2,  c = (phi - sin(phi))/phi^3:
!>               expm(psi + d) = expm(psi) expm(hat(tangent(psi) d)) + O(d^2)
!>               (right-trivialized differential; the Newton matrices use it).
!> The coefficient functions switch to their Taylor series for phi < 0.02,
!> where the closed forms lose digits (c loses ~eps/phi^2); the series are
!> truncated after the phi^8 term, whose neglected remainder is < 1e-19.
module pyint_so3
  use pyint_kinds
  implicit none
  private
  public :: hat, vee, cross, expm, tangent, so3_coeffs

  real(wp), parameter :: SERIES_BELOW = 0.02_wp

contains

  pure function hat(w) result(s)
    real(wp), intent(in) :: w(3)
    real(wp) :: s(3, 3)
    s(1, :) = [0.0_wp, -w(3), w(2)]
    s(2, :) = [w(3), 0.0_wp, -w(1)]
    s(3, :) = [-w(2), w(1), 0.0_wp]
  end function

  pure function vee(s) result(w)
    real(wp), intent(in) :: s(3, 3)
    real(wp) :: w(3)
    w = 0.5_wp * [s(3, 2) - s(2, 3), s(1, 3) - s(3, 1), s(2, 1) - s(1, 2)]
  end function

  pure function cross(a, b) result(c)
    real(wp), intent(in) :: a(3), b(3)
    real(wp) :: c(3)
    c = [a(2) * b(3) - a(3) * b(2), a(3) * b(1) - a(1) * b(3), a(1) * b(2) - a(2) * b(1)]
  end function

  !> a = sin(phi)/phi, b = (1 - cos phi)/phi^2, c = (phi - sin phi)/phi^3 for phi2 = phi^2.
  pure subroutine so3_coeffs(phi2, a, b, c)
    real(wp), intent(in) :: phi2
    real(wp), intent(out) :: a, b, c
    real(wp) :: phi, s
    if (phi2 < SERIES_BELOW**2) then
      a = 1 - phi2 / 6 * (1 - phi2 / 20 * (1 - phi2 / 42 * (1 - phi2 / 72)))
      b = 0.5_wp * (1 - phi2 / 12 * (1 - phi2 / 30 * (1 - phi2 / 56 * (1 - phi2 / 90))))
      c = (1 - phi2 / 20 * (1 - phi2 / 42 * (1 - phi2 / 72 * (1 - phi2 / 110)))) / 6
    else
      phi = sqrt(phi2)
      a = sin(phi) / phi
      s = sin(0.5_wp * phi) / (0.5_wp * phi)
      b = 0.5_wp * s * s
      c = (1 - a) / phi2
    end if
  end subroutine

  !> Rotation matrix exp(hat(psi)) (Rodrigues).
  pure function expm(psi) result(r)
    real(wp), intent(in) :: psi(3)
    real(wp) :: r(3, 3), a, b, c
    call so3_coeffs(dot_product(psi, psi), a, b, c)
    r = hat_poly(psi, a, b)
  end function

  !> Tangent operator T(psi) with expm(psi + d) = expm(psi) expm(hat(T(psi) d)) + O(|d|^2).
  pure function tangent(psi) result(t)
    real(wp), intent(in) :: psi(3)
    real(wp) :: t(3, 3), a, b, c
    call so3_coeffs(dot_product(psi, psi), a, b, c)
    t = hat_poly(psi, -b, c)
  end function

  !> I + c1 hat(psi) + c2 hat(psi)^2.
  pure function hat_poly(psi, c1, c2) result(r)
    real(wp), intent(in) :: psi(3), c1, c2
    real(wp) :: r(3, 3), s(3, 3)
    integer :: i
    s = hat(psi)
    r = c1 * s + c2 * matmul(s, s)
    do i = 1, 3
      r(i, i) = r(i, i) + 1
    end do
  end function

end module pyint_so3
