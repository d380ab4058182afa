!> Baumgarte-stabilized index-1 form integrated by the classical 4th-order
!> Runge-Kutta method (the baseline of seed 002, Figs 4-5).
!>
!>     qdot = v,   vdot = a(t, q, v)   with  [M G^T; G 0] [a; lam] = [f; -(gamma + 2 alpha (G v + g_t) + beta^2 g)]
!>
!> (fortran/core/index1.f90): every constraint residual obeys
!> e'' + 2 alpha e' + beta^2 e = 0 along the exact flow of this ODE, so drift
!> is damped but not removed; the exact DAE solution solves the ODE, so RK4
!> keeps its order 4.  a and lam of the state are those of the stabilized KKT
!> system.
!>
!> A fixed step flagged at a singular position is taken again projected: the pass of the index-1
!> steppers (pyint_index1_stepper: index1_pass), which this stepper extends.
!>
!> A stepper of the one driver (fortran/core/driver.f90): ropt = [alpha, beta];
!> stats = [KKT solves] (four per step: the last stage's solve at the new
!> state is the next step's first).
module baumgarte
  use pyint_kinds
  use pyint_driver, only: state_t
  use pyint_index1, only: index1_accel, project_step
  use pyint_index1_stepper, only: index1_stepper_t, index1_start
  use pyint_seam, only: NSTATS_BAUMGARTE, NIOPT_BAUMGARTE, NROPT_BAUMGARTE, IOPT_BAUMGARTE_PROJECT, &
                        ROPT_BAUMGARTE_ALPHA, ROPT_BAUMGARTE_BETA
  use pyint_seam, only: STAT_BAUMGARTE_KKT_SOLVES
  implicit none
  private
  public :: baumgarte_stepper_t

  !> The index-1 stepper's work (w), projected steps (project) and pass at a singular position, with
  !> its own options (alpha, beta) and stats.  On the constraints the stabilization terms vanish, so
  !> the index-1 a of the pass's projection is the stabilized one.
  type, extends(index1_stepper_t) :: baumgarte_stepper_t
    real(wp) :: alpha = 0, beta = 0
  contains
    procedure :: init => bg_init
    procedure :: step => bg_step
  end type

contains

  subroutine bg_init(self, s, info)
    class(baumgarte_stepper_t), intent(inout) :: self
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    if (.not. self%options_fit(nstats=NSTATS_BAUMGARTE, niopt=NIOPT_BAUMGARTE, nropt=NROPT_BAUMGARTE, info=info)) return
    if (self%model%mn /= 0) return
    self%alpha = self%ropt(ROPT_BAUMGARTE_ALPHA)
    self%beta = self%ropt(ROPT_BAUMGARTE_BETA)
    call index1_start(self, self%iopt(IOPT_BAUMGARTE_PROJECT) == 1, s, info, self%alpha, self%beta)
  end subroutine

  !> k_i = (v_i, a(t_i, q_i, v_i)) at the classical nodes 0, 1/2, 1/2, 1; k_1 = s%a.
  subroutine bg_step(self, h, t1, s, info)
    class(baumgarte_stepper_t), intent(inout) :: self
    real(wp), intent(in) :: h, t1
    type(state_t), intent(inout) :: s
    integer, intent(out) :: info
    real(wp) :: kq(size(s%q), 4), kv(size(s%q), 4), qs(size(s%q)), vs(size(s%q))
    kq(:, 1) = s%v
    kv(:, 1) = s%a
    qs = s%q + 0.5_wp * h * kq(:, 1); vs = s%v + 0.5_wp * h * kv(:, 1)
    kq(:, 2) = vs
    call rhs(s%t + 0.5_wp * h, qs, vs, kv(:, 2), info); if (info /= 0) return
    qs = s%q + 0.5_wp * h * kq(:, 2); vs = s%v + 0.5_wp * h * kv(:, 2)
    kq(:, 3) = vs
    call rhs(s%t + 0.5_wp * h, qs, vs, kv(:, 3), info); if (info /= 0) return
    qs = s%q + h * kq(:, 3); vs = s%v + h * kv(:, 3)
    kq(:, 4) = vs
    call rhs(s%t + h, qs, vs, kv(:, 4), info); if (info /= 0) return
    s%q = s%q + h / 6 * (kq(:, 1) + 2 * kq(:, 2) + 2 * kq(:, 3) + kq(:, 4))
    s%v = s%v + h / 6 * (kv(:, 1) + 2 * kv(:, 2) + 2 * kv(:, 3) + kv(:, 4))
    if (self%project) then
      call project_step(self%model, t1, s%q, s%v, self%w, s%a, s%lam, info)
    else
      call rhs(t1, s%q, s%v, s%a, info)
    end if

  contains

    subroutine rhs(ts, qx, vx, acc, info)
      real(wp), intent(in) :: ts, qx(:), vx(:)
      real(wp), intent(out) :: acc(:)
      integer, intent(out) :: info
      call index1_accel(self%model, ts, qx, vx, self%w, acc, s%lam, info, self%alpha, self%beta)
      self%stats(STAT_BAUMGARTE_KKT_SOLVES) = self%stats(STAT_BAUMGARTE_KKT_SOLVES) + 1
    end subroutine

  end subroutine bg_step

end module baumgarte
