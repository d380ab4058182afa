!> The alpha family's constants (seed 000 = Chung-Hulbert), derived once from the
!> spectral radius at infinity: used by generalized-alpha / alpha-RATTLE
!> (fortran/genalpha.f90), Lie-group generalized-alpha (fortran/lie_genalpha.f90)
!> and pyint.genalpha.alpha_parameters (through fortran/api/api_run.f90).
module pyint_alpha
  use pyint_kinds
  implicit none
  private
  public :: alpha_params_t, alpha_params, alpha_error_constants, FORM_PAPER, FORM_ARNOLD_BRULS

  !> FORM_PAPER: seed 000's  M_{n+1} a_{n+1} + am/(1-am) M_n a_n = c F_{n+1} + af/(1-am) F_n.
  !> FORM_ARNOLD_BRULS: M(q_{n+1}) w_{n+1} = F_{n+1} for the physical acceleration w and
  !>   (1-am) a_{n+1} + am a_n = (1-af) w_{n+1} + af w_n for the algorithmic one.
  !> Identical for constant M; for M(q) the paper's form is first order unless
  !> am = af (rho_inf = 1): M_{n+1} multiplies an acceleration that approximates
  !> qddot at t_{n+1} + (am - af) h.  Arnold-Bruls is second order for any M(q).
  integer, parameter :: FORM_PAPER = 0, FORM_ARNOLD_BRULS = 1

  !> Method constants derived from the spectral radius at infinity.
  type :: alpha_params_t
    real(wp) :: rho_inf, alpha_m, alpha_f, alpha, beta, gamma
    real(wp) :: c   !< (1 - af) / (1 - am): weight of F_{n+1}
    real(wp) :: k   !< am / (1 - am):       weight of M_n a_n
    real(wp) :: d   !< af / (1 - am):       weight of F_n
    integer :: form = FORM_PAPER
  end type

contains

  !> am = (2 rho - 1)/(rho + 1), af = rho/(rho + 1), alpha = am - af,
  !> beta = (1 - alpha)^2 / 4, gamma = 1/2 - alpha (seed 000; = Chung-Hulbert).
  function alpha_params(rho_inf, form) result(p)
    real(wp), intent(in) :: rho_inf
    integer, intent(in), optional :: form    !< default FORM_PAPER (the constants do not depend on it)
    type(alpha_params_t) :: p
    p%form = FORM_PAPER
    if (present(form)) p%form = form
    p%rho_inf = rho_inf
    p%alpha_m = (2 * rho_inf - 1) / (rho_inf + 1)
    p%alpha_f = rho_inf / (rho_inf + 1)
    p%alpha = p%alpha_m - p%alpha_f
    p%beta = (1 - p%alpha)**2 / 4
    p%gamma = 0.5_wp - p%alpha
    p%c = (1 - p%alpha_f) / (1 - p%alpha_m)
    p%k = p%alpha_m / (1 - p%alpha_m)
    p%d = p%alpha_f / (1 - p%alpha_m)
  end function

  !> Local error constants of the variable-step method (docs/adaptive_steps.md eqs. (6)-(8)),
  !> delta = am - af: c2 = (1 - af)/2 - (1 - am)(1/2 + delta), C_q = beta + delta/2 - 1/6,
  !> C_v = c2 + gamma/2 + gamma delta - 1/6 (rho_inf = 1: both 1/12, the trapezoidal rule's);
  !> the vector generalized-alpha's and the Lie-group one's (section 8: the same a and V recursions).
  subroutine alpha_error_constants(p, cq, cv)
    type(alpha_params_t), intent(in) :: p
    real(wp), intent(out) :: cq, cv
    real(wp) :: c2
    c2 = (1 - p%alpha_f) / 2 - (1 - p%alpha_m) * (0.5_wp + p%alpha)
    cq = p%beta + p%alpha / 2 - 1.0_wp / 6
    cv = c2 + p%gamma / 2 + p%gamma * p%alpha - 1.0_wp / 6
  end subroutine

end module pyint_alpha
