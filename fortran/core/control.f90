!> Run control polled by every driver once per step (fortran/core/control.c):
!> Ctrl-C, a callback model's request to stop, a LAPACK/BLAS argument error; each poll
!> passes the time reached (the progress line of a long run, pyint/_progress.py).
module pyint_control
  use iso_c_binding, only: c_int, c_double
  use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan
  implicit none
  private
  public :: stop_status

  interface
    !> 0 to go on, else STATUS_INTERRUPTED, STATUS_ABORTED or STATUS_LAPACK_ERROR.
    integer(c_int) function pyint_stop_status(t) bind(C, name='pyint_stop_status')
      import :: c_int, c_double
      real(c_double), value :: t
    end function
  end interface

contains

  !> The status a driver must return with now (0: go on); t: the time the run has reached
  !> (absent: a poll outside a time loop, which reports none: NaN).
  integer function stop_status(t)
    real(c_double), intent(in), optional :: t
    if (present(t)) then
      stop_status = int(pyint_stop_status(t))
    else
      stop_status = int(pyint_stop_status(ieee_value(0.0_c_double, ieee_quiet_nan)))
    end if
  end function

end module pyint_control
