!> The canonical (q, p) form of a model_t with holonomic constraints.
!>
!> pyint writes the equations of motion M(q) a = f(t, q, v) - G^T lam with
!> the velocity-quadratic (Coriolis, centrifugal) terms of a configuration-
!> dependent M inside f.  With p = M(q) v, pdot = Mdot v + M a, and
!> Mdot v = (M v)_q v = D v, D = mass_dq(q, v):
!>
!>     qdot = phi(q, p)    = M(q)^{-1} p
!>     pdot = psi(t, q, p) = f(t, q, v) + D v - G^T lam
!>
!> For a Lagrangian system with potential V the model's f is
!> -grad V + 1/2 D^T v - D v, so psi = -grad V + 1/2 D^T v: this is exactly
!> the canonical system of H(q, p) = 1/2 p^T M(q)^{-1} p + V(q)
!> (phi = H_p, psi = -H_q).  For other forces (f depending on t, or
!> dissipative) phi and psi are still the equations of motion, but there is
!> no Hamiltonian and no symplecticity.
!>
!> Jacobians (v = M^{-1} p, Mdot = sum_j v_j M_{,j}):
!>   phi_p = M^{-1},                      phi_q = -M^{-1} D
!>   psi_v = f_v + D + Mdot,              psi_p = psi_v M^{-1}
!>   psi_q = f_q + K + psi_v phi_q,       K = d/dq (D(q, v) v)|_v
!> For a constant mass matrix D = Mdot = K = 0 and M^{-1} is formed once.
!> Mdot(:, l) = D(q, e_l) v (model%mass_dq) and K = model%mass_dqq(q, v, v), the
!> second derivatives of M (exact when the model defines mass_dqq; its default is
!> a central difference of mass_dq, fortran/core/model.f90).  Both only enter
!> Newton matrices, never the equations.
module pyint_hamiltonian
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_linalg, only: lu_inverse
  implicit none
  private
  public :: ham_work_t, ham_init, ham_velocity, ham_field, ham_field_jac, ham_minv

  !> Per-trajectory workspace (allocated once per call).
  type :: ham_work_t
    integer :: n = 0
    logical :: const_mass = .true.
    real(wp), allocatable :: minv(:, :)   !< M^{-1} (constant mass: once; else of the last q)
    real(wp), allocatable :: mq(:, :), d(:, :), fq(:, :), fv(:, :), psiv(:, :), kq(:, :)
    real(wp), allocatable :: x(:)
    integer, allocatable :: ipiv(:)
  end type

contains

  !> Allocate the workspace; for a constant mass matrix form M^{-1} once.
  subroutine ham_init(w, model, q0, info)
    type(ham_work_t), intent(out) :: w
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: q0(:)
    integer, intent(out) :: info
    integer :: n
    n = model%n
    w%n = n
    w%const_mass = model%const_mass
    allocate(w%minv(n, n), w%mq(n, n), w%d(n, n), w%fq(n, n), w%fv(n, n), w%psiv(n, n), &
             w%kq(n, n), w%x(n), w%ipiv(n))
    w%d = 0; w%kq = 0
    info = 0
    if (w%const_mass) call invert_mass(model, w, q0, info)
  end subroutine

  !> w%minv = M(q)^{-1}; info = STATUS_SINGULAR if M is singular.
  subroutine invert_mass(model, w, q, info)
    class(model_t), intent(in) :: model
    type(ham_work_t), intent(inout) :: w
    real(wp), intent(in) :: q(:)
    integer, intent(out) :: info
    call model%mass(q, w%mq)
    call lu_inverse(w%mq, w%ipiv, w%minv, info)
    if (info /= 0) info = STATUS_SINGULAR
  end subroutine

  !> M(q)^{-1} (the workspace's copy is valid until the next call with another q).
  subroutine ham_minv(model, w, q, info)
    class(model_t), intent(in) :: model
    type(ham_work_t), intent(inout) :: w
    real(wp), intent(in) :: q(:)
    integer, intent(out) :: info
    info = 0
    if (.not. w%const_mass) call invert_mass(model, w, q, info)
  end subroutine

  !> v = M(q)^{-1} p.
  subroutine ham_velocity(model, w, q, p, v, info)
    class(model_t), intent(in) :: model
    type(ham_work_t), intent(inout) :: w
    real(wp), intent(in) :: q(:), p(:)
    real(wp), intent(out) :: v(:)
    integer, intent(out) :: info
    call ham_minv(model, w, q, info)
    if (info /= 0) return
    v = matmul(w%minv, p)
  end subroutine

  !> phi = v = M^{-1} p and psi = 1/2 (M_q v)^T v + f(t, q, v) (without the constraint force).
  subroutine ham_field(model, w, t, q, p, v, psi, info)
    class(model_t), intent(in) :: model
    type(ham_work_t), intent(inout) :: w
    real(wp), intent(in) :: t, q(:), p(:)
    real(wp), intent(out) :: v(:), psi(:)
    integer, intent(out) :: info
    call ham_velocity(model, w, q, p, v, info)
    if (info /= 0) return
    call model%force(t, q, v, psi)
    if (.not. w%const_mass) then
      call model%mass_dq(q, v, w%d)
      psi = psi + matmul(w%d, v)
    end if
  end subroutine

  !> The field and its Jacobians phi_q, phi_p, psi_q, psi_p (see the module header).
  subroutine ham_field_jac(model, w, t, q, p, v, psi, phq, php, psq, psp, info)
    class(model_t), intent(in) :: model
    type(ham_work_t), intent(inout) :: w
    real(wp), intent(in) :: t, q(:), p(:)
    real(wp), intent(out) :: v(:), psi(:), phq(:, :), php(:, :), psq(:, :), psp(:, :)
    integer, intent(out) :: info
    integer :: j
    call ham_field(model, w, t, q, p, v, psi, info)     ! leaves minv at q and, for M(q), D = mass_dq(q, v)
    if (info /= 0) return
    php = w%minv
    if (w%const_mass) then
      call model%force_jac(t, q, v, w%fq, w%fv)
      phq = 0
      psq = w%fq
      psp = matmul(w%fv, w%minv)
      return
    end if
    phq = -matmul(w%minv, w%d)
    call model%mass_dqq(q, v, v, w%kq)        ! K = d/dq (D(q, v) v) at fixed v
    ! psi_v without f_v: D + Mdot, Mdot(:, l) = D(q, e_l) v
    do j = 1, w%n
      w%x = 0
      w%x(j) = 1
      call model%mass_dq(q, w%x, w%fq)
      w%psiv(:, j) = matmul(w%fq, v) + w%d(:, j)
    end do
    call model%force_jac(t, q, v, w%fq, w%fv)
    w%psiv = w%psiv + w%fv
    psq = w%kq + w%fq + matmul(w%psiv, phq)
    psp = matmul(w%psiv, w%minv)
  end subroutine

end module pyint_hamiltonian
