!> Planar N-link pendulum chain of point masses in Cartesian coordinates.
!>
!> q = (x1, y1, ..., xN, yN); link i joins point i-1 to point i (point 0 is
!> the fixed origin); holonomic constraints g_i = ((xi - x_{i-1})^2 +
!> (yi - y_{i-1})^2 - l_i^2) / 2; gravity -grav along y.
!> ipar = [N]; rpar = [grav, m_1..m_N, l_1..l_N].
!> NumPy twin: pyint/models/pendulum_chain.py.
!>
!> Structured items (O(N) work and entries, see model.f90): M is diagonal,
!> G has two 1x2 blocks per row (links i-1, i), (G^T lam)_q is block
!> tridiagonal with 2x2 multiples of the identity: with the unknowns of body i
!> and link i next to each other the Newton matrix is banded.
module model_pendulum_chain
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_newton_matrix, only: newton_matrix_t
  implicit none
  private
  public :: pendulum_chain_t

  type, extends(model_t) :: pendulum_chain_t
    integer :: nlink = 0
    real(wp) :: grav = 0
    real(wp), allocatable :: mass_(:), len_(:)
  contains
    procedure :: init => chain_init
    procedure :: mass => chain_mass
    procedure :: force => chain_force
    procedure :: hol => chain_hol
    procedure :: hol_jac => chain_hol_jac
    procedure :: hol_vel_q => chain_hol_vel_q
    procedure :: hol_gamma => chain_hol_gamma
    procedure :: hol_gtl_q => chain_hol_gtl_q
    procedure :: energy => chain_energy
    procedure :: mass_mul => chain_mass_mul
    procedure :: hol_vel => chain_hol_vel
    procedure :: hol_jac_tmul => chain_hol_jac_tmul
    procedure :: add_qq => chain_add_qq
    procedure :: add_hol_jac => chain_add_hol_jac
    procedure :: add_hol_vel_q => chain_add_hol_vel_q
  end type

