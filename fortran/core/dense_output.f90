!> Outputs of a variable-step run at given times t_eval, computed inside the run's one call as
!> RADAU5's CONTR5 serves SOLOUT (Hairer, Wanner, Solving ODEs II, IV.8): the state at each time
!> by Hermite interpolation over the accepted step holding it, then re-imposed onto the
!> constraints as pyint.reference does at its outputs (model.f90: impose_constraints).
!>   DENSE_CUBIC        cubic Hermite in (q, v), v its derivative: O(h^4) in q, O(h^3) in v;
!>   DENSE_CUBIC_QDDOT  q so, v by cubic Hermite in (v, a) (a = qddot at the samples): O(h^4);
!>   DENSE_QUINTIC      quintic Hermite in (q, v, a), v its derivative: O(h^6), O(h^5)
!> (docs/adaptive_steps.md section 5; Hairer, Norsett, Wanner, Solving ODEs I, II.6).
module pyint_dense_output
  use pyint_kinds
  use pyint_model, only: model_t, impose_constraints
  use pyint_reduced_model, only: drop_redundant_rows
  use pyint_control, only: stop_status
  use pyint_callback_model, only: usercb_i
  use pyint_registry, only: setup_model
  use pyint_metrics, only: trajectory_residuals, NRES_VECTOR
  use pyint_newton_matrix, only: SOLVER_AUTO
  implicit none
  private
  public :: dense_outputs, hermite_states, impose_samples, DENSE_CUBIC, DENSE_CUBIC_QDDOT, DENSE_QUINTIC

  integer, parameter :: DENSE_CUBIC = 1, DENSE_CUBIC_QDDOT = 2, DENSE_QUINTIC = 3

