!> The index-1 (KKT) form of a holonomic model_t, optionally Baumgarte-stabilized:
!>
!>     [ M(q)  G^T ] [ a   ]   [ f(t, q, v)                                        ]
!>     [ G     0   ] [ lam ] = [ -(hol_gamma + 2 alpha (G v + g_t) + beta^2 g)      ]
!>
!> alpha = beta = 0 gives the consistent acceleration and multipliers of a
!> state (G a + hol_gamma = 0); alpha, beta > 0 is Baumgarte's feedback
!> e'' + 2 alpha e' + beta^2 e = 0 on the position residual e = g(t, q).
module pyint_index1
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_linalg, only: lu_factor, lu_solve
  implicit none
  private
  public :: kkt_work_t, kkt_init, kkt_accel

  type :: kkt_work_t
    integer :: n = 0, mh = 0
    real(wp), allocatable :: k(:, :), rhs(:), gq(:, :), g(:), gt(:), gam(:)
    integer, allocatable :: ipiv(:)
  end type

contains

  subroutine kkt_init(w, model)
    type(kkt_work_t), intent(out) :: w
    class(model_t), intent(in) :: model
    w%n = model%n
    w%mh = model%mh
    allocate(w%k(w%n + w%mh, w%n + w%mh), w%rhs(w%n + w%mh), w%gq(w%mh, w%n), w%g(w%mh), &
             w%gt(w%mh), w%gam(w%mh), w%ipiv(w%n + w%mh))
  end subroutine

  !> a and lam at (t, q, v); info = STATUS_SINGULAR if the KKT matrix is singular.
  subroutine kkt_accel(model, w, t, q, v, alpha, beta, a, lam, info)
    class(model_t), intent(in) :: model
    type(kkt_work_t), intent(inout) :: w
    real(wp), intent(in) :: t, q(:), v(:), alpha, beta
    real(wp), intent(out) :: a(:), lam(:)
    integer, intent(out) :: info
    integer :: n, m
    n = w%n; m = w%mh
    w%k = 0
    call model%mass(q, w%k(1:n, 1:n))
    call model%force(t, q, v, w%rhs(1:n))
    if (m > 0) then
      call model%hol_jac(t, q, w%gq)
      call model%hol_gamma(t, q, v, w%gam)
      w%k(1:n, n + 1:) = transpose(w%gq)
      w%k(n + 1:, 1:n) = w%gq
      w%rhs(n + 1:) = -w%gam
      if (alpha /= 0) then
        call model%hol_t(t, q, w%gt)
        w%rhs(n + 1:) = w%rhs(n + 1:) - 2 * alpha * (matmul(w%gq, v) + w%gt)
      end if
      if (beta /= 0) then
        call model%hol(t, q, w%g)
        w%rhs(n + 1:) = w%rhs(n + 1:) - beta * beta * w%g
      end if
    end if
    call lu_factor(w%k, w%ipiv, info)
    if (info /= 0) then
      info = STATUS_SINGULAR
      return
    end if
    call lu_solve(w%k, w%ipiv, w%rhs)
    a = w%rhs(1:n)
    lam = w%rhs(n + 1:)
    if (.not. all(abs(w%rhs) <= huge(1.0_wp))) info = STATUS_NONFINITE
  end subroutine

end module pyint_index1
