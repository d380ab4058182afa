!> The index-1 (acceleration-level) form of a constrained system, shared by the
!> methods that integrate it (rk4_index1.f90, block.f90):
!>
!>     [ M   G^T  A^T ] [ a     ]   [ f         ]
!>     [ G   0    0   ] [ lam_h ] = [ -gamma_h  ]          (seed 003 eq. (7))
!>     [ A   0    0   ] [ lam_n ]   [ -gamma_n  ]
!>
!> at (t, q, v): a = qddot and the multipliers are functions of (t, q, v).
module pyint_index1
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_kkt, only: kkt_data_t, kkt_factor_t, kkt_setup, kkt_factor, kkt_solve
  implicit none
  private
  public :: index1_work_t, index1_init, index1_accel

  !> Workspace of one trajectory (allocated per call: reentrant).
  type :: index1_work_t
    integer :: n = 0, mh = 0, mn = 0, nx = 0
    logical :: ready = .false.            !< kkt set up (and a constant M evaluated)
    real(wp), allocatable :: rhs(:), sol(:), mq(:, :), ch(:, :), cn(:, :), bn(:)
    type(kkt_data_t) :: kd
    type(kkt_factor_t) :: kf(1)
  end type

contains

  subroutine index1_init(w, model)
    type(index1_work_t), intent(out) :: w
    class(model_t), intent(in) :: model
    w%n = model%n; w%mh = model%mh; w%mn = model%mn
    w%nx = model%n + model%mh + model%mn
    allocate(w%rhs(w%nx), w%sol(w%nx), w%mq(w%n, w%n), w%ch(w%mh, w%n), w%cn(w%mn, w%n), w%bn(w%mn))
    w%ready = .false.
  end subroutine

  !> Solve the index-1 system at (t, q, v) for a and lam = (lam_h, lam_n).
  !> info: 0, or STATUS_SINGULAR (singular M or rank-deficient constraints).
  subroutine index1_accel(model, t, q, v, w, a, lam, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, q(:), v(:)
    type(index1_work_t), intent(inout) :: w
    real(wp), intent(out) :: a(:), lam(:)
    integer, intent(out) :: info
    integer :: n, mh, mn
    n = w%n; mh = w%mh; mn = w%mn
    if (.not. (model%const_mass .and. w%ready)) call model%mass(q, w%mq)
    if (.not. w%ready) then
      call kkt_setup(w%kd, n, mh + mn, model%const_mass, w%mq, w%kf, info)
      if (info /= 0) return
      w%ready = .true.
    end if
    call model%force(t, q, v, w%rhs(1:n))
    if (mh > 0) then
      call model%hol_jac(t, q, w%ch)
      call model%hol_gamma(t, q, v, w%rhs(n + 1:n + mh))
      w%rhs(n + 1:n + mh) = -w%rhs(n + 1:n + mh)
    end if
    if (mn > 0) then
      call model%nh(t, q, w%cn, w%bn)
      call model%nh_gamma(t, q, v, w%rhs(n + mh + 1:w%nx))
      w%rhs(n + mh + 1:w%nx) = -w%rhs(n + mh + 1:w%nx)
    end if
    call kkt_factor(w%kd, w%mq, w%ch, w%cn, w%kf(1), info)
    if (info /= 0) return
    ! one step of iterative refinement: the Schur path loses digits to the
    ! cancellation in a = M^-1 (f - C^T lam) when M has small entries
    w%sol = w%rhs
    call kkt_solve(w%kd, w%kf(1), w%sol)
    w%rhs(1:n) = w%rhs(1:n) - matmul(w%mq, w%sol(1:n))
    if (mh > 0) then
      w%rhs(1:n) = w%rhs(1:n) - matmul(w%sol(n + 1:n + mh), w%ch)
      w%rhs(n + 1:n + mh) = w%rhs(n + 1:n + mh) - matmul(w%ch, w%sol(1:n))
    end if
    if (mn > 0) then
      w%rhs(1:n) = w%rhs(1:n) - matmul(w%sol(n + mh + 1:w%nx), w%cn)
      w%rhs(n + mh + 1:w%nx) = w%rhs(n + mh + 1:w%nx) - matmul(w%cn, w%sol(1:n))
    end if
    call kkt_solve(w%kd, w%kf(1), w%rhs)
    a = w%sol(1:n) + w%rhs(1:n)
    lam = w%sol(n + 1:w%nx) + w%rhs(n + 1:w%nx)
    info = 0
  end subroutine

end module pyint_index1
