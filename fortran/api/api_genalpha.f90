! f2py interface of the alpha family (fortran/genalpha.f90): generalized-alpha
! and alpha-RATTLE.  Plain arrays in, plain arrays out; the caller allocates
! the outputs (nout samples, column k = sample k).

!> Generalized-alpha (variant = 0) or alpha-RATTLE (variant = 1) over nsteps steps;
!> form = 0 seed 000's formulation, 1 Arnold-Bruls (see fortran/genalpha.f90).
!> Outputs: tout, qout, vout, aout, lout; istat = [status, steps done, samples];
!> stats = [newton iterations, factorizations, max iterations/step, start-up iterations,
!>          solves with a kept factorization, solver used (1 dense, 2 banded, 3 sparse), band kl, ku].
!> Optional: solver (0 auto, 1 dense, 2 banded, 3 sparse; default 0) and reuse
!> (1 = simplified Newton with Jacobian reuse; default 0 = Newton).
subroutine alpha_run(model_id, ipar, nipar, rpar, nrpar, usercb, n, mh, mn, mflags, &
                     variant, form, rho_inf, mass_mode, start_mode, tol, maxit, t0, h, nsteps, every, &
                     q0, v0, a0, nl, lam0, nout, tout, qout, vout, aout, lout, istat, stats, solver, reuse)
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_registry, only: setup_model
  use genalpha, only: alpha_driver
  implicit none
  integer(c_int), intent(in) :: model_id, nipar, nrpar, n, mh, mn, nl, nout
  integer(c_int), intent(in) :: ipar(nipar), mflags(3)
  real(c_double), intent(in) :: rpar(nrpar)
  integer(c_int), intent(in) :: variant, form, mass_mode, start_mode, maxit, nsteps, every
  real(c_double), intent(in) :: rho_inf, tol, t0, h
  real(c_double), intent(in) :: q0(n), v0(n), a0(n), lam0(nl)
  real(c_double), intent(inout) :: tout(nout), qout(n, nout), vout(n, nout), aout(n, nout), lout(nl, nout)
  integer(c_int), intent(out) :: istat(3)
  real(c_double), intent(out) :: stats(8)
  integer(c_int), intent(in) :: solver, reuse
  !f2py integer(c_int) optional, intent(in) :: solver = 0
  !f2py integer(c_int) optional, intent(in) :: reuse = 0
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
  if (ierr /= 0 .or. nl /= max(mh + mn, 1) .or. every < 1 .or. nsteps < 0) return
  call alpha_driver(m, variant, form, rho_inf, mass_mode, start_mode, tol, maxit, t0, h, nsteps, every, &
                    q0, v0, a0, lam0(1:mh + mn), tout, qout, vout, aout, lout, istat, stats, solver, reuse)
end subroutine alpha_run

!> nb trajectories of one built-in model (model_id > 0) in nthreads OpenMP
!> threads: trajectory k starts from column k of q0, v0, a0, lam0 and uses the
!> real parameters rpar(:, k) (ipar is shared: same sizes).  Outputs carry a
!> trailing trajectory index; istat(:, k), stats(:, k) as alpha_run's.
subroutine alpha_batch(model_id, ipar, nipar, rpar, nrpar, nb, n, mh, mn, mflags, &
                       variant, form, rho_inf, mass_mode, start_mode, tol, maxit, t0, h, nsteps, every, &
                       solver, reuse, nthreads, q0, v0, a0, nl, lam0, nout, tout, qout, vout, aout, lout, &
                       istat, stats)
  use pyint_kinds
  use genalpha, only: alpha_batch_driver
  implicit none
  integer(c_int), intent(in) :: model_id, nipar, nrpar, nb, n, mh, mn, nl, nout
  integer(c_int), intent(in) :: ipar(nipar), mflags(3)
  real(c_double), intent(in) :: rpar(nrpar, nb)
  integer(c_int), intent(in) :: variant, form, mass_mode, start_mode, maxit, nsteps, every, solver, reuse, nthreads
  real(c_double), intent(in) :: rho_inf, tol, t0, h
  real(c_double), intent(in) :: q0(n, nb), v0(n, nb), a0(n, nb), lam0(nl, nb)
  real(c_double), intent(inout) :: tout(nout, nb), qout(n, nout, nb), vout(n, nout, nb), aout(n, nout, nb)
  real(c_double), intent(inout) :: lout(nl, nout, nb)
  integer(c_int), intent(out) :: istat(3, nb)
  real(c_double), intent(out) :: stats(8, nb)
  stats = 0
  istat(1, :) = STATUS_BAD_INPUT
  istat(2:3, :) = 0
  if (model_id < 1 .or. nl /= max(mh + mn, 1) .or. every < 1 .or. nsteps < 0) return
  call alpha_batch_driver(model_id, ipar, rpar, n, mh, mn, mflags, variant, form, rho_inf, mass_mode, start_mode, &
                          tol, maxit, t0, h, nsteps, every, solver, reuse, nthreads, q0, v0, a0, lam0, &
                          tout, qout, vout, aout, lout, istat, stats)
end subroutine alpha_batch

!> The alpha family's constants from rho_inf, as the kernels derive them (genalpha's
!> alpha_params, also used by lie_genalpha): p = [alpha_m, alpha_f, alpha, beta, gamma]
!> (the order of ALPHA_PARAMETER_NAMES in pyint/methods/genalpha.py).
subroutine alpha_parameters(rho_inf, p)
  use pyint_kinds
  use genalpha, only: alpha_params_t, alpha_params
  implicit none
  real(c_double), intent(in) :: rho_inf
  real(c_double), intent(out) :: p(5)
  type(alpha_params_t) :: a
  a = alpha_params(rho_inf)
  p = [a%alpha_m, a%alpha_f, a%alpha, a%beta, a%gamma]
end subroutine alpha_parameters
