!> LU factorization with partial pivoting for the small dense systems solved
!> many times per step (KKT matrices of a few tens of unknowns): plain loops,
!> no BLAS calls.  For n ~ 10-60 this is 2-3 times faster than the reference
!> LAPACK dgetrf/dgetrs (whose recursive/blocked code pays call overhead at
!> these sizes).  Real and complex versions of one text (small_lu.inc).
module pyint_small_lu
  use pyint_kinds
  implicit none
  private
  public :: slu_factor, slu_solve, zlu_factor, zlu_solve, band_factor, band_solve, chol_factor, chol_solve

contains

  !> The band LU of LAPACK's dgbtf2 (ab in dgbtrf's storage: ldab >= 2 kl + ku + 1, row kl + ku + 1
  !> the diagonal; ipiv, info as dgbtrf's) in plain loops: the same operations in the same order as
  !> the reference dgbtf2 (idamax's first largest pivot, dscal by the pivot's reciprocal, dger's
  !> column updates skipping a zero multiplier column), so the same factors, but for the updates by
  !> the zero multipliers below a column's last nonzero one, which it skips (as pyint_small_lu's
  !> dense LU: they add zeros); without dgbtf2's calls (idamax, dswap, dscal, dger per column),
  !> which cost more than their arithmetic for a band of a few tens.  prof(:, j): the profile
  !> band_solve runs on, prof(1, j) the count of L's column j up to its last nonzero multiplier,
  !> prof(2, j) the first row of U's column j in ab that is nonzero above the diagonal (kl + ku + 1
  !> if none): a saddle-point matrix's factors fill a fraction of their band (IFToMM A04's Newton
  !> matrix, 119 unknowns, kl = ku = 24: 28 % of U's band, 59 % of L's).
  !> For kl < 32 dgbtrf itself runs dgbtf2 (reference LAPACK's block size 32).
  pure subroutine band_factor(n, kl, ku, ab, ipiv, prof, info)
    integer, intent(in) :: n, kl, ku
    real(wp), contiguous, intent(inout) :: ab(:, :)
    integer, intent(out) :: ipiv(:), prof(:, :), info
    integer :: kv, i, j, jj, jp, km, ju
    real(wp) :: t, amax
    kv = ku + kl
    info = 0
    do j = ku + 2, min(kv, n)          ! fill-in rows of the first columns
      ab(kv - j + 2:kl, j) = 0
    end do
    ju = 1
    do j = 1, n
      if (j + kv <= n) ab(1:kl, j + kv) = 0
      km = min(kl, n - j)
      jp = 1                           ! idamax: the first of the largest |entries|
      amax = abs(ab(kv + 1, j))
      do i = 2, km + 1
        if (abs(ab(kv + i, j)) > amax) then
          jp = i
          amax = abs(ab(kv + i, j))
        end if
      end do
      ipiv(j) = jp + j - 1
      prof(1, j) = 0
      if (ab(kv + jp, j) == 0) then
        if (info == 0) info = j
        cycle
      end if
      ju = max(ju, min(j + ku + jp - 1, n))
      if (jp /= 1) then                ! swap rows j and j + jp - 1 over columns j .. ju
        do jj = 0, ju - j
          t = ab(kv + jp - jj, j + jj)
          ab(kv + jp - jj, j + jj) = ab(kv + 1 - jj, j + jj)
          ab(kv + 1 - jj, j + jj) = t
        end do
      end if
      do while (km > 0)                ! the last nonzero multiplier
        if (ab(kv + 1 + km, j) /= 0) exit
        km = km - 1
      end do
      prof(1, j) = km
      if (km > 0) then                 ! explicit loops: sections of ab on both sides made temporaries
        t = 1 / ab(kv + 1, j)
        do i = kv + 2, kv + 1 + km
          ab(i, j) = t * ab(i, j)
        end do
        do jj = 1, ju - j
          t = ab(kv + 1 - jj, j + jj)
          if (t /= 0) then
            t = -t
            do i = 1, km
              ab(kv + 1 + i - jj, j + jj) = ab(kv + 1 + i - jj, j + jj) + ab(kv + 1 + i, j) * t
            end do
          end if
        end do
      end if
    end do
    do j = 1, n                        ! U's profile
      prof(2, j) = kv + 1
      do i = max(1, kv + 2 - j), kv
        if (ab(i, j) /= 0) then
          prof(2, j) = i
          exit
        end if
      end do
    end do
  end subroutine

  !> b := A^{-1} b with band_factor's factors: the reference dgbtrs ('N', one right-hand side;
  !> its dger and dtbsv) in plain loops, the same operations in the same order, on the factors'
  !> profile (prof, band_factor: the operations skipped multiply zeros).
  pure subroutine band_solve(n, kl, ku, ab, ipiv, prof, b)
    integer, intent(in) :: n, kl, ku
    real(wp), contiguous, intent(in) :: ab(:, :)
    integer, intent(in) :: ipiv(:), prof(:, :)
    real(wp), contiguous, intent(inout) :: b(:)
    integer :: kd, j, l, lm, k, i
    real(wp) :: t
    kd = ku + kl + 1
    if (kl > 0) then
      do j = 1, n - 1
        l = ipiv(j)
        if (l /= j) then
          t = b(l); b(l) = b(j); b(j) = t
        end if
        lm = prof(1, j)
        if (b(j) /= 0 .and. lm > 0) then
          t = -b(j)
          do i = 1, lm
            b(j + i) = b(j + i) + ab(kd + i, j) * t
          end do
        end if
      end do
    end if
    k = kl + ku                        ! dtbsv: upper, no transpose, non-unit, bandwidth k
    do j = n, 1, -1
      if (b(j) /= 0) then
        b(j) = b(j) / ab(k + 1, j)
        t = b(j)
        l = prof(2, j)                 ! rows l .. k of ab: b(j - k - 1 + l : j - 1)
        do i = l, k
          b(j - k - 1 + i) = b(j - k - 1 + i) - t * ab(i, j)
        end do
      end if
    end do
  end subroutine

  !> a = L L^T in place (Cholesky, Golub-Van Loan 4.2), a symmetric positive definite; only the lower
  !> triangle is read and L overwrites it.  Half the operations of slu_factor's LU, and fewer still
  !> on a sparse a: column j's update runs over the pairs of its nonzero entries only (right-looking,
  !> the outer products of a sparse Cholesky: George-Liu, Computer Solution of Large Sparse Positive
  !> Definite Systems, 1981), whose rows, ascending, it records in lr(lp(j):lp(j+1)-1) for
  !> chol_solve (the Schur complement of a mechanism's joints: IFToMM A02, m = 29, 89 of L's 406
  !> entries below the diagonal are nonzero).  lp(n + 1), lr(n (n - 1) / 2).  info = j > 0 if the
  !> pivot of column j is not positive (a singular or indefinite a, or a NaN).
  pure subroutine chol_factor(a, lp, lr, info)
    real(wp), intent(inout), contiguous :: a(:, :)
    integer, intent(out), contiguous :: lp(:), lr(:)
    integer, intent(out) :: info
    integer :: n, j, k, i, p, q1, q2
    real(wp) :: t, d
    n = size(a, 1)
    info = 0
    p = 1
    do j = 1, n
      d = a(j, j)
      if (.not. d > 0) then
        info = j
        return
      end if
      d = sqrt(d)
      a(j, j) = d
      t = 1 / d
      lp(j) = p
      do k = j + 1, n
        if (a(k, j) /= 0) then
          a(k, j) = a(k, j) * t
          lr(p) = k
          p = p + 1
        end if
      end do
      do q1 = lp(j), p - 1
        k = lr(q1)
        t = a(k, j)
        do q2 = q1, p - 1
          i = lr(q2)
          a(i, k) = a(i, k) - t * a(i, j)
        end do
      end do
    end do
    lp(n + 1) = p
  end subroutine

  !> b := A^-1 b with chol_factor's L (its lower triangle, nonzeros lp, lr): L y = b, then L^T x = y.
  pure subroutine chol_solve(a, lp, lr, b)
    real(wp), intent(in), contiguous :: a(:, :)
    integer, intent(in), contiguous :: lp(:), lr(:)
    real(wp), intent(inout), contiguous :: b(:)
    integer :: n, j, q
    real(wp) :: t
    n = size(a, 1)
    do j = 1, n
      t = b(j) / a(j, j)
      b(j) = t
      if (t /= 0) then
        do q = lp(j), lp(j + 1) - 1
          b(lr(q)) = b(lr(q)) - t * a(lr(q), j)
        end do
      end if
    end do
    do j = n, 1, -1
      t = b(j)
      do q = lp(j), lp(j + 1) - 1
        t = t - a(lr(q), j) * b(lr(q))
      end do
      b(j) = t / a(j, j)
    end do
  end subroutine

#define LU_T real(wp)
#define LU_FACTOR slu_factor
#define LU_SOLVE slu_solve
#include "small_lu.inc"
#undef LU_T
#undef LU_FACTOR
#undef LU_SOLVE

#define LU_T complex(wp)
#define LU_FACTOR zlu_factor
#define LU_SOLVE zlu_solve
#include "small_lu.inc"

end module pyint_small_lu
