/* Thin C shim between the Fortran kernels and SuiteSparse KLU (sparse LU).
 *
 * One opaque handle per matrix pattern: it owns its klu_common, the symbolic
 * analysis (fill-reducing ordering, computed once per pattern) and the
 * numeric factors.  No global state: handles are independent, so trajectories
 * in different OpenMP threads each use their own.  Built without KLU
 * (PYINT_HAVE_KLU undefined) every entry point reports "not available".
 *
 * Matrices are compressed sparse column with 0-based row indices.
 */
#include <math.h>
#include <stdlib.h>

#ifdef PYINT_HAVE_KLU
#include <suitesparse/klu.h>

typedef struct {
    klu_common common;
    klu_symbolic *sym;
    klu_numeric *num;
    int n;
    int own_growth;   /* growth_scan reads KLU's factors as klu_rgrowth does (checked at each klu_factor) */
    int *witness;     /* growth_scan: per column of U, the entry of A that passed last time (-1: none) */
} pyint_klu_t;
#endif

/* 1 when the build has KLU, else 0. */
int pyint_klu_available(void)
{
#ifdef PYINT_HAVE_KLU
    return 1;
#else
    return 0;
#endif
}

/* Symbolic analysis of the pattern (ap, ai); returns the handle, or NULL (info < 0). */
void *pyint_klu_new(int n, int *ap, int *ai, int *info)
{
#ifdef PYINT_HAVE_KLU
    pyint_klu_t *h = calloc(1, sizeof(pyint_klu_t));
    if (!h) { *info = -1; return NULL; }
    klu_defaults(&h->common);
    /* partial pivoting (tol = 1: the largest entry of the column, as LAPACK's dgetrf on the dense
     * path), not KLU's default threshold 0.001, which prefers the diagonal (circuit matrices): on
     * a Newton matrix near a singular position of the mechanism the threshold-pivoted factors
     * steered generalized-alpha's iteration onto the other branch (IFToMM A02, N = 4, h = 2e-3:
     * benchmark error 3.6 with status ok, against 1.3e-4 by the dense and banded solvers) */
    h->common.tol = 1.0;
    h->n = n;
    h->own_growth = 1;
    h->witness = malloc((n > 0 ? n : 1) * sizeof(int));
    if (!h->witness) { *info = -1; free(h); return NULL; }
    for (int k = 0; k < n; k++) h->witness[k] = -1;
    h->sym = klu_analyze(n, ap, ai, &h->common);
    if (!h->sym) { *info = -2; free(h->witness); free(h); return NULL; }
    *info = 0;
    return h;
#else
    (void)n; (void)ap; (void)ai;
    *info = -3;
    return NULL;
#endif
}

/* A refactorization keeps the pivot order chosen for other values: accepted while its reciprocal
 * pivot growth min_j max_i |A_ij| / max_i |U_ij| (klu_rgrowth) stays >= 0.1, i.e. its elements grew
 * at most tenfold, so its solves lose at most one digit against a fresh factorization.  On a KKT
 * matrix [M G^T; G 0] the order picked at one configuration grew the elements a hundredfold a few
 * steps later (RATTLE on seed 002's triple pendulum: |G v| 2.4e-14 instead of 3e-16). */
#define RGROWTH_MIN 0.1

#ifdef PYINT_HAVE_KLU
/* klu_rgrowth's test, decided column by column: 1 when every column j of each block (of more than
 * one row) has max_i |A_ij| / Rs_i >= gmin max_i |U_ij| (A row-scaled by KLU's Rs, U with its
 * diagonal), else 0.  A column passes at its first entry of A that reaches the bound (|A_ij| >=
 * gmin max|U_.j| Rs_i: klu_rgrowth's test but for the rounding at the bound), tried first where it
 * passed the last time (the witness: the values change little from one refactorization to the
 * next), where klu_rgrowth scans every entry of A, a division each.  With exact, the whole
 * minimum over the columns in klu_rgrowth's arithmetic instead (*exact), for the check of the
 * factors' reading against it.  U's column k is read as KLU packs it (klu_version.h, GET_POINTER):
 * at LUbx[block] + Uip[k] doubles, Ulen[k] int row indices padded to whole doubles, then the
 * Ulen[k] values. */
