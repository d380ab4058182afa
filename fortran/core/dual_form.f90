!> Dual-variable (Hamiltonian) form of a model of the shared interface.
!>
!> For a model  M(q) a = f(t, q, v) - A(t, q)^T lam  (nonholonomic, pyint's
!> sign) with canonical momentum p = M(q) v the Hamiltonian is
!>     H(t, q, p) = 1/2 p^T M(q)^{-1} p + V(q)      (f = -grad V + Coriolis terms),
!> and the equations of motion read
!>     q' = H_p,   p' = -H_q - A^T lam,   A(t, q) H_p + b(t, q) = 0.
!> Everything is built from model_t items only:
!>     H_p = v = M^{-1} p,
!>     H_q = -f(t, q, v) - D(q, v) v,        D(q, a) = (M(q) a)_q  (model%mass_dq)
!> because p' = (M v)' = M a + D(q, v) v = f + D v - A^T lam.  (For a Lagrangian
!> system f = -grad V - D v + 1/2 [v^T M_k v]_k, so H_q = grad V - 1/2 [v^T M_k v]_k,
!> the textbook formula.)  A velocity-dependent non-conservative part of f is
!> kept as it is: the same formula then gives the forced (Lagrange-d'Alembert)
!> equations p' = -H_q - A^T lam with H_q := -f - D v.
!>
!> Jacobians (v = M^{-1} p, so v_p = M^{-1}, v_q = -M^{-1} D(q, v)):
!>     H_pp = M^{-1},            H_pq = -M^{-1} D(q, v),
!>     H_qp = K_v M^{-1},        H_qq = K_q + K_v H_pq,
!> where K(q, v) = -f - D(q, v) v with
!>     K_v = -f_v - Mdot - D(q, v),   Mdot(:, l) = D(q, e_l) v   (= sum_k M_k v_k),
!>     K_q = -f_q - d/dq [D(q, v) v] at fixed v = -f_q - model%mass_dqq(q, v, v)
!> (the second derivatives of M: exact when the model defines mass_dqq, a central
!> difference of mass_dq by default, fortran/core/model.f90); for a constant
!> mass matrix (every seed-004 model) D = 0 and everything is analytic:
!>     H_p = M^{-1} p,  H_q = -f,  H_pp = M^{-1},  H_pq = 0,  H_qp = -f_v M^{-1},  H_qq = -f_q.
module pyint_dual
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_linalg, only: lu_factor_solve, lu_inverse
  implicit none
  private
  public :: dual_work_t, dual_init, dual_grad, dual_hess

  !> Scratch of the dual form (allocated once per integration: reentrant).
  type :: dual_work_t
    integer :: n = 0
    logical :: const_mass = .true.
    real(wp), allocatable :: mlu(:, :), minv(:, :)   !< LU of M and M^{-1} (kept for a constant M)
    integer, allocatable :: ipiv(:)
    real(wp), allocatable :: f(:), fq(:, :), fv(:, :), dm(:, :), kv(:, :), kq(:, :), col(:)
    real(wp), allocatable :: mlu_q(:, :), minv_q(:, :)   !< the same at the current q (M(q) models)
    integer, allocatable :: ipiv_q(:)
  end type

contains

  !> Allocate the scratch; for a constant mass matrix factor M once (at q).
  !> info = STATUS_SINGULAR when M is singular.
  subroutine dual_init(w, model, q, info)
    type(dual_work_t), intent(out) :: w
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: q(:)
    integer, intent(out) :: info
    integer :: n
    n = model%n
    w%n = n
    w%const_mass = model%const_mass
    allocate(w%mlu(n, n), w%minv(n, n), w%ipiv(n), w%f(n), w%fq(n, n), w%fv(n, n), w%dm(n, n), &
             w%kv(n, n), w%kq(n, n), w%col(n), w%mlu_q(n, n), w%minv_q(n, n), w%ipiv_q(n))
    info = 0
    if (w%const_mass) call factor_mass(model, q, w%mlu, w%ipiv, w%minv, info)
  end subroutine

  subroutine factor_mass(model, q, mlu, ipiv, minv, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: q(:)
    real(wp), intent(out) :: mlu(:, :), minv(:, :)
    integer, intent(out) :: ipiv(:), info
    call model%mass(q, mlu)
    call lu_inverse(mlu, ipiv, minv, info)
    if (info /= 0) info = STATUS_SINGULAR
  end subroutine

  !> v = H_p(t, q, p) and hq = H_q(t, q, p).
  subroutine dual_grad(model, t, q, p, w, v, hq, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, q(:), p(:)
    type(dual_work_t), intent(inout) :: w
    real(wp), intent(out) :: v(:), hq(:)
    integer, intent(out) :: info
    info = 0
    if (w%const_mass) then
      v = matmul(w%minv, p)
      call model%force(t, q, v, hq)
      hq = -hq
      return
    end if
    call model%mass(q, w%mlu_q)
    v = p
    call lu_factor_solve(w%mlu_q, w%ipiv_q, v, info)
    if (info /= 0) return
    call model%force(t, q, v, w%f)
    call model%mass_dq(q, v, w%dm)
    hq = -w%f - matmul(w%dm, v)
  end subroutine

  !> The four blocks of the Hessian-like Jacobian of (H_p, H_q) at (t, q, p):
  !> hpq = d H_p / dq, hpp = d H_p / dp, hqq = d H_q / dq, hqp = d H_q / dp.
  subroutine dual_hess(model, t, q, p, w, hpq, hpp, hqq, hqp, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, q(:), p(:)
    type(dual_work_t), intent(inout) :: w
    real(wp), intent(out) :: hpq(:, :), hpp(:, :), hqq(:, :), hqp(:, :)
    integer, intent(out) :: info
    real(wp) :: v(w%n), x(w%n)
    integer :: j, n
    n = w%n
    info = 0
    if (w%const_mass) then
      v = matmul(w%minv, p)
      call model%force_jac(t, q, v, w%fq, w%fv)
      hpp = w%minv
      hpq = 0
      hqp = -matmul(w%fv, w%minv)
      hqq = -w%fq
      return
    end if
    call factor_mass(model, q, w%mlu_q, w%ipiv_q, w%minv_q, info)
    if (info /= 0) return
    v = matmul(w%minv_q, p)
    call model%mass_dq(q, v, w%dm)                 ! D(q, v)
    call model%force_jac(t, q, v, w%fq, w%fv)
    hpp = w%minv_q
    hpq = -matmul(w%minv_q, w%dm)
    ! K_v = -f_v - Mdot - D,  Mdot(:, l) = D(q, e_l) v
    w%kv = -w%fv - w%dm
    do j = 1, n
      x = 0
      x(j) = 1
      call model%mass_dq(q, x, w%kq)               ! kq used as scratch: D(q, e_j)
      w%kv(:, j) = w%kv(:, j) - matmul(w%kq, v)
    end do
    ! K_q = -f_q - d/dq [D(q, v) v] (v fixed)
    call model%mass_dqq(q, v, v, w%kq)
    w%kq = -w%fq - w%kq
    hqp = matmul(w%kv, w%minv_q)
    hqq = w%kq + matmul(w%kv, hpq)
  end subroutine

end module pyint_dual
