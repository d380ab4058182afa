!> Factorization of the KKT matrix of the index-1 form,
!>
!>     K = [ M  C^T ]     C = [G; A] (holonomic rows, then nonholonomic),
!>         [ C  0   ]
!>
!> solved many times per step by the index-1 methods.  For a constant mass
!> matrix M^(-1) is formed once (kkt_setup) and K is factorized through the
!> Schur complement S = C M^(-1) C^T (m x m): cheaper than an LU of the whole
!> (n + m) matrix, and much cheaper when M is diagonal (natural coordinates,
!> point masses).  Otherwise the whole K is LU-factorized.
!>
!> Singular positions.  Where a mechanism's constraint Jacobian loses rank (the N-four-bar's
!> cranks horizontal: its mobility jumps), S has an eigenvalue sigma^2 -> 0 and the index-1
!> solution's multipliers take the constraint drift d (the residual the index-1 form never
!> corrects) amplified by 1 / sigma^2: a kick that leaves the branch (IFToMM A02: RK4 on the
!> index-1 form left it at the fifth crossing, status ok, error 1).  So the Schur path flags
!> min |u_kk| / max |u_kk| of S's LU (~ sigma_min^2 / sigma_max^2; max: also the first
!> factorization's) below d%sing_tol, and a singular S, as STATUS_SINGULAR_POSITION: the run
!> stops naming the position instead (sing_tol = 0: no check).  SING_TOL = 1e-6
!> (sigma ratio 1e-3): A02's crossings at h = 1e-3 reach 6.5e-3 unharmed (drift 3e-12) and
!> 5.2e-4 with a jump of 1e-6 in q; a method that projects its steps onto the constraints
!> (drift at round-off) sets d%sing_tol = SING_TOL_PROJECTED.
!> A fixed-step index-1 method that passes a flagged step on the constraints (the driver's
!> pass_singular; fortran/core/index1.f90 pass_begin) flags at SING_TOL_PASS = 1e-4 (sigma ratio
!> 1e-2) instead: the motion is kicked off its branch well before sigma ratio 1e-3 once the drift
!> has grown (A02, N = 2, block_chebyshev at t = 8.48: drift 2e-10, the velocity error growing
!> from sigma ratio ~0.07, status ok with error 2.0 at 20 s under SING_TOL); flagged steps there
!> are passed, not stopped, so the wider flag costs projections, not runs.  1e-2 (sigma ratio 0.1)
!> passed more steps for no gain (block_legendre 1e-3 at 20 s against 1.1e-4).  No shared problem's
!> run is flagged at 1e-4 (tests/test_golden.py unchanged).
!> A small pivot of S may be a scale, not a rank drop: a light body beside heavy ones spreads S's
!> pivots over decades while C is well conditioned (IFToMM A05, the flyball governor: a
!> 2.5e-6 kg m^2 shaft beside 5 kg balls, pivot ratio 4e-7, 1.6e-6 even with S scaled to a unit
!> diagonal, while sigma_min / sigma_max of C is 0.11).  So a flagged S is checked again on C
!> itself, as the start's rank test measures it (pyint_reduced_model): C C^T with C's rows
!> scaled to unit length (its pivots are the squared sines of the angles between each
!> constraint gradient and the span of the others, whatever the rows' scales), and a row whose
!> length fell below sqrt(sing_tol) of its length at the first factorization (a gradient that
!> vanishes alone); the position is singular only if that check flags it too.
!> LU pivots are not rank-revealing (Higham, Accuracy and Stability of Numerical Algorithms, 2nd
!> ed., 9.3 and 15.3): on the user four-bar of tests/test_step_guard.py S's pivot ratio stayed at
!> 1.27e-4 where its eigenvalue ratio was 6.6e-8, so a crossing went unflagged, its drift (3.3e-9)
!> was amplified by 1 / sigma^2 and the run left the branch (status ok, max|g| 3.8e-3, under some
!> BLAS kernels).  So a method that passes (SING_TOL_PASS, fixed or variable steps) also flags a step where
!> 1 / kappa_1(S) <= sing_tol, for S and for the row-scaled C C^T alike, with kappa_1 = |S|_1
!> |S^-1|_1 and Hager's estimate of |S^-1|_1 from the LU (inv_norm1: a lower bound, within a
!> factor 3 in practice; |S|_1 is within sqrt(m) of s_max, so 1 / kappa_1 is s_min / s_max within
!> a factor about m).  A flagged step costs a pass.  Projected runs, which stop rather than pass at
!> a flag, keep the pivot test.  The estimate starts from the previous
!> factorization's maximizing column of S^-1 (S moves by O(h) between factorizations, its near-null
!> vector too): 2 solves per factorization away from a flag where the cold start took at least 4
!> (up to 10), the cold cost near one (inv_norm1 argues why the flag is unchanged); the check on
!> C C^T runs at flagged steps only.
!> kappa_1(S) measures a chain's length as well as a rank drop: S's smallest eigenvalue at a
!> regular position falls like a discrete Laplacian's (the chain's softest mode), so on A02's
!> N-four-bar kappa_1(S) at crank angle 0 is 385, 799, 4.5e3, 6.8e4 for N = 2, 4, 10, 40 and a
!> fixed 1 / SING_TOL_PASS flagged N = 40 at its first step.  What a crossing does is multiply
!> kappa_1 by a factor independent of N (kappa_1(theta) / kappa_1(0) at theta = 1.3, 1.45: 14, 62
!> for N = 2; 17, 78 for N = 40).  So the pass flag is kappa_1 >= g / SING_TOL_PASS, g =
!> max(1, GROWTH_FLAG SING_TOL_PASS min(kappa_ref, KAPPA_REF_MAX)), kappa_ref the estimate at the
!> first factorization (of S, and of the row-scaled C C^T for its own check; 105 ... 1.25e4 for
!> N = 2 ... 40): a growth of GROWTH_FLAG = 10 since the start, or 1 / SING_TOL_PASS if that is
!> larger.  The calibrated problems keep their flag bit for bit (g = 1 while kappa_ref <= 1e3: A02
!> N = 2 and 4, whose old flag sat at a growth of 26 and 12.5, and the user four-bar's 146); a
!> long chain flags at the same growth as they, N = 40 at about theta = 1.25.  KAPPA_REF_MAX = 1e5
!> caps the reference, so a run that starts near a singular position (its kappa_ref already grown)
!> still flags by kappa_1 = 1e6, the sigma ratio 1e-3 of SING_TOL that A02's unpassed crossings
!> were measured unharmed to (above).
!>
!> Large m (kkt_structure; the index-1 methods hand over the model's constraint pattern): with a
!> diagonal constant M, S = C M^-1 C^T is sparse (S_ij /= 0 only for rows sharing a coordinate)
!> and banded in pyint_newton_matrix's reverse Cuthill-McKee order (A02, N = 40: m = 485, band
!> 13; in the constraints' own order 248).  From m = BAND_MIN = 64 on, where the band LU costs
!> less than a quarter of the dense one, S is formed on its pattern (O(nnz(S)) products of
!> C's rows instead of O(m^2 n)) and factorized by pyint_small_lu's band LU, the condition
!> estimate and the check on C C^T on the same band; smaller problems keep the dense path (bit
!> for bit).
!>
!> Tikhonov-filtered solves (d%mu > 0; only inside a pass of a singular position, pyint_index1
!> pass_begin).  Near a rank drop even a consistent state's solve is ill-conditioned: the LU of S
!> (or of K) solves the component of its right-hand side r along an eigenvector u_i of S with the
!> relative error eps s_max / s_i, and on a state off the constraints by d that component holds d
!> itself, amplified by 1 / s_i ~ 1 / sigma_i^2 (above).  A projected RK4 pass (A02, N = 4,
!> block_legendre) left velocity errors of 1e-12 ... 2e-7 that changed erratically with the number
!> of substeps, and a later slow passage amplified them to 6e-3.  With S = U diag(s) U^T (S is
!> symmetric positive semidefinite; LAPACK dsyev), the filtered solve is Tikhonov's
!>     lam_mu = argmin |S lam - r|^2 + (mu s_max)^2 |lam|^2 = (S^2 + mu^2 s_max^2 I)^(-1) S r
!>            = sum_i phi_i (u_i^T r / s_i) u_i,     phi_i = s_i^2 / (s_i^2 + mu^2 s_max^2)
!> (A. N. Tikhonov, V. Y. Arsenin, Solutions of Ill-Posed Problems, 1977; P. C. Hansen,
!> Rank-Deficient and Discrete Ill-Posed Problems, SIAM 1998, 4.2 and 5.1): components with
!> s_i >> mu s_max are solved as by the LU (phi_i = 1 - O((mu s_max / s_i)^2)), those below are
!> damped instead of amplified: |phi_i / s_i| <= 1 / (2 mu s_max), so a perturbation eps |r| of
!> the right-hand side moves lam by at most eps / (2 mu) |r| / s_max, whatever the rank.  In the
!> pass every solve is made at a state on the constraints (the index-1 form's drift at round-off:
!> Hairer, Wanner, Solving ODEs II, VII.2), where the exact multipliers are bounded through the
!> crossing.  The price: a state within s_i ~ mu s_max of the crossing keeps the dropped part of
!> G a + gamma (A02, N = 2: eps_acc up to 8.5e-8 at a passed step's end, round-off elsewhere,
!> the motion's error unharmed).  TIKHONOV_MU = 1e-10: the bias
!> is below 1e-12 relative for s_i / s_max >= 1e-4 (the pass's flag, SING_TOL_PASS); in a Python
!> prototype of the pass (A02, N = 4, from the exact state at t = 0.717) the velocity error at
!> t = 0.725 was 1.4e-12 ... 2.5e-12 for 4 ... 32 substeps (mu = 1e-8: 7e-11 ... 8e-11; exact
!> solves: 1.3e-12 ... 2.1e-7).  The filter works on the Schur complement, so a varying M is
!> inverted at each factorization (f%minv); S's eigendecomposition costs some ten times its LU
!> (O(m^3) dense, also where C is sparse), paid on a pass's steps only.
!> A banded S needs no eigenvectors: for a symmetric S, (S + i e I)^-1 = (S - i e I)(S^2 + e^2 I)^-1,
!> so lam_mu = Re[(S + i mu s_max I)^-1 r] exactly, one complex band LU (LAPACK zgbtrf; its
!> condition is at most about 1 / mu = 1e10, fine in double: against the eigendecomposition, A02
!> N = 4 and 40 at theta = 1.0 ... pi/2 - 1e-4, the two differ by 1e-13 ... 3e-6 relative, round-off
!> times the condition), s_max by power iteration (band_smax), and kkt_resolved's projector onto
!> the resolved eigenvectors becomes its smooth version S lam_mu (phi_i instead of phi_i >= 1/2).
module pyint_kkt
  use pyint_kinds
  use pyint_small_lu, only: slu_factor, slu_solve, chol_factor, chol_solve
  use pyint_small_lu, only: band_solve
  use pyint_linalg, only: lu_inverse
  use pyint_newton_matrix, only: newton_matrix_t, SOLVER_BANDED
  implicit none
  private
  public :: kkt_data_t, kkt_factor_t, kkt_setup, kkt_factor, kkt_solve, SING_TOL, SING_TOL_PROJECTED, SING_TOL_PASS
  public :: TIKHONOV_MU, kkt_resolved, kkt_project, kkt_ctmul, kkt_structure, kkt_structurable

  real(wp), parameter :: SING_TOL = 1e-6_wp             !< see the module header
  real(wp), parameter :: SING_TOL_PROJECTED = 1e-16_wp  !< the drift at round-off: sigma ratio 1e-8
  real(wp), parameter :: SING_TOL_PASS = 1e-4_wp        !< a fixed-step method that passes (sigma ratio 1e-2)
  real(wp), parameter :: TIKHONOV_MU = 1e-10_wp         !< the filtered solves of a pass (module header)
  real(wp), parameter :: GROWTH_FLAG = 10              !< the pass flag: kappa_1's growth since the start
  real(wp), parameter :: KAPPA_REF_MAX = 1e5_wp         !< ... from a start no worse than this (module header)
  integer, parameter :: BAND_MIN = 64                   !< the banded Schur complement from this m on

  interface
    subroutine zgbtrf(m, n, kl, ku, ab, ldab, ipiv, info)
      import :: wp
      integer, intent(in) :: m, n, kl, ku, ldab
      complex(wp), intent(inout) :: ab(ldab, *)
      integer, intent(out) :: ipiv(*), info
    end subroutine
    subroutine zgbtrs(trans, n, kl, ku, nrhs, ab, ldab, ipiv, b, ldb, info)
      import :: wp
      character, intent(in) :: trans
      integer, intent(in) :: n, kl, ku, nrhs, ldab, ldb
      complex(wp), intent(in) :: ab(ldab, *)
      integer, intent(in) :: ipiv(*)
      complex(wp), intent(inout) :: b(ldb, *)
      integer, intent(out) :: info
    end subroutine
    subroutine dsyev(jobz, uplo, n, a, lda, w, work, lwork, info)
      import :: wp
      character, intent(in) :: jobz, uplo
      integer, intent(in) :: n, lda, lwork
      real(wp), intent(inout) :: a(lda, *)
      real(wp), intent(out) :: w(*), work(*)
      integer, intent(out) :: info
    end subroutine
  end interface

  !> What all factorizations of one trajectory share.
  type :: kkt_data_t
    integer :: n = 0, m = 0
    logical :: schur = .false.        !< constant M: Schur complement with minv
    logical :: diagonal = .false.     !< ... and M diagonal: minv(:, 1) holds its diagonal
    real(wp) :: sing_tol = SING_TOL   !< the singular-position flag (module header)
    !> S's lower triangle only, mirrored (schur_complement's dense loops for a diagonal M): S exactly
    !> symmetric, half the products; the mirrored entries differ from the two-sided sums by round-off
    !> (RATTLE's kept K: the chain N = 8, 3.0 k -> 1.6 k instructions a factorization; over C's
    !> nonzeros, where a column holds few, the mirror cost more than it saved: IFToMM A02)
    logical :: lower_s = .false.
    !> S by Cholesky, S = L L^T (pyint_small_lu's chol_factor), instead of an LU where S is formed on
    !> C's nonzeros (f%sparse, M diagonal), unfiltered and without the pass flag's SING_TOL_PASS (whose
    !> kappa_1 estimate runs on an LU): S is symmetric positive definite where C has full rank, only its
    !> lower triangle is formed, and L keeps S's sparsity (RATTLE's kept K on IFToMM A02, m = 29: 89
    !> of L's 406 entries below the diagonal are nonzero), which the factorization and the solves
    !> run on.  A pivot that is not positive is a singular S (kkt_factor's flag); the pivots of the
    !> singular-position test are the l_kk^2, LDL^T's d_kk (Golub-Van Loan 4.2): S's Schur pivots
    !> without row exchanges, where the LU's u_kk are with them.
    logical :: chol = .false.
    real(wp) :: mu = 0                !< > 0: Tikhonov-filtered solves (module header; a pass only)
    real(wp), allocatable :: minv(:, :)
    !> banded (kkt_structure): S = C M^-1 C^T from C's pattern, band-factorized in the RCM order
    logical :: banded = .false.
    integer, allocatable :: crp(:), crc(:)        !< C's pattern by rows: row i's columns crc(crp(i):crp(i+1)-1)
    integer, allocatable :: si(:), sj(:)          !< S's pattern (both triangles, the diagonal)
    integer, allocatable :: sr(:), sc(:)          !< ... its place in the band storage ab(sr, sc)
    type(newton_matrix_t) :: snm                  !< S's band order, kl, ku and storage (a template)
  end type

  !> One factorized K.
  type :: kkt_factor_t
    real(wp), allocatable :: c(:, :), w(:, :), s(:, :), lu(:, :)
    integer, allocatable :: piv(:)
    integer, allocatable :: prof(:, :)     !< the LU's profile (pyint_small_lu's slu_factor): its solves run on it
    integer, allocatable :: cp(:), ci(:)   !< C's nonzeros by columns: rows ci(cp(j):cp(j+1)-1), ascending
    logical :: sparse = .false.            !< few of C's entries are nonzero (nonzeros): products on cp, ci
    logical :: chol = .false.              !< S holds its Cholesky factor L (d%chol), not an LU
    integer, allocatable :: lp(:), lr(:)   !< ... and L's nonzeros below the diagonal (chol_factor)
    real(wp) :: s_ref = 0     !< the largest pivot of S at the first factorization (the singular-position check)
    integer :: hager_j = 0    !< the column of S^-1 of the previous condition estimate (0: none; inv_norm1)
    real(wp), allocatable :: row_ref(:)    !< |C_i|^2 at the first factorization (the same)
    real(wp), allocatable :: pv(:)         !< S's pivots (s_pivots: kkt_factor's work)
    real(wp), allocatable :: ev(:)         !< filtered: the eigenvalues s_i of S (s then holds U; module header)
    real(wp) :: eps_mu = 0                 !< filtered: mu s_max
    real(wp), allocatable :: minv(:, :)    !< filtered with a varying M: M(q)^(-1)
    real(wp) :: kappa_ref = -1             !< kappa_1(S) at the first factorization (the pass flag; < 0: none yet)
    real(wp) :: t_kappa_ref = -1           !< the same of the row-scaled C C^T (scaled_regular)
    !> banded (d%banded): S's values on its pattern, S and C C^T band-factorized, the filter's complex band LU
    real(wp), allocatable :: sv(:)
    type(newton_matrix_t) :: sm, tm
    complex(wp), allocatable :: zab(:, :)
    integer, allocatable :: zpiv(:)
  end type

  !> C's products run over its nonzeros (schur_complement, kkt_solve, kkt_ctmul) when at most a
  !> quarter of its entries are nonzero and it has at least SPARSE_MIN entries; else the dense loops,
  !> which cost less on small matrices (instructions per step, RATTLE: IFToMM A02, 29 x 30 with 17 %
  !> nonzero, 13 % fewer by the nonzeros; chain N = 8, 8 x 16 with 23 %, 9 % more).
  integer, parameter :: SPARSE_MIN = 256

contains

  !> Prepare for factorizations of K with M = mq (constant when const_mass).
  !> info: 0, or STATUS_SINGULAR when a constant M is singular.
  subroutine kkt_setup(d, n, m, const_mass, mq, f, info)
    type(kkt_data_t), intent(out) :: d
    integer, intent(in) :: n, m
    logical, intent(in) :: const_mass
    real(wp), intent(in) :: mq(:, :)
    type(kkt_factor_t), intent(inout) :: f(:)
    integer, intent(out) :: info
    integer :: j, k
    d%n = n; d%m = m
    d%schur = const_mass .and. m > 0
    info = 0
    if (d%schur) then
      d%diagonal = .true.
      do j = 1, n
        if (any(mq(1:j - 1, j) /= 0) .or. any(mq(j + 1:n, j) /= 0)) d%diagonal = .false.
      end do
      if (d%diagonal) then
        allocate(d%minv(n, 1))
        do j = 1, n
          if (mq(j, j) == 0) then
            info = STATUS_SINGULAR
            return
          end if
          d%minv(j, 1) = 1 / mq(j, j)
        end do
      else
        allocate(d%minv(n, n))
        call dense_inverse(mq, d%minv, info)
        if (info /= 0) return
      end if
    end if
    do k = 1, size(f)
      if (d%schur) then
        allocate(f(k)%c(m, n), f(k)%w(n, m), f(k)%s(m, m), f(k)%piv(m), f(k)%prof(2, m))
      else
        allocate(f(k)%lu(n + m, n + m), f(k)%piv(n + m), f(k)%prof(2, n + m))
      end if
    end do
  end subroutine

  !> Factorize K for this M (used only without the Schur path) and C = [ch; cn].
  !> info: 0 or STATUS_SINGULAR.
  subroutine kkt_factor(d, mq, ch, cn, f, info)
    type(kkt_data_t), intent(in) :: d
    real(wp), intent(in) :: mq(:, :), ch(:, :), cn(:, :)
    type(kkt_factor_t), intent(inout) :: f
    integer, intent(out) :: info
    integer :: n, m, mh, i, jt, j, l
    real(wp) :: snorm, grow
    n = d%n; m = d%m; mh = size(ch, 1)
    if (d%mu > 0) then
      call filtered_factor(d, mq, ch, cn, f, info)
      return
    end if
    if (d%schur) then
      if (d%banded .and. allocated(f%row_ref)) then
        ! C on its pattern only: off it C is zero (the pattern is every entry C can have,
        ! kkt_structure), as the first factorization's whole copy left it; the whole m x n copy
        ! was most of a factorization (RATTLE, the chain N = 128: 82 k of 91 k instructions)
        do i = 1, m
          do l = d%crp(i), d%crp(i + 1) - 1
            j = d%crc(l)
            if (i <= mh) then
              f%c(i, j) = ch(i, j)
            else
              f%c(i, j) = cn(i - mh, j)
            end if
          end do
        end do
      else if (mh == m) then
        ! (C = ch whole, element by element in storage order: sequence association packs ch only if
        ! it is not contiguous; the two section assignments cost 6 times the copy for a few rows,
        ! generalized-alpha's variable-step estimate, m = 2, n = 4: 155 -> 25 instructions)
        call copy_flat(m * n, ch, f%c)
      else
        f%c(1:mh, :) = ch
        f%c(mh + 1:m, :) = cn
      end if
      if (d%banded) then
        call band_schur(d, f, f%sm, .false.)
        if (d%sing_tol == SING_TOL_PASS) snorm = band_norm1(d, f%sv)
        call f%sm%factor(info)
      else
        f%chol = d%chol .and. d%sing_tol /= SING_TOL_PASS
        call schur_complement(d, f)
        if (d%sing_tol == SING_TOL_PASS) snorm = norm1(f%s)
        if (f%chol) then
          if (.not. allocated(f%lp)) allocate(f%lp(m + 1), f%lr(max(1, m * (m - 1) / 2)))
          call chol_factor(f%s, f%lp, f%lr, info)
        else
          call slu_factor(f%s, f%piv, info, f%prof)
        end if
      end if
      if (.not. allocated(f%row_ref)) then
        allocate(f%row_ref(m))
        do i = 1, m
          f%row_ref(i) = sum(f%c(i, :)**2)
        end do
      end if
      ! a singular S is a rank drop of C (redundant rows were dropped at the start): a singular
      ! position; so is a pivot below sing_tol of the largest, this one's or the first one's (a
      ! single row whose gradient vanishes has no other pivot to compare with)
      if (info /= 0) then
        info = merge(STATUS_SINGULAR_POSITION, STATUS_SINGULAR, d%sing_tol > 0)
        return
      end if
      ! (sing_tol = 0, no check: a zero pivot is info /= 0 above, and the pivot test is skipped)
      if (d%sing_tol > 0) then
        if (.not. allocated(f%pv)) allocate(f%pv(m))
        call s_pivots(d, f, f%pv)
        if (f%s_ref == 0) f%s_ref = maxval(f%pv)
        grow = 1
        if (d%sing_tol == SING_TOL_PASS) then
          if (f%kappa_ref < 0) then        ! the first factorization: the references of the pass flag
            jt = 0
            f%kappa_ref = s_inv_norm1(d, f, jt, 0.0_wp) * snorm
            call scaled_factor(d, f, d%sing_tol, jt, f%t_kappa_ref)
          end if
          grow = kappa_growth(d%sing_tol, f%kappa_ref)
        end if
        if (minval(f%pv) <= d%sing_tol * max(maxval(f%pv), f%s_ref) .or. &
            (d%sing_tol == SING_TOL_PASS .and. s_inv_norm1(d, f, f%hager_j, grow / (d%sing_tol * snorm)) &
             * snorm >= grow / d%sing_tol)) then
          if (.not. scaled_regular(d, f, d%sing_tol)) then
            info = STATUS_SINGULAR_POSITION
            return
          end if
        end if
      end if
    else
      f%lu = 0
      f%lu(1:n, 1:n) = mq
      if (m > 0) then
        f%lu(1:n, n + 1:n + mh) = transpose(ch)
        f%lu(n + 1:n + mh, 1:n) = ch
        f%lu(1:n, n + mh + 1:n + m) = transpose(cn)
        f%lu(n + mh + 1:n + m, 1:n) = cn
      end if
      call slu_factor(f%lu, f%piv, info, f%prof)
    end if
    if (info /= 0) info = STATUS_SINGULAR
  end subroutine

  !> W = M^(-1) C^T and S = C W from f%c, M^(-1) the constant one (d%minv) or f%minv; C's nonzero
  !> pattern (f%cp, f%ci), which kkt_solve's products with C and W run on.
  !> For a diagonal M, W has C^T's pattern and S = sum_j C(:, j) W(j, :) is summed over the nonzeros
  !> of each column of C only: O(sum_j nnz(C(:, j))^2) instead of columns_times' O(m nnz(C))
  !> (IFToMM A02 in natural coordinates, 29 x 30 with 5 nonzeros a row: a fifth of the products).
  !> The same sums in the same order (over j, the terms columns_times adds as x(k, j) * 0 left out),
  !> so the same S bit for bit.
  subroutine schur_complement(d, f)
    type(kkt_data_t), intent(in) :: d
    type(kkt_factor_t), intent(inout) :: f
    integer :: i, j, k, p, q
    real(wp) :: wji
    call nonzeros(f)
    f%chol = f%chol .and. d%diagonal .and. f%sparse      ! (d%chol: on C's nonzeros only)
    if (.not. d%schur) then
      call columns_times(f%minv, transpose(f%c), f%w)
    else if (d%diagonal .and. f%sparse) then
      ! W on C^T's pattern (zero off it, as the dense products leave it): the same W without the
      ! products by C's zeros (IFToMM A02: 84 of 870 entries)
      f%w = 0
      do j = 1, d%n
        do p = f%cp(j), f%cp(j + 1) - 1
          i = f%ci(p)
          f%w(j, i) = d%minv(j, 1) * f%c(i, j)
        end do
      end do
      f%s = 0
      do j = 1, d%n
        do p = f%cp(j), f%cp(j + 1) - 1
          i = f%ci(p)
          wji = f%w(j, i)
          if (wji == 0) cycle           ! (as columns_times)
          ! (f%chol: the lower triangle only, rows k >= i: ci ascends from p)
          do q = merge(p, f%cp(j), f%chol), f%cp(j + 1) - 1
            k = f%ci(q)
            f%s(k, i) = f%s(k, i) + f%c(k, j) * wji
          end do
        end do
      end do
      return
    else if (d%diagonal .and. d%m * d%n < SPARSE_MIN .and. .not. d%lower_s) then
      ! a small C (fewer than SPARSE_MIN entries): W and S = C W in scalar loops, S's sums in
      ! columns_times' order with its zero terms skipped as there (the same S bit for bit); the array
      ! operations and the call cost more than the arithmetic here (generalized-alpha's variable-step
      ! estimate, m = 2, n = 4: schur_complement 590 -> 440 instructions; on explicit-shape arrays
      ! (small_schur) 447 -> 401)
      call small_schur(d%m, d%n, d%minv, f%c, f%w, f%s)
      return
    else if (d%diagonal) then
      if (d%lower_s) then     ! columns_times on rows i..m of column i (also for a small C: RATTLE
                              ! on the chain N = 8, 8 x 16, the scalar loops above took 37.4 k
                              ! instructions a step, these 34.4 k)
        call lower_schur(d%m, d%n, d%minv, f%c, f%w, f%s)
        return
      end if
      do i = 1, d%m
        f%w(:, i) = d%minv(:, 1) * f%c(i, :)
      end do
    else
      call columns_times(d%minv, transpose(f%c), f%w)
    end if
    call columns_times(f%c, f%w, f%s)
  end subroutine

  !> W = M^-1 C^T for a diagonal M (minv(:, 1)), on explicit-shape arrays (lower_schur, small_schur)
  pure subroutine scaled_transpose(m, n, minv, c, w)
    integer, intent(in) :: m, n
    real(wp), intent(in) :: minv(n, 1), c(m, n)
    real(wp), intent(out) :: w(n, m)
    integer :: i, j
    do i = 1, m
      do j = 1, n
        w(j, i) = minv(j, 1) * c(i, j)
      end do
    end do
  end subroutine

  !> schur_complement's lower_s path for a diagonal M (minv(:, 1)): W = M^-1 C^T, S's lower
  !> triangle by columns_times' sums on rows i..m, mirrored.  On explicit-shape arrays, so that the
  !> compiler keeps the columns' bounds and addresses in registers (on f's components: the chain
  !> N = 8, 3.62 k -> 3.38 k instructions a factorization); the same operations in the same order.
  pure subroutine lower_schur(m, n, minv, c, w, s)
    integer, intent(in) :: m, n
    real(wp), intent(in) :: minv(n, 1), c(m, n)
    real(wp), intent(out) :: w(n, m), s(m, m)
    integer :: i, j, k
    real(wp) :: wji
    call scaled_transpose(m, n, minv, c, w)
    do i = 1, m
      s(i:, i) = 0
      do j = 1, n
        wji = w(j, i)
        if (wji /= 0) then
          do k = i, m
            s(k, i) = s(k, i) + c(k, j) * wji
          end do
        end if
      end do
    end do
    call mirror_lower(s)
  end subroutine

  !> schur_complement's path for a small C and a diagonal M (minv(:, 1)): W = M^-1 C^T, S = C W in
  !> columns_times' order with its zero terms skipped as there.  On explicit-shape arrays, as
  !> lower_schur (on f's components the compiler reloaded their bounds and strides in the loops).
  pure subroutine small_schur(m, n, minv, c, w, s)
    integer, intent(in) :: m, n
    real(wp), intent(in) :: minv(n, 1), c(m, n)
    real(wp), intent(out) :: w(n, m), s(m, m)
    integer :: i, j, k
    real(wp) :: acc
    call scaled_transpose(m, n, minv, c, w)
    do i = 1, m
      do k = 1, m
        acc = 0
        do j = 1, n
          if (w(j, i) /= 0) acc = acc + c(k, j) * w(j, i)
        end do
        s(k, i) = acc
      end do
    end do
  end subroutine

  !> y = x, k elements in storage order.
  pure subroutine copy_flat(k, x, y)
    integer, intent(in) :: k
    real(wp), intent(in) :: x(k)
    real(wp), intent(out) :: y(k)
    integer :: i
    !GCC$ novector
    do i = 1, k
      y(i) = x(i)
    end do
  end subroutine

  !> s(i, k) = s(k, i) for k > i.
  pure subroutine mirror_lower(s)
    real(wp), intent(inout) :: s(:, :)
    integer :: i, k
    do k = 2, size(s, 1)
      do i = 1, k - 1
        s(i, k) = s(k, i)
      end do
    end do
  end subroutine

  !> f%cp, f%ci: the rows of C's nonzero entries (a NaN counts), column by column, ascending;
  !> f%sparse: at most a quarter of them nonzero in a C of at least SPARSE_MIN entries.
  subroutine nonzeros(f)
    type(kkt_factor_t), intent(inout) :: f
    integer :: j, k, p, m, n
    m = size(f%c, 1); n = size(f%c, 2)
    f%sparse = .false.
    if (m * n < SPARSE_MIN) return
    if (.not. allocated(f%cp)) allocate(f%cp(n + 1), f%ci(max(1, m * n)))
    p = 1
    do j = 1, n
      f%cp(j) = p
      do k = 1, m
        if (f%c(k, j) /= 0) then
          f%ci(p) = k
          p = p + 1
        end if
      end do
    end do
    f%cp(n + 1) = p
    f%sparse = 4 * (p - 1) <= m * n
  end subroutine

  !> The Tikhonov-filtered factorization (d%mu > 0, module header): S = C M^(-1) C^T = U diag(s) U^T,
  !> f%s = U, f%ev = s, f%eps_mu = mu s_max.  A zero row of C (the position step's nonholonomic
  !> rows, pyint_index1) gives s = 0 and phi = 0: its component is dropped.  info: 0, STATUS_SINGULAR
  !> (a singular varying M, or dsyev failed) or STATUS_NONFINITE.
  subroutine filtered_factor(d, mq, ch, cn, f, info)
    type(kkt_data_t), intent(in) :: d
    real(wp), intent(in) :: mq(:, :), ch(:, :), cn(:, :)
    type(kkt_factor_t), intent(inout) :: f
    integer, intent(out) :: info
    real(wp), allocatable :: work(:)
    real(wp) :: wq(1), smax
    integer :: n, m, mh
    n = d%n; m = d%m; mh = size(ch, 1)
    if (.not. allocated(f%c)) allocate(f%c(m, n), f%w(n, m), f%s(m, m))
    f%chol = .false.             ! (f%s: U, formed whole)
    if (.not. allocated(f%ev)) allocate(f%ev(m))
    f%c(1:mh, :) = ch
    f%c(mh + 1:m, :) = cn
    if (d%banded) then       ! (its finite check on S: a non-finite C_ik on the pattern makes S_ii so)
      call band_filtered_factor(d, f, info)
      return
    end if
    info = STATUS_NONFINITE
    if (.not. all(abs(f%c) <= huge(1.0_wp))) return
    if (.not. d%schur) then
      if (.not. allocated(f%minv)) allocate(f%minv(n, n))
      call dense_inverse(mq, f%minv, info)
      if (info /= 0) return
    end if
    call schur_complement(d, f)
    info = 0
    if (m == 0) return
    call dsyev('V', 'L', m, f%s, m, f%ev, wq, -1, info)
    allocate(work(max(1, int(wq(1)))))
    call dsyev('V', 'L', m, f%s, m, f%ev, work, size(work), info)
    if (info /= 0) then
      info = STATUS_SINGULAR
      return
    end if
    f%eps_mu = d%mu * max(maxval(f%ev), 0.0_wp)
    if (.not. f%eps_mu > 0) f%eps_mu = 1     ! C = 0 (s = 0): nothing to solve for, phi = 0
  end subroutine

  !> The filtered factorization of a banded S (module header): lam_mu = Re[(S + i mu s_max I)^-1 r],
  !> S + i mu s_max I band-factorized in f%zab (LAPACK zgbtrf) in S's band order; s_max by power
  !> iteration (band_smax).  info: 0 or STATUS_SINGULAR (zgbtrf failed: S + i e I is regular for a
  !> symmetric S and e > 0, so only a non-finite S), STATUS_NONFINITE (a non-finite S: C_ik non-finite
  !> on C's pattern makes S_ii so, S_ii = sum_k C_ik^2 / M_kk).
  subroutine band_filtered_factor(d, f, info)
    type(kkt_data_t), intent(in) :: d
    type(kkt_factor_t), intent(inout) :: f
    integer, intent(out) :: info
    integer :: p, k, kd, m
    m = d%m
    call band_schur(d, f, f%sm, .true.)
    info = STATUS_NONFINITE
    if (.not. all(abs(f%sv) <= huge(1.0_wp))) return
    f%eps_mu = d%mu * band_smax(d, f%sv)
    if (.not. f%eps_mu > 0) f%eps_mu = 1     ! C = 0 (S = 0): nothing to solve for, lam = 0
    if (.not. allocated(f%zab)) allocate(f%zab(d%snm%ldab, m), f%zpiv(m))
    f%zab = 0
    do p = 1, size(d%si)
      f%zab(d%sr(p), d%sc(p)) = cmplx(f%sv(p), 0.0_wp, wp)
    end do
    kd = d%snm%kl + d%snm%ku + 1
    do k = 1, m
      f%zab(kd, k) = f%zab(kd, k) + cmplx(0.0_wp, f%eps_mu, wp)
    end do
    call zgbtrf(m, m, d%snm%kl, d%snm%ku, f%zab, d%snm%ldab, f%zpiv, info)
    if (info /= 0) info = STATUS_SINGULAR
  end subroutine

  !> The largest eigenvalue of the symmetric positive semidefinite S (values v on its pattern), for
  !> the filter's level mu s_max: the Rayleigh quotient of power iteration from e = (1, .., 1), until
  !> it moves by less than 1 % (at most 50 products), and at least max_i S_ii.  A lower bound of
  !> s_max: the filter then damps at most by 1 / (2 mu s) with s <= s_max slightly below s_max,
  !> immaterial within a factor 2 (module header: the bias is (mu s_max / s_i)^2, below 1e-12 either way).
  real(wp) function band_smax(d, v) result(smax)
    type(kkt_data_t), intent(in) :: d
    real(wp), intent(in) :: v(:)
    real(wp) :: x(d%m), y(d%m), rq, rq0
    integer :: it, p
    x = 1
    rq0 = 0
    do it = 1, 50
      y = pattern_mul(d, v, x)
      rq = dot_product(x, y) / dot_product(x, x)
      if (.not. maxval(abs(y)) > 0) exit
      x = y / maxval(abs(y))
      if (abs(rq - rq0) <= 1e-2_wp * rq) exit
      rq0 = rq
    end do
    smax = rq
    do p = 1, size(v)
      if (d%si(p) == d%sj(p)) smax = max(smax, v(p))
    end do
  end function

  !> lam = Re[(S + i eps_mu I)^-1 r] = (S^2 + eps_mu^2 I)^-1 S r (module header), in place.
  subroutine band_filtered_solve(d, f, r)
    type(kkt_data_t), intent(in) :: d
    type(kkt_factor_t), intent(in) :: f
    real(wp), intent(inout) :: r(:)
    complex(wp) :: z(d%m)
    integer :: k, info
    do k = 1, d%m
      z(k) = cmplx(r(d%snm%perm(k)), 0.0_wp, wp)
    end do
    call zgbtrs('N', d%m, d%snm%kl, d%snm%ku, 1, f%zab, d%snm%ldab, f%zpiv, z, d%m, info)
    do k = 1, d%m
      r(d%snm%perm(k)) = real(z(k), wp)
    end do
  end subroutine

  !> max |U_R U_R^T r| of a filtered factorization: r's part along the eigenvectors that the filter
  !> resolves, s_i >= mu s_max (phi_i >= 1/2; Hansen's resolution limit), those below it being
  !> damped like a null space.  A Gauss-Newton iteration with filtered steps (pyint_index1) removes
  !> this part at a rate of at most 1/2 per step (1 - phi_i), quadratically for s_i >> mu s_max.
  !> Banded (no eigenvectors): max |S lam_mu| = max |sum_i phi_i (u_i^T r) u_i|, the filter's smooth
  !> version of that projector (phi_i >= 1/2 exactly where s_i >= mu s_max; Hansen 4.2), which a
  !> filtered Gauss-Newton step shrinks by the factor 1 - phi_i too.
  real(wp) function kkt_resolved(d, f, r) result(x)
    type(kkt_data_t), intent(in) :: d
    type(kkt_factor_t), intent(in) :: f
    real(wp), intent(in) :: r(:)
    real(wp) :: c(size(r))
    if (d%banded) then
      c = r
      call band_filtered_solve(d, f, c)
      x = maxval(abs(pattern_mul(d, f%sv, c)), mask=.true.)
      return
    end if
    c = matmul(r, f%s)
    where (f%ev < f%eps_mu) c = 0
    x = maxval(abs(matmul(f%s, c)), mask=.true.)
  end function

  !> Has C full rank once its rows are scaled to unit length (the module header)?  Only called for
  !> an S whose pivots were flagged, so an unflagged run never pays for it.
  logical function scaled_regular(d, f, tol)
    type(kkt_data_t), intent(in) :: d
    type(kkt_factor_t), intent(inout) :: f
    real(wp), intent(in) :: tol
    real(wp) :: kappa
    integer :: i, pivok
    do i = 1, size(f%c, 1)
      scaled_regular = sum(f%c(i, :)**2) > tol * f%row_ref(i)
      if (.not. scaled_regular) return
    end do
    call scaled_factor(d, f, tol, pivok, kappa)
    scaled_regular = pivok == 1
    if (scaled_regular .and. tol == SING_TOL_PASS) &
      scaled_regular = kappa < kappa_growth(tol, f%t_kappa_ref) / tol
  end function

  !> T = C C^T with C's rows scaled to unit length, LU-factorized (dense, or in f%tm when banded):
  !> pivok = 1 if it is regular with every pivot above tol, else 0; kappa = kappa_1(T) by Hager's
  !> estimate (tol = SING_TOL_PASS and pivok only; else 0).  A zero row leaves pivok = 0.
  subroutine scaled_factor(d, f, tol, pivok, kappa)
    type(kkt_data_t), intent(in) :: d
    type(kkt_factor_t), intent(inout) :: f
    real(wp), intent(in) :: tol
    integer, intent(out) :: pivok
    real(wp), intent(out) :: kappa
    real(wp), allocatable :: t(:, :), tv(:), pv(:)
    real(wp) :: len2(size(f%c, 1)), tnorm
    integer :: piv(size(f%c, 1)), info, i, j, m, jt, p
    m = size(f%c, 1)
    pivok = 0
    kappa = 0
    do i = 1, m
      len2(i) = sum(f%c(i, :)**2)
    end do
    if (.not. all(len2 > 0)) return
    if (d%banded) then
      allocate(tv(size(d%si)))
      do p = 1, size(d%si)
        i = d%si(p)
        j = d%sj(p)
        tv(p) = sum(f%c(i, d%crc(d%crp(i):d%crp(i + 1) - 1)) * f%c(j, d%crc(d%crp(i):d%crp(i + 1) - 1))) &
                / sqrt(len2(i) * len2(j))
      end do
      f%tm%ab = 0
      do p = 1, size(d%si)
        f%tm%ab(d%sr(p), d%sc(p)) = tv(p)
      end do
      tnorm = band_norm1(d, tv)
      call f%tm%factor(info)
      if (info /= 0) return
      pv = [(abs(f%tm%ab(f%tm%kl + f%tm%ku + 1, i)), i = 1, m)]
      if (minval(pv) > tol) pivok = 1
      jt = 0                             ! no warm start: t is formed at flagged steps only
      if (pivok == 1 .and. tol == SING_TOL_PASS) kappa = inv_norm1(f%tm%ab, f%tm%ipiv, jt, 0.0_wp, f%tm) * tnorm
    else
      allocate(t(m, m))
      do j = 1, m
        do i = 1, m
          t(i, j) = dot_product(f%c(i, :), f%c(j, :)) / sqrt(len2(i) * len2(j))
        end do
      end do
      if (tol == SING_TOL_PASS) tnorm = norm1(t)
      call slu_factor(t, piv, info)
      if (info /= 0) return
      if (minval(pivots(t)) > tol) pivok = 1
      jt = 0                             ! no warm start: t is formed at flagged steps only
      if (pivok == 1 .and. tol == SING_TOL_PASS) kappa = inv_norm1(t, piv, jt, 0.0_wp) * tnorm
    end if
  end subroutine

  !> The pass flag's factor on 1 / sing_tol (module header): kappa_1's growth since the first
  !> factorization, kappa_ref (capped), when that is above 1 / sing_tol; else 1.
  pure real(wp) function kappa_growth(tol, kappa_ref) result(g)
    real(wp), intent(in) :: tol, kappa_ref
    g = max(1.0_wp, GROWTH_FLAG * tol * min(kappa_ref, KAPPA_REF_MAX))
  end function

  !> pv = |u_kk| of S's LU (dense or banded; l_kk^2 of its Cholesky factor), into the caller's
  !> array (an allocatable result was two heap allocations per factorization).
  pure subroutine s_pivots(d, f, pv)
    type(kkt_data_t), intent(in) :: d
    type(kkt_factor_t), intent(in) :: f
    real(wp), intent(out) :: pv(:)
    integer :: k
    if (d%banded) then
      do k = 1, d%m
        pv(k) = abs(f%sm%ab(f%sm%kl + f%sm%ku + 1, k))
      end do
    else if (f%chol) then
      do k = 1, d%m
        pv(k) = abs(f%s(k, k))**2
      end do
    else
      do k = 1, d%m
        pv(k) = abs(f%s(k, k))
      end do
    end if
  end subroutine

  !> inv_norm1 of S's LU (dense or banded).
  real(wp) function s_inv_norm1(d, f, jw, flag) result(est)
    type(kkt_data_t), intent(in) :: d
    type(kkt_factor_t), intent(in) :: f
    integer, intent(inout) :: jw
    real(wp), intent(in) :: flag
    if (d%banded) then
      est = inv_norm1(f%sm%ab, f%sm%ipiv, jw, flag, f%sm)
    else
      est = inv_norm1(f%s, f%piv, jw, flag)
    end if
  end function

  !> b := A^-1 b, A band-factorized in nm (pyint_newton_matrix's band order; nm is only read).
  subroutine band_apply(nm, b)
    type(newton_matrix_t), intent(in) :: nm
    real(wp), intent(inout) :: b(:)
    real(wp) :: tmp(nm%nx)
    integer :: k
    do k = 1, nm%nx
      tmp(k) = b(nm%perm(k))
    end do
    call band_solve(nm%nx, nm%kl, nm%ku, nm%ab, nm%ipiv, nm%prof, tmp)
    do k = 1, nm%nx
      b(nm%perm(k)) = tmp(k)
    end do
  end subroutine

  !> |A|_1 of a symmetric matrix given by its values v on S's pattern (d%si, d%sj).
  pure real(wp) function band_norm1(d, v) result(r)
    type(kkt_data_t), intent(in) :: d
    real(wp), intent(in) :: v(:)
    real(wp) :: cs(d%m)
    integer :: p
    cs = 0
    do p = 1, size(v)
      cs(d%sj(p)) = cs(d%sj(p)) + abs(v(p))
    end do
    r = maxval(cs)
  end function

  !> y = A x for A given by its values v on S's pattern.
  pure function pattern_mul(d, v, x) result(y)
    type(kkt_data_t), intent(in) :: d
    real(wp), intent(in) :: v(:), x(:)
    real(wp) :: y(d%m)
    integer :: p
    y = 0
    do p = 1, size(v)
      y(d%si(p)) = y(d%si(p)) + v(p) * x(d%sj(p))
    end do
  end function

  !> S = C M^-1 C^T on its pattern (d%banded: a diagonal constant M, d%minv(:, 1)) from f%c into
  !> f%sv, and into nm's band storage (filtered: f%zab, the complex one) for the factorization.
  !> S_ij = sum_k C_ik M_kk^-1 C_jk over row i's pattern: O(nnz(S) nnz(C) / m) per S, not O(m^2 n).
  subroutine band_schur(d, f, nm, filtered)
    type(kkt_data_t), intent(in) :: d
    type(kkt_factor_t), intent(inout) :: f
    type(newton_matrix_t), intent(inout) :: nm
    logical, intent(in) :: filtered
    integer :: p, i, j, k, l
    real(wp) :: acc
    if (.not. allocated(f%sv)) allocate(f%sv(size(d%si)))
    do p = 1, size(d%si)
      i = d%si(p)
      j = d%sj(p)
      acc = 0
      do l = d%crp(i), d%crp(i + 1) - 1
        k = d%crc(l)
        acc = acc + f%c(i, k) * (d%minv(k, 1) * f%c(j, k))
      end do
      f%sv(p) = acc
    end do
    if (filtered) return
    nm%ab = 0
    do p = 1, size(d%si)
      nm%ab(d%sr(p), d%sc(p)) = f%sv(p)
    end do
  end subroutine

  !> Can S be banded (kkt_structure): a constant diagonal M and at least BAND_MIN rows.  A caller
  !> records C's pattern (the model's add_hol_jac, add_nh_jac) only then.
  logical function kkt_structurable(d)
    type(kkt_data_t), intent(in) :: d
    kkt_structurable = d%schur .and. d%diagonal .and. d%m >= BAND_MIN
  end function

  !> From C's pattern (pairs (ci, cj), repeats allowed; every entry C can ever have, the model's
  !> contract), S's pattern (rows i, j sharing a column) and its reverse Cuthill-McKee band order
  !> (pyint_newton_matrix's, SOLVER_BANDED): S is then assembled on its pattern and band-factorized
  !> (module header) when the band's LU costs less than a quarter of the dense one; else d stays
  !> dense.  Call after kkt_setup, before the first kkt_factor.
  subroutine kkt_structure(d, f, ci, cj)
    type(kkt_data_t), intent(inout) :: d
    type(kkt_factor_t), intent(inout) :: f(:)
    integer, intent(in) :: ci(:), cj(:)
    integer, allocatable :: cnt(:), ccp(:), ccr(:), mark(:), pi(:), pj(:), tmp(:)
    integer :: m, n, k, p, i, j, l, np, info, kd
    if (.not. kkt_structurable(d)) return
    m = d%m; n = d%n
    if (any(ci < 1 .or. ci > m .or. cj < 1 .or. cj > n)) return
    ! C's pattern by rows (crp, crc) and by columns (ccp, ccr), repeats dropped
    allocate(mark(max(m, n)))
    call by_key(ci, cj, m, n, d%crp, d%crc, mark)
    call by_key(cj, ci, n, m, ccp, ccr, mark)
    ! S's pattern: for each row i, the rows j sharing a column with it
    allocate(cnt(m), pi(64 * m), pj(64 * m))
    mark = 0
    np = 0
    do i = 1, m
      do l = d%crp(i), d%crp(i + 1) - 1
        k = d%crc(l)
        do p = ccp(k), ccp(k + 1) - 1
          j = ccr(p)
          if (mark(j) == i) cycle
          mark(j) = i
          if (np == size(pi)) then
            allocate(tmp(2 * np)); tmp(1:np) = pi; call move_alloc(tmp, pi)
            allocate(tmp(2 * np)); tmp(1:np) = pj; call move_alloc(tmp, pj)
          end if
          np = np + 1
          pi(np) = i
          pj(np) = j
        end do
      end do
    end do
    call d%snm%record(m)
    do p = 1, np
      call d%snm%add(pi(p), pj(p), 0.0_wp)
    end do
    call d%snm%setup(SOLVER_BANDED, info)
    if (info /= 0 .or. 2 * real(m, wp) * (d%snm%kl + 1) * (d%snm%kl + d%snm%ku + 1) > real(m, wp)**3 / 12) then
      deallocate(d%crp, d%crc)
      return
    end if
    d%si = pi(1:np)
    d%sj = pj(1:np)
    allocate(d%sr(np), d%sc(np))
    kd = d%snm%kl + d%snm%ku + 1
    do p = 1, np
      d%sr(p) = kd + d%snm%iperm(pi(p)) - d%snm%iperm(pj(p))
      d%sc(p) = d%snm%iperm(pj(p))
    end do
    d%banded = .true.
    do k = 1, size(f)
      f(k)%sm = d%snm
      f(k)%tm = d%snm
      if (allocated(f(k)%s)) deallocate(f(k)%s)
      if (allocated(f(k)%w)) deallocate(f(k)%w)
    end do
  end subroutine

  !> Pairs (a(p), b(p)), a in 1..na, b in 1..nb, grouped by a (counting sort), repeats dropped:
  !> key a's values are vals(ptr(a):ptr(a+1)-1).  mark: work of size >= nb.
  subroutine by_key(a, b, na, nb, ptr, vals, mark)
    integer, intent(in) :: a(:), b(:), na, nb
    integer, allocatable, intent(out) :: ptr(:), vals(:)
    integer, intent(inout) :: mark(:)
    integer, allocatable :: pos(:), tmp(:)
    integer :: p, k, q
    allocate(ptr(na + 1), pos(na), tmp(size(a)))
    ptr = 0
    do p = 1, size(a)
      ptr(a(p) + 1) = ptr(a(p) + 1) + 1
    end do
    ptr(1) = 1
    do k = 1, na
      ptr(k + 1) = ptr(k + 1) + ptr(k)
    end do
    pos = ptr(1:na)
    do p = 1, size(a)
      tmp(pos(a(p))) = b(p)
      pos(a(p)) = pos(a(p)) + 1
    end do
    ! drop repeats within each key (mark(b) = the key that last held b)
    mark(1:nb) = 0
    q = 0
    allocate(vals(size(a)))
    do k = 1, na
      p = ptr(k)
      ptr(k) = q + 1
      do while (p < pos(k))
        if (mark(tmp(p)) /= k) then
          mark(tmp(p)) = k
          q = q + 1
          vals(q) = tmp(p)
        end if
        p = p + 1
      end do
    end do
    ptr(na + 1) = q + 1
    vals = vals(1:q)
  end subroutine

  !> Hager's estimate of |A^-1|_1 for a symmetric A from its LU (Higham, Accuracy and Stability of
  !> Numerical Algorithms, 15.3; LAPACK dlacn2): a lower bound, in practice within a factor 3.
  !> jw > 0: first try the vertex e_jw, the maximizing column of the previous factorization of a
  !> matrix that changed by O(h) since: one iteration, 2 solves, whose optimality test (Higham's
  !> |z|_inf <= z^T x) confirms it a local maximum of |A^-1 x|_1 on the unit ball.  Near a rank drop
  !> A^-1 ~ u u^T / s_min, and the test passes at e_j only for j = argmax |u_j|: the vertex the cold
  !> start (x = e / n) reaches, with the same estimate.  Away from one, a local maximum may differ
  !> from the cold start's; so the cold iteration also runs when the test fails or the estimate is
  !> within a factor WARM_MARGIN of flag (the flag: est >= flag), reusing the warm iteration if it
  !> reaches e_jw (there it usually does, after its first 2 solves), and the larger estimate is kept:
  !> bit for bit max(warm, cold), so never below the cold start's where the flag could be decided.
  !> jw returns the vertex of the estimate kept.
  function inv_norm1(lu, piv, jw, flag, nm) result(est)
    real(wp), intent(in) :: lu(:, :)
    integer, intent(in) :: piv(:)
    integer, intent(inout) :: jw
    real(wp), intent(in) :: flag
    type(newton_matrix_t), intent(in), optional :: nm   !< banded: A's LU is nm's (lu, piv unused)
    real(wp), parameter :: WARM_MARGIN = 10
    real(wp) :: est, x(size(piv)), y(size(piv)), z(size(piv)), zw(size(piv)), e, ew
    integer :: k, j, jx, jw0
    est = 0
    jw0 = jw
    if (jw0 > 0) then
      y = 0
      y(jw0) = 1
      call solve(y)
      ew = sum(abs(y))
      zw = sign(1.0_wp, y)
      call solve(zw)        ! A^-T = A^-1
      est = ew
      if (maxval(abs(zw)) <= zw(jw0) .and. ew * WARM_MARGIN < flag) return
    end if
    x = 1.0_wp / size(piv)
    jx = 0                               ! x's vertex (0: e / n)
    do k = 1, 5
      if (jx > 0 .and. jx == jw0) then   ! the warm start's iteration, already made
        e = ew
        z = zw
      else
        y = x
        call solve(y)
        e = sum(abs(y))
        z = sign(1.0_wp, y)
        call solve(z)
      end if
      j = maxloc(abs(z), 1)
      if (e > est .or. jw <= 0) then
        est = max(est, e)
        jw = merge(jx, j, jx > 0)
      end if
      if (abs(z(j)) <= dot_product(z, x)) exit
      x = 0
      x(j) = 1
      jx = j
    end do
  contains
    subroutine solve(b)
      real(wp), intent(inout) :: b(:)
      if (present(nm)) then
        call band_apply(nm, b)
      else
        call slu_solve(lu, piv, b)
      end if
    end subroutine
  end function

  !> |A|_1 = max_j sum_i |a_ij| (no temporary).
  pure real(wp) function norm1(a) result(r)
    real(wp), intent(in) :: a(:, :)
    integer :: j
    r = 0
    do j = 1, size(a, 2)
      r = max(r, sum(abs(a(:, j))))
    end do
  end function

  !> |u_kk| of an LU factorization held in place.
  pure function pivots(lu) result(d)
    real(wp), intent(in) :: lu(:, :)
    real(wp) :: d(size(lu, 1))
    integer :: k
    do k = 1, size(lu, 1)
      d(k) = abs(lu(k, k))
    end do
  end function

  !> x = K^(-1) x in place (x = (a-part, lam-part)).  top_zero: the caller's x(1:n) is zero (a
  !> refinement of the constraint rows), whose products the dense Schur path of a diagonal M skips.
  !> x contiguous (here and in the two paths): s_solve's contiguous b, a section x(n + 1:n + m) of
  !> an assumed-shape x, was packed into a heap copy and back at every solve (RATTLE on the chain
  !> N = 8: 5.6 solves a step, 1.4 k of its 35.6 k instructions).
  subroutine kkt_solve(d, f, x, top_zero)
    type(kkt_data_t), intent(in) :: d
    type(kkt_factor_t), intent(in) :: f
    real(wp), intent(inout), contiguous :: x(:)
    logical, intent(in), optional :: top_zero
    logical :: tz
    if (d%schur .and. d%diagonal .and. .not. d%banded .and. d%mu == 0) then
      tz = .false.
      if (present(top_zero)) tz = top_zero
      call diagonal_solve(d, f, x, tz)
    else
      call general_solve(d, f, x)
    end if
  end subroutine

  !> kkt_solve's other paths (a0: an automatic array of n).
  subroutine general_solve(d, f, x)
    type(kkt_data_t), intent(in) :: d
    type(kkt_factor_t), intent(in) :: f
    real(wp), intent(inout), contiguous :: x(:)
    real(wp) :: a0(d%n), acc
    integer :: n, m, i, j, p
    n = d%n; m = d%m
    if (.not. (d%schur .or. d%mu > 0)) then
      call slu_solve(f%lu, f%piv, x, f%prof)
      return
    end if
    if (d%banded) then      ! the same on C's pattern (kkt_structure), M diagonal
      a0 = d%minv(:, 1) * x(1:n)
      do i = 1, m      ! (a loop, not sum() over vector subscripts: their temporaries were a heap
        acc = 0        ! allocation per row; the same sum in the same order)
        do p = d%crp(i), d%crp(i + 1) - 1
          acc = acc + f%c(i, d%crc(p)) * a0(d%crc(p))
        end do
        x(n + i) = -x(n + i) + acc
      end do
      if (d%mu > 0) then
        call band_filtered_solve(d, f, x(n + 1:n + m))
      else
        call band_apply(f%sm, x(n + 1:n + m))
      end if
      x(1:n) = 0
      do i = 1, m
        do j = d%crp(i), d%crp(i + 1) - 1
          x(d%crc(j)) = x(d%crc(j)) + f%c(i, d%crc(j)) * x(n + i)
        end do
      end do
      x(1:n) = a0 - d%minv(:, 1) * x(1:n)
      return
    end if
    ! a0 = M^-1 r1; lam = S^-1 (C a0 - r2) (filtered: U diag(phi / s) U^T (C a0 - r2)); a = a0 - W lam
    if (.not. d%schur) then
      a0 = matmul(f%minv, x(1:n))
    else if (d%diagonal) then
      a0 = d%minv(:, 1) * x(1:n)
    else
      a0 = 0
      do j = 1, n
        a0 = a0 + d%minv(:, j) * x(j)
      end do
    end if
    ! C a0 and W lam over C's nonzeros (schur_complement), W's for a diagonal M (C^T's pattern):
    ! the dense loops' sums in their order but for the terms x * 0
    x(n + 1:n + m) = -x(n + 1:n + m)
    call add_c_times(f, n, m, a0, x(n + 1:n + m))
    if (d%mu > 0) then
      x(n + 1:n + m) = matmul(f%s, f%ev / (f%ev**2 + f%eps_mu**2) * matmul(x(n + 1:n + m), f%s))
    else
      call s_solve(f, x(n + 1:n + m))
    end if
    call sub_w_times(f, n, m, d%schur .and. d%diagonal .and. f%sparse, x(n + 1:n + m), a0)
    x(1:n) = a0
  end subroutine

  !> y += C a, column by column (over C's nonzeros when f%sparse): kkt_solve's C M^-1 r1.
  subroutine add_c_times(f, n, m, a, y)
    type(kkt_factor_t), intent(in) :: f
    integer, intent(in) :: n, m
    real(wp), intent(in) :: a(n)
    real(wp), intent(inout) :: y(m)
    integer :: j, k, p
    if (f%sparse) then
      do j = 1, n
        do p = f%cp(j), f%cp(j + 1) - 1
          k = f%ci(p)
          y(k) = y(k) + f%c(k, j) * a(j)
        end do
      end do
    else
      do j = 1, n
        y = y + f%c(:, j) * a(j)
      end do
    end if
  end subroutine

  !> a -= W lam, W = M^-1 C^T (over C^T's pattern when sparse: W's own for a diagonal M, as
  !> schur_complement fills it), column by column otherwise: kkt_solve's back-substitution.
  subroutine sub_w_times(f, n, m, sparse, lam, a)
    type(kkt_factor_t), intent(in) :: f
    integer, intent(in) :: n, m
    logical, intent(in) :: sparse
    real(wp), intent(in) :: lam(m)
    real(wp), intent(inout) :: a(n)
    integer :: i, j, k, p
    if (sparse) then
      do j = 1, n
        do p = f%cp(j), f%cp(j + 1) - 1
          k = f%ci(p)
          a(j) = a(j) - f%w(j, k) * lam(k)
        end do
      end do
    else
      do i = 1, m
        a = a - f%w(:, i) * lam(i)
      end do
    end if
  end subroutine

  !> kkt_solve's dense Schur path for a diagonal M, unfiltered: general_solve's products in the same
  !> order with a0 = M^-1 r1 held in x(1:n) itself (general_solve's a0, an automatic array, is a
  !> heap allocation per solve: RATTLE solves five to six times a step with one factorization).
  subroutine diagonal_solve(d, f, x, top_zero)
    type(kkt_data_t), intent(in) :: d
    type(kkt_factor_t), intent(in) :: f
    real(wp), intent(inout), contiguous :: x(:)
    logical, intent(in) :: top_zero
    integer :: n, m
    n = d%n; m = d%m
    x(n + 1:n + m) = -x(n + 1:n + m)
    if (.not. top_zero) then       ! (top_zero: a0 = 0, C a0 adds nothing)
      x(1:n) = d%minv(:, 1) * x(1:n)
      call add_c_times(f, n, m, x(1:n), x(n + 1:n + m))
    end if
    call s_solve(f, x(n + 1:n + m))
    call sub_w_times(f, n, m, f%sparse, x(n + 1:n + m), x(1:n))
  end subroutine

  !> b := S^-1 b with the dense factors of S (its LU, or its Cholesky factor: d%chol).
  pure subroutine s_solve(f, b)
    type(kkt_factor_t), intent(in) :: f
    real(wp), intent(inout), contiguous :: b(:)
    if (f%chol) then
      call chol_solve(f%s, f%lp, f%lr, b)
    else
      call slu_solve(f%s, f%piv, b, f%prof)
    end if
  end subroutine

  !> x = the first block of K^(-1) (M x, 0) on the Schur path (d%schur, unfiltered: d%mu = 0):
  !> x - W S^(-1) C x, W = M^(-1) C^T, the projection onto C x = 0 along M^(-1) C^T.  kkt_solve of
  !> (M x, 0) forms a0 = M^(-1) (M x), x itself up to round-off: neither product is formed here.
  !> Without the Schur path the caller solves (M x, 0) with kkt_solve.  y: workspace of m (an
  !> automatic array was a heap allocation per call; contiguous: s_solve's contiguous b is then y
  !> itself, where an assumed-shape y was packed into a heap temporary and back at every call).
  subroutine kkt_project(d, f, x, y)
    type(kkt_data_t), intent(in) :: d
    type(kkt_factor_t), intent(in) :: f
    real(wp), intent(inout) :: x(:)
    real(wp), intent(out), contiguous :: y(:)
    integer :: i, j
    y(1:d%m) = 0
    do j = 1, d%n
      do i = 1, d%m
        y(i) = y(i) + f%c(i, j) * x(j)
      end do
    end do
    call s_solve(f, y(1:d%m))
    do i = 1, d%m
      do j = 1, d%n
        x(j) = x(j) - f%w(j, i) * y(i)
      end do
    end do
  end subroutine

  !> x = C^T y from a factorization's C (over its nonzeros when sparse: schur_complement): the
  !> products G^T y at a kept K's point without the model's evaluation of G (RATTLE's iterations).
  pure subroutine kkt_ctmul(f, y, x)
    type(kkt_factor_t), intent(in) :: f
    real(wp), intent(in) :: y(:)
    real(wp), intent(out) :: x(:)
    integer :: j, p
    do j = 1, size(x)
      x(j) = 0
      if (f%sparse) then
        do p = f%cp(j), f%cp(j + 1) - 1
          x(j) = x(j) + f%c(f%ci(p), j) * y(f%ci(p))
        end do
      else
        x(j) = dot_product(f%c(:, j), y)
      end if
    end do
  end subroutine

  !> z = x y, column by column: z(:, i) = sum_j x(:, j) y(j, i), accumulated in the order of j.
  !> A zero y(j, i) is skipped: C = [G; A] has a few entries per row (natural coordinates: 8 of
  !> A04's 60 columns), so W = M^-1 C^T and S = C W cost O(m nnz) instead of O(m^2 n) (IFToMM A04:
  !> 120k instead of 420k products per factorization).  The sums are unchanged bit for bit: adding
  !> x(:, j) * 0 leaves a finite z as it is (a NaN in C still reaches S through its own row).
  pure subroutine columns_times(x, y, z)
    real(wp), intent(in) :: x(:, :), y(:, :)
    real(wp), intent(out) :: z(:, :)
    integer :: i, j
    do i = 1, size(z, 2)
      z(:, i) = 0
      do j = 1, size(x, 2)
        if (y(j, i) /= 0) z(:, i) = z(:, i) + x(:, j) * y(j, i)
      end do
    end do
  end subroutine

  !> minv = M^(-1) of a dense M (pyint_linalg's lu_inverse in pyint_small_lu's plain loops); info:
  !> 0 or STATUS_SINGULAR.
  subroutine dense_inverse(mq, minv, info)
    real(wp), intent(in) :: mq(:, :)
    real(wp), intent(out) :: minv(:, :)
    integer, intent(out) :: info
    real(wp), allocatable :: lu(:, :)
    integer :: piv(size(mq, 1))
    lu = mq
    call lu_inverse(lu, piv, minv, info, plain_loops=.true.)
    if (info /= 0) info = STATUS_SINGULAR
  end subroutine

end module pyint_kkt
