!> Skate (knife edge) on an inclined plane: seed 004 (Man, Gao, Zhong 2020), example 1.
!>
!> q = (x, y, theta), x down the slope; M = diag(m, m, J);
!> f = (m g sin alpha, 0, -k theta); A = [sin theta, -cos theta, 0], A v = 0;
!> energy = T - m g x sin alpha + k theta^2 / 2 (conserved).  k: a torsion spring on the
!> heading that seed 004 does not have (k = 0: the seed's skate).
!> ipar = []; rpar = [m, J, g, alpha, k].
!> NumPy twin (with the closed form and the multiplier sign): pyint/models/skate.py.
module model_skate
  use pyint_kinds
  use pyint_model, only: diagonal_matrix, rpar_error
  use model_knife_edge, only: knife_edge_t, knife_edge_layout
  implicit none
  private
  public :: skate_t

  !> The blade: a knife edge at the origin of (x, y), row -[-sin theta, cos theta, 0].
  type, extends(knife_edge_t) :: skate_t
    real(wp) :: m = 0, j = 0, grav = 0, alpha = 0, k = 0
  contains
    procedure :: init => sk_init
    procedure :: force => sk_force
    procedure :: force_jac => sk_force_jac
    procedure :: energy => sk_energy
  end type

contains

  subroutine sk_init(self, ipar, rpar, ierr)
    class(skate_t), intent(inout) :: self
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    integer, intent(out) :: ierr
    ierr = rpar_error(rpar, 'pp..n')   ! m, J > 0; k >= 0
    if (ierr /= 0) return
    self%n = 3
    call knife_edge_layout(self, [0.0_wp], [1.0_wp], [0], -1.0_wp)
    self%has_energy = .true.
    self%mconst = diagonal_matrix([rpar(1), rpar(1), rpar(2)])
    self%m = rpar(1); self%j = rpar(2); self%grav = rpar(3); self%alpha = rpar(4); self%k = rpar(5)
    ierr = 0
  end subroutine

  subroutine sk_force(self, t, q, v, f)
    class(skate_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: f(self%n)
    f = [self%m * self%grav * sin(self%alpha), 0.0_wp, -self%k * q(3)]
  end subroutine

  subroutine sk_force_jac(self, t, q, v, fq, fv)
    class(skate_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: fq(self%n, self%n), fv(self%n, self%n)
    fq = 0
    fq(3, 3) = -self%k
    fv = 0
  end subroutine

  real(wp) function sk_energy(self, t, q, v)
    class(skate_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    sk_energy = 0.5_wp * self%m * (v(1)**2 + v(2)**2) + 0.5_wp * self%j * v(3)**2 &
                - self%m * self%grav * sin(self%alpha) * q(1) + 0.5_wp * self%k * q(3)**2
  end function

end module model_skate
