!> Run control polled by every driver once per step (fortran/core/control.c):
!> Ctrl-C, a callback model's request to stop, a LAPACK/BLAS argument error; each poll
!> passes the time reached (the progress line of a long run, pyint/_progress.py).
module pyint_control
  use iso_c_binding, only: c_int, c_double, c_char
  use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan
  implicit none
  private
  public :: stop_status, control_begin, control_flags

  interface
    !> 0 to go on, else STATUS_INTERRUPTED, STATUS_ABORTED or STATUS_LAPACK_ERROR.
    integer(c_int) function pyint_stop_status(t) bind(C, name='pyint_stop_status')
      import :: c_int, c_double
      real(c_double), value :: t
    end function
    subroutine pyint_control_reset() bind(C, name='pyint_control_reset')
    end subroutine
    subroutine pyint_control_state(flags, name, namelen) bind(C, name='pyint_control_state')
      import :: c_int, c_char
      integer(c_int), intent(out) :: flags(3)
      character(kind=c_char), intent(out) :: name(*)
      integer(c_int), value :: namelen
    end subroutine
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

  !> Clear the interrupt, abort and LAPACK-error records: the start of a kernel call (the entries
  !> run and run_batch call it themselves, pyint/_control.py the f2py entry control_reset).
  subroutine control_begin()
    call pyint_control_reset()
  end subroutine

  !> flags = [interrupted, aborted, argument number of a LAPACK/BLAS error (0: none)] at the end
  !> of a run's call; name: the LAPACK/BLAS routine that reported it.
  subroutine control_flags(flags, name)
    integer(c_int), intent(out) :: flags(3)
    character(len=16), intent(out), optional :: name
    character(kind=c_char) :: buf(16)
    integer :: k
    call pyint_control_state(flags, buf, 16_c_int)
    if (present(name)) then
      do k = 1, 16
        name(k:k) = buf(k)
      end do
    end if
  end subroutine

end module pyint_control
