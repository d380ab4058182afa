! f2py interface of the backward-difference Lie-group forms (fortran/lie_backward.f90).
! The rigid system is passed as (ipar, rpar) (fortran/core/rigid_body.f90); the
! caller allocates the outputs (nout samples, last index = sample).

!> form: 1 DAE1, 2 DAE2, 3 DAE3, 4 DAES; history_mode (DAES): 0 printed V'^k, 1 projected V^k.
!> Outputs tout, xout, rout, vout, aout, lout, auxout (V', mu, omega for DAES);
!> istat = [status, steps done, samples]; stats = [newton iterations, factorizations,
!> max iterations/step, then maxima over every step of |Phi|, |B V|, |B A + Bdot V|,
!> |R^T R - I|_F, |H - H0|].
subroutine lie_backward_run(ipar, nipar, rpar, nrpar, nb, nv, nl, form, history_mode, tol, maxit, &
                            t0, h, nsteps, every, x0, r0, v0, nout, naux, tout, xout, rout, vout, &
                            aout, lout, auxout, istat, stats)
  use pyint_kinds
  use pyint_rigid, only: rigid_system_t, rigid_system_new
  use lie_backward, only: lie_backward_driver
  implicit none
  integer(c_int), intent(in) :: nipar, nrpar, nb, nv, nl, form, history_mode, maxit, nsteps, every
  integer(c_int), intent(in) :: nout, naux
  integer(c_int), intent(in) :: ipar(nipar)
  real(c_double), intent(in) :: rpar(nrpar), tol, t0, h, x0(3, nb), r0(3, 3, nb), v0(nv)
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
      naux /= nv + 2 * s%m .or. nsteps < 0) return
  call lie_backward_driver(s, form, history_mode, tol, maxit, t0, h, nsteps, every, x0, r0, v0, &
                           tout, xout, rout, vout, aout, lout(1:s%m, :), auxout, istat, stats)
end subroutine lie_backward_run
