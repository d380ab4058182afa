!> Constraint residuals and energy along a trajectory (any model_t).
module pyint_metrics
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_linalg, only: inf_norm
  implicit none
  private
  public :: trajectory_residuals

contains

  !> res(:, k) = [ |g|, |G v + g_t|, |G a + hol_gamma|, |A v + b|, |A a + nh_gamma| ] (max norms)
  !> at sample k; energy(k) = model energy (0 when the model has none).
  subroutine trajectory_residuals(model, t, q, v, a, res, energy)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t(:), q(:, :), v(:, :), a(:, :)
    real(wp), intent(out) :: res(:, :), energy(:)
    real(wp) :: g(model%mh), gv(model%mh), gt(model%mh), gam(model%mh)
    real(wp) :: an(model%mn, model%n), bn(model%mn), gamn(model%mn)
    integer :: k
    res = 0
    energy = 0
    do k = 1, size(t)
      if (model%mh > 0) then
        call model%hol(t(k), q(:, k), g)
        call model%hol_t(t(k), q(:, k), gt)
        call model%hol_gamma(t(k), q(:, k), v(:, k), gam)
        res(1, k) = inf_norm(g)
        ! G v + g_t and G a + gamma through the operator hol_vel (no dense G: O(nnz) for large models)
        call model%hol_vel(t(k), q(:, k), v(:, k), gv)
        res(2, k) = inf_norm(gv)
        call model%hol_vel(t(k), q(:, k), a(:, k), gv)
        res(3, k) = inf_norm(gv - gt + gam)
      end if
      if (model%mn > 0) then
        call model%nh(t(k), q(:, k), an, bn)
        call model%nh_gamma(t(k), q(:, k), v(:, k), gamn)
        res(4, k) = inf_norm(matmul(an, v(:, k)) + bn)
        res(5, k) = inf_norm(matmul(an, a(:, k)) + gamn)
      end if
      if (model%has_energy) energy(k) = model%energy(t(k), q(:, k), v(:, k))
    end do
  end subroutine

end module pyint_metrics
