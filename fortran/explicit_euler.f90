!> Explicit Euler on the index-1 form (seed 003 eq. (7)): the ODE q' = v,
!> v' = a(t, q, v), with a (and the multipliers) from the index-1 system,
!>
!>     q_{k+1} = q_k + h v_k,     v_{k+1} = v_k + h a(t_k, q_k, v_k).
!>
!> THE TEMPLATE METHOD, NOT FOR PRODUCTION: the smallest stepper of the one
!> driver (fortran/core/driver.f90), the worked example of the README's
!> checklist "Adding a method".  First order; like RK4 on the index-1 form
!> (rk4_index1.f90) nothing projects the state back, so the position and
!> velocity constraints drift (here O(h) per unit time), and the step is only
!> conditionally stable (|1 + i h omega| > 1 for an oscillation: its energy
!> grows).  The acceleration constraint holds to round-off at every sample,
!> because a is solved there.  Its Python class is not in pyint's METHODS: a
!> test (tests/test_add_method.py) registers one, as a user adding a method
!> would.
!>
!> stats = [index-1 solves].
module explicit_euler
  use pyint_kinds
  use pyint_driver, only: state_t
  use pyint_index1, only: index1_accel
  use pyint_index1_stepper, only: index1_stepper_t
  use pyint_seam, only: STAT_EXPLICIT_EULER_INDEX1_SOLVES
  implicit none
  private
  public :: euler_stepper_t

  !> init: index1_stepper_t's (no options; a, lam at the start from the index-1 system).
  type, extends(index1_stepper_t) :: euler_stepper_t
  contains
    procedure :: step => euler_step
  end type

contains

  !> One Euler step with s%a = a(s%t, q, v) (from init or the previous step);
  !> then a and lam at the new state (the slope of the next step).
  subroutine euler_step(self, h, t1, s, info)
    class(euler_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    s%q = s%q + h * s%v
    s%v = s%v + h * s%a
    call index1_accel(self%model, t1, s%q, s%v, self%w, s%a, s%lam, info)
    self%stats(STAT_EXPLICIT_EULER_INDEX1_SOLVES) = self%stats(STAT_EXPLICIT_EULER_INDEX1_SOLVES) + 1
  end subroutine

end module explicit_euler
