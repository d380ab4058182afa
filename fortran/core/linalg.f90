!> Dense linear algebra used by the kernels (LAPACK), and the one choice between
!> pyint_small_lu's plain loops and LAPACK for a dense LU (dense_lu_factor/solve).
module pyint_linalg
  use pyint_kinds
  use pyint_small_lu, only: slu_factor, slu_solve
  implicit none
  private
  public :: lu_factor, lu_solve, lu_factor_solve, lu_inverse, inf_norm
  public :: dense_lu_small, dense_lu_factor, dense_lu_solve

  !> pyint_small_lu is 2-3 times faster than reference LAPACK for n ~ 10-60 (small_lu.F90)
  integer, parameter, public :: SMALL_MAX = 60

  interface
    subroutine dgetrf(m, n, a, lda, ipiv, info)
      import :: wp
      integer, intent(in) :: m, n, lda
      real(wp), intent(inout) :: a(lda, *)
      integer, intent(out) :: ipiv(*), info
    end subroutine
    subroutine dgetrs(trans, n, nrhs, a, lda, ipiv, b, ldb, info)
      import :: wp
      character, intent(in) :: trans
      integer, intent(in) :: n, nrhs, lda, ldb
      real(wp), intent(in) :: a(lda, *)
      integer, intent(in) :: ipiv(*)
      real(wp), intent(inout) :: b(ldb, *)
      integer, intent(out) :: info
    end subroutine
  end interface

contains

  !> LU factorization in place; info > 0 means exactly singular.  An empty
  !> matrix (no constraints) is its own factor: LAPACK would reject LDA = 0.
  subroutine lu_factor(a, ipiv, info)
    real(wp), intent(inout) :: a(:, :)
    integer, intent(out) :: ipiv(:), info
    info = 0
    if (size(a, 1) == 0 .or. size(a, 2) == 0) return
    call dgetrf(size(a, 1), size(a, 2), a, size(a, 1), ipiv, info)
  end subroutine

  !> a x = b: a overwritten by its LU factor (with ipiv, for later lu_solve), b by x; info =
  !> STATUS_SINGULAR when a is exactly singular (b then unchanged).
  subroutine lu_factor_solve(a, ipiv, b, info)
    real(wp), intent(inout) :: a(:, :), b(:)
    integer, intent(out) :: ipiv(:), info
    call lu_factor(a, ipiv, info)
    if (info /= 0) then
      info = STATUS_SINGULAR
      return
    end if
    call lu_solve(a, ipiv, b)
  end subroutine

  !> Solve with a factor from lu_factor; b is overwritten by the solution.
  subroutine lu_solve(a, ipiv, b)
    real(wp), intent(in) :: a(:, :)
    integer, intent(in) :: ipiv(:)
    real(wp), intent(inout) :: b(:)
    integer :: info
    if (size(a, 1) == 0) return
    call dgetrs('N', size(a, 1), 1, a, size(a, 1), ipiv, b, size(b), info)
  end subroutine

  !> a = P L U in place and ainv = a^(-1) from it; info > 0: exactly singular (ainv not formed).
  !> LAPACK, or with plain_loops pyint_small_lu's loops whatever the size (pyint_kkt's M^-1).
  subroutine lu_inverse(a, ipiv, ainv, info, plain_loops)
    real(wp), intent(inout) :: a(:, :)
    integer, intent(out) :: ipiv(:), info
    real(wp), intent(out) :: ainv(:, :)
    logical, intent(in), optional :: plain_loops
    logical :: plain
    integer :: j
    plain = .false.
    if (present(plain_loops)) plain = plain_loops
    if (plain) then
      call slu_factor(a, ipiv, info)
    else
      call lu_factor(a, ipiv, info)
    end if
    if (info /= 0) return
    ainv = 0
    do j = 1, size(a, 1)
      ainv(j, j) = 1
      if (plain) then
        call slu_solve(a, ipiv, ainv(:, j))
      else
        call lu_solve(a, ipiv, ainv(:, j))
      end if
    end do
  end subroutine

  !> Whether a dense LU of n unknowns takes pyint_small_lu's plain loops: up to 4 SMALL_MAX.
  !> Measured on the N-four-bar (bench/symplectic.py), RATTLE's CPU per step with reference
  !> LAPACK / with them: 1.7 at 59 unknowns, 2.6 at 131, and at 203 below generalized-alpha's
  !> (which uses LAPACK).  Also the flag newton_matrix_t%small of a kernel's dense matrix.
  pure logical function dense_lu_small(n)
    integer, intent(in) :: n
    dense_lu_small = n <= 4 * SMALL_MAX
  end function

  !> a = P L U in place, by pyint_small_lu (dense_lu_small) or LAPACK; info = j > 0: column j has
  !> no nonzero pivot.
  subroutine dense_lu_factor(a, ipiv, info)
    real(wp), intent(inout) :: a(:, :)
    integer, intent(out) :: ipiv(:), info
    if (dense_lu_small(size(a, 1))) then
      call slu_factor(a, ipiv, info)
    else
      call lu_factor(a, ipiv, info)
    end if
  end subroutine

  !> Solve with a factor from dense_lu_factor; b is overwritten by the solution.
  subroutine dense_lu_solve(a, ipiv, b)
    real(wp), intent(in) :: a(:, :)
    integer, intent(in) :: ipiv(:)
    real(wp), intent(inout) :: b(:)
    if (dense_lu_small(size(a, 1))) then
      call slu_solve(a, ipiv, b)
    else
      call lu_solve(a, ipiv, b)
    end if
  end subroutine

  pure real(wp) function inf_norm(x)
    real(wp), intent(in) :: x(:)
    if (size(x) == 0) then
      inf_norm = 0
    else
      inf_norm = maxval(abs(x))
    end if
  end function
end module pyint_linalg