static int growth_scan(pyint_klu_t *h, const int *ap, const int *ai, const double *ax, double gmin,
                       double *exact)
{
    const klu_symbolic *sym = h->sym;
    const klu_numeric *num = h->num;
    const int *Q = sym->Q, *Pinv = num->Pinv;
    const double *Rs = num->Rs, *Udiag = num->Udiag;
    int *wit = h->witness;
    double rmin = 1;
    for (int b = 0; b < sym->nblocks; b++) {
        int k1 = sym->R[b], k2 = sym->R[b + 1];
        if (k2 - k1 == 1) continue;       /* a singleton block: no growth */
        const double *LU = num->LUbx[b];
        for (int k = k1; k < k2; k++) {
            int len = num->Ulen[k];
            const double *ux = LU + num->Uip[k] + (len * sizeof(int) + sizeof(double) - 1) / sizeof(double);
            double umax = 0;
            for (int p = 0; p < len; p++) {
                double t = fabs(ux[p]);
                if (t > umax) umax = t;
            }
            if (fabs(Udiag[k]) > umax) umax = fabs(Udiag[k]);
            if (umax == 0) continue;
            int col = Q[k];
            if (exact) {
                double amax = 0;
                for (int p = ap[col]; p < ap[col + 1]; p++) {
                    int r = Pinv[ai[p]];
                    if (r < k1) continue;     /* an entry of an off-diagonal block */
                    double t = Rs ? fabs(ax[p]) / Rs[r] : fabs(ax[p]);
                    if (t > amax) amax = t;
                }
                if (amax / umax < rmin) rmin = amax / umax;
                continue;
            }
            double lim = gmin * umax;
            int p = wit[k];
            if (p >= 0 && fabs(ax[p]) >= lim * (Rs ? Rs[Pinv[ai[p]]] : 1.0)) continue;
            for (p = ap[col]; p < ap[col + 1]; p++) {
                int r = Pinv[ai[p]];
                if (r >= k1 && fabs(ax[p]) >= lim * (Rs ? Rs[r] : 1.0)) break;
            }
            if (p == ap[col + 1]) return 0;
            wit[k] = p;
        }
    }
    if (exact) *exact = rmin;
    return 1;
}

/* 1 when the current factors' reciprocal pivot growth is >= RGROWTH_MIN. */
static int growth_ok(pyint_klu_t *h, int *ap, int *ai, double *ax)
{
    if (h->own_growth) return growth_scan(h, ap, ai, ax, RGROWTH_MIN, NULL);
    return klu_rgrowth(ap, ai, ax, h->sym, h->num, &h->common) && h->common.rgrowth >= RGROWTH_MIN;
}
#endif

/* Numeric factorization with values ax on the handle's pattern.
 * A kept factorization is first refactored with the same pivot order
 * (klu_refactor, no pivot search); if that loses accuracy (its reciprocal condition
 * estimate below 1e-12, or its pivot growth beyond RGROWTH_MIN) it is factored afresh with
 * partial pivoting.  A fresh factorization also checks growth_scan's reading of KLU's factors:
 * its exact minimum must be klu_rgrowth's to the bit, else the handle uses klu_rgrowth.
 * Returns 0 on success, 1 if the matrix is singular, < 0 on other errors. */
int pyint_klu_factor(void *handle, int *ap, int *ai, double *ax)
{
#ifdef PYINT_HAVE_KLU
    pyint_klu_t *h = handle;
    if (!h) return -3;
    if (h->num) {
        if (klu_refactor(ap, ai, ax, h->sym, h->num, &h->common) &&
            klu_rcond(h->sym, h->num, &h->common) && h->common.rcond > 1e-12 && growth_ok(h, ap, ai, ax))
            return 0;
        klu_free_numeric(&h->num, &h->common);
    }
    h->num = klu_factor(ap, ai, ax, h->sym, &h->common);
    if (!h->num || h->common.status == KLU_SINGULAR) {
        if (h->num) klu_free_numeric(&h->num, &h->common);
        return 1;
    }
    if (h->common.status != KLU_OK) return -4;
    if (h->own_growth) {
        double mine = -1;
        growth_scan(h, ap, ai, ax, 0, &mine);
        if (!klu_rgrowth(ap, ai, ax, h->sym, h->num, &h->common) || h->common.rgrowth != mine) h->own_growth = 0;
    }
    return 0;
#else
    (void)handle; (void)ap; (void)ai; (void)ax;
    return -3;
#endif
}

/* Solve A x = b in place with the current factors. Returns 0 on success. */
int pyint_klu_solve(void *handle, double *b)
{
#ifdef PYINT_HAVE_KLU
    pyint_klu_t *h = handle;
    if (!h || !h->num) return -3;
    return klu_solve(h->sym, h->num, h->n, 1, b, &h->common) ? 0 : -4;
#else
    (void)handle; (void)b;
    return -3;
#endif
}

/* min |U_ii| / max |U_ii| of the current factors (klu_rcond); -1 without factors. */
double pyint_klu_pivot_ratio(void *handle)
{
#ifdef PYINT_HAVE_KLU
    pyint_klu_t *h = handle;
    if (!h || !h->num) return -1.0;
    if (!klu_rcond(h->sym, h->num, &h->common)) return -1.0;
    return h->common.rcond;
#else
    (void)handle;
    return -1.0;
#endif
}

/* Release everything the handle owns (NULL is fine). */
void pyint_klu_free(void *handle)
{
#ifdef PYINT_HAVE_KLU
    pyint_klu_t *h = handle;
    if (!h) return;
    if (h->num) klu_free_numeric(&h->num, &h->common);
    if (h->sym) klu_free_symbolic(&h->sym, &h->common);
    free(h->witness);
    free(h);
#else
    (void)handle;
#endif
}
