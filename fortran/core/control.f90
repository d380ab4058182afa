!> Run control polled by every driver once per step (fortran/core/control.c):
!> Ctrl-C, a callback model's request to stop, a LAPACK/BLAS argument error.
module pyint_control
  use iso_c_binding, only: c_int
  implicit none
  private
  public :: stop_status

  interface
    !> 0 to go on, else STATUS_INTERRUPTED, STATUS_ABORTED or STATUS_LAPACK_ERROR.
    integer(c_int) function pyint_stop_status() bind(C, name='pyint_stop_status')
      import :: c_int
    end function
  end interface

contains

  !> The status a driver must return with now (0: go on).
  integer function stop_status()
    stop_status = int(pyint_stop_status())
  end function

end module pyint_control
