!> Constraint residuals and energy along a trajectory (any model_t).
module pyint_metrics
  use pyint_kinds
  use pyint_model, only: model_t
  implicit none
  private
  public :: trajectory_residuals, point_residuals, residual_work_t, NRES_VECTOR

  !> point_residuals' workspace (allocated once per trajectory).
  type :: residual_work_t
    real(wp), allocatable :: g(:), gv(:), gt(:), gam(:), an(:, :), bn(:), gamn(:), av(:)
  end type

  !> Residuals per sample of a vector-state trajectory (the columns of trajectory_residuals).
  integer, parameter :: NRES_VECTOR = 5

contains

  !> res(:, k) = [ |g|, |G v + g_t|, |G a + hol_gamma|, |A v + b|, |A a + nh_gamma| ] (max norms)
  !> at sample k; energy(k) = model energy (0 when the model has none).
  subroutine trajectory_residuals(model, t, q, v, a, res, energy)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t(:), q(:, :), v(:, :), a(:, :)
    real(wp), intent(out) :: res(:, :), energy(:)
    type(residual_work_t) :: rw
    integer :: k
    do k = 1, size(t)
      call point_residuals(model, t(k), q(:, k), v(:, k), a(:, k), res(:, k), energy(k), rw)
    end do
  end subroutine

  !> The residuals (NRES_VECTOR) and the energy at one point (t, q, v, a); rw: the
  !> workspace, allocated at the first call (the driver calls this once per step).
  subroutine point_residuals(model, t, q, v, a, res, energy, rw)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, q(:), v(:), a(:)
    real(wp), intent(out) :: res(:), energy
    type(residual_work_t), intent(inout) :: rw
    if (.not. allocated(rw%g)) then
      allocate(rw%g(model%mh), rw%gv(model%mh), rw%gt(model%mh), rw%gam(model%mh), &
               rw%an(model%mn, model%n), rw%bn(model%mn), rw%gamn(model%mn), rw%av(model%mn))
    end if
    res = 0
    energy = 0
    call model%expect_residual_items()
    ! the max norms in place (each array has at least one entry in its branch)
    associate (g => rw%g, gv => rw%gv, gt => rw%gt, gam => rw%gam, an => rw%an, bn => rw%bn, &
               gamn => rw%gamn, av => rw%av)
      if (model%mh > 0) then
        call model%hol(t, q, g)
        if (.not. model%scleronomic) call model%hol_t(t, q, gt)    ! else g_t = 0
        call model%hol_gamma(t, q, v, gam)
        res(1) = maxval(abs(g))
        ! G v + g_t and G a + gamma through the operator hol_vel (no dense G: O(nnz) for large models)
        call model%hol_vel(t, q, v, gv)
        res(2) = maxval(abs(gv))
        call model%hol_vel(t, q, a, gv)
        if (model%scleronomic) then
          res(3) = maxval(abs(gv + gam))
        else
          res(3) = maxval(abs(gv - gt + gam))
        end if
      end if
      if (model%mn > 0) then
        call model%nh(t, q, an, bn)
        call model%nh_gamma(t, q, v, gamn)
        av = matmul(an, v)
        av = av + bn
        res(4) = maxval(abs(av))
        av = matmul(an, a)
        av = av + gamn
        res(5) = maxval(abs(av))
      end if
    end associate
    if (model%has_energy) energy = model%energy(t, q, v)
  end subroutine

end module pyint_metrics
