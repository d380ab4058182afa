!> The one time loop of every method: a method is a stepper (an extension of
!> the abstract stepper_t: `init` and `step`), the driver owns everything else.
!>
!> drive runs one trajectory of nsteps steps of size h from t0 (h < 0: backwards in
!> time, for a stepper that allows it; pyint's Python side passes h > 0):
!>   * the start: stepper%init completes the state at t0 (a, lam: consistent,
!>     or what the method starts from) and may refuse it (status);
!>   * stepping, with the NaN check of the state and the run control polled
!>     once per step (fortran/core/control.f90: Ctrl-C, a callback's exception,
!>     a LAPACK argument error);
!>   * sampling: sample 1 = the initial state, then every `every`-th step, and
!>     the final state always (column k of the outputs = sample k), with the
!>     stepper's residuals and energy at the sample and its auxiliary vector;
!>   * the per-step maxima of the residuals and of |E - E0|, taken over EVERY
!>     step (a transient between samples counts), for every method;
!>   * the fixed-step guard (step_guard): a run whose steps no longer follow a
!>     solution stops instead of returning a wrong trajectory with status ok;
!>   * the fixed-step manifold check (manifold_left, the steppers on the index-1 form: drift_check):
!>     a step that makes the velocity-level constraint residual jump stops the run
!>     (STATUS_LEFT_MANIFOLD);
!>   * the fixed-step branch check (branch_check, every vector method): a step whose velocity
!>     jumped next to a singular position is taken again by the stepper's pass, then with the
!>     step before it as two unequal steps (straddle), or stops the run (STATUS_LEFT_BRANCH);
!>   * istat = [status, steps done, samples written].
!> A fixed step flagged STATUS_SINGULAR_POSITION (fortran/core/kkt.f90: the constraint Jacobian
!> near a rank drop) is taken again from its start by the stepper's pass_singular (the index-1
!> steppers: on the constraints, fortran/core/index1.f90 pass_begin); the default, and a pass that
!> fails, stop the run there naming the position.  drive_adaptive passes a flagged trial step the
!> same way and puts the passed step to the error test.
!> drive_batch runs nb trajectories of one built-in (or compiled) model in
!> OpenMP threads, each with its own model and stepper (nothing shared is
!> written but the k-th output slices).
!>
!> The state (state_t) has nq configuration and nv velocity coordinates: a
!> vector method has nq = nv = n; a Lie-group method carries rotations and
!> positions (nq = 12 per rigid body, nv = 6) and overrides `setup` (its model)
!> and `residuals`.
!>
!> drive_adaptive runs one trajectory with the step controller of
!> docs/adaptive_steps.md section 5 (written once, for every stepper that provides
!> a local error estimate):
!>   * the stepper declares est_power > 0 in init (err ~ h**est_power per step) when
!>     it runs with `adaptive` set, and after every step fills err_q(nq), err_v(nv)
!>     (has_err_v = .false.: no v estimate, e.g. generalized-alpha's step 1);
!>   * the driver forms the error norm (RMS of e_i / (atol + rtol max(|y_n,i|, |y_n+1,i|))
!>     over q and v, times span / h per unit step: eq. (12), or times the expected number of
!>     steps per equal share: section 5.1), accepts when it is <= 1,
!>     and picks the next h by the PI controller
!>     h * clip(0.9 err_n**(-0.7/k) err_{n-1}**(0.4/k), 0.2, 2) (Gustafsson; Hairer, Wanner,
!>     Solving ODEs II, IV.2), k the exponent of err ~ h**k, no growth after a rejection;
!>   * a trial step flagged at a singular position is taken again by pass_singular (as in drive);
!>   * a rejected step (error test, or Newton failure / singular matrix / non-finite
!>     state / a failed pass: h / 4) restores the state (a copy) and the stepper's internal state
!>     (save_state / restore_state, default nothing);
!>   * the first step without a v estimate is provisional: if step 2 fails its test,
!>     the run returns to t0 and retakes step 1 shorter;
!>   * the starting step (h0 <= 0) by the stepper's rate (q', and a from the index-1 system) and
!>     euler (the explicit Euler step on its configuration space) hooks: nq /= nv is allowed
!>     (the Lie steppers: err_q is the estimate's effect on the packed q);
!>   * every accepted step is a sample; hout(k) = the k-th accepted step; the per-step
!>     maxima are over the accepted steps; the run stops with STATUS_MAX_STEPS when more
!>     than size(hout) step attempts would be needed, STATUS_STEP_TOO_SMALL below h_min.
module pyint_driver
  use pyint_kinds
  use pyint_model, only: model_t, consistent_acceleration, index1_matrix
  use pyint_newton_matrix, only: newton_matrix_t, SOLVER_AUTO
  use pyint_callback_model, only: usercb_i
  use pyint_registry, only: setup_model
  use pyint_control, only: stop_status
  use pyint_metrics, only: point_residuals, residual_work_t, NRES_VECTOR
  use pyint_reduced_model, only: reduced_model_t, drop_redundant_rows, near_singular_position
  use pyint_seam, only: NAOPT, AOPT_T_END, AOPT_RTOL, AOPT_ATOL, AOPT_H0, AOPT_H_MIN, AOPT_H_MAX, AOPT_NORM_MODE
  implicit none
  private
  public :: stepper_t, state_t, drive, drive_adaptive, drive_batch, stepper_factory_i, no_callback, consistent_start, &
            redundant_flags

  !> The state of a trajectory at time t.
  !> (copy_state copies each component: a new one goes there too)
  type :: state_t
    real(wp) :: t = 0
    real(wp), allocatable :: q(:)     !< configuration (nq)
    real(wp), allocatable :: v(:)     !< velocity (nv)
    real(wp), allocatable :: a(:)     !< the method's acceleration variable (nv)
    real(wp), allocatable :: lam(:)   !< multipliers (nl), holonomic first
  end type

  type, abstract :: stepper_t
    integer :: nq = 0, nv = 0, nl = 0
    integer :: naux = 0                !< length of the method's auxiliary vector per sample
    integer :: nres = NRES_VECTOR      !< residuals per sample (the per-step maxima: nres + 1)
    real(wp), allocatable :: stats(:)  !< the method's counters (names: the Python class's STATS)
    !> variable steps (drive_adaptive): adaptive is set by the driver before init; a stepper
    !> that can run so sets est_power (its estimate is O(h**est_power) per step) and order
    !> (of the method: the starting step), and after every step err_q, err_v (has_err_v)
    logical :: adaptive = .false.
    integer :: est_power = 0, order = 0
    real(wp), allocatable :: err_q(:), err_v(:)
    logical :: has_err_v = .false.
    !> variable steps: the time elapsed since t0 at the start and at the end of the step being
    !> taken (set by the driver before each step).  A stepper's own time differences (the
    !> offsets of the generalized-alpha estimates) use these, never s%t and t1, which far
    !> from t = 0 carry only a few of the step's digits (ulp(1e9) = 1.2e-7); t is for the
    !> model's items.  At t0 = 0 they equal s%t and t1 bit for bit (issue 30).
    real(wp) :: el0 = 0, el1 = 0
    integer, allocatable :: iopt(:)    !< the method's options (its Python class's kernel_options),
    real(wp), allocatable :: ropt(:)   !< set by the driver before init
    real(wp) :: h = 0                  !< the run's step (the first step, for init)
    class(model_t), allocatable :: model   !< vector methods' model (setup)
    !> a redundant mechanism's kept constraint rows (start_run: drop_redundant_rows), unallocated
    !> when none was dropped: model is then seen through them, lam has their size and the
    !> outputs scatter it into every row (zero on the dropped ones)
    integer, allocatable :: rows(:)
    type(residual_work_t) :: rw            !< vector_residuals' workspace
    !> pass_singular is the stepper's own (its init sets this): drive keeps each step's start for it
    logical :: passes_singular = .false.
    !> straddle is the stepper's own (its init sets this): drive keeps the state two steps back for it
    logical :: straddles = .false.
    !> the stepper integrates the index-1 form, whose flow keeps G v + g_t constant: drive's fixed
    !> steps check that this residual does not jump (manifold_left; its init sets this)
    logical :: drift_check = .false.
    !> the last step's Newton failed next to a singular configuration of the joints (the stepper
    !> sets it: fortran/core/lie_stepper.f90 lie_newton); drive_adaptive then tries a step across
    logical :: near_singular = .false.
  contains
    procedure(init_i), deferred :: init
    procedure(step_i), deferred :: step
    procedure :: setup => vector_setup
    procedure :: residuals => vector_residuals
    procedure :: aux => no_aux
    procedure :: change_step => accept_step
    procedure :: save_state => no_save
    procedure :: restore_state => no_save
    procedure :: rate => vector_rate
    procedure :: euler => vector_euler
    procedure :: finish => no_finish
    procedure :: pass_singular => cannot_pass
    procedure :: straddle => cannot_straddle
    procedure :: options_fit
  end type

  abstract interface
    !> Complete the state at s%t (s%q, s%v given): s%a, s%lam; read the method's
    !> options self%iopt, self%ropt (they may set naux; options_fit allocates the
    !> stats).  info /= 0: a status, the run stops before step 1.
    subroutine init_i(self, s, info)
      import :: stepper_t, state_t
      class(stepper_t), intent(inout) :: self
      type(state_t), intent(inout) :: s
      integer, intent(out) :: info
    end subroutine
    !> One step of size h from s (at s%t) to t1 = s%t + h (t1 as the driver computes
    !> it: t0 + k h, or t0 + the elapsed time for variable steps); on success s%q, s%v, s%a, s%lam hold the new state (the driver
    !> sets s%t = t1).  info: 0 or a status.
    subroutine step_i(self, h, t1, s, info)
      import :: stepper_t, state_t, wp
      class(stepper_t), intent(inout) :: self
      real(wp), intent(in) :: h, t1
      type(state_t), intent(inout) :: s
      integer, intent(out) :: info
    end subroutine
    !> A new stepper of method `method` (unallocated st on entry); info /= 0: unknown.
    subroutine stepper_factory_i(method, st, info)
      import :: stepper_t
      integer, intent(in) :: method
      class(stepper_t), allocatable, intent(out) :: st
      integer, intent(out) :: info
    end subroutine
  end interface

