!> Writing one output sample of a trajectory (vector-state drivers).
module pyint_samples
  use pyint_kinds
  implicit none
  private
  public :: store_sample

contains

  !> Sample k = (t, q, v, a, lam) into column k of the caller's output arrays;
  !> nothing past their end (k > size(tout)), lam only when there are multipliers.
  subroutine store_sample(k, t, q, v, a, lam, tout, qout, vout, aout, lout)
    integer, intent(in) :: k
    real(wp), intent(in) :: t, q(:), v(:), a(:), lam(:)
    real(wp), intent(inout) :: tout(:), qout(:, :), vout(:, :), aout(:, :), lout(:, :)
    if (k > size(tout)) return
    tout(k) = t
    qout(:, k) = q
    vout(:, k) = v
    aout(:, k) = a
    if (size(lam) > 0) lout(1:size(lam), k) = lam
  end subroutine

end module pyint_samples
