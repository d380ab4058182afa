! f2py interface of Lie-group generalized-alpha (fortran/lie_genalpha.f90).

!> variant: 0 index 3, 1 stabilized index 2.  Outputs as lie_backward_run;
!> aout = Vdot, auxout = (algorithmic acceleration a, stabilizing multiplier mu).
subroutine lie_genalpha_run(ipar, nipar, rpar, nrpar, nb, nv, nl, variant, rho_inf, tol, maxit, &
                            t0, h, nsteps, every, x0, r0, v0, nout, naux, tout, xout, rout, vout, &
                            aout, lout, auxout, istat, stats)
  use pyint_kinds
  use pyint_rigid, only: rigid_system_t, rigid_system_new
  use lie_genalpha, only: lie_genalpha_driver
  implicit none
  integer(c_int), intent(in) :: nipar, nrpar, nb, nv, nl, variant, maxit, nsteps, every, nout, naux
  integer(c_int), intent(in) :: ipar(nipar)
  real(c_double), intent(in) :: rpar(nrpar), rho_inf, tol, t0, h, x0(3, nb), r0(3, 3, nb), v0(nv)
  real(c_double), intent(inout) :: tout(nout), xout(3, nb, nout), rout(3, 3, nb, nout), &
                                   vout(nv, nout), aout(nv, nout), lout(nl, nout), auxout(naux, nout)
  integer(c_int), intent(out) :: istat(3)
  real(c_double), intent(out) :: stats(8)
  type(rigid_system_t) :: s
  integer :: ierr
  stats = 0
  istat = [STATUS_BAD_INPUT, 0, 0]
  call rigid_system_new(ipar, rpar, s, ierr)
  if (ierr /= 0 .or. s%nb /= nb .or. s%nv /= nv .or. nl /= max(s%m, 1) .or. &
      naux /= nv + s%m .or. nsteps < 0) return
  call lie_genalpha_driver(s, variant, rho_inf, tol, maxit, t0, h, nsteps, every, x0, r0, v0, &
                           tout, xout, rout, vout, aout, lout(1:s%m, :), auxout, istat, stats)
end subroutine lie_genalpha_run