contains

  !> Build the model (pyint_registry) of a vector method: nq = nv = n, nl = mh + mn.
  subroutine vector_setup(self, model_id, ipar, rpar, usercb, n, mh, mn, mflags, info)
    class(stepper_t), intent(inout) :: self
    integer, intent(in) :: model_id, n, mh, mn
    integer, intent(in) :: ipar(:), mflags(:)
    real(wp), intent(in) :: rpar(:)
    procedure(usercb_i) :: usercb
    integer, intent(out) :: info
    call setup_model(model_id, ipar, rpar, usercb, n, mh, mn, mflags, self%model, info)
    if (info /= 0) return
    self%nq = n; self%nv = n; self%nl = mh + mn
  end subroutine

  !> |g|, |G v + g_t|, |G a + gamma_h|, |A v + b|, |A a + gamma_n| and the energy.
  subroutine vector_residuals(self, s, res, energy)
    class(stepper_t), intent(inout) :: self
    type(state_t), intent(in) :: s
    real(wp), intent(out) :: res(:), energy
    call point_residuals(self%model, s%t, s%q, s%v, s%a, res, energy, self%rw)
  end subroutine

  !> The starting step's probe (drive_adaptive, initial_step) of a vector method: qd = dq/dt = v
  !> and a the index-1 acceleration at (t, q, v); info /= 0: a singular index-1 system.
  subroutine vector_rate(self, t, q, v, qd, a, info)
    class(stepper_t), intent(inout) :: self
    real(wp), intent(in) :: t, q(:), v(:)
    real(wp), intent(out) :: qd(:), a(:)
    integer, intent(out) :: info
    real(wp) :: lam(self%nl)
    qd = v
    call consistent_acceleration(self%model, t, q, v, SOLVER_AUTO, a, lam, info)
  end subroutine

  !> The starting step's explicit Euler step: q moved by h along v (the configuration space's
  !> own way: q + h v here), v1 = v + h a.
  subroutine vector_euler(self, q, v, h, a, q1, v1)
    class(stepper_t), intent(inout) :: self
    real(wp), intent(in) :: q(:), v(:), h, a(:)
    real(wp), intent(out) :: q1(:), v1(:)
    q1 = q + h * v
    v1 = v + h * a
  end subroutine

  !> The start of a vector method: s%a and s%lam at (s%t, s%q, s%v) from the index-1 system,
  !> assembled through the model's structured hooks and solved with the structured solvers
  !> (model.f90: consistent_acceleration; O(nnz) for a model with structured hooks).  The rank
  !> of the constraint Jacobian was checked (and a redundant one reduced) by start_run.
  !> info: 0, STATUS_RANK_DEFICIENT (a singular index-1 matrix), or STATUS_BAD_INPUT (no
  !> solver could be set up).
  subroutine consistent_start(model, s, info)
    class(model_t), intent(in) :: model
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    call consistent_acceleration(model, s%t, s%q, s%v, SOLVER_AUTO, s%a, s%lam, info)
    if (info == 1) then
      info = STATUS_RANK_DEFICIENT
    else if (info /= 0) then
      info = STATUS_BAD_INPUT
    end if
  end subroutine

  !> The first line of every init: allocate the method's nstats counters (zero), set its
  !> status to STATUS_BAD_INPUT (an init that returns before its start succeeds refuses its
  !> input), and tell whether its options hold at least niopt integers and nropt reals.
  logical function options_fit(self, nstats, niopt, nropt, info)
    class(stepper_t), intent(inout) :: self
    integer, intent(in) :: nstats, niopt, nropt
    integer, intent(out) :: info
    allocate(self%stats(nstats))
    self%stats = 0
    info = STATUS_BAD_INPUT
    options_fit = size(self%iopt) >= niopt .and. size(self%ropt) >= nropt
  end function

  !> red(i) = 1 when constraint row i was dropped as redundant at the start (start_run), else 0.
  subroutine redundant_flags(st, red)
    class(stepper_t), intent(in) :: st
    integer(c_int), intent(out) :: red(:)
    red = 0
    if (.not. allocated(st%rows)) return
    red = 1
    red(st%rows) = 0
  end subroutine

  subroutine no_aux(self, s, aux)
    class(stepper_t), intent(inout) :: self
    type(state_t), intent(in) :: s
    real(wp), intent(out) :: aux(:)
    aux = 0
  end subroutine

  !> Accept the step size h for the next step (variable-step hook); info /= 0: refused.
  subroutine accept_step(self, h, s, info)
    class(stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    info = 0
  end subroutine

  !> Save (or restore) the stepper's internal state in slot 1 (before the step being tried)
  !> or 2 (at the start of the run); the default: nothing (a method without internal state).
  subroutine no_save(self, slot)
    class(stepper_t), intent(inout) :: self
    integer, intent(in) :: slot
  end subroutine

  subroutine no_finish(self)
    class(stepper_t), intent(inout) :: self
  end subroutine

  !> A step from s (its start, restored by drive or drive_adaptive; with variable steps the
  !> stepper's saved state restored too) flagged STATUS_SINGULAR_POSITION, taken
  !> again so that it passes the singular position on the branch s is on (the index-1 steppers:
  !> fortran/core/index1.f90, pass_singular_step); the default cannot: info stays the flag and
  !> the run stops naming the position.
  subroutine cannot_pass(self, h, t1, s, info)
    class(stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    info = STATUS_SINGULAR_POSITION
  end subroutine

  !> Two steps from s at t1 - 2 h to t1 whose points avoid t1 - h (branch_check: a step that
  !> starts at a singular position and jumped branch, its pass too); the stepper's internal state
  !> is set up again from s (fortran/symplectic.f90 sym_straddle).  The default cannot: info =
  !> STATUS_LEFT_BRANCH.
  subroutine cannot_straddle(self, h, t1, s, info)
    class(stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    info = STATUS_LEFT_BRANCH
  end subroutine

  !> One trajectory (see the module comment).  The stepper is set up (its model
  !> built).  Outputs: column k = sample k; lout(1:nl, k), auxout(1:naux, k),
  !> resout(1:nres, k), eout(k) the energy; stepmax(1:nres) the maxima of the
  !> residuals over every step, stepmax(nres + 1) max |E - E0|; the stepper's
  !> stats in st%stats.
  subroutine drive(st, iopt, ropt, t0, h, nsteps, every, q0, v0, tout, qout, vout, aout, lout, auxout, &
                   resout, eout, stepmax, istat)
    class(stepper_t), intent(inout) :: st
    integer, intent(in) :: iopt(:), nsteps, every
    real(wp), intent(in) :: ropt(:), t0, h, q0(:), v0(:)
    real(wp), intent(inout) :: tout(:), qout(:, :), vout(:, :), aout(:, :), lout(:, :), auxout(:, :), &
                               resout(:, :), eout(:), stepmax(:)
    integer, intent(out) :: istat(3)
    type(state_t) :: s, s_old, s_old2    ! the step's start, the state a step before it (straddle)
    real(wp) :: res(st%nres), energy, e0
    real(wp), allocatable :: v1(:), v2(:), vt(:)   ! v one and two steps back (step_guard)
    integer :: step, info, ns, nalt
    real(wp) :: past(3), vscale, renv(3)   ! renv: the envelope of |G v + g_t| (manifold_left)
    real(wp) :: d2                         ! max |v_{n+1} - 2 v_n + v_{n-1}| (step_guard)
    logical :: too_large
    stepmax = 0; e0 = 0
    istat = [STATUS_BAD_INPUT, 0, 0]
    if (every < 1 .or. nsteps < 0 .or. .not. abs(h) > 0 &
        .or. .not. outputs_fit(st, q0, v0, tout, qout, vout, lout, auxout, resout, stepmax)) return
    st%h = h
    call start_run(st, iopt, ropt, .false., t0, q0, v0, size(auxout, 1), s, info, istat)
    if (info /= 0) return
    call measure(st, s, res, energy, e0, stepmax, first=.true.)
    ns = 1
    call store_sample(st, s, res, energy, ns, tout, qout, vout, aout, lout, auxout, resout, eout)
    v1 = s%v
    v2 = s%v
    vscale = maxval(abs(s%v), mask=.true.)
    renv = res(min(2, st%nres))
    nalt = 0
    past = huge(1.0_wp)
    do step = 1, nsteps
      if (st%straddles .and. step >= 2) call swap_state(s_old2, s_old)   ! (s_old is written next)
      if (st%passes_singular) call copy_state(s_old, s)
      call take_step(st, h, t0 + step * h, s, info)
      ! a step flagged at a singular position is taken again by the stepper's own way through it
      ! (pass_singular), from its start; a stepper without one, or whose pass fails (its projection
      ! does not converge, a stage exactly there), stops at the step's start naming the position
      if (info == STATUS_SINGULAR_POSITION .and. st%passes_singular) then
        call copy_state(s, s_old)
        call st%pass_singular(h, t0 + step * h, s, info)
        if (info == 0 .and. .not. finite_state(s)) info = STATUS_NONFINITE
        if (info /= 0) then
          info = STATUS_SINGULAR_POSITION
          call copy_state(s, s_old)
        end if
      end if
      if (info == 0 .and. step >= 2 .and. size(s%v) > 0) then
        call step_guard(h, s%q, s%v, v1, v2, nalt, past, too_large, d2)
        if (too_large) info = STATUS_STEP_TOO_LARGE
        if (info == 0 .and. allocated(st%model)) &
          call branch_check(st, h, t0 + step * h, s, s_old, s_old2, v1, v2, d2, info)
      end if
      if (info == 0) info = stop_status(t0 + step * h)   ! Ctrl-C, a callback's exception, a LAPACK error
      if (info == 0) then
        s%t = t0 + step * h
        ! the residuals at the new state: the manifold check, then the per-step maxima (a step
        ! that fails the check counts in them: they then hold the residual it reached)
        if (st%drift_check .and. allocated(st%model) .and. st%nres >= 2) then
          vscale = max(vscale, maxval(abs(s%v), mask=.true.))
          call st%residuals(s, res, energy)
          if (step > 10 .and. manifold_left(renv(3), res(2), vscale)) info = STATUS_LEFT_MANIFOLD
          renv = [max(renv(1), res(2)), renv(1:2)]
          call measure(st, s, res, energy, e0, stepmax, known=.true.)
        else
          call measure(st, s, res, energy, e0, stepmax)
        end if
      end if
      if (info /= 0) then
        istat = [info, step - 1, ns]
        call st%finish()
        return
      end if
      call move_alloc(v2, vt)     ! v2 <- v1 <- v without a second copy
      call move_alloc(v1, v2)
      call move_alloc(vt, v1)
      v1(:) = s%v
      if (mod(step, every) == 0) then
        ns = ns + 1
        call store_sample(st, s, res, energy, ns, tout, qout, vout, aout, lout, auxout, resout, eout)
      end if
    end do
    if (mod(nsteps, every) /= 0) then   ! the final state is always the last sample
      ns = ns + 1
      call store_sample(st, s, res, energy, ns, tout, qout, vout, aout, lout, auxout, resout, eout)
    end if
    istat = [STATUS_OK, nsteps, ns]
    call st%finish()
  end subroutine drive

  !> The output checks of drive and drive_adaptive: q0, v0 and the outputs' leading
  !> sizes fit the stepper (naux as before init: start_run checks it again after).
  logical function outputs_fit(st, q0, v0, tout, qout, vout, lout, auxout, resout, stepmax)
    class(stepper_t), intent(in) :: st
    real(wp), intent(in) :: q0(:), v0(:), tout(:), qout(:, :), vout(:, :), lout(:, :), auxout(:, :), &
                            resout(:, :), stepmax(:)
    outputs_fit = .not. (size(q0) /= st%nq .or. size(v0) /= st%nv &
        .or. size(stepmax) < st%nres + 1 .or. size(lout, 1) < st%nl .or. size(auxout, 1) < st%naux &
        .or. (st%naux > 0 .and. size(auxout, 2) < size(tout)) &
        .or. size(resout, 1) < st%nres .or. size(qout, 1) /= st%nq .or. size(vout, 1) /= st%nv)
  end function

  !> The start of a run (st%h set by the caller): the state at t0 from (q0, v0), the
  !> options, stepper%init, its refusal, naux (init may set it) within naux_room, an
  !> adaptive run's est_power and order, the run control.  info /= 0: istat = [info, 0, 0],
  !> the stepper finished.
  subroutine start_run(st, iopt, ropt, adaptive, t0, q0, v0, naux_room, s, info, istat)
    class(stepper_t), intent(inout) :: st
    integer, intent(in) :: iopt(:), naux_room
    real(wp), intent(in) :: ropt(:), t0, q0(:), v0(:)
    logical, intent(in) :: adaptive
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    integer, intent(inout) :: istat(3)
    info = 0
    if (allocated(st%model)) then      ! a vector method: a redundant mechanism's independent rows
      call drop_redundant_rows(st%model, t0, q0, v0, st%rows, info)
      if (allocated(st%rows)) st%nl = size(st%rows)
    end if
    allocate(s%q(st%nq), s%v(st%nv), s%a(st%nv), s%lam(st%nl))
    s%t = t0; s%q = q0; s%v = v0; s%a = 0; s%lam = 0
    st%iopt = iopt; st%ropt = ropt; st%adaptive = adaptive
    if (info == 0) call st%init(s, info)
    if (info == 0 .and. naux_room < st%naux) info = STATUS_BAD_INPUT
    if (info == 0 .and. adaptive .and. (st%est_power < 1 .or. st%order < 1)) info = STATUS_BAD_INPUT
    if (info == 0) info = stop_status()
    if (info /= 0) then
      istat = [info, 0, 0]
      call st%finish()
    end if
  end subroutine

  !> One step to t1 and the check that the new state is finite.  A step that fails (Newton, a
  !> singular matrix) near a singular position of a vector method's mechanism says so
  !> (STATUS_SINGULAR_POSITION: the cause, where the status alone blamed the iteration).
  subroutine take_step(st, h, t1, s, info)
    class(stepper_t), intent(inout) :: st
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    call st%step(h, t1, s, info)
    ! the failed step's state (the step's start, or an iterate near it): no copy on the hot path
    if ((info == STATUS_NEWTON_FAILED .or. info == STATUS_SINGULAR) .and. allocated(st%model) &
        .and. .not. st%adaptive) then
      if (near_singular_position(st%model, s%t, s%q, s%v)) info = STATUS_SINGULAR_POSITION
    end if
    if (info == 0 .and. .not. finite_state(s)) info = STATUS_NONFINITE
  end subroutine

  !> No NaN or Inf in the state (q, v, a and lam: a NaN in the multipliers alone is no result either).
  logical pure function finite_state(s)
    type(state_t), intent(in) :: s
    finite_state = finite(s%q) .and. finite(s%v) .and. finite(s%a) .and. finite(s%lam)
  end function

  !> The fixed-step guard: the run has turned into a step-to-step oscillation.  Its signs, at
  !> every step: the indicator h |v_{n+1} - 2 v_n + v_{n-1}| (max norm; about h^3 |d3v/dt3| on a
  !> smooth solution) has reached OSCILLATION (1 + |q|), and in the component where it is largest
  !> the velocity's increment has changed sign at this step and at the two before (nalt counts the
  !> steps in a row that do), and the indicator has more than doubled over these three steps.  A
  !> solution sampled at least twice per period never alternates three steps in a row, a bounded
  !> parasitic oscillation (Galerkin-Lobatto s = 1 on the locked snakeboard at h = 1/2) does not
  !> grow; an unstable mode (|R(z)| > 1 at a negative real z: an explicit step beyond its
  !> stability interval, an implicit one through a singular position at too large an h) does both.
  !> The indicator alone is no test: a high-order method at a coarse step (Galerkin-Lobatto s = 8
  !> on the skate at h = 1/2) reaches 0.25 while following the solution.  Measured with the test
  !> off: generalized-alpha on IFToMM A02 at h = 0.05 (status ok, energy 35 J -> 1e5 J) is stopped
  !> at t = 5.1; no registered method x shared problem at the order study's coarsest h is.
  subroutine step_guard(h, q, v, v1, v2, nalt, past, too_large, d2)
    real(wp), intent(in) :: h, q(:), v(:), v1(:), v2(:)
    integer, intent(inout) :: nalt
    real(wp), intent(inout) :: past(3)   !< the indicator at the last three steps, newest first
    logical, intent(out) :: too_large
    real(wp), intent(out) :: d2          !< max_i |v_i - 2 v1_i + v2_i| (branch_check's too)
    real(wp), parameter :: OSCILLATION = 0.1_wp
    real(wp) :: ind
    integer :: i, k
    ! the largest second difference (a pass of independent maxima), then the first component that
    ! has it: a search in one loop carries its max from element to element (latency-bound)
    d2 = max_abs(v, v1, v2)
    k = 1
    do i = 1, size(v)
      if (abs(v(i) - 2 * v1(i) + v2(i)) >= d2) then
        k = i
        exit
      end if
    end do
    if ((v(k) - v1(k)) * (v1(k) - v2(k)) < 0) then
      nalt = nalt + 1
    else
      nalt = 0
    end if
    ind = abs(h) * d2 / (1 + max_abs(q))
    too_large = nalt >= 3 .and. ind > OSCILLATION .and. ind > 2 * past(3)
    past = [ind, past(1:2)]
  end subroutine

  !> The fixed-step branch check: a step whose velocity jumped next to a singular position left
  !> the branch the run was on.  Through a crossing the solution is smooth (the mechanism's
  !> motion on its branch), so the velocity's second difference d2 = max |v_{n+1} - 2 v_n +
  !> v_{n-1}| stays a small part (about h |da/dt| / |a|) of the last increment d1 = max |v_n -
  !> v_{n-1}|; a step onto another branch of the bifurcation changes v by O(|v|) at once (its
  !> discrete step equations have a solution on each branch, and Newton's iterates near the
  !> rank drop can reach either).  The signs: d2 > JUMP d1 and the step's start or end near a
  !> singular position (near_singular_position, the driver's flag for a failed step).  Then a
  !> stepper that passes singular positions takes the step again by its pass from the step's
  !> start (kept in s_old), and the run goes on if the passed step does not jump too.  A step
  !> that starts at the crossing itself (A02, N = 4: sigma_min / sigma_max 9e-6 at t = 1.236, the
  !> grid 2e-6 s from it) jumps from there whatever its own size (Lobatto's pass, and ten steps of
  !> h / 10, land on one wrong solution); a stepper that straddles (st%straddles) then takes the
  !> two steps from the state a step before (s_old2) again as 0.6 h and 1.4 h, whose points miss
  !> the crossing (A02, N = 4, 16 perturbed starts, the three splits 0.8, 0.6 and 0.4: all on the
  !> branch, within 1.2e-9 of the reduced solution).  Else the run stops at the step's start
  !> (STATUS_LEFT_BRANCH).  Measured on IFToMM A02 (h = 1e-3, 20 s, N = 2 and 4, every fixed-step
  !> vector method, v0 as the benchmark gives it and perturbed by 7e-14): d2 / d1 at most 0.0173
  !> on the branch, 279 on Lobatto IIIA-IIIB's step onto the other branch at N = 4's crossing near
  !> t = 1.237 (energy +35 J, the run ok before this check).  A jump away from singular positions
  !> (a discontinuous force) is left alone; one next to them (an impulsive force there) is taken
  !> for a branch jump.  The check costs the jump test a step, the flag's factorization only on a
  !> jump.
  subroutine branch_check(st, h, t1, s, s_old, s_old2, v1, v2, d2, info)
    class(stepper_t), intent(inout) :: st
    real(wp), intent(in) :: h, t1, v1(:), v2(:), d2
    type(state_t), intent(inout) :: s, s_old, s_old2
    integer, intent(inout) :: info
    real(wp), parameter :: JUMP = 10
    logical :: near
    integer :: pinfo
    real(wp) :: d1
    d1 = max_diff(v1, v2)
    if (.not. d2 > JUMP * d1) return
    near = near_singular_position(st%model, t1, s%q, s%v)
    if (st%passes_singular .and. .not. near) near = near_singular_position(st%model, s_old%t, s_old%q, s_old%v)
    if (.not. near) return
    info = STATUS_LEFT_BRANCH
    if (.not. st%passes_singular) return
    call copy_state(s, s_old)
    call st%pass_singular(h, t1, s, pinfo)
    if (.not. retaken() .and. st%straddles) then
      call copy_state(s, s_old2)
      call st%straddle(h, t1, s, pinfo)
    end if
    if (retaken()) then
      info = 0
    else
      call copy_state(s, s_old)
    end if

  contains

    !> The step taken again (its status pinfo, its end s) ended finite and without the jump.
    logical function retaken()
      retaken = pinfo == 0 .and. finite_state(s)
      if (retaken) retaken = .not. max_abs(s%v, v1, v2) > JUMP * d1
    end function
  end subroutine

  !> max_i |x_i - y_i| (branch_check's last increment; a loop, no temporary array).
  pure real(wp) function max_diff(x, y) result(m)
    real(wp), intent(in) :: x(:), y(:)
    integer :: i
    m = 0
    do i = 1, size(x)
      m = max(m, abs(x(i) - y(i)))
    end do
  end function

  !> max_i |x_i| (with y and z: max_i |x_i - 2 y_i + z_i|) of finite arrays of one size, in four
  !> independent running maxima: maxval's one (gfortran keeps its NaN rule) is a chain of dependent
  !> maxsd, one element per latency.  The same value as maxval (a maximum is exact in any order).
  pure real(wp) function max_abs(x, y, z) result(m)
    real(wp), intent(in) :: x(:)
    real(wp), intent(in), optional :: y(:), z(:)
    real(wp) :: m4(4), d(4)
    integer :: i, n
    n = size(x)
    m4 = 0
    do i = 1, n - 3, 4
      if (present(y)) then
        d = abs(x(i:i + 3) - 2 * y(i:i + 3) + z(i:i + 3))
      else
        d = abs(x(i:i + 3))
      end if
      m4 = max(m4, d)
    end do
    m = maxval(m4)
    do i = 4 * (n / 4) + 1, n
      if (present(y)) then
        m = max(m, abs(x(i) - 2 * y(i) + z(i)))
      else
        m = max(m, abs(x(i)))
      end if
    end do
  end function

  !> The fixed-step manifold check: the velocity-level constraint residual r = |G v + g_t| (max
  !> norm) jumped, r_new - r_env > JUMP max(r_env, FLOOR vscale), where r_env is the largest r of
  !> the run up to three steps before this one and vscale the largest |v_i| so far.  On the exact
  !> flow of the index-1 form (rk4_index1, baumgarte_rk4, the block methods) d/dt (G v + g_t) = 0
  !> (with Baumgarte's feedback it decays), so r is the sum of the steps' local errors in the
  !> constrained directions, the drift of the index-1 form (Hairer, Wanner, Solving ODEs II, VII.2;
  !> GNI IV.4): a few steps that add more than JUMP = 10 times the largest residual the run had
  !> reached are no drift.  The envelope, three steps back, lets a block method's residual oscillate
  !> below its own maximum and catches a jump spread over two or three steps.  The first ten steps
  !> are not checked: a residual growing from exactly 0 like a power of t has no history to be
  !> compared with yet (baumgarte_rk4 on the triple pendulum at h = 0.12, from rest: 4e-5 ->
  !> 1.1e-4 at step 3, its Baumgarte feedback at work).  FLOOR = 3e-5 keeps
  !> the test off round-off and small drift: a jump must exceed 3e-4 of the run's speed scale.
  !> What it catches: a singular position crossed on the wrong side of the unfolded bifurcation
  !> (the drift d /= 0 reconnects the branches: pyint_index1 pass_begin), after which the index-1
  !> form, blind to the position level, lets |g| grow linearly.  Measured with the check off: a
  !> user's parallelogram four-bar at h = 1e-3 (status ok, max|g| 0.1 to 0.23 at T = 20) scores 109
  !> (rk4_index1, the crank reversed at t = 11.205), 69 (block_chebyshev), 41 (block_legendre), 26
  !> (block_uniform_eq8); on the seed 003 manipulator every method at the paper's steps
  !> (h <= 0.01, T <= 100) scores at most 2.7 (block_uniform_rk, h = 0.01, at t = 1.70), and the
  !> stability probes beyond them that score more end with |g| from 0.09 to 2.2 (wrong, status ok
  !> before).  Only for the index-1 form (drift_check): an index-3 method (generalized-alpha) does
  !> not keep the velocity level, its residual there is its O(h^2) error, no drift.
  logical pure function manifold_left(r_env, r_new, vscale)
    real(wp), intent(in) :: r_env, r_new, vscale
    real(wp), parameter :: JUMP = 10, FLOOR = 3e-5_wp
    manifold_left = r_new - r_env > JUMP * max(r_env, FLOOR * vscale)
  end function

  !> No NaN or Inf in x (a NaN in the multipliers alone must not come back as "ok" either).
  !> Counted, not all(): a count has no early exit, so the compiler vectorizes it (every step
  !> checks the whole state; a finite state, the common case, is read to its end either way).
  logical pure function finite(x)
    real(wp), intent(in) :: x(:)
    finite = count(abs(x) <= huge(1.0_wp)) == size(x)
  end function

  !> x <-> y by their arrays' descriptors (move_alloc), no element copied: drive's state a step
  !> before the step's start (straddle) at no cost a step.
  subroutine swap_state(x, y)
    type(state_t), intent(inout) :: x, y
    real(wp) :: t
    t = x%t
    x%t = y%t
    y%t = t
    call swap_array(x%q, y%q)
    call swap_array(x%v, y%v)
    call swap_array(x%a, y%a)
    call swap_array(x%lam, y%lam)
  end subroutine

  !> x <-> y (swap_state's arrays), by move_alloc.
  subroutine swap_array(x, y)
    real(wp), allocatable, intent(inout) :: x(:), y(:)
    real(wp), allocatable :: tmp(:)
    call move_alloc(x, tmp)
    call move_alloc(y, x)
    call move_alloc(tmp, y)
  end subroutine

  !> dst = src, dst's arrays kept (the same sizes: one run's states) once allocated: the
  !> adaptive loop's copy per step without the allocations of a derived-type assignment.
  subroutine copy_state(dst, src)
    type(state_t), intent(inout) :: dst
    type(state_t), intent(in) :: src
    integer :: i
    if (.not. allocated(dst%q)) then
      dst = src
      return
    end if
    dst%t = src%t
    ! (scalar loops: the section assignments ran vector loops with overlap checks, a few
    ! elements each: stiff_fast's state, 186 instructions a copy)
    !GCC$ novector
    do i = 1, size(src%q)
      dst%q(i) = src%q(i)
    end do
    !GCC$ novector
    do i = 1, size(src%v)
      dst%v(i) = src%v(i)
      dst%a(i) = src%a(i)
    end do
    !GCC$ novector
    do i = 1, size(src%lam)
      dst%lam(i) = src%lam(i)
    end do
  end subroutine

  !> The residuals and energy at s, and the per-step maxima (first: E0 = this energy; known: res
  !> and energy are already those at s).
  subroutine measure(st, s, res, energy, e0, stepmax, first, known)
    class(stepper_t), intent(inout) :: st
    type(state_t), intent(in) :: s
    real(wp), intent(inout) :: res(:), energy
    real(wp), intent(inout) :: e0, stepmax(:)
    logical, intent(in), optional :: first, known
    logical :: have
    have = .false.
    if (present(known)) have = known
    if (.not. have) call st%residuals(s, res, energy)
    if (present(first)) then
      if (first) e0 = energy
    end if
    stepmax(1:st%nres) = max(stepmax(1:st%nres), res)
    stepmax(st%nres + 1) = max(stepmax(st%nres + 1), abs(energy - e0))
  end subroutine

  !> Sample k (dropped beyond size(tout)): the state, the stepper's auxiliary vector,
  !> the residuals and the energy.
  subroutine store_sample(st, s, res, energy, k, tout, qout, vout, aout, lout, auxout, resout, eout)
    class(stepper_t), intent(inout) :: st
    type(state_t), intent(in) :: s
    real(wp), intent(in) :: res(:), energy
    integer, intent(in) :: k
    real(wp), intent(inout) :: tout(:), qout(:, :), vout(:, :), aout(:, :), lout(:, :), auxout(:, :), &
                               resout(:, :), eout(:)
    if (k > size(tout)) return
    tout(k) = s%t
    qout(:, k) = s%q
    vout(:, k) = s%v
    aout(:, k) = s%a
    if (allocated(st%rows)) then
      lout(:, k) = 0
      lout(st%rows, k) = s%lam
    else if (st%nl > 0) then
      lout(1:st%nl, k) = s%lam
    end if
    if (st%naux > 0) call st%aux(s, auxout(1:st%naux, k))
    resout(1:st%nres, k) = res
    eout(k) = energy
  end subroutine

  !> One trajectory with variable steps (see the module comment; docs/adaptive_steps.md
  !> section 5, the loop of tests/adaptive_numpy.py integrate_adaptive).
  !> aopt = [t_end, rtol, atol, h0, h_min, h_max, norm_mode]: h0 <= 0 picks the starting
  !> step (Hairer, Norsett, Wanner, Solving ODEs I, II.4, on q' = v, v' = a(q, v) with the
  !> index-1 acceleration); norm_mode 0: per step, 1: per unit step (the norm times span / h,
  !> eq. (12)), 2: per equal share (the norm times N = n span / (t_{n+1} - t0), the steps the
  !> run is expected to take at the mean step so far, n counting this one: docs/adaptive_steps.md
  !> section 5.1).
  !> Outputs as drive's with sample k + 1 = the state after accepted step k (sample 1 the
  !> initial state: size(tout) >= size(hout) + 1); hout(k) = accepted step k;
  !> counts = [accepted, rejected by the error test, Newton failures];
  !> istat = [status, accepted steps, samples].
  !> te (the output times t_eval, nondecreasing; given when the run's outputs are computed there,
  !> pyint_dense_output) with room for fewer samples than size(hout) + 1 (the caller's choice, where
  !> every step would not fit its memory: IFToMM A02 with N = 40 at rtol 1e-6, some 3e5 steps of
  !> 1950 values): only the samples the outputs' interpolation uses are kept -- the first, the last,
  !> and both ends of every step holding an output time, found as hermite_states finds them -- so
  !> the memory goes with size(te), not with the steps; size(tout) >= min(size(hout), 3 size(te)
  !> + 2) + 1 (keep_sample: each output time keeps at most three samples).  The outputs are those of
  !> the run that keeps every step, bit for bit.
  subroutine drive_adaptive(st, iopt, ropt, aopt, t0, q0, v0, tout, qout, vout, aout, lout, auxout, &
                            resout, eout, stepmax, hout, counts, istat, te)
    class(stepper_t), intent(inout) :: st
    integer, intent(in) :: iopt(:)
    real(wp), intent(in) :: ropt(:), aopt(:), t0, q0(:), v0(:)
    real(wp), intent(in), optional :: te(:)
    real(wp), intent(inout) :: tout(:), qout(:, :), vout(:, :), aout(:, :), lout(:, :), auxout(:, :), &
                               resout(:, :), eout(:), stepmax(:), hout(:)
    integer, intent(out) :: counts(3), istat(3)
    real(wp), parameter :: SAFETY = 0.9_wp, FAC_MIN = 0.2_wp, FAC_MAX = 2.0_wp
    type(state_t) :: s, s_old, s_start
    real(wp) :: res(st%nres), energy, e0, t_end, rtol, atol, h, h_min, h_max, span, err, err_prev, fac, kexp, t1
    ! the time elapsed since t0 (the sum of the accepted steps) and after the step tried: the
    ! loop runs on it and the time is t0 + el (issue 30).  Summing s%t + h instead lost the
    ! steps' low bits far from zero (ulp(1e8) = 1.5e-8: the steps stopped adding up to
    ! t_end - t0, and at t0 = 1e9 a step below half an ulp left t unchanged); el is the
    ! same at every t0, and at t0 = 0 it is the old s%t, bit for bit.
    real(wp) :: el, el1
    integer :: info, ns, nacc, max_steps
    logical :: just_rejected, first_partial, nonfinite
    integer :: mode
    real(wp) :: el_across    ! the start of the last step tried across a singular configuration
    real(wp) :: t_prev       ! te given: the start of the step before the last accepted one
    integer :: je, n_keep    ! thin: the first te(je) >= t_prev; the samples' room
    logical :: thin          ! te given, room for fewer samples than steps: keep_sample thins them
    el_across = -1
    stepmax = 0; e0 = 0
    counts = 0
    istat = [STATUS_BAD_INPUT, 0, 0]
    if (size(aopt) < NAOPT) return
    t_end = aopt(AOPT_T_END); rtol = aopt(AOPT_RTOL); atol = aopt(AOPT_ATOL); h = aopt(AOPT_H0)
    h_min = aopt(AOPT_H_MIN); h_max = aopt(AOPT_H_MAX); mode = nint(aopt(AOPT_NORM_MODE))
    span = t_end - t0
    max_steps = size(hout)
    thin = .false.
    if (present(te)) thin = size(tout) < max_steps + 1
    n_keep = max_steps
    if (thin) n_keep = min(max_steps, 3 * size(te) + 2)
    if (.not. span > 0 .or. .not. rtol > 0 .or. .not. atol >= 0 .or. .not. h_min > 0 .or. .not. h_max >= h_min &
        .or. mode < 0 .or. mode > 2 .or. max_steps < 1 .or. size(tout) < n_keep + 1 &
        .or. .not. outputs_fit(st, q0, v0, tout, qout, vout, lout, auxout, resout, stepmax)) return
    st%h = merge(h, min(h_max, 1e-3_wp * span), h > 0)     ! init's first step (a Newton pattern)
    call start_run(st, iopt, ropt, .true., t0, q0, v0, size(auxout, 1), s, info, istat)
    if (info /= 0) return
    if (.not. allocated(st%err_q)) allocate(st%err_q(st%nq))
    if (.not. allocated(st%err_v)) allocate(st%err_v(st%nv))
    if (.not. h > 0) then
      call initial_step(info)
      if (info /= 0) then
        istat = [info, 0, 0]
        call st%finish()
        return
      end if
    end if
    h = min(max(h, h_min), h_max)
    kexp = st%est_power - merge(1, 0, mode == 1)
    call measure(st, s, res, energy, e0, stepmax, first=.true.)
    ns = 1
    call store_sample(st, s, res, energy, ns, tout, qout, vout, aout, lout, auxout, resout, eout)
    s_start = s
    call st%save_state(2)
    t_prev = -huge(1.0_wp)
    je = 1
    nacc = 0
    err_prev = 1
    just_rejected = .false.
    first_partial = .false.
    nonfinite = .false.
    el = 0
    do while (el < span)
      if (nacc + counts(2) + counts(3) >= max_steps) then
        call stop_run(STATUS_MAX_STEPS)
        return
      end if
      el1 = el + h
      t1 = t0 + el1
      if (el + 1.1_wp * h >= span) then
        h = span - el
        el1 = span
        t1 = t_end
      end if
      call copy_state(s_old, s)
      call st%save_state(1)
      st%el0 = el
      st%el1 = el1
      call take_step(st, h, t1, s, info)
      ! a trial step flagged at a singular position is taken again from its start by the stepper's
      ! pass (pass_singular), as drive's fixed steps are; the pass's step is the stepper's own step
      ! on projected stages, so it fills err_q, err_v like any step and the error test below decides
      ! (a step the controller chose for the smooth solution, which the crossing does not change)
      if (info == STATUS_SINGULAR_POSITION .and. st%passes_singular) then
        call st%restore_state(1)
        call copy_state(s, s_old)
        call st%pass_singular(h, t1, s, info)
        if (info == 0 .and. .not. finite_state(s)) info = STATUS_NONFINITE
        if (info /= 0) info = STATUS_SINGULAR_POSITION
      end if
      ! a singular-position flag on a trial step is rejected (after a failed pass) as a failed Newton
      ! is: a step too long may carry its stages near a singular configuration the solution never
      ! comes near (IFToMM A05's first trial step); at a real one h collapses and rejected() names
      ! the position
      if (info == STATUS_NEWTON_FAILED .or. info == STATUS_SINGULAR .or. info == STATUS_NONFINITE &
          .or. info == STATUS_SINGULAR_POSITION) then
        nonfinite = info == STATUS_NONFINITE
        ! next to a singular configuration of the joints (st%near_singular: a Lie stepper whose
        ! Newton matrix lost rank there) a shorter step ends nearer to it, from a start that may be
        ! inside the ill-conditioned window already: once per start, try 4 h (the inverse of the
        ! retry's 1/4), whose end lies 3 h past the failed one; the error test still decides
        if (info == STATUS_NEWTON_FAILED .and. st%near_singular .and. el /= el_across) then
          el_across = el
          if (rejected(3, min(4 * h, h_max))) return
          cycle
        end if
        if (rejected(3, h / 4)) return
        cycle
      end if
      if (info == 0) info = stop_status(t1)   ! Ctrl-C, a callback's exception, a LAPACK error
      if (info /= 0) then
        s = s_old
        call stop_run(info)
        return
      end if
      err = error_norm(s_old, s)
      nonfinite = .not. err <= huge(1.0_wp)
      if (nonfinite) err = 1e10_wp
      if (err > 1 .and. nacc == 1 .and. first_partial) then
        ! step 1 had no v estimate; step 2's spans it: retake step 1 from t0, shorter
        counts(2) = counts(2) + 1
        h = hout(1) * max(FAC_MIN, SAFETY * err**(-1 / kexp))
        call st%restore_state(2)
        s = s_start
        el = 0
        nacc = 0
        ns = 1
        t_prev = -huge(1.0_wp)
        je = 1
        stepmax = 0
        call measure(st, s, res, energy, e0, stepmax)
        just_rejected = .true.
        if (h < h_min) then
          call stop_run(STATUS_STEP_TOO_SMALL)
          return
        end if
        cycle
      end if
      ! a step tried across a singular configuration (el_across) whose Newton converged passes with
      ! err <= 2**kexp: the error of a step twice the one err = 1 asks for; a shorter one may end
      ! inside the window where the Newton matrix loses rank
      if (err > 1 .and. .not. (el == el_across .and. err <= 2**kexp)) then
        if (rejected(2, h * max(FAC_MIN, SAFETY * err**(-1 / kexp)))) return
        cycle
      end if
      ! accepted
      s%t = t1
      el = el1
      if (nacc == 0) first_partial = .not. st%has_err_v
      nacc = nacc + 1
      hout(nacc) = h
      call measure(st, s, res, energy, e0, stepmax)
      if (keep_sample()) ns = ns + 1     ! else the new sample takes the place of the last one
      call store_sample(st, s, res, energy, ns, tout, qout, vout, aout, lout, auxout, resout, eout)
      fac = SAFETY * max(err, 1e-10_wp)**(-0.7_wp / kexp) * max(err_prev, 1e-10_wp)**(0.4_wp / kexp)
      fac = min(merge(1.0_wp, FAC_MAX, just_rejected), max(FAC_MIN, fac))
      err_prev = max(err, 1e-4_wp)
      just_rejected = .false.
      h = min(h * fac, h_max)
    end do
    counts(1) = nacc
    istat = [STATUS_OK, nacc, ns]
    call st%finish()

  contains

    !> Whether the last sample (tout(ns), the start of the step just accepted, which ends at t1)
    !> stays: always unless thin; then when it is the first or the next-to-last of the run, or
    !> some te(j) lies in [t_prev, t1], the two steps it joins (closed: hermite_states takes the
    !> step t(k) < te <= t(k + 1), and the first step for te <= t(1)) -- so every output's step
    !> keeps both its ends as neighbours.  A te(j) in [t_prev, t1] keeps at most the samples at
    !> t_prev, tout(ns) and t1: three per output time.
    logical function keep_sample()
      keep_sample = .true.
      if (.not. thin) return
      do while (je <= size(te))
        if (te(je) >= t_prev) exit
        je = je + 1
      end do
      keep_sample = ns == 1 .or. el1 >= span
      if (je <= size(te)) keep_sample = keep_sample .or. te(je) <= t1
      t_prev = tout(ns)
    end function

    subroutine stop_run(status)
      integer, intent(in) :: status
      counts(1) = nacc
      istat = [status, nacc, ns]
      call st%finish()
    end subroutine

    !> A rejected step (counted in counts(counter)): back to s_old (and the stepper's
    !> saved state), the next try with h_new; .true. when h_new < h_min (the run stopped).
    logical function rejected(counter, h_new)
      integer, intent(in) :: counter
      real(wp), value :: h_new
      counts(counter) = counts(counter) + 1
      call st%restore_state(1)
      call copy_state(s, s_old)
      h = h_new
      just_rejected = .true.
      rejected = h < h_min
      ! the step collapsed on NaN/Inf (a model item beyond its domain): say so, as a fixed step does;
      ! on a singular position of the mechanism (the stabilized index-2 form cannot pass one): that
      if (rejected) then
        if (nonfinite) then
          call stop_run(STATUS_NONFINITE)
        else if (allocated(st%model)) then
          call stop_run(merge(STATUS_SINGULAR_POSITION, STATUS_STEP_TOO_SMALL, &
                              near_singular_position(st%model, s%t, s%q, s%v)))
        else
          call stop_run(STATUS_STEP_TOO_SMALL)
        end if
      end if
    end function

    !> eq. (12) of docs/adaptive_steps.md
    real(wp) function error_norm(s0, s1)
      type(state_t), intent(in) :: s0, s1
      real(wp) :: acc
      integer :: m
      acc = sum((st%err_q / (atol + rtol * max(abs(s0%q), abs(s1%q))))**2)
      m = st%nq
      if (st%has_err_v) then
        acc = acc + sum((st%err_v / (atol + rtol * max(abs(s0%v), abs(s1%v))))**2)
        m = m + st%nv
      end if
      error_norm = sqrt(acc / m)
      if (mode == 1) then
        error_norm = error_norm * span / h
      else if (mode == 2) then
        error_norm = error_norm * (nacc + 1) * span / el1
      end if
    end function

    !> Hairer, Norsett, Wanner, Solving ODEs I, II.4 (the starting step) on y = (q, v),
    !> y' = (qd, a(q, v)), a the index-1 acceleration, qd = dq/dt (two evaluations: the
    !> stepper's rate, and its euler step for the second point; q' = v for a vector method).
    subroutine initial_step(info)
      integer, intent(out) :: info
      real(wp) :: a0(st%nv), a1(st%nv), qd0(st%nq), qd1(st%nq), q1(st%nq), v1(st%nv), sq(st%nq), sv(st%nv), &
                  d0, d1, d2, h0, h1
      call st%rate(s%t, s%q, s%v, qd0, a0, info)
      if (info /= 0) then
        info = STATUS_SINGULAR
        return
      end if
      sq = atol + rtol * abs(s%q)
      sv = atol + rtol * abs(s%v)
      d0 = sqrt((sum((s%q / sq)**2) + sum((s%v / sv)**2)) / (st%nq + st%nv))
      d1 = sqrt((sum((qd0 / sq)**2) + sum((a0 / sv)**2)) / (st%nq + st%nv))
      if (min(d0, d1) < 1e-5_wp) then
        h0 = 1e-6_wp
      else
        h0 = 0.01_wp * d0 / d1
      end if
      call st%euler(s%q, s%v, h0, a0, q1, v1)
      call st%rate(s%t + h0, q1, v1, qd1, a1, info)
      if (info /= 0) then
        info = STATUS_SINGULAR
        return
      end if
      d2 = sqrt((sum(((qd1 - qd0) / sq)**2) + sum(((a1 - a0) / sv)**2)) / (st%nq + st%nv)) / h0
      if (max(d1, d2) <= 1e-15_wp) then
        h1 = max(1e-6_wp, h0 * 1e-3_wp)
      else
        h1 = (0.01_wp / max(d1, d2))**(1.0_wp / (st%order + 1))
      end if
      h = min(100 * h0, h1, span)
    end subroutine

  end subroutine drive_adaptive

  !> nb trajectories of one built-in or compiled model (model_id /= 0) in OpenMP
  !> threads: trajectory k starts from (q0(:, k), v0(:, k)) with the real
  !> parameters rpar(:, k) (same ipar, hence the same sizes, for all) and the real
  !> options ropt(:, k) (a method's start data may depend on the trajectory).  Outputs
  !> as drive's with a trailing trajectory index; stats(:, k) the stepper's stats;
  !> a trajectory whose model is rejected gets istat(:, k) = [STATUS_BAD_INPUT, 0, 0]; red(:, k) its
  !> redundant rows (redundant_flags).
  !> aopt with rtol = aopt(2) > 0: every trajectory runs drive_adaptive (hout(:, k), counts(:, k);
  !> te, when given, as drive_adaptive's).
  subroutine drive_batch(make, method, model_id, ipar, rpar, n, mh, mn, mflags, iopt, ropt, t0, h, &
                         nsteps, every, nthreads, q0, v0, tout, qout, vout, aout, lout, auxout, resout, &
                         eout, stepmax, stats, red, aopt, hout, counts, istat, te)
    procedure(stepper_factory_i) :: make
    integer, intent(in) :: method, model_id, n, mh, mn, nsteps, every, nthreads
    integer, intent(in) :: ipar(:), mflags(:), iopt(:)
    real(wp), intent(in) :: rpar(:, :), ropt(:, :), t0, h, q0(:, :), v0(:, :), aopt(:)
    real(wp), intent(inout) :: tout(:, :), qout(:, :, :), vout(:, :, :), aout(:, :, :), lout(:, :, :), &
                               auxout(:, :, :), resout(:, :, :), eout(:, :), stepmax(:, :), stats(:, :), hout(:, :)
    integer, intent(inout) :: counts(:, :), red(:, :)
    integer, intent(out) :: istat(:, :)
    real(wp), intent(in), optional :: te(:)
    integer :: k
    !$omp parallel do schedule(dynamic, 1) num_threads(max(nthreads, 1)) default(shared) private(k)
    do k = 1, size(q0, 2)
      call one(k)
    end do
    !$omp end parallel do

  contains

    subroutine one(k)
      integer, intent(in) :: k
      class(stepper_t), allocatable :: st
      integer :: ierr
      logical :: adaptive
      stats(:, k) = 0
      istat(:, k) = [STATUS_BAD_INPUT, 0, 0]
      if (model_id == 0) return     ! a callback model: its items are Python calls, not thread-safe
      call make(method, st, ierr)
      if (ierr /= 0) return
      call st%setup(model_id, ipar, rpar(:, k), no_callback, n, mh, mn, mflags, ierr)
      if (ierr /= 0) return
      adaptive = size(aopt) >= AOPT_RTOL
      if (adaptive) adaptive = aopt(AOPT_RTOL) > 0     ! variable steps, as run's
      if (adaptive) then
        call drive_adaptive(st, iopt, ropt(:, k), aopt, t0, q0(:, k), v0(:, k), tout(:, k), qout(:, :, k), &
                            vout(:, :, k), aout(:, :, k), lout(:, :, k), auxout(:, :, k), resout(:, :, k), &
                            eout(:, k), stepmax(:, k), hout(:, k), counts(:, k), istat(:, k), te)
      else
        call drive(st, iopt, ropt(:, k), t0, h, nsteps, every, q0(:, k), v0(:, k), tout(:, k), qout(:, :, k), &
                   vout(:, :, k), aout(:, :, k), lout(:, :, k), auxout(:, :, k), resout(:, :, k), eout(:, k), &
                   stepmax(:, k), istat(:, k))
      end if
      if (allocated(st%stats)) stats(1:min(size(stats, 1), size(st%stats)), k) = &
        st%stats(1:min(size(stats, 1), size(st%stats)))
      call redundant_flags(st, red(:, k))
    end subroutine

  end subroutine drive_batch

  !> The callback slot of a built-in model in a batch: never called.
  subroutine no_callback(req, t, n, q, v, nw, w, nout, out)
    integer(c_int), intent(in) :: req, n, nw, nout
    real(c_double), intent(in) :: t, q(n), v(n), w(nw)
    real(c_double), intent(inout) :: out(nout)
    error stop 'pyint: a batch of built-in models called the Python callback'
  end subroutine

end module pyint_driver
