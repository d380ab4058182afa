!> Classical Runge-Kutta 4 on the index-1 form (seed 003 eq. (7)): the ODE
!> q' = v, v' = a(t, q, v) with a from the index-1 system at every stage
!> (pyint_index1).  The baseline of seed 003 (Table 3, Fig. 6).
!>
!> Nothing projects the state back: position and velocity constraints drift
!> (O(h^4) per unit time, and linearly in t); the acceleration constraint
!> holds to round-off at every step, because a is solved there.
!>
!> A stepper of the one driver (fortran/core/driver.f90); the step itself is
!> pyint_index1's rk4_step.  stats = [index-1 solves].
!>
!> Variable steps (drive_adaptive; docs/adaptive_steps.md section 2): the FSAL embedded
!> solution of classical RK4, b^ = (1/6, 1/3, 1/3, 0, 1/6) with k5 = f(t_{n+1}, y_{n+1})
!> (the next step's k1, computed anyway), satisfies the four order-3 conditions, so
!>     e = y4 - y3 = h/6 (k4 - k5) = (local error of y3) + O(h^5),
!> O(h^4) (est_power 4), controlled per step with local extrapolation (y4 is kept): the global
!> error of y4 ~ h^4 ~ tol (Hairer, Norsett, Wanner, Solving ODEs I, II.4), proportional with a
!> constant that grows with the run: each step leaves y4's error (a fraction of tol) and, unprojected,
!> a drift on which the constraint forces do work (dE/dt = -lam^T G v), both carried by the flow's
!> amplification (docs/adaptive_steps.md section 2.1).  No internal state:
!> the driver's restore of s (a = k1's acceleration) undoes a rejected step.
module rk4_index1
  use pyint_kinds
  use pyint_driver, only: state_t
  use pyint_index1, only: index1_accel, rk4_step, project_step
  use pyint_index1_stepper, only: index1_stepper_t, index1_stepper_init
  use pyint_seam, only: STAT_RK4_INDEX1_INDEX1_SOLVES
  implicit none
  private
  public :: rk4_stepper_t

  type, extends(index1_stepper_t) :: rk4_stepper_t
  contains
    procedure :: init => rk4_init
    procedure :: step => rk4_advance
  end type

contains

  !> index1_stepper_t's start; with variable steps its estimate's power and order.
  subroutine rk4_init(self, s, info)
    class(rk4_stepper_t), intent(inout) :: self
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    call index1_stepper_init(self, s, info)
    if (self%adaptive) then
      self%est_power = 4
      self%order = 4
    end if
  end subroutine

  !> One RK4 step; a and lam at the new state (the first stage of the next step).
  subroutine rk4_advance(self, h, t1, s, info)
    class(rk4_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    real(wp) :: v4(self%nv), a4(self%nv)
    call rk4_step(self%model, s%t, h, s%q, s%v, s%a, self%w, info, v4, a4)
    if (info == 0 .and. self%project) then
      call project_step(self%model, t1, s%q, s%v, self%w, s%a, s%lam, info)
    else if (info == 0) then
      call index1_accel(self%model, t1, s%q, s%v, self%w, s%a, s%lam, info)
    end if
    self%stats(STAT_RK4_INDEX1_INDEX1_SOLVES) = self%stats(STAT_RK4_INDEX1_INDEX1_SOLVES) + 4
    if (info == 0 .and. self%adaptive) then      ! e = h/6 (k4 - k5), k5 = (v_{n+1}, a_{n+1})
      self%err_q = (h / 6) * (v4 - s%v)
      self%err_v = (h / 6) * (a4 - s%a)
      self%has_err_v = .true.
    end if
  end subroutine

end module rk4_index1
