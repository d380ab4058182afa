"""Coefficients of the multistep block methods of seed 003 §2, built in code.

A block method with nodes 0 < c_1 < ... < c_r = 1 advances r values at once:

    Y_{i+1} = h (A (x) I) Ydot_{i+1} + (U (x) I) Y_i                       (9)

where (Y_i)_k approximates y(t_i + (c_k - 1) h) (the previous block's nodes)
and (Ydot_{i+1})_k = f(y(t_i + c_k h)) (the new block's nodes).

**Eq. (8).**  Requiring (9) to be exact for every polynomial of degree
<= 2r - 1 gives, in the Taylor basis x^p / p! at t_i (p = 0 .. 2r - 1),

    A H + U D = C,   C_kp = c_k^p / p!,   H_kp = c_k^(p-1) / (p-1)! (H_k0 = 0),
                     D_kp = (c_k - 1)^p / p!,

i.e. [A, U] = C [H; D]^(-1): local error O(h^(2r)), order 2r - 1 (5 for r = 3).
Such a scheme is zero-stable for the node sets here but NOT A-stable.

**RK-stable scheme.**  Asking only for exactness to degree 2r - 2 leaves one
free parameter per row; for r = 3 there is exactly one choice making the
method "Runge-Kutta stable": its stability matrix M(z) = (I - zA)^(-1) U has
characteristic polynomial w^(r-1) (w - R(z)), i.e. the coefficients of w^0 ..
w^(r-2) of det(w (I - zA) - U) vanish for every z.  These conditions are
affine in the free parameters (verified here at build time), so the scheme
follows from one linear solve.  With uniform nodes (1/3, 2/3, 1) it is the
scheme printed in seed 003 section 2 (our analysis): order 4, A- and L-stable,
R(z) = (108 + 30 z + z^2) / (108 - 78 z + 25 z^2 - 4 z^3).

Everything here is generic over the number type: with ``exact=True`` and
rational nodes (fractions.Fraction) the matrices come out as exact fractions
(the tests compare them with the printed ones); otherwise in float64, with
the condition number of [H; D] checked.  Every scheme asserts its identities
where it is built (:meth:`BlockScheme.check`): row sums of U equal 1,
exactness to its degree, zero-stability, and RK-stability where claimed.

Seed 003 section 2: never use the printed 4-5 digit fractions of the Chebyshev
and Legendre matrices (their row sums of U miss 1 and the scheme diverges);
the printed Legendre nodes ((3 -+ sqrt 3)/12) are a typo for (3 -+ sqrt 3)/6,
and the printed Chebyshev U(1,2) = -1070/3380 is a typo for -1071/3380.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations

import numpy as np

#: Largest acceptable condition number of [H; D] (eq. (8)) before refusing the nodes.
MAX_CONDITION = 1e10


# -- generic small linear algebra (floats or Fractions) -------------------------
def _solve(m, b):
    """Solve m x = b (lists of lists; b may have several columns) by Gauss-Jordan
    with partial pivoting; exact for Fractions."""
    n = len(m)
    a = [list(m[i]) + list(b[i]) for i in range(n)]
    for col in range(n):
        piv = max(range(col, n), key=lambda i: abs(a[i][col]))
        if a[piv][col] == 0:
            raise ValueError("singular system in the block-coefficient construction")
        a[col], a[piv] = a[piv], a[col]
        p = a[col][col]
        a[col] = [x / p for x in a[col]]
        for i in range(n):
            if i != col and a[i][col] != 0:
                f = a[i][col]
                a[i] = [x - f * y for x, y in zip(a[i], a[col])]
    return [row[n:] for row in a]


def _lstsq(m, b):
    """Least-squares solution of m x = b (m: list of rows, more rows than columns) by
    Householder QR in pure-Python floats.  Used instead of LAPACK so that the float
    coefficients round identically whatever BLAS kernel NumPy picks on a machine."""
    a = [list(map(float, row)) + [float(y)] for row, y in zip(m, b)]
    nr, nc = len(a), len(m[0])
    for k in range(nc):
        norm = math.sqrt(sum(a[i][k] ** 2 for i in range(k, nr)))
        if norm == 0:
            raise ValueError("rank-deficient system in the block-coefficient construction")
        alpha = -norm if a[k][k] >= 0 else norm
        v = [0.0] * k + [a[k][k] - alpha] + [a[i][k] for i in range(k + 1, nr)]
        vv = sum(x * x for x in v[k:])
        for j in range(k, nc + 1):
            f = 2 * sum(v[i] * a[i][j] for i in range(k, nr)) / vv
            for i in range(k, nr):
                a[i][j] -= f * v[i]
    x = [0.0] * nc
    for k in reversed(range(nc)):
        x[k] = (a[k][nc] - sum(a[k][j] * x[j] for j in range(k + 1, nc))) / a[k][k]
    return x


def _det(m):
    """Determinant by elimination (exact for Fractions)."""
    a = [list(r) for r in m]
    n = len(a)
    det = 1
    for col in range(n):
        piv = max(range(col, n), key=lambda i: abs(a[i][col]))
        if a[piv][col] == 0:
            return 0 * a[0][0]
        if piv != col:
            a[col], a[piv] = a[piv], a[col]
            det = -det
        det = det * a[col][col]
        for i in range(col + 1, n):
            f = a[i][col] / a[col][col]
            a[i] = [x - f * y for x, y in zip(a[i], a[col])]
    return det


def _nodes(c, exact):
    c = list(c)
    if not c:
        raise ValueError("need at least one node")
    if exact:
        if not all(isinstance(x, (int, Fraction)) for x in c):
            raise TypeError("exact=True needs rational nodes (int or fractions.Fraction)")
        c = [Fraction(x) for x in c]
    else:
        c = [float(x) for x in c]
        if not all(math.isfinite(x) for x in c):
            raise ValueError(f"nodes must be finite, got {c}")
    if any(b <= a for a, b in zip(c, c[1:])) or c[0] <= 0 or c[-1] != 1:
        raise ValueError(f"nodes must increase strictly from 0 < c_1 to c_r = 1, got {[float(x) for x in c]}")
    return c


def _taylor_rows(c, npow):
    """C, H, D of eq. (8) with npow Taylor terms (p = 0 .. npow - 1)."""
    fact = [math.factorial(p) for p in range(npow)]
    C = [[ck**p / fact[p] for p in range(npow)] for ck in c]
    H = [[0 * ck if p == 0 else ck ** (p - 1) / fact[p - 1] for p in range(npow)] for ck in c]
    D = [[(ck - 1) ** p / fact[p] for p in range(npow)] for ck in c]
    return C, H, D


def _to_array(m):
    return np.array([[float(x) for x in row] for row in m])


# -- the constructions ---------------------------------------------------------------
def eq8(c, exact=False):
    """[A, U] of eq. (8) for nodes c: exact for polynomials of degree <= 2r - 1.

    Returns (A, U) as float arrays, or as lists of Fractions with exact=True.
    Raises ValueError when [H; D] is too ill-conditioned (cond > MAX_CONDITION).
    """
    c = _nodes(c, exact)
    r = len(c)
    C, H, D = _taylor_rows(c, 2 * r)
    S = H + D                                    # (2r, 2r): rows of H, then rows of D
    if not exact:
        cond = np.linalg.cond(_to_array(S))
        if not np.isfinite(cond) or cond > MAX_CONDITION:
            raise ValueError(f"eq. (8) is ill-conditioned for nodes {c}: cond([H; D]) = {cond:.3e} "
                             f"> {MAX_CONDITION:.0e}")
    # [A, U] S = C  <=>  S^T [A, U]^T = C^T
    st = [list(col) for col in zip(*S)]
    ct = [list(col) for col in zip(*C)]
    x = _solve(st, ct)                           # (2r, r): rows = unknown index, columns = node k
    A = [[x[j][k] for j in range(r)] for k in range(r)]
    U = [[x[r + j][k] for j in range(r)] for k in range(r)]
    return (A, U) if exact else (_to_array(A), _to_array(U))


def _pencil_coefficients(A, U, z):
    """Coefficients (w^0 .. w^r) of det(w (I - z A) - U), by expansion over column subsets."""
    r = len(A)
    B = [[(1 if i == j else 0) - z * A[i][j] for j in range(r)] for i in range(r)]
    coef = [0 * z] * (r + 1)
    for s in range(r + 1):
        for cols in combinations(range(r), s):
            m = [[B[i][j] if j in cols else -U[i][j] for j in range(r)] for i in range(r)]
            coef[s] = coef[s] + _det(m)
    return coef


def rk_stable(c, exact=False):
    """The scheme exact to degree 2r - 2 that is Runge-Kutta stable (r = 3 only).

    Row k of [A, U] is a particular solution of the degree-(2r-2) conditions
    plus t_k times the row's one-dimensional null vector; the RK-stability
    conditions (coefficients of w^0 .. w^(r-2) of det(w (I - zA) - U) vanish at
    r + 1 sample points z) are affine in t and fix it.
    """
    c = _nodes(c, exact)
    r = len(c)
    if r != 3:
        raise ValueError(f"the RK-stable construction is defined for r = 3 nodes (got r = {r}); "
                         "for r = 4 the conditions have no solution")
    C, H, D = _taylor_rows(c, 2 * r - 1)
    one = c[0] / c[0]
    # per row k: unknowns x = (A_k1..A_kr, U_k1..U_kr), conditions x . S[:, p] = C_kp, p < 2r - 1;
    # fix U_kr = t_k: the remaining 2r - 1 unknowns solve a square system, affine in t_k.
    S = H + D
    cols = [[S[j][p] for j in range(2 * r - 1)] for p in range(2 * r - 1)]   # rows p, columns unknown 0..2r-2
    last = [S[2 * r - 1][p] for p in range(2 * r - 1)]
    if not exact:
        cond = np.linalg.cond(_to_array(cols))
        if not np.isfinite(cond) or cond > MAX_CONDITION:
            raise ValueError(f"the RK-stable construction is ill-conditioned for nodes {c}: cond = {cond:.3e}")
    rhs = [[C[k][p] for k in range(r)] + [-last[p]] for p in range(2 * r - 1)]
    sol = _solve(cols, rhs)     # column k: particular solution of row k; column r: d x / d t

    def scheme(t):
        A = [[sol[j][k] + t[k] * sol[j][r] for j in range(r)] for k in range(r)]
        U = [[sol[r + j][k] + t[k] * sol[r + j][r] for j in range(r - 1)] + [t[k]] for k in range(r)]
        return A, U

    zs = [one * k / r - one for k in range(r + 1)][::-1]        # r + 1 sample points in [-1, 0]

    def conditions(t):
        A, U = scheme(t)
        out = []
        for z in zs:
            out += _pencil_coefficients(A, U, z)[:r - 1]
        return out

    zero = [0 * one] * r
    f0 = conditions(zero)
    jac = []
    for k in range(r):
        e = list(zero)
        e[k] = one
        jac.append([fk - f0k for fk, f0k in zip(conditions(e), f0)])
    jac = [list(row) for row in zip(*jac)]                      # (ncond, r)
    if exact:   # consistent system: the normal equations give its exact solution
        jtj = [[sum(row[a] * row[b] for row in jac) for b in range(r)] for a in range(r)]
        jtf = [[-sum(row[a] * f for row, f in zip(jac, f0))] for a in range(r)]
        t = [row[0] for row in _solve(jtj, jtf)]
    else:       # Householder least squares in pure Python: the same bits on every CPU
        t = _lstsq(jac, [-f for f in f0])
    res = conditions(t)        # zero iff the conditions are affine in t and consistent
    if not (all(x == 0 for x in res) if exact else max(abs(x) for x in res) <= 1e-12):
        raise ValueError(f"no RK-stable scheme of degree {2 * r - 2} found for nodes {c} "
                         f"(residual {max(abs(float(x)) for x in res):.2e})")
    A, U = scheme(t)
    return (A, U) if exact else (_to_array(A), _to_array(U))


# -- schemes -------------------------------------------------------------------------
@dataclass(frozen=True)
class BlockScheme:
    """A block method: nodes c, matrices A and U, and what it claims."""

    name: str
    c: np.ndarray
    A: np.ndarray
    U: np.ndarray
    degree: int          # exact for polynomials of this degree
    rk_stable: bool
    description: str

    @property
    def r(self):
        return len(self.c)

    @property
    def order(self):
        """Global order = degree of exactness (local error O(h^(degree + 1)))."""
        return self.degree

    def stability_matrix(self, z):
        """M(z) = (I - z A)^(-1) U for y' = lambda y, z = h lambda."""
        return np.linalg.solve(np.eye(self.r) - z * self.A, self.U.astype(complex))

    def spectral_radius(self, z):
        return float(np.max(np.abs(np.linalg.eigvals(self.stability_matrix(z)))))

    def extrapolation(self, blocks=1):
        """W with W_kj = l_j(c_k): Lagrange extrapolation from the nodes of the last
        ``blocks`` blocks (c_j - blocks, ..., c_j - 1; degree blocks r - 1) to the new
        nodes c_k (the Newton predictor).  Shape (r, blocks r), oldest nodes first."""
        x = np.concatenate([self.c - b for b in range(blocks, 0, -1)])
        W = np.ones((self.r, x.size))
        for j in range(x.size):
            for m in range(x.size):
                if m != j:
                    W[:, j] *= (self.c - x[m]) / (x[j] - x[m])
        return W

    def error_constants(self):
        """E_k of the block's local error at node k (docs/adaptive_steps.md eq. (14)), p = degree:
        Y_k - y(t_i + c_k h) = -E_k h^(p+1) y^(p+1) + O(h^(p+2)), the residual of (9) on
        t^(p+1)/(p+1)!; the variable-step kernel's estimate (15) is built on them."""
        c, p = self.c.astype(float), self.degree
        return (c ** (p + 1) / math.factorial(p + 1) - self.A @ (c ** p) / math.factorial(p)
                - self.U @ ((c - 1) ** (p + 1)) / math.factorial(p + 1))

    def diagonalization(self):
        """(mu, T, T^-1) with A = T diag(mu) T^-1 (the Newton matrix's coupling splits along it)."""
        mu, tm = np.linalg.eig(self.A)
        cond = np.linalg.cond(tm)
        if not cond < 1e8:
            raise ValueError(f"{self.name}: A is not (well) diagonalizable, cond(T) = {cond:.2e}")
        return mu, tm, np.linalg.inv(tm)

    def check(self, tol=1e-12):
        """Assert the scheme's identities; returns self."""
        r = self.r
        C, H, D = (_to_array(m) for m in _taylor_rows(list(self.c), self.degree + 1))
        res = np.max(np.abs(self.A @ H + self.U @ D - C))
        if not res <= tol * max(1.0, np.max(np.abs(self.A)), np.max(np.abs(self.U))):
            raise AssertionError(f"{self.name}: not exact to degree {self.degree} (residual {res:.2e})")
        if np.max(np.abs(self.U.sum(axis=1) - 1)) > tol:
            raise AssertionError(f"{self.name}: row sums of U differ from 1: {self.U.sum(axis=1)}")
        ev = np.sort(np.abs(np.linalg.eigvals(self.U)))
        if abs(ev[-1] - 1) > 1e-10 or (r > 1 and ev[-2] >= 1 - 1e-10):
            raise AssertionError(f"{self.name}: not zero-stable, |eig(U)| = {ev}")
        if self.rk_stable:
            for z in (-0.5, -3.0, 1j, -2 + 5j):
                ev = np.sort(np.abs(np.linalg.eigvals(self.stability_matrix(z))))
                if np.max(ev[:-1]) > 1e-6 * max(1.0, ev[-1]):
                    raise AssertionError(f"{self.name}: not RK-stable at z={z}: |eig M(z)| = {ev}")
        return self


