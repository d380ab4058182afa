!> Knife-edge (no lateral slip) constraints of a planar body whose (x, y, theta) are
!> q(1:3): the skate and the Chaplygin sleigh (one blade, seed 004 example 1) and the
!> snakeboards (two wheels, seed 000 section 4 and seed 004).
!>
!> Wheel k sits at distance d(k) along the body axis with heading theta + beta_k,
!> beta_k = s(k) q(iw(k)) (iw(k) = 0: beta_k = 0, a blade fixed to the body).  Its
!> velocity across its heading vanishes: row k of A is
!>     sgn [-sin(theta + beta_k), cos(theta + beta_k), d(k) cos beta_k]
!> on (x, y, theta), b = 0; sgn = +1 or -1 orients the row (the sign of the multiplier).
module model_knife_edge
  use pyint_kinds
  use pyint_model, only: model_t
  implicit none
  private
  public :: knife_edge_t, knife_edge_layout

  type, abstract, extends(model_t) :: knife_edge_t
    real(wp) :: d(2) = 0, s(2) = 1, sgn = 1
    integer :: iw(2) = 0
  contains
    procedure :: nh => ke_nh
    procedure :: nh_vel_q => ke_nh_vel_q
    procedure :: nh_gamma => ke_nh_gamma
    procedure :: nh_atl_q => ke_nh_atl_q
  end type

contains

  !> mn = size(d) wheels at distances d with steering coordinates iw (0: none) and signs s,
  !> rows oriented by sgn.
  subroutine knife_edge_layout(self, d, s, iw, sgn)
    class(knife_edge_t), intent(inout) :: self
    real(wp), intent(in) :: d(:), s(:), sgn
    integer, intent(in) :: iw(:)
    self%mn = size(d)
    self%d(1:self%mn) = d
    self%s(1:self%mn) = s
    self%iw(1:self%mn) = iw
    self%sgn = sgn
  end subroutine

  !> beta_k and its rate at (q, v).
  pure subroutine steer(self, k, q, v, be, bd)
    class(knife_edge_t), intent(in) :: self
    integer, intent(in) :: k
    real(wp), intent(in) :: q(:), v(:)
    real(wp), intent(out) :: be, bd
    be = 0
    bd = 0
    if (self%iw(k) == 0) return
    be = self%s(k) * q(self%iw(k))
    bd = self%s(k) * v(self%iw(k))
  end subroutine

  subroutine ke_nh(self, t, q, a, b)
    class(knife_edge_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: a(self%mn, self%n), b(self%mn)
    real(wp) :: be, bd
    integer :: k
    a = 0
    b = 0
    do k = 1, self%mn
      call steer(self, k, q, q, be, bd)
      a(k, 1) = -sin(q(3) + be)
      a(k, 2) = cos(q(3) + be)
      a(k, 3) = self%d(k) * cos(be)
    end do
    a = self%sgn * a
  end subroutine

  !> (A v)_q: by theta -P, by the steering coordinate s (-P - d sin(b) theta'),
  !> P = cos(th+b) x' + sin(th+b) y' the speed along the wheel heading.
  subroutine ke_nh_vel_q(self, t, q, v, d)
    class(knife_edge_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mn, self%n)
    real(wp) :: be, bd, p
    integer :: k, i
    d = 0
    do k = 1, self%mn
      call steer(self, k, q, v, be, bd)
      p = cos(q(3) + be) * v(1) + sin(q(3) + be) * v(2)
      d(k, 3) = -p
      i = self%iw(k)
      if (i > 0) d(k, i) = d(k, i) + self%s(k) * (-p - self%d(k) * sin(be) * v(3))
    end do
    d = self%sgn * d
  end subroutine

  !> (A v)_q v = -P (theta' + b') - d sin(b) theta' b'.
  subroutine ke_nh_gamma(self, t, q, v, gam)
    class(knife_edge_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mn)
    real(wp) :: be, bd, p
    integer :: k
    do k = 1, self%mn
      call steer(self, k, q, v, be, bd)
      p = cos(q(3) + be) * v(1) + sin(q(3) + be) * v(2)
      gam(k) = -p * (v(3) + bd) - self%d(k) * sin(be) * v(3) * bd
    end do
    gam = self%sgn * gam
  end subroutine

  !> (A^T lam)_q: columns theta and the steering coordinates.
  subroutine ke_nh_atl_q(self, t, q, lam, d)
    class(knife_edge_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mn)
    real(wp), intent(out) :: d(self%n, self%n)
    real(wp) :: be, bd, c(2)
    integer :: k, i
    d = 0
    do k = 1, self%mn
      call steer(self, k, q, q, be, bd)
      c = lam(k) * [-cos(q(3) + be), -sin(q(3) + be)]
      d(1:2, 3) = d(1:2, 3) + c
      i = self%iw(k)
      if (i == 0) cycle
      d(1:2, i) = d(1:2, i) + self%s(k) * c
      d(3, i) = d(3, i) - self%s(k) * lam(k) * self%d(k) * sin(be)
    end do
    d = self%sgn * d
  end subroutine

end module model_knife_edge
