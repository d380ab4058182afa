!> Classical Runge-Kutta 4 on the index-1 form (seed 003 eq. (7)): the ODE
!> q' = v, v' = a(t, q, v) with a from the index-1 system at every stage
!> (pyint_index1).  The baseline of seed 003 (Table 3, Fig. 6).
!>
!> Nothing projects the state back: position and velocity constraints drift
!> (O(h^4) per unit time, and linearly in t); the acceleration constraint
!> holds to round-off at every output sample, because a is solved there.
module rk4_index1
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_index1, only: index1_work_t, index1_init, index1_accel
  use pyint_samples, only: store_sample
  use pyint_control, only: stop_status
  implicit none
  private
  public :: rk4_step, rk4_driver

contains

  !> One RK4 step of size h from (t, q, v); a0 = a(t, q, v) on entry (the first
  !> stage).  On exit (q, v) advanced.  info: 0, STATUS_SINGULAR, STATUS_NONFINITE.
  subroutine rk4_step(model, t, h, q, v, a0, w, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, h, a0(:)
    real(wp), intent(inout) :: q(:), v(:)
    type(index1_work_t), intent(inout) :: w
    integer, intent(out) :: info
    real(wp) :: v2(size(q)), v3(size(q)), v4(size(q)), a2(size(q)), a3(size(q)), a4(size(q))
    real(wp) :: lam(w%mh + w%mn)
    v2 = v + 0.5_wp * h * a0
    call index1_accel(model, t + 0.5_wp * h, q + 0.5_wp * h * v, v2, w, a2, lam, info)
    if (info /= 0) return
    v3 = v + 0.5_wp * h * a2
    call index1_accel(model, t + 0.5_wp * h, q + 0.5_wp * h * v2, v3, w, a3, lam, info)
    if (info /= 0) return
    v4 = v + h * a3
    call index1_accel(model, t + h, q + h * v3, v4, w, a4, lam, info)
    if (info /= 0) return
    q = q + (h / 6) * (v + 2 * v2 + 2 * v3 + v4)
    v = v + (h / 6) * (a0 + 2 * a2 + 2 * a3 + a4)
    if (.not. (all(abs(q) <= huge(1.0_wp)) .and. all(abs(v) <= huge(1.0_wp)))) info = STATUS_NONFINITE
  end subroutine

  !> nsteps RK4 steps from (t0, q0, v0); output every `every` steps (column k =
  !> sample k, sample 1 = the initial state) with a and lam from the index-1
  !> system at the sample.  istat = [status, steps done, samples written];
  !> stats = [index-1 solves].
  subroutine rk4_driver(model, t0, h, nsteps, every, q0, v0, tout, qout, vout, aout, lout, istat, stats)
    class(model_t), intent(in) :: model
    integer, intent(in) :: nsteps, every
    real(wp), intent(in) :: t0, h, q0(:), v0(:)
    real(wp), intent(out) :: tout(:), qout(:, :), vout(:, :), aout(:, :), lout(:, :)
    integer, intent(out) :: istat(3)
    real(wp), intent(out) :: stats(1)
    type(index1_work_t) :: w
    real(wp) :: q(size(q0)), v(size(q0)), a(size(q0)), lam(model%mh + model%mn), t
    integer :: step, info, ns
    call index1_init(w, model)
    stats = 0
    q = q0; v = v0; t = t0
    call index1_accel(model, t, q, v, w, a, lam, info)
    stats(1) = 1
    if (info /= 0) then
      istat = [info, 0, 0]
      return
    end if
    ns = 1
    call store(ns)
    do step = 1, nsteps
      call rk4_step(model, t, h, q, v, a, w, info)
      if (info == 0) call index1_accel(model, t0 + step * h, q, v, w, a, lam, info)
      stats(1) = stats(1) + 4
      if (info == 0) info = stop_status()   ! Ctrl-C, a callback's exception, a LAPACK error
      if (info /= 0) then
        istat = [info, step - 1, ns]
        return
      end if
      t = t0 + step * h
      if (mod(step, every) == 0) then
        ns = ns + 1
        call store(ns)
      end if
    end do
    if (mod(nsteps, every) /= 0) then   ! the final state is always the last sample
      ns = ns + 1
      call store(ns)
    end if
    istat = [STATUS_OK, nsteps, ns]

  contains

    subroutine store(k)
      integer, intent(in) :: k
      call store_sample(k, t, q, v, a, lam, tout, qout, vout, aout, lout)
    end subroutine

  end subroutine rk4_driver

end module rk4_index1
