! f2py interface of the multistep block method (fortran/block.f90).  Plain
! arrays in, plain arrays out; the caller allocates the outputs (nout
! samples, column k = sample k).

!> Block method with r nodes cc, matrices ca (A), cu (U) and predictor weights cw
!> (from one block) and cw2 (from two) over nsteps blocks of length h; A = T diag(mu) T^-1 with mu = mure + i muim,
!> T = tre + i tim, T^-1 = tire + i tiim.  Outputs: tout, qout, vout, aout, lout at the
!> block ends; istat = [status, blocks done, samples]; stats = [Newton iterations,
!> coupling refreshes, max iterations/block, start-up RK4 steps, retried blocks, max contraction,
!> blocks solved with the exact Newton matrix].
subroutine block_run(model_id, ipar, nipar, rpar, nrpar, usercb, n, mh, mn, mflags, &
                     r, ca, cu, cc, cw, cw2, mure, muim, tre, tim, tire, tiim, tol, maxit, theta_refresh, &
                     start_substeps, t0, h, nsteps, every, &
                     q0, v0, nl, nout, tout, qout, vout, aout, lout, istat, stats)
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_registry, only: setup_model
  use block_method, only: block_driver
  implicit none
  integer(c_int), intent(in) :: model_id, nipar, nrpar, n, mh, mn, nl, nout, r
  integer(c_int), intent(in) :: ipar(nipar), mflags(3)
  real(c_double), intent(in) :: rpar(nrpar)
  real(c_double), intent(in) :: ca(r, r), cu(r, r), cc(r), cw(r, r), cw2(r, 2 * r)
  real(c_double), intent(in) :: mure(r), muim(r), tre(r, r), tim(r, r), tire(r, r), tiim(r, r)
  integer(c_int), intent(in) :: maxit, start_substeps, nsteps, every
  real(c_double), intent(in) :: tol, theta_refresh, t0, h
  real(c_double), intent(in) :: q0(n), v0(n)
  real(c_double), intent(inout) :: tout(nout), qout(n, nout), vout(n, nout), aout(n, nout), lout(nl, nout)
  integer(c_int), intent(out) :: istat(3)
  real(c_double), intent(out) :: stats(7)
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
  if (ierr /= 0 .or. nl /= max(mh + mn, 1) .or. every < 1 .or. nsteps < 0 .or. r < 1 &
      .or. maxit < 1 .or. start_substeps < 1 .or. h <= 0) return
  call block_driver(m, r, ca, cu, cc, cw, cw2, cmplx(mure, muim, wp), cmplx(tre, tim, wp), &
                    cmplx(tire, tiim, wp), tol, maxit, theta_refresh, start_substeps, t0, h, nsteps, &
                    every, q0, v0, tout, qout, vout, aout, lout, istat, stats)
end subroutine block_run
