!> Snakeboard of seed 004 (Man, Gao, Zhong 2020): the seed-000 snakeboard with
!> the axle angles coupled, phi_f = -phi_b = phi, and no forces.
!>
!> q = (x, y, theta, psi, phi).  Substituting phi_b = -phi, phi_f = phi into the
!> seed-000 T gives the constant
!>   M = [[m,0,0,0,0], [0,m,0,0,0], [0,0,J+J_r+2J_w,J_r,0], [0,0,J_r,J_r,0], [0,0,0,0,2J_w]]
!> and the constraints
!>   A = [[-sin(theta-phi), cos(theta-phi), -l cos phi, 0, 0],
!>        [-sin(theta+phi), cos(theta+phi), +l cos phi, 0, 0]].
!> f = 0; energy = T (conserved).
!> ipar = []; rpar = [m, J, J_r, J_w, l].
!> NumPy twin (with the derivation): pyint/models/snakeboard_coupled.py.
module model_snakeboard_coupled
  use pyint_kinds
  use pyint_model, only: rpar_error
  use model_snakeboard, only: board_t, board_init
  implicit none
  private
  public :: snakeboard_coupled_t

  !> The nonholonomic items come from board_t (wheel layout set in the constructor).
  type, extends(board_t) :: snakeboard_coupled_t
  contains
    procedure :: init => sbc_init
    procedure :: force => sbc_force
  end type

contains

  subroutine sbc_init(self, ipar, rpar, ierr)
    class(snakeboard_coupled_t), intent(inout) :: self
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    integer, intent(out) :: ierr
    ierr = rpar_error(rpar, 'ppppp')   ! m, J, J_r, J_w, l > 0
    if (ierr /= 0) return
    call board_init(self, 5, rpar, [-1.0_wp, 1.0_wp], [5, 5])   ! phi_b = -phi, phi_f = +phi
    self%const_force = .true.
    ierr = 0
  end subroutine

  subroutine sbc_force(self, t, q, v, f)
    class(snakeboard_coupled_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: f(self%n)
    f = 0
  end subroutine

end module model_snakeboard_coupled
