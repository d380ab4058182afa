!> The one model interface every pyint integrator consumes (Fortran side).
!>
!> A constrained mechanical system
!>
!>     M(q) a = f(t, q, v) - G(t, q)^T lam_h - A(t, q)^T lam_n
!>     g(t, q) = 0                    (mh holonomic constraints, G = g_q)
!>     A(t, q) v + b(t, q) = 0        (mn nonholonomic constraints)
!>
!> The Python mirror is pyint.models.base.Model: the same items, the same
!> names, the same sign conventions.  A model extends model_t and overrides
!> what it knows analytically; everything not overridden falls back to a
!> central finite difference of the items it is derived from (correct, slower).
!> Built-in models override everything (tests check each one against finite
!> differences).
!>
!> Acceleration-level constraints are written  G a + hol_gamma = 0  and
!> A a + nh_gamma = 0, i.e.
!>     hol_gamma = (G v)_q v + 2 G_t v + g_tt,
!>     nh_gamma  = (A v + b)_q v + A_t v + b_t.
module pyint_model
  use pyint_kinds
  implicit none
  private
  public :: model_t

  real(wp), parameter :: FD_EPS = 6.0e-6_wp   !< ~ eps**(1/3), relative step of the fallbacks

  type, abstract :: model_t
    integer :: n = 0             !< number of coordinates
    integer :: mh = 0            !< number of holonomic constraints
    integer :: mn = 0            !< number of nonholonomic constraints
    logical :: const_mass = .true.
    logical :: has_energy = .false.
  contains
    procedure(mass_i), deferred :: mass
    procedure(force_i), deferred :: force
    procedure :: mass_dq       !< D = d(M(q) a)/dq                      (n, n)
    procedure :: force_jac     !< fq = df/dq, fv = df/dv                 (n, n) each
    procedure :: hol           !< g(t, q)                                (mh)
    procedure :: hol_jac       !< G = g_q                                (mh, n)
    procedure :: hol_t         !< g_t                                    (mh)
    procedure :: hol_vel_q     !< d(G v + g_t)/dq                        (mh, n)
    procedure :: hol_gamma     !< (G v)_q v + 2 G_t v + g_tt             (mh)
    procedure :: hol_gtl_q     !< d(G^T lam)/dq                          (n, n)
    procedure :: nh            !< A(t, q), b(t, q)                       (mn, n), (mn)
    procedure :: nh_vel_q      !< d(A v + b)/dq                          (mn, n)
    procedure :: nh_gamma      !< (A v + b)_q v + A_t v + b_t            (mn)
    procedure :: nh_atl_q      !< d(A^T lam)/dq                          (n, n)
    procedure :: energy        !< total energy (has_energy only)
  end type model_t

  abstract interface
    subroutine mass_i(self, q, mq)
      import :: model_t, wp
      class(model_t), intent(in) :: self
      real(wp), intent(in) :: q(self%n)
      real(wp), intent(out) :: mq(self%n, self%n)
    end subroutine
    subroutine force_i(self, t, q, v, f)
      import :: model_t, wp
      class(model_t), intent(in) :: self
      real(wp), intent(in) :: t, q(self%n), v(self%n)
      real(wp), intent(out) :: f(self%n)
    end subroutine
  end interface

