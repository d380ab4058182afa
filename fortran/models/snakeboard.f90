!> Snakeboard of seed 000 (Ma, Chen, Zhang 2008, section 4).
!>
!> q = (x, y, theta, psi, phi_b, phi_f); constant mass matrix from
!>   T = 1/2 m (x'^2 + y'^2) + 1/2 J theta'^2 + 1/2 J_r (theta' + psi')^2
!>       + 1/2 J_w [(theta' + phi_b')^2 + (theta' + phi_f')^2];
!> forces f = (F cos theta, F sin theta, 0, -k_r psi, -k_w phi_b, -k_w phi_f);
!> no lateral slip of the wheels at (x, y) -/+ L (cos theta, sin theta):
!>   A = [[-sin(theta+phi_b), cos(theta+phi_b), -L cos phi_b, 0, 0, 0],
!>        [-sin(theta+phi_f), cos(theta+phi_f), +L cos phi_f, 0, 0, 0]].
!> energy = T + 1/2 k_r psi^2 + 1/2 k_w (phi_b^2 + phi_f^2) (not conserved: F does work).
!> ipar = []; rpar = [m, J, J_r, J_w, L, F, k_r, k_w].
!>
!> board_t: the mass matrix of a board with a rotor and two wheels, whose no-slip
!> constraints are knife edges (knife_edge.f90) at -/+ L; the coupled snakeboard
!> (snakeboard_coupled.f90) extends it too.
!> NumPy twin: pyint/models/snakeboard.py.
module model_snakeboard
  use pyint_kinds
  use pyint_model, only: rpar_error
  use model_knife_edge, only: knife_edge_t, knife_edge_layout
  implicit none
  private
  public :: board_t, board_init, snakeboard_t

  !> Mass, inertias and wheel layout of a snakeboard.
  type, abstract, extends(knife_edge_t) :: board_t
    real(wp) :: m = 0, j = 0, jr = 0, jw = 0, l = 0
  end type

  type, extends(board_t) :: snakeboard_t
    real(wp) :: f = 0, kr = 0, kw = 0
  contains
    procedure :: init => sb_init
    procedure :: force => sb_force
    procedure :: force_jac => sb_force_jac
    procedure :: potential => sb_potential
  end type

contains

  subroutine sb_init(self, ipar, rpar, ierr)
    class(snakeboard_t), intent(inout) :: self
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    integer, intent(out) :: ierr
    ierr = rpar_error(rpar, 'ppppp.nn')   ! m, J, J_r, J_w, L > 0; k_r, k_w >= 0
    if (ierr /= 0) return
    call board_init(self, 6, rpar(1:5), [1.0_wp, 1.0_wp], [5, 6])
    self%f = rpar(6); self%kr = rpar(7); self%kw = rpar(8)
    ierr = 0
  end subroutine

  !> Sizes, board data and the constant mass matrix: rpar = [m, J, J_r, J_w, L]; the rotor
  !> angle is q(4); back wheel at -L with heading theta + s(1) q(iw(1)), front wheel at +L
  !> with theta + s(2) q(iw(2)).
  subroutine board_init(b, n, rpar, s, iw)
    class(board_t), intent(inout) :: b
    integer, intent(in) :: n, iw(2)
    real(wp), intent(in) :: rpar(5), s(2)
    integer :: k
    b%n = n
    b%has_energy = .true.
    b%m = rpar(1); b%j = rpar(2); b%jr = rpar(3); b%jw = rpar(4); b%l = rpar(5)
    call knife_edge_layout(b, [-b%l, b%l], s, iw, 1.0_wp)
    allocate(b%mconst(n, n))
    b%mconst = 0
    b%mconst(1, 1) = b%m
    b%mconst(2, 2) = b%m
    b%mconst(3, 3) = b%j + b%jr + 2 * b%jw
    b%mconst(3, 4) = b%jr; b%mconst(4, 3) = b%jr; b%mconst(4, 4) = b%jr
    do k = 1, 2      ! wheel k: 1/2 J_w (theta' + s(k) q(iw(k))')^2
      b%mconst(3, iw(k)) = b%mconst(3, iw(k)) + s(k) * b%jw
      b%mconst(iw(k), 3) = b%mconst(iw(k), 3) + s(k) * b%jw
      b%mconst(iw(k), iw(k)) = b%mconst(iw(k), iw(k)) + s(k)**2 * b%jw
    end do
  end subroutine

  ! -- the model ------------------------------------------------------------------

  subroutine sb_force(self, t, q, v, f)
    class(snakeboard_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: f(self%n)
    f = [self%f * cos(q(3)), self%f * sin(q(3)), 0.0_wp, -self%kr * q(4), -self%kw * q(5), -self%kw * q(6)]
  end subroutine

  subroutine sb_force_jac(self, t, q, v, fq, fv)
    class(snakeboard_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: fq(self%n, self%n), fv(self%n, self%n)
    fq = 0
    fv = 0
    fq(1, 3) = -self%f * sin(q(3))
    fq(2, 3) = self%f * cos(q(3))
    fq(4, 4) = -self%kr
    fq(5, 5) = -self%kw
    fq(6, 6) = -self%kw
  end subroutine

  !> The springs on psi and the axles.
  real(wp) function sb_potential(self, t, q)
    class(snakeboard_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    sb_potential = 0.5_wp * self%kr * q(4)**2 + 0.5_wp * self%kw * (q(5)**2 + q(6)**2)
  end function

end module model_snakeboard
