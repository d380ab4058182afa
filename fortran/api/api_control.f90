! f2py interface of the run control (fortran/core/control.c): reset before a
! kernel call, a callback's request to stop, the state after the call.

!> Clear the interrupt, abort and LAPACK-error records (before each kernel call).
subroutine control_reset()
  use pyint_control, only: control_begin
  call control_begin()
end subroutine control_reset

!> Ask the running kernel to stop at its next poll (a callback item raised).
subroutine control_request_abort()
  interface
    subroutine pyint_request_abort() bind(C, name='pyint_request_abort')
    end subroutine
  end interface
  call pyint_request_abort()
end subroutine control_request_abort

!> Ask the running kernel to stop at its next poll with STATUS_INTERRUPTED (Ctrl-C).
subroutine control_request_interrupt()
  interface
    subroutine pyint_request_interrupt() bind(C, name='pyint_request_interrupt')
    end subroutine
  end interface
  call pyint_request_interrupt()
end subroutine control_request_interrupt

!> flags = [interrupted, aborted, argument number of a LAPACK/BLAS error (0: none)];
!> name: the LAPACK/BLAS routine that reported it.
subroutine control_state(flags, name)
  use iso_c_binding, only: c_int
  use pyint_control, only: control_flags
  implicit none
  integer(c_int), intent(out) :: flags(3)
  character(len=16), intent(out) :: name
  call control_flags(flags, name)
end subroutine control_state

!> t: the time the running kernel's last poll reported (the progress line of a long run).
subroutine control_progress(t)
  use iso_c_binding, only: c_double
  implicit none
  real(c_double), intent(out) :: t
  interface
    real(c_double) function pyint_progress_time() bind(C, name='pyint_progress_time')
      import :: c_double
    end function
  end interface
  t = pyint_progress_time()
end subroutine control_progress

!> Call DGETRF with an illegal leading dimension (argument 4): the check that
!> pyint's xerbla, not the library's (which stops the process), receives it.
!> info: DGETRF's info (-4 when xerbla returned).
subroutine lapack_selfcheck(info)
  use pyint_kinds
  implicit none
  integer(c_int), intent(out) :: info
  external :: dgetrf
  real(c_double) :: a(2, 2)
  integer :: ipiv(2), linfo
  a = 1
  call dgetrf(2, 2, a, 1, ipiv, linfo)
  info = linfo
end subroutine lapack_selfcheck
