! f2py interface of classical RK4 on the index-1 form (fortran/rk4_index1.f90).

!> nsteps RK4 steps of size h; outputs every `every` steps (column k = sample k);
!> istat = [status, steps done, samples]; stats = [index-1 solves].
subroutine rk4_index1_run(model_id, ipar, nipar, rpar, nrpar, usercb, n, mh, mn, mflags, &
                          t0, h, nsteps, every, q0, v0, nl, nout, tout, qout, vout, aout, lout, istat, stats)
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_registry, only: setup_model
  use rk4_index1, only: rk4_driver
  implicit none
  integer(c_int), intent(in) :: model_id, nipar, nrpar, n, mh, mn, nl, nout
  integer(c_int), intent(in) :: ipar(nipar), mflags(3)
  real(c_double), intent(in) :: rpar(nrpar)
  integer(c_int), intent(in) :: nsteps, every
  real(c_double), intent(in) :: t0, h
  real(c_double), intent(in) :: q0(n), v0(n)
  real(c_double), intent(inout) :: tout(nout), qout(n, nout), vout(n, nout), aout(n, nout), lout(nl, nout)
  integer(c_int), intent(out) :: istat(3)
  real(c_double), intent(out) :: stats(1)
  external usercb
  interface
    subroutine usercb(req, t, n, q, v, nw, w, nout, out)
      import :: c_double, c_int
      integer(c_int), intent(in) :: req, n, nw, nout
      real(c_double), intent(in) :: t, q(n), v(n), w(nw)
      real(c_double), intent(inout) :: out(nout)
    end subroutine
  end interface
  class(model_t), allocatable :: m
  integer :: ierr
  stats = 0
  istat = [STATUS_BAD_INPUT, 0, 0]
  call setup_model(model_id, ipar, rpar, usercb, n, mh, mn, mflags, m, ierr)
  if (ierr /= 0 .or. nl /= max(mh + mn, 1) .or. every < 1 .or. nsteps < 0 .or. h <= 0) return
  call rk4_driver(m, t0, h, nsteps, every, q0, v0, tout, qout, vout, aout, lout, istat, stats)
end subroutine rk4_index1_run
