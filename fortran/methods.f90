!> The method registry of the one driver: a method id (pyint's Integrator.KERNEL)
!> -> a new stepper.  Adding a method: its stepper module; here its `use`, its
!> METHOD_* id and one `case`; one Python class (see pyint/integrator.py).
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
  implicit none
  private
  public :: new_stepper

  !> Method ids (mirrored by the KERNEL attribute of the Python classes).
  integer, parameter, public :: METHOD_RK4_INDEX1 = 1, METHOD_BAUMGARTE = 2, METHOD_ALPHA = 3, &
                                    METHOD_BLOCK = 4, METHOD_LIE_GENALPHA = 5, &
                                    METHOD_LIE_BACKWARD = 6
  integer, parameter, public :: METHOD_SYMPLECTIC = 11, METHOD_GALERKIN = 12
  !> The template method of the README's checklist (its Python class: tests/test_add_method.py).
  integer, parameter, public :: METHOD_EXPLICIT_EULER = 13

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
    case (METHOD_ALPHA)
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
