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
module pyint_kkt
  use pyint_kinds
  use pyint_small_lu, only: slu_factor, slu_solve
  use pyint_linalg, only: lu_inverse
  implicit none
  private
  public :: kkt_data_t, kkt_factor_t, kkt_setup, kkt_factor, kkt_solve, SING_TOL, SING_TOL_PROJECTED, SING_TOL_PASS
  public :: TIKHONOV_MU, kkt_resolved, kkt_project, kkt_ctmul

  real(wp), parameter :: SING_TOL = 1e-6_wp             !< see the module header
  real(wp), parameter :: SING_TOL_PROJECTED = 1e-16_wp  !< the drift at round-off: sigma ratio 1e-8
  real(wp), parameter :: SING_TOL_PASS = 1e-4_wp        !< a fixed-step method that passes (sigma ratio 1e-2)
  real(wp), parameter :: TIKHONOV_MU = 1e-10_wp         !< the filtered solves of a pass (module header)

  interface
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
    real(wp) :: mu = 0                !< > 0: Tikhonov-filtered solves (module header; a pass only)
    real(wp), allocatable :: minv(:, :)
  end type

  !> One factorized K.
  type :: kkt_factor_t
    real(wp), allocatable :: c(:, :), w(:, :), s(:, :), lu(:, :)
    integer, allocatable :: piv(:)
    integer, allocatable :: cp(:), ci(:)   !< C's nonzeros by columns: rows ci(cp(j):cp(j+1)-1), ascending
    logical :: sparse = .false.            !< few of C's entries are nonzero (nonzeros): products on cp, ci
    real(wp) :: s_ref = 0     !< the largest pivot of S at the first factorization (the singular-position check)
    integer :: hager_j = 0    !< the column of S^-1 of the previous condition estimate (0: none; inv_norm1)
    real(wp), allocatable :: row_ref(:)    !< |C_i|^2 at the first factorization (the same)
    real(wp), allocatable :: ev(:)         !< filtered: the eigenvalues s_i of S (s then holds U; module header)
    real(wp) :: eps_mu = 0                 !< filtered: mu s_max
    real(wp), allocatable :: minv(:, :)    !< filtered with a varying M: M(q)^(-1)
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
        allocate(f(k)%c(m, n), f(k)%w(n, m), f(k)%s(m, m), f(k)%piv(m))
      else
        allocate(f(k)%lu(n + m, n + m), f(k)%piv(n + m))
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
    integer :: n, m, mh, i
    real(wp) :: snorm
    n = d%n; m = d%m; mh = size(ch, 1)
    if (d%mu > 0) then
      call filtered_factor(d, mq, ch, cn, f, info)
      return
    end if
    if (d%schur) then
      f%c(1:mh, :) = ch
      f%c(mh + 1:m, :) = cn
      call schur_complement(d, f)
      if (.not. allocated(f%row_ref)) then
        allocate(f%row_ref(m))
        do i = 1, m
          f%row_ref(i) = sum(f%c(i, :)**2)
        end do
      end if
      if (d%sing_tol == SING_TOL_PASS) snorm = norm1(f%s)
      call slu_factor(f%s, f%piv, info)
      ! a singular S is a rank drop of C (redundant rows were dropped at the start): a singular
      ! position; so is a pivot below sing_tol of the largest, this one's or the first one's (a
      ! single row whose gradient vanishes has no other pivot to compare with)
      if (info /= 0) then
        info = merge(STATUS_SINGULAR_POSITION, STATUS_SINGULAR, d%sing_tol > 0)
        return
      end if
      ! (sing_tol = 0, no check: a zero pivot is info /= 0 above, and the pivot test is skipped)
      if (d%sing_tol > 0) then
        if (f%s_ref == 0) f%s_ref = maxval(pivots(f%s))
        if (minval(pivots(f%s)) <= d%sing_tol * max(maxval(pivots(f%s)), f%s_ref) .or. &
            (d%sing_tol == SING_TOL_PASS .and. inv_norm1(f%s, f%piv, f%hager_j, 1 / (d%sing_tol * snorm)) &
             * snorm >= 1 / d%sing_tol)) then
          if (.not. scaled_regular(f, d%sing_tol)) then
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
      call slu_factor(f%lu, f%piv, info)
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
    if (.not. d%schur) then
      call columns_times(f%minv, transpose(f%c), f%w)
    else if (d%diagonal .and. f%sparse) then
      do i = 1, d%m
        f%w(:, i) = d%minv(:, 1) * f%c(i, :)
      end do
      f%s = 0
      do j = 1, d%n
        do p = f%cp(j), f%cp(j + 1) - 1
          i = f%ci(p)
          wji = f%w(j, i)
          if (wji == 0) cycle           ! (as columns_times)
          do q = f%cp(j), f%cp(j + 1) - 1
            k = f%ci(q)
            f%s(k, i) = f%s(k, i) + f%c(k, j) * wji
          end do
        end do
      end do
      return
    else if (d%diagonal) then
      do i = 1, d%m
        f%w(:, i) = d%minv(:, 1) * f%c(i, :)
      end do
    else
      call columns_times(d%minv, transpose(f%c), f%w)
    end if
    call columns_times(f%c, f%w, f%s)
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
    if (.not. allocated(f%ev)) allocate(f%ev(m))
    f%c(1:mh, :) = ch
    f%c(mh + 1:m, :) = cn
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

  !> max |U_R U_R^T r| of a filtered factorization: r's part along the eigenvectors that the filter
  !> resolves, s_i >= mu s_max (phi_i >= 1/2; Hansen's resolution limit), those below it being
  !> damped like a null space.  A Gauss-Newton iteration with filtered steps (pyint_index1) removes
  !> this part at a rate of at most 1/2 per step (1 - phi_i), quadratically for s_i >> mu s_max.
  real(wp) function kkt_resolved(f, r) result(x)
    type(kkt_factor_t), intent(in) :: f
    real(wp), intent(in) :: r(:)
    real(wp) :: c(size(r))
    c = matmul(r, f%s)
    where (f%ev < f%eps_mu) c = 0
    x = maxval(abs(matmul(f%s, c)), mask=.true.)
  end function

  !> Has C full rank once its rows are scaled to unit length (the module header)?  Only called for
  !> an S whose pivots were flagged, so an unflagged run never pays for it.
  logical function scaled_regular(f, tol)
    type(kkt_factor_t), intent(in) :: f
    real(wp), intent(in) :: tol
    real(wp) :: t(size(f%c, 1), size(f%c, 1)), len2(size(f%c, 1))
    integer :: piv(size(f%c, 1)), info, i, j, m
    real(wp) :: tnorm
    integer :: jt
    m = size(f%c, 1)
    do i = 1, m
      len2(i) = sum(f%c(i, :)**2)
      scaled_regular = len2(i) > tol * f%row_ref(i)
      if (.not. scaled_regular) return
    end do
    do j = 1, m
      do i = 1, m
        t(i, j) = dot_product(f%c(i, :), f%c(j, :)) / sqrt(len2(i) * len2(j))
      end do
    end do
    if (tol == SING_TOL_PASS) tnorm = norm1(t)
    call slu_factor(t, piv, info)
    scaled_regular = info == 0
    if (scaled_regular) scaled_regular = minval(pivots(t)) > tol
    jt = 0                               ! no warm start: t is formed at flagged steps only
    if (scaled_regular .and. tol == SING_TOL_PASS) scaled_regular = inv_norm1(t, piv, jt, 0.0_wp) * tnorm < 1 / tol
  end function

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
  function inv_norm1(lu, piv, jw, flag) result(est)
    real(wp), intent(in) :: lu(:, :)
    integer, intent(in) :: piv(:)
    integer, intent(inout) :: jw
    real(wp), intent(in) :: flag
    real(wp), parameter :: WARM_MARGIN = 10
    real(wp) :: est, x(size(lu, 1)), y(size(lu, 1)), z(size(lu, 1)), zw(size(lu, 1)), e, ew
    integer :: k, j, jx, jw0
    est = 0
    jw0 = jw
    if (jw0 > 0) then
      y = 0
      y(jw0) = 1
      call slu_solve(lu, piv, y)
      ew = sum(abs(y))
      zw = sign(1.0_wp, y)
      call slu_solve(lu, piv, zw)        ! A^-T = A^-1
      est = ew
      if (maxval(abs(zw)) <= zw(jw0) .and. ew * WARM_MARGIN < flag) return
    end if
    x = 1.0_wp / size(lu, 1)
    jx = 0                               ! x's vertex (0: e / n)
    do k = 1, 5
      if (jx > 0 .and. jx == jw0) then   ! the warm start's iteration, already made
        e = ew
        z = zw
      else
        y = x
        call slu_solve(lu, piv, y)
        e = sum(abs(y))
        z = sign(1.0_wp, y)
        call slu_solve(lu, piv, z)
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

  !> x = K^(-1) x in place (x = (a-part, lam-part)).
  subroutine kkt_solve(d, f, x)
    type(kkt_data_t), intent(in) :: d
    type(kkt_factor_t), intent(in) :: f
    real(wp), intent(inout) :: x(:)
    real(wp) :: a0(d%n)
    integer :: n, m, i, j, k, p
    n = d%n; m = d%m
    if (.not. (d%schur .or. d%mu > 0)) then
      call slu_solve(f%lu, f%piv, x)
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
    if (f%sparse) then
      do j = 1, n
        do p = f%cp(j), f%cp(j + 1) - 1
          k = f%ci(p)
          x(n + k) = x(n + k) + f%c(k, j) * a0(j)
        end do
      end do
    else
      do j = 1, n
        x(n + 1:n + m) = x(n + 1:n + m) + f%c(:, j) * a0(j)
      end do
    end if
    if (d%mu > 0) then
      x(n + 1:n + m) = matmul(f%s, f%ev / (f%ev**2 + f%eps_mu**2) * matmul(x(n + 1:n + m), f%s))
    else
      call slu_solve(f%s, f%piv, x(n + 1:n + m))
    end if
    if (d%schur .and. d%diagonal .and. f%sparse) then
      do j = 1, n
        do p = f%cp(j), f%cp(j + 1) - 1
          k = f%ci(p)
          a0(j) = a0(j) - f%w(j, k) * x(n + k)
        end do
      end do
    else
      do i = 1, m
        a0 = a0 - f%w(:, i) * x(n + i)
      end do
    end if
    x(1:n) = a0
  end subroutine

  !> x = the first block of K^(-1) (M x, 0) on the Schur path (d%schur, unfiltered: d%mu = 0):
  !> x - W S^(-1) C x, W = M^(-1) C^T, the projection onto C x = 0 along M^(-1) C^T.  kkt_solve of
  !> (M x, 0) forms a0 = M^(-1) (M x), x itself up to round-off: neither product is formed here.
  !> Without the Schur path the caller solves (M x, 0) with kkt_solve.  y: workspace of m (an
  !> automatic array was a heap allocation per call).
  subroutine kkt_project(d, f, x, y)
    type(kkt_data_t), intent(in) :: d
    type(kkt_factor_t), intent(in) :: f
    real(wp), intent(inout) :: x(:)
    real(wp), intent(out) :: y(:)
    integer :: i, j
    y(1:d%m) = 0
    do j = 1, d%n
      do i = 1, d%m
        y(i) = y(i) + f%c(i, j) * x(j)
      end do
    end do
    call slu_solve(f%s, f%piv, y(1:d%m))
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