contains

  pure real(wp) function fd_step(x)
    real(wp), intent(in) :: x
    fd_step = FD_EPS * max(1.0_wp, abs(x))
  end function

  subroutine mass_dq(self, q, a, d)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n)
    real(wp), intent(out) :: d(self%n, self%n)
    real(wp) :: qp(self%n), mp(self%n, self%n), mm(self%n, self%n), e
    integer :: j
    if (self%const_mass) then
      d = 0
      return
    end if
    do j = 1, self%n
      e = fd_step(q(j))
      qp = q; qp(j) = q(j) + e
      call self%mass(qp, mp)
      qp(j) = q(j) - e
      call self%mass(qp, mm)
      d(:, j) = matmul(mp - mm, a) / (2 * e)
    end do
  end subroutine

  subroutine force_jac(self, t, q, v, fq, fv)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: fq(self%n, self%n), fv(self%n, self%n)
    real(wp) :: x(self%n), fp(self%n), fm(self%n), e
    integer :: j
    do j = 1, self%n
      e = fd_step(q(j))
      x = q; x(j) = q(j) + e
      call self%force(t, x, v, fp)
      x(j) = q(j) - e
      call self%force(t, x, v, fm)
      fq(:, j) = (fp - fm) / (2 * e)
      e = fd_step(v(j))
      x = v; x(j) = v(j) + e
      call self%force(t, q, x, fp)
      x(j) = v(j) - e
      call self%force(t, q, x, fm)
      fv(:, j) = (fp - fm) / (2 * e)
    end do
  end subroutine

  subroutine hol(self, t, q, g)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: g(self%mh)
    g = 0
    if (self%mh > 0) error stop 'pyint_model: model declares holonomic constraints but does not define hol'
  end subroutine

  subroutine hol_jac(self, t, q, gq)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: gq(self%mh, self%n)
    real(wp) :: x(self%n), gp(self%mh), gm(self%mh), e
    integer :: j
    do j = 1, self%n
      e = fd_step(q(j))
      x = q; x(j) = q(j) + e
      call self%hol(t, x, gp)
      x(j) = q(j) - e
      call self%hol(t, x, gm)
      gq(:, j) = (gp - gm) / (2 * e)
    end do
  end subroutine

  subroutine hol_t(self, t, q, gt)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: gt(self%mh)
    real(wp) :: gp(self%mh), gm(self%mh), e
    e = fd_step(t)
    call self%hol(t + e, q, gp)
    call self%hol(t - e, q, gm)
    gt = (gp - gm) / (2 * e)
  end subroutine

  !> G(t,q) v + g_t(t,q): the velocity-level holonomic residual.
  subroutine hol_vel(self, t, q, v, w)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: w(self%mh)
    real(wp) :: gq(self%mh, self%n)
    call self%hol_jac(t, q, gq)
    call self%hol_t(t, q, w)
    w = w + matmul(gq, v)
  end subroutine

  subroutine hol_vel_q(self, t, q, v, d)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mh, self%n)
    real(wp) :: x(self%n), wp_(self%mh), wm(self%mh), e
    integer :: j
    do j = 1, self%n
      e = fd_step(q(j))
      x = q; x(j) = q(j) + e
      call hol_vel(self, t, x, v, wp_)
      x(j) = q(j) - e
      call hol_vel(self, t, x, v, wm)
      d(:, j) = (wp_ - wm) / (2 * e)
    end do
  end subroutine

  !> d/dt (G v + g_t) along qdot = v with v held fixed.
  subroutine hol_gamma(self, t, q, v, gam)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mh)
    real(wp) :: d(self%mh, self%n), wp_(self%mh), wm(self%mh), e
    call self%hol_vel_q(t, q, v, d)
    e = fd_step(t)
    call hol_vel(self, t + e, q, v, wp_)
    call hol_vel(self, t - e, q, v, wm)
    gam = matmul(d, v) + (wp_ - wm) / (2 * e)
  end subroutine

  subroutine hol_gtl_q(self, t, q, lam, d)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mh)
    real(wp), intent(out) :: d(self%n, self%n)
    real(wp) :: x(self%n), gp(self%mh, self%n), gm(self%mh, self%n), e
    integer :: j
    do j = 1, self%n
      e = fd_step(q(j))
      x = q; x(j) = q(j) + e
      call self%hol_jac(t, x, gp)
      x(j) = q(j) - e
      call self%hol_jac(t, x, gm)
      d(:, j) = matmul(lam, gp - gm) / (2 * e)
    end do
  end subroutine

  subroutine nh(self, t, q, a, b)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: a(self%mn, self%n), b(self%mn)
    a = 0
    b = 0
    if (self%mn > 0) error stop 'pyint_model: model declares nonholonomic constraints but does not define nh'
  end subroutine

  subroutine nh_vel(self, t, q, v, w)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: w(self%mn)
    real(wp) :: a(self%mn, self%n)
    call self%nh(t, q, a, w)
    w = w + matmul(a, v)
  end subroutine

  subroutine nh_vel_q(self, t, q, v, d)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mn, self%n)
    real(wp) :: x(self%n), wp_(self%mn), wm(self%mn), e
    integer :: j
    do j = 1, self%n
      e = fd_step(q(j))
      x = q; x(j) = q(j) + e
      call nh_vel(self, t, x, v, wp_)
      x(j) = q(j) - e
      call nh_vel(self, t, x, v, wm)
      d(:, j) = (wp_ - wm) / (2 * e)
    end do
  end subroutine

  subroutine nh_gamma(self, t, q, v, gam)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mn)
    real(wp) :: d(self%mn, self%n), wp_(self%mn), wm(self%mn), e
    call self%nh_vel_q(t, q, v, d)
    e = fd_step(t)
    call nh_vel(self, t + e, q, v, wp_)
    call nh_vel(self, t - e, q, v, wm)
    gam = matmul(d, v) + (wp_ - wm) / (2 * e)
  end subroutine

  subroutine nh_atl_q(self, t, q, lam, d)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mn)
    real(wp), intent(out) :: d(self%n, self%n)
    real(wp) :: x(self%n), ap(self%mn, self%n), am(self%mn, self%n), b(self%mn), e
    integer :: j
    do j = 1, self%n
      e = fd_step(q(j))
      x = q; x(j) = q(j) + e
      call self%nh(t, x, ap, b)
      x(j) = q(j) - e
      call self%nh(t, x, am, b)
      d(:, j) = matmul(lam, ap - am) / (2 * e)
    end do
  end subroutine

  real(wp) function energy(self, t, q, v)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    energy = 0
  end function

end module pyint_model
