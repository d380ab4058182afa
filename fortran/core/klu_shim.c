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
#include <stdlib.h>

#ifdef PYINT_HAVE_KLU
#include <suitesparse/klu.h>

typedef struct {
    klu_common common;
    klu_symbolic *sym;
    klu_numeric *num;
    int n;
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
    h->sym = klu_analyze(n, ap, ai, &h->common);
    if (!h->sym) { *info = -2; free(h); return NULL; }
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

/* Numeric factorization with values ax on the handle's pattern.
 * A kept factorization is first refactored with the same pivot order
 * (klu_refactor, no pivot search); if that loses accuracy (its reciprocal condition
 * estimate below 1e-12, or its pivot growth beyond RGROWTH_MIN) it is factored afresh with
 * partial pivoting.
 * Returns 0 on success, 1 if the matrix is singular, < 0 on other errors. */
int pyint_klu_factor(void *handle, int *ap, int *ai, double *ax)
{
#ifdef PYINT_HAVE_KLU
    pyint_klu_t *h = handle;
    if (!h) return -3;
    if (h->num) {
        if (klu_refactor(ap, ai, ax, h->sym, h->num, &h->common) &&
            klu_rcond(h->sym, h->num, &h->common) && h->common.rcond > 1e-12 &&
            klu_rgrowth(ap, ai, ax, h->sym, h->num, &h->common) && h->common.rgrowth >= RGROWTH_MIN)
            return 0;
        klu_free_numeric(&h->num, &h->common);
    }
    h->num = klu_factor(ap, ai, ax, h->sym, &h->common);
    if (!h->num || h->common.status == KLU_SINGULAR) {
        if (h->num) klu_free_numeric(&h->num, &h->common);
        return 1;
    }
    return h->common.status == KLU_OK ? 0 : -4;
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
    free(h);
#else
    (void)handle;
#endif
}
