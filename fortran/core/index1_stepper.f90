!> The base of the steppers on the index-1 form (pyint_index1: q' = v, v' = a(t, q, v)
!> with a and the multipliers from the index-1 system, seed 003 eq. (7)): its init reads
!> the option project = 1 for projected steps (pyint_index1: project_step) and starts from a, lam of the
!> index-1 system at (t0, q0, v0); the stat index1_solves counts the index-1 solves.  A step flagged
!> at a singular position is taken again projected (index1_pass; pyint_index1 pass_begin).  rk4_index1.f90 and the template explicit_euler.f90
!> extend it with their step.
module pyint_index1_stepper
  use pyint_kinds
  use pyint_driver, only: stepper_t, state_t
  use pyint_index1, only: index1_work_t, index1_init, index1_accel, pass_begin, pass_end
  use pyint_kkt, only: SING_TOL_PROJECTED, SING_TOL_PASS
  use pyint_seam, only: IOPT_RK4_INDEX1_PROJECT, STAT_RK4_INDEX1_INDEX1_SOLVES, NSTATS_RK4_INDEX1, &
                        NIOPT_RK4_INDEX1
  implicit none
  private
  public :: index1_stepper_t, index1_stepper_init, index1_start

  type, abstract, extends(stepper_t) :: index1_stepper_t
    type(index1_work_t) :: w
    logical :: project = .false.     !< projected steps (the option project)
  contains
    procedure :: init => index1_stepper_init
    procedure :: pass_singular => index1_pass
  end type

contains

  subroutine index1_stepper_init(self, s, info)
    class(index1_stepper_t), intent(inout) :: self
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    if (.not. self%options_fit(nstats=NSTATS_RK4_INDEX1, niopt=NIOPT_RK4_INDEX1, nropt=0, info=info)) return
    ! the index-1 family (rk4_index1, explicit_euler) shares rk4_index1's slot
    call index1_start(self, self%iopt(IOPT_RK4_INDEX1_PROJECT) == 1, s, info)
    self%stats(STAT_RK4_INDEX1_INDEX1_SOLVES) = 1
  end subroutine

  !> The start of every stepper on the index-1 form, after its options are read: the pass at a
  !> singular position (fixed and variable steps alike, flagged at SING_TOL_PASS: a narrower flag
  !> lets the drift kick the motion before the pass, pyint_kkt) and the driver's manifold check on, projected steps (project) or not, and
  !> a, lam of the index-1 system at (t0, q0, v0) (Baumgarte's stabilized one with alpha, beta).
  subroutine index1_start(self, project, s, info, alpha, beta)
    class(index1_stepper_t), intent(inout) :: self
    logical, intent(in) :: project
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    real(wp), intent(in), optional :: alpha, beta
    self%passes_singular = .true.     ! index1_pass
    self%drift_check = .true.         ! the driver's manifold check (the index-1 form)
    call index1_init(self%w, self%model)
    self%project = project
    self%w%sing_tol = SING_TOL_PASS     ! steps pass (index1_pass)
    if (self%project) self%w%sing_tol = SING_TOL_PROJECTED
    call index1_accel(self%model, s%t, s%q, s%v, self%w, s%a, s%lam, info, alpha, beta)
  end subroutine

  !> The driver's pass_singular: the step from its start projected onto the constraints, taken as
  !> a projected step (pyint_index1: pass_begin explains why this passes).
  subroutine index1_pass(self, h, t1, s, info)
    class(index1_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    real(wp) :: tol
    logical :: own
    own = self%project
    call pass_begin(self%model, s%t, s%q, s%v, self%w, s%a, s%lam, tol, info)
    if (info == 0) then
      self%project = .true.
      call self%step(h, t1, s, info)
    end if
    self%project = own
    call pass_end(self%w, tol)
  end subroutine

end module pyint_index1_stepper
