!> A model whose every item comes from one routine addressed by a request code (REQ_* of
!> seam/seam.toml's [callback]): the parent of the callback model (a Python callable,
!> fortran/core/callback_model.f90) and the compiled model (a routine generated from SymPy,
!> fortran/core/compiled_model.f90).
!>
!> The items of model_t are forwarded here once, each as its request at (t, q, v, w): w the extra
!> vector the item takes (a for REQ_MASS_DQ, lam for the *_TL_Q items, w for REQ_MASS_DQQ whose a
!> is v; empty otherwise), v = q and t = 0 where the item depends on neither.  An extension
!> supplies the two ways a request is answered, item_vec (a vector) and item_mat (a dense matrix),
!> and may override what it answers faster (the compiled model's structured items).
module pyint_item_model
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_seam, only: REQ_MASS, REQ_MASS_DQ, REQ_FORCE, REQ_FORCE_Q, REQ_FORCE_V, REQ_HOL, REQ_HOL_JAC, &
                        REQ_HOL_T, REQ_HOL_VEL_Q, REQ_HOL_GAMMA, REQ_HOL_GTL_Q, REQ_NH_A, REQ_NH_B, &
                        REQ_NH_VEL_Q, REQ_NH_GAMMA, REQ_NH_ATL_Q, REQ_ENERGY, REQ_MASS_DQQ
  implicit none
  private
  public :: item_model_t

  type, abstract, extends(model_t) :: item_model_t
  contains
    procedure(item_vec_i), deferred :: item_vec   !< vector item req into x (size(x) its length)
    procedure(item_mat_i), deferred :: item_mat   !< matrix item req into a (dense)
    procedure :: mass => it_mass
    procedure :: force => it_force
    procedure :: mass_dq => it_mass_dq
    procedure :: mass_dqq => it_mass_dqq
    procedure :: force_jac => it_force_jac
    procedure :: hol => it_hol
    procedure :: hol_jac => it_hol_jac
    procedure :: hol_t => it_hol_t
    procedure :: hol_vel_q => it_hol_vel_q
    procedure :: hol_gamma => it_hol_gamma
    procedure :: hol_gtl_q => it_hol_gtl_q
    procedure :: nh => it_nh
    procedure :: nh_vel_q => it_nh_vel_q
    procedure :: nh_gamma => it_nh_gamma
    procedure :: nh_atl_q => it_nh_atl_q
    procedure :: energy => it_energy
  end type

  abstract interface
    subroutine item_vec_i(self, req, t, q, v, w, x)
      import :: item_model_t, wp
      class(item_model_t), intent(in) :: self
      integer, intent(in) :: req
      real(wp), intent(in) :: t, q(:), v(:), w(:)
      real(wp), intent(out) :: x(:)
    end subroutine
    subroutine item_mat_i(self, req, t, q, v, w, a)
      import :: item_model_t, wp
      class(item_model_t), intent(in) :: self
      integer, intent(in) :: req
      real(wp), intent(in) :: t, q(:), v(:), w(:)
      real(wp), intent(out) :: a(:, :)
    end subroutine
  end interface

  real(wp), parameter :: NO_W(0) = [real(wp) ::]

contains

  subroutine it_mass(self, q, mq)
    class(item_model_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n)
    real(wp), intent(out) :: mq(self%n, self%n)
    call self%item_mat(REQ_MASS, 0.0_wp, q, q, NO_W, mq)
  end subroutine

  subroutine it_mass_dq(self, q, a, d)
    class(item_model_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n)
    real(wp), intent(out) :: d(self%n, self%n)
    d = 0
    if (.not. self%const_mass) call self%item_mat(REQ_MASS_DQ, 0.0_wp, q, q, a, d)
  end subroutine

  subroutine it_mass_dqq(self, q, a, w, k)
    class(item_model_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n), w(self%n)
    real(wp), intent(out) :: k(self%n, self%n)
    k = 0
    if (.not. self%const_mass) call self%item_mat(REQ_MASS_DQQ, 0.0_wp, q, a, w, k)
  end subroutine

  subroutine it_force(self, t, q, v, f)
    class(item_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: f(self%n)
    call self%item_vec(REQ_FORCE, t, q, v, NO_W, f)
  end subroutine

  subroutine it_force_jac(self, t, q, v, fq, fv)
    class(item_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: fq(self%n, self%n), fv(self%n, self%n)
    call self%item_mat(REQ_FORCE_Q, t, q, v, NO_W, fq)
    call self%item_mat(REQ_FORCE_V, t, q, v, NO_W, fv)
  end subroutine

  subroutine it_hol(self, t, q, g)
    class(item_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: g(self%mh)
    call self%item_vec(REQ_HOL, t, q, q, NO_W, g)
  end subroutine

  subroutine it_hol_jac(self, t, q, gq)
    class(item_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: gq(self%mh, self%n)
    call self%item_mat(REQ_HOL_JAC, t, q, q, NO_W, gq)
  end subroutine

  subroutine it_hol_t(self, t, q, gt)
    class(item_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: gt(self%mh)
    call self%item_vec(REQ_HOL_T, t, q, q, NO_W, gt)
  end subroutine

  subroutine it_hol_vel_q(self, t, q, v, d)
    class(item_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mh, self%n)
    call self%item_mat(REQ_HOL_VEL_Q, t, q, v, NO_W, d)
  end subroutine

  subroutine it_hol_gamma(self, t, q, v, gam)
    class(item_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mh)
    call self%item_vec(REQ_HOL_GAMMA, t, q, v, NO_W, gam)
  end subroutine

  subroutine it_hol_gtl_q(self, t, q, lam, d)
    class(item_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mh)
    real(wp), intent(out) :: d(self%n, self%n)
    d = 0
    if (self%mh > 0) call self%item_mat(REQ_HOL_GTL_Q, t, q, q, lam, d)
  end subroutine

  subroutine it_nh(self, t, q, a, b)
    class(item_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: a(self%mn, self%n), b(self%mn)
    call self%item_mat(REQ_NH_A, t, q, q, NO_W, a)
    call self%item_vec(REQ_NH_B, t, q, q, NO_W, b)
  end subroutine

  subroutine it_nh_vel_q(self, t, q, v, d)
    class(item_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mn, self%n)
    call self%item_mat(REQ_NH_VEL_Q, t, q, v, NO_W, d)
  end subroutine

  subroutine it_nh_gamma(self, t, q, v, gam)
    class(item_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mn)
    call self%item_vec(REQ_NH_GAMMA, t, q, v, NO_W, gam)
  end subroutine

  subroutine it_nh_atl_q(self, t, q, lam, d)
    class(item_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mn)
    real(wp), intent(out) :: d(self%n, self%n)
    d = 0
    if (self%mn > 0) call self%item_mat(REQ_NH_ATL_Q, t, q, q, lam, d)
  end subroutine

  real(wp) function it_energy(self, t, q, v)
    class(item_model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp) :: e(1)
    e = 0
    if (self%has_energy) call self%item_vec(REQ_ENERGY, t, q, v, NO_W, e)
    it_energy = e(1)
  end function

end module pyint_item_model