def _scheme(name, c, construction, description):
    """The BlockScheme of nodes c.  Rational nodes (int or Fraction) are built in exact
    arithmetic and rounded once, so their coefficients are the correctly rounded ones on
    every machine; float nodes go through the float construction."""
    build = eq8 if construction == "eq8" else rk_stable
    exact = all(isinstance(x, (int, Fraction)) for x in c)
    A, U = build(c, exact=exact)
    A, U = (_to_array(A), _to_array(U)) if exact else (A, U)
    c = np.asarray([float(x) for x in c])
    degree = 2 * len(c) - 1 if construction == "eq8" else 2 * len(c) - 2
    return BlockScheme(name, c, A, U, degree, construction != "eq8", description).check()


_S2, _S3 = math.sqrt(2.0), math.sqrt(3.0)

#: Node sets of seed 003 (r = 3), Legendre with the corrected nodes (the printed /12 is a typo for /6).
NODES = {
    "uniform": (Fraction(1, 3), Fraction(2, 3), Fraction(1)),     # rational: built exactly
    "chebyshev": (0.5 - _S2 / 4, 0.5 + _S2 / 4, 1.0),
    "legendre": ((3 - _S3) / 6, (3 + _S3) / 6, 1.0),
}

#: The presets, named for what they are.
PRESETS = {
    "uniform_rk": _scheme("uniform_rk", NODES["uniform"], "rk",
                          "uniform nodes (1/3, 2/3, 1), RK-stable, exact to degree 4: the matrices printed "
                          "in seed 003 (order 4, A- and L-stable)"),
    "uniform_eq8": _scheme("uniform_eq8", NODES["uniform"], "eq8",
                           "uniform nodes (1/3, 2/3, 1) by eq. (8): order 5, not A-stable "
                           "(not the printed matrices)"),
    "chebyshev": _scheme("chebyshev", NODES["chebyshev"], "eq8",
                         "Chebyshev nodes (1/2 -+ sqrt(2)/4, 1) by eq. (8): order 5 (the printed matrices)"),
    "legendre": _scheme("legendre", NODES["legendre"], "eq8",
                        "Gauss-Legendre nodes ((3 -+ sqrt(3))/6, 1) by eq. (8): order 5 (the printed "
                        "matrices; the printed nodes /12 are a typo)"),
}


def scheme(name_or_nodes, construction="eq8"):
    """A preset by name, or a new scheme from nodes (construction "eq8" or "rk")."""
    if isinstance(name_or_nodes, str):
        try:
            return PRESETS[name_or_nodes]
        except KeyError:
            raise ValueError(f"unknown block scheme {name_or_nodes!r}; presets: {sorted(PRESETS)}") from None
    if construction not in ("eq8", "rk"):
        raise ValueError(f"construction must be 'eq8' or 'rk', got {construction!r}")
    c = tuple(float(x) for x in name_or_nodes)
    return _scheme(f"{construction}{c}", c, construction, f"nodes {c} by {construction}")


# The RK-stable uniform scheme's stability function (our analysis of seed 003), asserted where it is built.
_U = PRESETS["uniform_rk"]
for _z in (-1.0, -10.0, 2j, -0.3 + 4j):
    _R = (108 + 30 * _z + _z**2) / (108 - 78 * _z + 25 * _z**2 - 4 * _z**3)
    assert abs(np.trace(_U.stability_matrix(_z)) - _R) <= 1e-12 * max(1.0, abs(_R)), (_z, _R)
del _U, _z, _R