contains

  subroutine chain_init(self, ipar, rpar, ierr)
    class(pendulum_chain_t), intent(inout) :: self
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    integer, intent(out) :: ierr
    integer :: nl
    ierr = 1
    if (size(ipar) < 1) return
    nl = ipar(1)
    if (nl < 1 .or. size(rpar) /= 1 + 2 * nl) return
    self%nlink = nl
    self%n = 2 * nl
    self%mh = nl
    self%mn = 0
    self%has_energy = .true.
    self%const_force = .true.
    self%scleronomic = .true.
    self%grav = rpar(1)
    self%mass_ = rpar(2:nl + 1)
    self%len_ = rpar(nl + 2:2 * nl + 1)
    ierr = 0
  end subroutine

  !> Relative position (dx, dy) of link i.
  pure function rel(q, i) result(d)
    real(wp), intent(in) :: q(:)
    integer, intent(in) :: i
    real(wp) :: d(2)
    d = q(2 * i - 1:2 * i)
    if (i > 1) d = d - q(2 * i - 3:2 * i - 2)
  end function

  subroutine chain_mass(self, q, mq)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n)
    real(wp), intent(out) :: mq(self%n, self%n)
    integer :: i
    mq = 0
    do i = 1, self%nlink
      mq(2 * i - 1, 2 * i - 1) = self%mass_(i)
      mq(2 * i, 2 * i) = self%mass_(i)
    end do
  end subroutine

  subroutine chain_force(self, t, q, v, f)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: f(self%n)
    f(1::2) = 0
    f(2::2) = -self%grav * self%mass_
  end subroutine

  subroutine chain_hol(self, t, q, g)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: g(self%mh)
    real(wp) :: d(2)
    integer :: i
    do i = 1, self%nlink
      d = rel(q, i)
      g(i) = 0.5_wp * (d(1)**2 + d(2)**2 - self%len_(i)**2)
    end do
  end subroutine

  subroutine chain_hol_jac(self, t, q, gq)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: gq(self%mh, self%n)
    real(wp) :: d(2)
    integer :: i
    ! gq = 0 on the 2-d array is a memset a column: for a small G (at most 2 KB, below glibc's
    ! rep stosb threshold) one memset of the whole instead (RATTLE on the chain N = 8: 16 calls)
    if (size(gq) <= 256) then
      call zero(gq, size(gq))
    else
      gq = 0
    end if
    do i = 1, self%nlink
      d = rel(q, i)
      gq(i, 2 * i - 1:2 * i) = d
      if (i > 1) gq(i, 2 * i - 3:2 * i - 2) = -d
    end do
  end subroutine

  !> x(1:k) = 0 (an array by sequence association).
  pure subroutine zero(x, k)
    integer, intent(in) :: k
    real(wp), intent(out) :: x(k)
    x = 0
  end subroutine

  subroutine chain_hol_vel_q(self, t, q, v, d)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mh, self%n)
    call chain_hol_jac(self, t, v, d)   ! (G(q) v)_q = G(v): the constraints are quadratic
  end subroutine

  subroutine chain_hol_gamma(self, t, q, v, gam)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mh)
    real(wp) :: dv(2)
    integer :: i
    do i = 1, self%nlink
      dv = rel(v, i)
      gam(i) = dv(1)**2 + dv(2)**2
    end do
  end subroutine

  subroutine chain_hol_gtl_q(self, t, q, lam, d)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mh)
    real(wp), intent(out) :: d(self%n, self%n)
    integer :: i, k
    d = 0
    do i = 1, self%nlink
      do k = 0, 1
        d(2 * i - 1 + k, 2 * i - 1 + k) = d(2 * i - 1 + k, 2 * i - 1 + k) + lam(i)
        if (i > 1) then
          d(2 * i - 3 + k, 2 * i - 3 + k) = d(2 * i - 3 + k, 2 * i - 3 + k) + lam(i)
          d(2 * i - 1 + k, 2 * i - 3 + k) = d(2 * i - 1 + k, 2 * i - 3 + k) - lam(i)
          d(2 * i - 3 + k, 2 * i - 1 + k) = d(2 * i - 3 + k, 2 * i - 1 + k) - lam(i)
        end if
      end do
    end do
  end subroutine

  real(wp) function chain_energy(self, t, q, v)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    chain_energy = sum(self%mass_ * (0.5_wp * (v(1::2)**2 + v(2::2)**2) + self%grav * q(2::2)))
  end function

  ! --- structured items: O(N) -------------------------------------------------

  subroutine chain_mass_mul(self, q, a, ma)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n)
    real(wp), intent(out) :: ma(self%n)
    ma(1::2) = self%mass_ * a(1::2)
    ma(2::2) = self%mass_ * a(2::2)
  end subroutine

  !> G v (g_t = 0): (d_i . (v_i - v_{i-1})) per link
  subroutine chain_hol_vel(self, t, q, v, w)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: w(self%mh)
    integer :: i
    do i = 1, self%nlink
      w(i) = dot_product(rel(q, i), rel(v, i))
    end do
  end subroutine

  !> G^T lam: link i pulls point i along d_i and point i-1 against it
  subroutine chain_hol_jac_tmul(self, t, q, lam, r)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mh)
    real(wp), intent(out) :: r(self%n)
    real(wp) :: d(2)
    integer :: i
    r = 0
    do i = 1, self%nlink
      d = lam(i) * rel(q, i)
      r(2 * i - 1:2 * i) = r(2 * i - 1:2 * i) + d
      if (i > 1) r(2 * i - 3:2 * i - 2) = r(2 * i - 3:2 * i - 2) - d
    end do
  end subroutine

  !> c1 M + c5 (G^T lh)_q (mass constant, f independent of q and v: c2..c4 add nothing)
  subroutine chain_add_qq(self, t, q, v, a, lh, ln, c, asm, r0, c0)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n), a(self%n), lh(self%mh), ln(self%mn), c(6)
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    integer :: i, k, p, s
    if (c(1) /= 0) then
      do i = 1, self%nlink
        do k = 0, 1
          call asm%add(r0 + 2 * i - 1 + k, c0 + 2 * i - 1 + k, c(1) * self%mass_(i))
        end do
      end do
    end if
    if (c(5) /= 0) then
      do i = 1, self%nlink
        do k = 0, 1
          s = 2 * i - 1 + k
          call asm%add(r0 + s, c0 + s, c(5) * lh(i))
          if (i > 1) then
            p = 2 * i - 3 + k
            call asm%add(r0 + p, c0 + p, c(5) * lh(i))
            call asm%add(r0 + s, c0 + p, -c(5) * lh(i))
            call asm%add(r0 + p, c0 + s, -c(5) * lh(i))
          end if
        end do
      end do
    end if
  end subroutine

  !> s G(x) (or its transpose) with G(x) the chain's Jacobian at the point x
  subroutine add_g_at(self, x, s, trans, asm, r0, c0)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: x(self%n), s
    logical, intent(in) :: trans
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    real(wp) :: d(2)
    integer :: i, k
    do i = 1, self%nlink
      d = s * rel(x, i)
      do k = 0, 1
        call put(i, 2 * i - 1 + k, d(k + 1))
        if (i > 1) call put(i, 2 * i - 3 + k, -d(k + 1))
      end do
    end do
  contains
    subroutine put(row, col, val)
      integer, intent(in) :: row, col
      real(wp), intent(in) :: val
      if (trans) then
        call asm%add(r0 + col, c0 + row, val)
      else
        call asm%add(r0 + row, c0 + col, val)
      end if
    end subroutine
  end subroutine

  subroutine chain_add_hol_jac(self, t, q, s, trans, asm, r0, c0)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), s
    logical, intent(in) :: trans
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    call add_g_at(self, q, s, trans, asm, r0, c0)
  end subroutine

  !> (G(q) v)_q = G(v): the constraints are quadratic
  subroutine chain_add_hol_vel_q(self, t, q, v, s, asm, r0, c0)
    class(pendulum_chain_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n), s
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    call add_g_at(self, v, s, .false., asm, r0, c0)
  end subroutine

end module model_pendulum_chain
