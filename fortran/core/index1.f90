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
  use pyint_small_lu, only: slu_factor, slu_solve
  implicit none
  private
  public :: index1_work_t, index1_init, index1_accel

  !> Workspace of one trajectory (allocated per call: reentrant).
  type :: index1_work_t
    integer :: n = 0, mh = 0, mn = 0, nx = 0
    logical :: have_mass = .false.        !< constant M already evaluated
    real(wp), allocatable :: kkt(:, :), rhs(:), mq(:, :), ch(:, :), cn(:, :), bn(:)
    integer, allocatable :: ipiv(:)
  end type

contains

  subroutine index1_init(w, model)
    type(index1_work_t), intent(out) :: w
    class(model_t), intent(in) :: model
    w%n = model%n; w%mh = model%mh; w%mn = model%mn
    w%nx = model%n + model%mh + model%mn
    allocate(w%kkt(w%nx, w%nx), w%rhs(w%nx), w%ipiv(w%nx), w%mq(w%n, w%n), &
             w%ch(w%mh, w%n), w%cn(w%mn, w%n), w%bn(w%mn))
    w%have_mass = .false.
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
    if (.not. (model%const_mass .and. w%have_mass)) then
      call model%mass(q, w%mq)
      w%have_mass = .true.
    end if
    w%kkt = 0
    w%kkt(1:n, 1:n) = w%mq
    call model%force(t, q, v, w%rhs(1:n))
    if (mh > 0) then
      call model%hol_jac(t, q, w%ch)
      w%kkt(1:n, n + 1:n + mh) = transpose(w%ch)
      w%kkt(n + 1:n + mh, 1:n) = w%ch
      call model%hol_gamma(t, q, v, w%rhs(n + 1:n + mh))
      w%rhs(n + 1:n + mh) = -w%rhs(n + 1:n + mh)
    end if
    if (mn > 0) then
      call model%nh(t, q, w%cn, w%bn)
      w%kkt(1:n, n + mh + 1:w%nx) = transpose(w%cn)
      w%kkt(n + mh + 1:w%nx, 1:n) = w%cn
      call model%nh_gamma(t, q, v, w%rhs(n + mh + 1:w%nx))
      w%rhs(n + mh + 1:w%nx) = -w%rhs(n + mh + 1:w%nx)
    end if
    call slu_factor(w%kkt, w%ipiv, info)
    if (info /= 0) then
      info = STATUS_SINGULAR
      return
    end if
    call slu_solve(w%kkt, w%ipiv, w%rhs)
    a = w%rhs(1:n)
    lam = w%rhs(n + 1:w%nx)
    info = 0
  end subroutine

end module pyint_index1
