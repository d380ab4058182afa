!> The method registry of the one driver: a method id (pyint's Integrator.KERNEL)
!> -> a new stepper.  Adding a method: its [[method]] table in seam/seam.toml (its id),
!> its stepper module, here its `use` and one `case`; one Python class (pyint/integrator.py).
module pyint_methods
  use pyint_driver, only: stepper_t
  use rk4_index1, only: rk4_stepper_t
  use baumgarte, only: baumgarte_stepper_t
  use genalpha, only: alpha_stepper_t
  use block_method, only: block_stepper_t
  use lie_genalpha, only: lie_genalpha_stepper_t
  use lie_backward, only: lie_backward_stepper_t
  use symplectic, only: sym_stepper_t
  use galerkin, only: gl_stepper_t
  use explicit_euler, only: euler_stepper_t
  use pyint_seam, only: METHOD_RK4_INDEX1, METHOD_BAUMGARTE, METHOD_GENALPHA, METHOD_BLOCK, &
                        METHOD_LIE_GENALPHA, METHOD_LIE_BACKWARD, METHOD_SYMPLECTIC, METHOD_GALERKIN, &
                        METHOD_EXPLICIT_EULER
  implicit none
  private
  public :: new_stepper

  ! The method ids (the Python classes' KERNEL) are described in seam/seam.toml:
  ! pyint_seam's METHOD_<NAME>.

contains

  subroutine new_stepper(method, st, info)
    integer, intent(in) :: method
    class(stepper_t), allocatable, intent(out) :: st
    integer, intent(out) :: info
    info = 0
    select case (method)
    case (METHOD_RK4_INDEX1)
      allocate(rk4_stepper_t :: st)
    case (METHOD_BAUMGARTE)
      allocate(baumgarte_stepper_t :: st)
    case (METHOD_GENALPHA)
      allocate(alpha_stepper_t :: st)
    case (METHOD_BLOCK)
      allocate(block_stepper_t :: st)
    case (METHOD_LIE_GENALPHA)
      allocate(lie_genalpha_stepper_t :: st)
    case (METHOD_LIE_BACKWARD)
      allocate(lie_backward_stepper_t :: st)
    case (METHOD_SYMPLECTIC)
      allocate(sym_stepper_t :: st)
    case (METHOD_GALERKIN)
      allocate(gl_stepper_t :: st)
    case (METHOD_EXPLICIT_EULER)
      allocate(euler_stepper_t :: st)
    case default
      info = 1
    end select
  end subroutine

end module pyint_methods