contains

  !> The outputs at te of a successful vector-state run whose samples (the accepted steps) are
  !> (t, q, v, a), for the model block (model_id, ipar, rpar, usercb, n, mh, mn, mflags) of the
  !> run: dense(:, j) = [q, v, a, lam (mh + mn), the residuals (NRES_VECTOR), the energy] at te(j).
  !> The re-imposition has a model of its own (impose_samples may reduce a redundant one); the
  !> residuals are measured on the model as given.  info: 0, or the status of the sample kfail
  !> that failed (impose_samples; the outputs are then incomplete).
  subroutine dense_outputs(mode, model_id, ipar, rpar, usercb, n, mh, mn, mflags, t, q, v, a, te, dense, &
                           info, kfail)
    integer, intent(in) :: mode, model_id, n, mh, mn, ipar(:), mflags(:)
    real(wp), intent(in) :: rpar(:), t(:), q(:, :), v(:, :), a(:, :), te(:)
    procedure(usercb_i) :: usercb
    real(wp), intent(inout) :: dense(:, :)
    integer, intent(out) :: info, kfail
    class(model_t), allocatable :: m
    integer :: nl
    nl = mh + mn
    kfail = 1
    info = STATUS_BAD_INPUT
    if (size(t) < 2 .or. size(dense, 1) /= 3 * n + nl + NRES_VECTOR + 1 .or. size(q, 1) /= n) return
    associate (qe => dense(1:n, :), ve => dense(n + 1:2 * n, :), ae => dense(2 * n + 1:3 * n, :), &
               le => dense(3 * n + 1:3 * n + nl, :), re => dense(3 * n + nl + 1:3 * n + nl + NRES_VECTOR, :), &
               ee => dense(size(dense, 1), :))
      call hermite_states(mode, t, q, v, a, te, qe, ve)
      call setup_model(model_id, ipar, rpar, usercb, n, mh, mn, mflags, m, info)
      if (info /= 0) return
      call impose_samples(m, te, qe, ve, SOLVER_AUTO, ae, le, info, kfail)
      if (info /= 0) return
      deallocate(m)
      call setup_model(model_id, ipar, rpar, usercb, n, mh, mn, mflags, m, info)
      if (info /= 0) return
      call trajectory_residuals(m, te, qe, ve, ae, re, ee)
    end associate
  end subroutine

  !> qe(:, j), ve(:, j) at te(j) from the samples (t, q, v, a) (t increasing, at least two): over
  !> the step [t(k), t(k+1)] with t(k) < te(j) <= t(k+1) (the first step for te(j) <= t(1), the
  !> last beyond t(size(t))); te nondecreasing.  Powers above 2 through pow, as NumPy evaluates them.
  subroutine hermite_states(mode, t, q, v, a, te, qe, ve)
    integer, intent(in) :: mode
    real(wp), intent(in) :: t(:), q(:, :), v(:, :), a(:, :), te(:)
    real(wp), intent(out) :: qe(:, :), ve(:, :)
    real(wp) :: h, th, t2, t3, t4, t5, b(6), d(6)
    integer :: j, k, nt
    nt = size(t)
    k = 1
    do j = 1, size(te)              ! te nondecreasing (checked by the caller): k only moves on
      do while (k < nt - 1 .and. t(k + 1) < te(j))     ! the first k + 1 with t(k + 1) >= te(j)
        k = k + 1
      end do
      h = t(k + 1) - t(k)
      th = (te(j) - t(k)) / h
      t2 = th * th
      t3 = th**3.0_wp
      if (mode == DENSE_QUINTIC) then
        t4 = th**4.0_wp
        t5 = th**5.0_wp
        b = [1 - 10 * t3 + 15 * t4 - 6 * t5, th - 6 * t3 + 8 * t4 - 3 * t5, (t2 - 3 * t3 + 3 * t4 - t5) / 2, &
             10 * t3 - 15 * t4 + 6 * t5, -4 * t3 + 7 * t4 - 3 * t5, (t3 - 2 * t4 + t5) / 2]
        d = [-30 * t2 + 60 * t3 - 30 * t4, 1 - 18 * t2 + 32 * t3 - 15 * t4, (2 * th - 9 * t2 + 12 * t3 - 5 * t4) / 2, &
             30 * t2 - 60 * t3 + 30 * t4, -12 * t2 + 28 * t3 - 15 * t4, (3 * t2 - 8 * t3 + 5 * t4) / 2]
        qe(:, j) = b(1) * q(:, k) + b(2) * h * v(:, k) + b(3) * (h * h * a(:, k)) + b(4) * q(:, k + 1) &
                   + b(5) * h * v(:, k + 1) + b(6) * (h * h * a(:, k + 1))
        ve(:, j) = (d(1) * q(:, k) + d(2) * h * v(:, k) + d(3) * (h * h * a(:, k)) + d(4) * q(:, k + 1) &
                    + d(5) * h * v(:, k + 1) + d(6) * (h * h * a(:, k + 1))) / h
      else
        b(1:4) = [2 * t3 - 3 * t2 + 1, t3 - 2 * t2 + th, -2 * t3 + 3 * t2, t3 - t2]
        qe(:, j) = b(1) * q(:, k) + b(2) * h * v(:, k) + b(3) * q(:, k + 1) + b(4) * h * v(:, k + 1)
        if (mode == DENSE_CUBIC_QDDOT) then
          ve(:, j) = b(1) * v(:, k) + b(2) * h * a(:, k) + b(3) * v(:, k + 1) + b(4) * h * a(:, k + 1)
        else
          d(1:4) = [6 * t2 - 6 * th, 3 * t2 - 4 * th + 1, -6 * t2 + 6 * th, 3 * t2 - 2 * th]
          ve(:, j) = (d(1) * q(:, k) + d(2) * h * v(:, k) + d(3) * q(:, k + 1) + d(4) * h * v(:, k + 1)) / h
        end if
      end if
    end do
  end subroutine

  !> (q, v) at the times t re-imposed onto the constraints in place, a and lam from the index-1
  !> system there (model.f90: impose_constraints; lam zero on the rows a redundant mechanism drops
  !> at the first sample, as the driver's start does).  It stops at the first sample kfail that
  !> fails or where the run control says stop (Ctrl-C, a callback's exception): info its status;
  !> kfail = 0 when every sample passed (kfail = 1, info /= 0: the rank check failed).
  subroutine impose_samples(m, t, q, v, solver, a, lam, info, kfail)
    class(model_t), allocatable, intent(inout) :: m
    real(wp), intent(in) :: t(:)
    real(wp), intent(inout) :: q(:, :), v(:, :)
    integer, intent(in) :: solver
    real(wp), intent(out) :: a(:, :), lam(:, :)
    integer, intent(out) :: info, kfail
    integer, allocatable :: rows(:)
    real(wp) :: lk(m%mh + m%mn)
    integer :: k, nl
    a = 0
    lam = 0
    kfail = 1
    nl = m%mh + m%mn
    call drop_redundant_rows(m, t(1), q(:, 1), v(:, 1), rows, info)
    if (info /= 0) return
    if (.not. allocated(rows)) rows = [(k, k = 1, nl)]
    do k = 1, size(t)
      call impose_constraints(m, t(k), q(:, k), v(:, k), solver, a(:, k), lk(1:size(rows)), info)
      lam(rows, k) = lk(1:size(rows))
      if (info == 0) info = stop_status()
      if (info /= 0) then
        kfail = k
        return
      end if
    end do
    kfail = 0
  end subroutine

end module pyint_dense_output
