!> SO(3) kernels: hat/vee, the exponential (Rodrigues), its tangent operator, the principal log.
!>
!> Conventions (shared by every Lie-group integrator and by pyint/models/so3.py):
!>   hat(w) u = w x u;  vee(hat(w)) = w.
!>   expm(psi) = I + a hat(psi) + b hat(psi)^2,  a = sin(phi)/phi,
!>               b = (1 - cos(phi))/phi^2 = (sin(phi/2)/(phi/2))^2 / 2,  phi = |psi|.
!>   tangent(psi) = I - b hat(psi) + c hat(psi)^2,  c = (phi - sin(phi))/phi^3:
!>               expm(psi + d) = expm(psi) expm(hat(tangent(psi) d)) + O(d^2)
!>               (right-trivialized differential; the Newton matrices use it).
!>   logm(r): psi with expm(psi) = r, |psi| <= pi, through the unit quaternion of r (Shepperd's
!>               method: robust near 0 and near pi).
!> The coefficient functions switch to their Taylor series for phi < 0.02,
!> where the closed forms lose digits (c loses ~eps/phi^2); the series are
!> truncated after the phi^8 term, whose neglected remainder is < 1e-19.
module pyint_so3
  use pyint_kinds
  implicit none
  private
  public :: hat, vee, cross, expm, tangent, so3_coeffs, logm

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

  !> The principal log of a rotation matrix: psi with expm(psi) = r, |psi| <= pi.  The unit
  !> quaternion (w, u) of r, w >= 0, by Shepperd's method (S. W. Shepperd, J. Guidance and
  !> Control 1 (1978) 223: from the largest of trace, r11, r22, r33, so no square root of a small
  !> number), then psi = 2 atan2(|u|, w) u / |u|; below |u| = 1e-8 its series 2 u / w (1 - |u|^2 /
  !> (3 w^2)).  The twin of pyint/models/so3.py logm (rot_to_quat, quat_to_rotvec), line by line.
  pure function logm(r) result(psi)
    real(wp), intent(in) :: r(3, 3)
    real(wp) :: psi(3), qt(0:3), tr, cand(4), sq, w
    integer :: k, i, j, l
    tr = r(1, 1) + r(2, 2) + r(3, 3)
    cand = [tr, r(1, 1), r(2, 2), r(3, 3)]
    k = maxloc(cand, 1)                 ! the first of equal maxima, as NumPy's argmax
    if (k == 1) then
      w = 0.5_wp * sqrt(1 + tr)
      qt = [w, (r(3, 2) - r(2, 3)) / (4 * w), (r(1, 3) - r(3, 1)) / (4 * w), (r(2, 1) - r(1, 2)) / (4 * w)]
    else
      i = k - 1
      j = mod(i, 3) + 1
      l = mod(i + 1, 3) + 1
      sq = 0.5_wp * sqrt(1 + r(i, i) - r(j, j) - r(l, l))
      qt(i) = sq
      qt(0) = (r(l, j) - r(j, l)) / (4 * sq)
      qt(j) = (r(j, i) + r(i, j)) / (4 * sq)
      qt(l) = (r(l, i) + r(i, l)) / (4 * sq)
    end if
    if (qt(0) < 0) qt = -qt
    qt = qt / norm2(qt)
    sq = norm2(qt(1:3))
    if (sq < 1e-8_wp) then
      psi = 2 * qt(1:3) / qt(0) * (1 - (sq / qt(0))**2 / 3)
    else
      psi = 2 * atan2(sq, qt(0)) * qt(1:3) / sq
    end if
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
