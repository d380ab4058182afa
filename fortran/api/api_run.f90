! f2py interface of the one driver (fortran/core/driver.f90): every method that
! is a stepper runs through `run` (one trajectory) and `run_batch` (nb
! trajectories of a built-in model in OpenMP threads).  method: the method id
! (seam/seam.toml; the generated dispatch pyint_methods); iopt, ropt: the method's options (its Python class's
! kernel_options).  The model block is that of pyint/_fortran_model.py.
! Outputs (caller-allocated, column k = sample k): tout, qout, vout, aout, lout,
! auxout (the method's auxiliary vector; (1, 1) when it has none), resout (residuals), eout (energy);
! stepmax = the residuals' maxima over every step, then max |E - E0|;
! stats = the method's counters; red(i) = 1 where constraint row i was dropped as redundant at the
! start (fortran/core/reduced_model.f90); istat = [status, steps done, samples].
! Variable steps (fortran/core/driver.f90: drive_adaptive): aopt = [t_end, rtol, atol, h0, h_min, h_max,
! norm_mode] with rtol > 0 (h, nsteps, every unused; the samples are the accepted steps);
! hout(max_steps) receives the accepted steps, counts = [accepted, rejected, Newton failures].
! aopt = [0] (rtol absent): the fixed-step drive.

subroutine run(method, model_id, ipar, nipar, rpar, nrpar, usercb, n, mh, mn, mflags, iopt, niopt, ropt, nropt, &
               t0, h, nsteps, every, nq, nv, q0, v0, nl, naux, naout, nres, nout, tout, qout, vout, aout, lout, &
               auxout, resout, eout, stepmax, nst, stats, red, naopt, aopt, nhout, hout, counts, istat)
  use pyint_kinds
  use pyint_driver, only: stepper_t, drive, drive_adaptive, redundant_flags
  use pyint_methods, only: new_stepper
  use pyint_seam, only: AOPT_RTOL
  implicit none
  integer(c_int), intent(in) :: method, model_id, nipar, nrpar, n, mh, mn, niopt, nropt, nsteps, every
  integer(c_int), intent(in) :: nq, nv, nl, naux, naout, nres, nout, nst, naopt, nhout
  integer(c_int), intent(in) :: ipar(nipar), mflags(3), iopt(niopt)
  real(c_double), intent(in) :: rpar(nrpar), ropt(nropt), t0, h, q0(nq), v0(nv), aopt(naopt)
  real(c_double), intent(inout) :: tout(nout), qout(nq, nout), vout(nv, nout), aout(nv, nout), lout(nl, nout), &
                                   auxout(naux, naout), resout(nres, nout), eout(nout), stepmax(nres + 1), stats(nst), &
                                   hout(nhout)
  integer(c_int), intent(inout) :: counts(3), red(nl)
  integer(c_int), intent(out) :: istat(3)
  external usercb
  interface
    subroutine usercb(req, t, n, q, v, nw, w, nout, out)
      import :: c_double, c_int
      integer(c_int), intent(in) :: req, n, nw, nout
      real(c_double), intent(in) :: t, q(n), v(n), w(nw)
      real(c_double), intent(inout) :: out(nout)
    end subroutine
  end interface
  class(stepper_t), allocatable :: st
  integer :: ierr
  istat = [STATUS_BAD_INPUT, 0, 0]
  call new_stepper(method, st, ierr)
  if (ierr /= 0) return
  call st%setup(model_id, ipar, rpar, usercb, n, mh, mn, mflags, ierr)
  if (ierr /= 0) return
  if (naopt >= AOPT_RTOL) then
    if (aopt(AOPT_RTOL) > 0) then
      call drive_adaptive(st, iopt, ropt, aopt, t0, q0, v0, tout, qout, vout, aout, lout, auxout, resout, eout, &
                          stepmax, hout, counts, istat)
      if (allocated(st%stats)) stats(1:min(nst, size(st%stats))) = st%stats(1:min(nst, size(st%stats)))
      call redundant_flags(st, red)
      return
    end if
  end if
  call drive(st, iopt, ropt, t0, h, nsteps, every, q0, v0, tout, qout, vout, aout, lout, auxout, resout, eout, &
             stepmax, istat)
  if (allocated(st%stats)) stats(1:min(nst, size(st%stats))) = st%stats(1:min(nst, size(st%stats)))
  call redundant_flags(st, red)
end subroutine run

!> nb trajectories of one built-in model (model_id /= 0: not a callback) in nthreads OpenMP threads:
!> trajectory k starts from column k of q0, v0 with the real parameters rpar(:, k)
!> (ipar shared: same sizes) and the real options ropt(:, k).  Outputs as run's with a trailing trajectory index
!> (variable steps as run's: aopt shared, hout(:, k) and counts(:, k) per trajectory).
subroutine run_batch(method, model_id, ipar, nipar, rpar, nrpar, nb, n, mh, mn, mflags, iopt, niopt, ropt, nropt, &
                     t0, h, nsteps, every, nthreads, nq, nv, q0, v0, nl, naux, naout, nres, nout, tout, qout, vout, &
                     aout, lout, auxout, resout, eout, stepmax, nst, stats, red, naopt, aopt, nhout, hout, counts, &
                     istat)
  use pyint_kinds
  use pyint_driver, only: drive_batch
  use pyint_methods, only: new_stepper
  implicit none
  integer(c_int), intent(in) :: method, model_id, nipar, nrpar, nb, n, mh, mn, niopt, nropt, nsteps, every, nthreads
  integer(c_int), intent(in) :: nq, nv, nl, naux, naout, nres, nout, nst, naopt, nhout
  integer(c_int), intent(in) :: ipar(nipar), mflags(3), iopt(niopt)
  real(c_double), intent(in) :: rpar(nrpar, nb), ropt(nropt, nb), t0, h, q0(nq, nb), v0(nv, nb), aopt(naopt)
  real(c_double), intent(inout) :: tout(nout, nb), qout(nq, nout, nb), vout(nv, nout, nb), aout(nv, nout, nb), &
                                   lout(nl, nout, nb), auxout(naux, naout, nb), resout(nres, nout, nb), &
                                   eout(nout, nb), stepmax(nres + 1, nb), stats(nst, nb), hout(nhout, nb)
  integer(c_int), intent(inout) :: counts(3, nb), red(nl, nb)
  integer(c_int), intent(out) :: istat(3, nb)
  istat(1, :) = STATUS_BAD_INPUT
  istat(2:3, :) = 0
  if (model_id == 0) return     ! a callback model cannot run in threads
  call drive_batch(new_stepper, method, model_id, ipar, rpar, n, mh, mn, mflags, iopt, ropt, t0, h, nsteps, every, &
                   nthreads, q0, v0, tout, qout, vout, aout, lout, auxout, resout, eout, stepmax, stats, red, aopt, &
                   hout, counts, istat)
end subroutine run_batch

!> known = 1 if `method` is the id of a stepper (a method of seam/seam.toml), else 0:
!> pyint.integrator.register refuses a class whose KERNEL has none.
subroutine method_known(method, known)
  use pyint_kinds
  use pyint_driver, only: stepper_t
  use pyint_methods, only: new_stepper
  implicit none
  integer(c_int), intent(in) :: method
  integer(c_int), intent(out) :: known
  class(stepper_t), allocatable :: st
  integer :: ierr
  call new_stepper(method, st, ierr)
  known = merge(1, 0, ierr == 0)
end subroutine method_known

!> The alpha family's constants from rho_inf, as the kernels derive them (pyint_alpha,
!> fortran/core/alpha.f90): p = [alpha_m, alpha_f, alpha, beta, gamma] (the order of
!> ALPHA_PARAMETER_NAMES in pyint/genalpha.py).
subroutine alpha_parameters(rho_inf, p)
  use pyint_kinds
  use pyint_alpha, only: alpha_params_t, alpha_params
  implicit none
  real(c_double), intent(in) :: rho_inf
  real(c_double), intent(out) :: p(5)
  type(alpha_params_t) :: a
  a = alpha_params(rho_inf)
  p = [a%alpha_m, a%alpha_f, a%alpha, a%beta, a%gamma]
end subroutine alpha_parameters
