! f2py interface of the one driver (fortran/core/driver.f90): every method that
! is a stepper runs through `run` (one trajectory) and `run_batch` (nb
! trajectories of a built-in model in OpenMP threads); a run is ONE call from Python.
! method: the method id (seam/seam.toml; the generated dispatch pyint_methods); iopt, ropt: the
! method's options (its Python class's kernel_options).
! imodel = [model_id, n, mh, mn, mflags(1:3)], ipar, rpar, usercb: the model block of
! pyint/models/_fortran_model.py (model_id: its resolved id, never looked up here).
! grid = [t0, h, tol_q, tol_v, project]: tol_q, tol_v >= 0: the start is checked here, before any step:
! start(1:3) = [max|g|, max|G v + g_t|, max|A v + b|] at (t0, q0, v0), refused (STATUS_BAD_INPUT, no
! step) when start(1) > tol_q or start(2:3) > tol_v (pyint/_validate.py: consistent_initial_state
! words the error); < 0: not checked (start = 0).  A Lie-group method's rigid system (model_id =
! RIGID_MODEL_ID): its rank test, then max|Phi|, max|B V| checked, or with project = 1 projected
! onto the joints (the run starts from the projected state), by lie_checked_start
! (fortran/core/lie_stepper.f90; start = its diagnostics, pyint/models/rigid_states.py words them).
! igrid = [nsteps, every, dense_mode].
! Outputs (caller-allocated, column k = sample k): tout, qout, vout, aout, lout,
! auxout (the method's auxiliary vector; (1, 1) when it has none), resout (residuals), eout (energy);
! stepmax = the residuals' maxima over every step, then max |E - E0|;
! stats = the method's counters; red(i) = 1 where constraint row i was dropped as redundant at the
! start (fortran/core/reduced_model.f90); istat = [status, steps done, samples].
! Variable steps (fortran/core/driver.f90: drive_adaptive): aopt = [t_end, rtol, atol, h0, h_min, h_max,
! norm_mode] with rtol > 0 (h, nsteps, every unused; the samples are the accepted steps);
! hout(max_steps) receives the accepted steps, counts = [accepted, rejected, Newton failures].
! aopt = [0] (rtol absent): the fixed-step drive.
! Dense output (variable steps, dense_mode > 0: fortran/core/dense_output.f90): the states at
! teval(neval) after a successful run, interpolated over the accepted steps and re-imposed onto the
! constraints, packed per time in dense(:, j) = [q, v, a, lam (nl), res (nres), energy]: a vector
! method's (nq = nv), or with dense_mode = DENSE_LIE a Lie-group method's on its rigid system
! (model_id = RIGID_MODEL_ID; interpolated on the group, re-imposed on the run's kept rows).
! ctl = [interrupted, aborted, LAPACK argument (0: none), dense status, dense sample that failed]:
! the run control of the call (fortran/core/control.c; reset at its start).

subroutine run(method, imodel, ipar, nipar, rpar, nrpar, usercb, iopt, niopt, ropt, nropt, grid, igrid, &
               nq, nv, q0, v0, nl, naux, naout, nres, nout, tout, qout, vout, aout, lout, &
               auxout, resout, eout, stepmax, nst, stats, red, naopt, aopt, nhout, hout, counts, &
               neval, teval, ndense, dense, start, ctl, istat)
  use pyint_kinds
  use pyint_driver, only: stepper_t, drive, drive_adaptive, redundant_flags
  use pyint_methods, only: new_stepper
  use pyint_seam, only: AOPT_RTOL
  use pyint_control, only: control_begin, control_flags
  use pyint_metrics, only: point_residuals, residual_work_t
  use pyint_dense_output, only: dense_outputs, lie_dense_outputs, DENSE_LIE
  use pyint_lie_stepper, only: RIGID_MODEL_ID, lie_checked_start
  implicit none
  integer(c_int), intent(in) :: method, nipar, nrpar, niopt, nropt
  integer(c_int), intent(in) :: nq, nv, nl, naux, naout, nres, nout, nst, naopt, nhout, neval, ndense
  integer(c_int), intent(in) :: imodel(7), ipar(nipar), iopt(niopt), igrid(3)
  real(c_double), intent(in) :: rpar(nrpar), ropt(nropt), grid(5), q0(nq), v0(nv), aopt(naopt), teval(neval)
  real(c_double), intent(inout) :: tout(nout), qout(nq, nout), vout(nv, nout), aout(nv, nout), lout(nl, nout), &
                                   auxout(naux, naout), resout(nres, nout), eout(nout), stepmax(nres + 1), stats(nst), &
                                   hout(nhout), dense(ndense, neval)
  integer(c_int), intent(inout) :: counts(3), red(nl)
  real(c_double), intent(out) :: start(6)
  integer(c_int), intent(out) :: ctl(5), istat(3)
  include 'usercb_interface.inc'
  class(stepper_t), allocatable :: st
  type(residual_work_t) :: rw
  real(c_double) :: res(5), e, a0(nv), qs(nq), vs(nv)
  integer :: ierr, ns
  logical :: adaptive
  call control_begin()
  istat = [STATUS_BAD_INPUT, 0, 0]
  start = 0
  ctl = 0
  call new_stepper(method, st, ierr)
  if (ierr == 0) call st%setup(imodel(1), ipar, rpar, usercb, imodel(2), imodel(3), imodel(4), imodel(5:7), ierr)
  if (ierr /= 0) then
    call control_flags(ctl(1:3))
    return
  end if
  if (grid(3) >= 0 .and. allocated(st%model)) then
    a0 = 0
    call point_residuals(st%model, grid(1), q0, v0, a0, res, e, rw)
    start(1:3) = [res(1), res(2), res(4)]
    if (.not. (start(1) <= grid(3) .and. start(2) <= grid(4) .and. start(3) <= grid(4))) then
      call control_flags(ctl(1:3))
      return
    end if
  end if
  qs = q0
  vs = v0
  if (grid(3) >= 0 .and. imodel(1) == RIGID_MODEL_ID) then
    call lie_checked_start(ipar, rpar, qs, vs, grid(3), grid(4), grid(5) > 0, start, ierr)
    if (ierr /= 0) then
      call control_flags(ctl(1:3))
      return
    end if
  end if
  adaptive = .false.
  if (naopt >= AOPT_RTOL) adaptive = aopt(AOPT_RTOL) > 0
  if (adaptive .and. igrid(3) > 0 .and. neval > 0) then    ! outputs at teval: the samples they need
    call drive_adaptive(st, iopt, ropt, aopt, grid(1), qs, vs, tout, qout, vout, aout, lout, auxout, resout, eout, &
                        stepmax, hout, counts, istat, teval)
  else if (adaptive) then
    call drive_adaptive(st, iopt, ropt, aopt, grid(1), qs, vs, tout, qout, vout, aout, lout, auxout, resout, eout, &
                        stepmax, hout, counts, istat)
  else
    call drive(st, iopt, ropt, grid(1), grid(2), igrid(1), igrid(2), qs, vs, tout, qout, vout, aout, lout, auxout, &
               resout, eout, stepmax, istat)
  end if
  if (allocated(st%stats)) stats(1:min(nst, size(st%stats))) = st%stats(1:min(nst, size(st%stats)))
  call redundant_flags(st, red)
  ns = istat(3)
  if (adaptive .and. igrid(3) > 0 .and. istat(1) == STATUS_OK .and. neval > 0) then
    if (igrid(3) == DENSE_LIE .and. imodel(1) == RIGID_MODEL_ID) then
      call lie_dense_outputs(ipar, rpar, red, tout(1:ns), qout(:, 1:ns), vout(:, 1:ns), aout(:, 1:ns), teval, &
                             dense, ctl(4), ctl(5))
    else if (igrid(3) /= DENSE_LIE .and. nq == nv) then
      call dense_outputs(igrid(3), imodel(1), ipar, rpar, usercb, imodel(2), imodel(3), imodel(4), imodel(5:7), &
                         tout(1:ns), qout(:, 1:ns), vout(:, 1:ns), aout(:, 1:ns), teval, dense, ctl(4), ctl(5))
    end if
  end if
  call control_flags(ctl(1:3))
end subroutine run

!> nb trajectories of one built-in model (model_id /= 0: not a callback) in igrid(3) OpenMP threads:
!> trajectory k starts from column k of q0, v0 with the real parameters rpar(:, k)
!> (ipar shared: same sizes) and the real options ropt(:, k).  imodel, ipar as run's; grid = [t0, h],
!> igrid = [nsteps, every, nthreads, dense mode]; tols(:, k) = [tol_q, tol_v, project] of trajectory k and
!> start(:, k) its levels, as run's grid(3:5) and start: one start refused refuses the batch before any step.
!> igrid(4): the dense mode, as run's igrid(3).
!> Outputs as run's with a trailing trajectory index (variable steps as run's: aopt shared,
!> hout(:, k) and counts(:, k) per trajectory; dense(:, :, k) and dctl(:, k) = run's ctl(4:5));
!> ctl(1:3) as run's.
subroutine run_batch(method, imodel, ipar, nipar, rpar, nrpar, nb, iopt, niopt, ropt, nropt, grid, igrid, &
                     tols, nq, nv, q0, v0, nl, naux, naout, nres, nout, tout, qout, vout, &
                     aout, lout, auxout, resout, eout, stepmax, nst, stats, red, naopt, aopt, nhout, hout, counts, &
                     neval, teval, ndense, dense, dctl, start, ctl, istat)
  use pyint_kinds
  use pyint_driver, only: drive_batch, no_callback
  use pyint_methods, only: new_stepper
  use pyint_control, only: control_begin, control_flags
  use pyint_model, only: model_t
  use pyint_registry, only: setup_model
  use pyint_metrics, only: point_residuals, residual_work_t
  use pyint_dense_output, only: dense_outputs, lie_dense_outputs, DENSE_LIE
  use pyint_lie_stepper, only: RIGID_MODEL_ID, lie_checked_start
  use pyint_seam, only: AOPT_RTOL
  implicit none
  integer(c_int), intent(in) :: method, nipar, nrpar, nb, niopt, nropt
  integer(c_int), intent(in) :: nq, nv, nl, naux, naout, nres, nout, nst, naopt, nhout, neval, ndense
  integer(c_int), intent(in) :: imodel(7), ipar(nipar), iopt(niopt), igrid(4)
  real(c_double), intent(in) :: rpar(nrpar, nb), ropt(nropt, nb), grid(2), tols(3, nb), q0(nq, nb), v0(nv, nb), &
                                aopt(naopt), teval(neval)
  real(c_double), intent(inout) :: tout(nout, nb), qout(nq, nout, nb), vout(nv, nout, nb), aout(nv, nout, nb), &
                                   lout(nl, nout, nb), auxout(naux, naout, nb), resout(nres, nout, nb), &
                                   eout(nout, nb), stepmax(nres + 1, nb), stats(nst, nb), hout(nhout, nb)
  integer(c_int), intent(inout) :: counts(3, nb), red(nl, nb), dctl(2, nb)
  real(c_double), intent(inout) :: dense(ndense, neval, nb)
  real(c_double), intent(out) :: start(6, nb)
  integer(c_int), intent(out) :: ctl(3), istat(3, nb)
  class(model_t), allocatable :: m
  type(residual_work_t) :: rw
  real(c_double) :: res(5), e, a0(nv), qs(nq, nb), vs(nv, nb)
  integer :: k, ierr, ns
  call control_begin()
  istat(1, :) = STATUS_BAD_INPUT
  istat(2:3, :) = 0
  start = 0
  if (imodel(1) == 0) then     ! a callback model cannot run in threads
    call control_flags(ctl)
    return
  end if
  a0 = 0
  qs = q0
  vs = v0
  do k = 1, nb
    if (.not. tols(1, k) >= 0) cycle
    if (imodel(1) == RIGID_MODEL_ID) then     ! a Lie-group method's rigid system: as run's
      call lie_checked_start(ipar, rpar(:, k), qs(:, k), vs(:, k), tols(1, k), tols(2, k), tols(3, k) > 0, &
                             start(:, k), ierr)
      if (ierr /= 0) then
        call control_flags(ctl)
        return
      end if
      cycle
    end if
    call setup_model(imodel(1), ipar, rpar(:, k), no_callback, imodel(2), imodel(3), imodel(4), imodel(5:7), m, ierr)
    if (ierr /= 0) cycle      ! refused again, per trajectory, by drive_batch
    call point_residuals(m, grid(1), q0(:, k), v0(:, k), a0, res, e, rw)
    deallocate(m)
    start(1:3, k) = [res(1), res(2), res(4)]
    if (.not. (start(1, k) <= tols(1, k) .and. start(2, k) <= tols(2, k) .and. start(3, k) <= tols(2, k))) then
      call control_flags(ctl)
      return
    end if
  end do
  if (igrid(4) > 0 .and. neval > 0) then    ! outputs at teval: the samples they need (run's)
    call drive_batch(new_stepper, method, imodel(1), ipar, rpar, imodel(2), imodel(3), imodel(4), imodel(5:7), &
                     iopt, ropt, grid(1), grid(2), igrid(1), igrid(2), igrid(3), qs, vs, tout, qout, vout, aout, &
                     lout, auxout, resout, eout, stepmax, stats, red, aopt, hout, counts, istat, teval)
  else
    call drive_batch(new_stepper, method, imodel(1), ipar, rpar, imodel(2), imodel(3), imodel(4), imodel(5:7), &
                     iopt, ropt, grid(1), grid(2), igrid(1), igrid(2), igrid(3), qs, vs, tout, qout, vout, aout, &
                     lout, auxout, resout, eout, stepmax, stats, red, aopt, hout, counts, istat)
  end if
  if (igrid(4) > 0 .and. neval > 0 .and. size(aopt) >= AOPT_RTOL) then
    if (aopt(AOPT_RTOL) > 0) then   ! the outputs at teval of each successful trajectory, as run's
      do k = 1, nb
        ns = istat(3, k)
        if (istat(1, k) /= STATUS_OK) cycle
        if (igrid(4) == DENSE_LIE .and. imodel(1) == RIGID_MODEL_ID) then
          call lie_dense_outputs(ipar, rpar(:, k), red(:, k), tout(1:ns, k), qout(:, 1:ns, k), vout(:, 1:ns, k), &
                                 aout(:, 1:ns, k), teval, dense(:, :, k), dctl(1, k), dctl(2, k))
        else if (igrid(4) /= DENSE_LIE .and. nq == nv) then
          call dense_outputs(igrid(4), imodel(1), ipar, rpar(:, k), no_callback, imodel(2), imodel(3), imodel(4), &
                             imodel(5:7), tout(1:ns, k), qout(:, 1:ns, k), vout(:, 1:ns, k), aout(:, 1:ns, k), &
                             teval, dense(:, :, k), dctl(1, k), dctl(2, k))
        end if
      end do
    end if
  end if
  call control_flags(ctl)
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
