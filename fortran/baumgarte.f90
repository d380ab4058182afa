!> Baumgarte-stabilized index-1 form integrated by the classical 4th-order
!> Runge-Kutta method (the baseline of seed 002, Figs 4-5).
!>
!>     qdot = v,   vdot = a(t, q, v)   with  [M G^T; G 0] [a; lam] = [f; -(gamma + 2 alpha (G v + g_t) + beta^2 g)]
!>
!> (fortran/core/index1.f90): every constraint residual obeys
!> e'' + 2 alpha e' + beta^2 e = 0 along the exact flow of this ODE, so drift
!> is damped but not removed; the exact DAE solution solves the ODE, so RK4
!> keeps its order 4.  Outputs a and lam are those of the stabilized KKT
!> system at each sample.
module baumgarte
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_index1, only: kkt_work_t, kkt_init, kkt_accel
  use pyint_control, only: stop_status
  implicit none
  private
  public :: baumgarte_rk4_driver

contains

  !> nsteps RK4 steps of size h from (t0, q0, v0); output every `every` steps.
  !> istat = [status, steps done, samples]; stats = [KKT solves].
  subroutine baumgarte_rk4_driver(model, alpha, beta, t0, h, nsteps, every, q0, v0, &
                                  tout, qout, vout, aout, lout, istat, stats)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: alpha, beta, t0, h, q0(:), v0(:)
    integer, intent(in) :: nsteps, every
    real(wp), intent(out) :: tout(:), qout(:, :), vout(:, :), aout(:, :), lout(:, :)
    integer, intent(out) :: istat(3)
    real(wp), intent(out) :: stats(1)
    type(kkt_work_t) :: kw
    integer :: n, step, info, ns
    real(wp) :: t, q(size(q0)), v(size(q0)), lam(model%mh)
    real(wp) :: kq(size(q0), 4), kv(size(q0), 4), qs(size(q0)), vs(size(q0))
    n = model%n
    stats = 0
    istat = [STATUS_BAD_INPUT, 0, 0]
    if (model%mn /= 0) return
    call kkt_init(kw, model)
    q = q0; v = v0; t = t0
    ns = 1
    call store(ns, info)
    if (info /= 0) then
      istat = [info, 0, 0]
      return
    end if
    do step = 1, nsteps
      ! k_i = (v_i, a(t_i, q_i, v_i)) at the classical nodes 0, 1/2, 1/2, 1
      kq(:, 1) = v
      call rhs(t, q, v, kv(:, 1), info); if (info /= 0) exit
      qs = q + 0.5_wp * h * kq(:, 1); vs = v + 0.5_wp * h * kv(:, 1)
      kq(:, 2) = vs
      call rhs(t + 0.5_wp * h, qs, vs, kv(:, 2), info); if (info /= 0) exit
      qs = q + 0.5_wp * h * kq(:, 2); vs = v + 0.5_wp * h * kv(:, 2)
      kq(:, 3) = vs
      call rhs(t + 0.5_wp * h, qs, vs, kv(:, 3), info); if (info /= 0) exit
      qs = q + h * kq(:, 3); vs = v + h * kv(:, 3)
      kq(:, 4) = vs
      call rhs(t + h, qs, vs, kv(:, 4), info); if (info /= 0) exit
      q = q + h / 6 * (kq(:, 1) + 2 * kq(:, 2) + 2 * kq(:, 3) + kq(:, 4))
      v = v + h / 6 * (kv(:, 1) + 2 * kv(:, 2) + 2 * kv(:, 3) + kv(:, 4))
      if (.not. (all(abs(q) <= huge(1.0_wp)) .and. all(abs(v) <= huge(1.0_wp)))) then
        info = STATUS_NONFINITE
        exit
      end if
      info = stop_status(); if (info /= 0) exit   ! Ctrl-C, a callback's exception, a LAPACK error
      t = t0 + step * h
      if (mod(step, every) == 0) then
        ns = ns + 1
        call store(ns, info)
        if (info /= 0) then
          istat = [info, step, ns - 1]
          return
        end if
      end if
    end do
    if (info /= 0) then
      istat = [info, step - 1, ns]
      return
    end if
    if (mod(nsteps, every) /= 0) then   ! the final state is always the last sample
      ns = ns + 1
      call store(ns, info)
      if (info /= 0) then
        istat = [info, nsteps, ns - 1]
        return
      end if
    end if
    istat = [STATUS_OK, nsteps, ns]

  contains

    subroutine rhs(ts, qx, vx, acc, info)
      real(wp), intent(in) :: ts, qx(:), vx(:)
      real(wp), intent(out) :: acc(:)
      integer, intent(out) :: info
      call kkt_accel(model, kw, ts, qx, vx, alpha, beta, acc, lam, info)
      stats(1) = stats(1) + 1
    end subroutine

    subroutine store(k, info)
      integer, intent(in) :: k
      integer, intent(out) :: info
      info = 0
      if (k > size(tout)) return
      tout(k) = t
      qout(:, k) = q
      vout(:, k) = v
      call kkt_accel(model, kw, t, q, v, alpha, beta, aout(:, k), lout(1:model%mh, k), info)
    end subroutine

  end subroutine baumgarte_rk4_driver

end module baumgarte
