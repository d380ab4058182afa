"""Block methods (seed 003 §2): coefficients, their identities and orders, and the Fortran integrator."""
from fractions import Fraction as F

import numpy as np
import pytest

from pyint.block import BlockMethod, BlockUniformRK
from pyint.block_coefficients import PRESETS, NODES, BlockScheme, eq8, rk_stable, scheme
from pyint.convergence import fit_order
from pyint.errors import NewtonConvergenceError
from pyint.models import Model, PendulumChain, TwoLinkAngles, two_link_manipulator
from pyint.rk4_index1 import RK4Index1

UNIFORM = [F(1, 3), F(2, 3), F(1)]
#: seed 003's printed matrices
PRINTED_UNIFORM_A = [[F(x, 5832) for x in row] for row in [[4381, -2654, 691], [5302, -1508, 586], [5029, -62, 1339]]]
PRINTED_UNIFORM_U = [[F(x, 648) for x in row] for row in [[-137, 432, 353], [-134, 432, 350], [-137, 432, 353]]]
PRINTED_CHEB_A = [[903 / 8635, -277 / 43541, 65 / 18482], [1606 / 2199, 1269 / 2515, -1141 / 6340],
                  [833 / 1153, 899 / 1524, -357 / 3083]]
PRINTED_CHEB_U = [[87 / 44030, -1070 / 3380, 998 / 759], [-281 / 10424, 1782 / 1163, -669 / 1324],
                  [-157 / 5993, 293 / 196, -1445 / 3083]]
PRINTED_LEG_A = [[253 / 1583, -741 / 43793, 115 / 17073], [1219 / 2148, 443 / 1348, -367 / 5374],
                 [993 / 1814, 393 / 847, 65 / 3509]]
PRINTED_LEG_U = [[127 / 17196, -407 / 1274, 391 / 298], [-126 / 7249, 263 / 1051, 1018 / 1327],
                 [-72 / 4961, 545 / 2784, 2873 / 3509]]


def _taylor_defect(A, U, c, p):
    """Residual of the degree-p exactness conditions, exact for Fractions."""
    import math
    out = []
    for k in range(len(c)):
        lhs = c[k] ** p / math.factorial(p)
        rhs = sum(A[k][j] * (c[j] ** (p - 1) / math.factorial(p - 1) if p else 0)
                  + U[k][j] * (c[j] - 1) ** p / math.factorial(p) for j in range(len(c)))
        out.append(lhs - rhs)
    return out


# -- coefficients --------------------------------------------------------------------
def test_printed_uniform_matrices_reproduced_exactly():
    A, U = rk_stable(UNIFORM, exact=True)
    assert A == PRINTED_UNIFORM_A and U == PRINTED_UNIFORM_U
    # the preset's nodes are rational: built in exact arithmetic and rounded once, so its
    # float64 matrices are the correctly rounded printed ones, bit for bit on every CPU
    s = PRESETS["uniform_rk"]
    assert np.array_equal(s.A, np.array(PRINTED_UNIFORM_A, dtype=float))
    assert np.array_equal(s.U, np.array(PRINTED_UNIFORM_U, dtype=float))


def test_float_construction_is_blas_independent_and_accurate():
    """The float construction (nodes given as floats) is pure Python (Householder least
    squares, Gauss-Jordan), so it rounds the same on every machine.  Its error against
    the exact scheme is a fixed number (no BLAS involved)."""
    s = scheme(tuple(float(x) for x in NODES["uniform"]), construction="rk")
    exact = PRESETS["uniform_rk"]
    err = max(np.max(np.abs(s.A - exact.A)), np.max(np.abs(s.U - exact.U)))
    assert err > 0    # the float path really ran (measured 8.7e-14)
    # measured 8.7e-14 = 390 eps, the same on every CPU; bound 1e4 eps (margin 25)
    assert err <= 1e4 * np.finfo(float).eps


def test_printed_uniform_is_degree_4_rk_stable_not_eq8():
    """Seed 003 section 2: the printed uniform matrices are exact to degree 4 but not 5, and differ from eq. (8)."""
    for p in range(5):
        assert _taylor_defect(PRINTED_UNIFORM_A, PRINTED_UNIFORM_U, UNIFORM, p) == [0, 0, 0]
    assert all(x != 0 for x in _taylor_defect(PRINTED_UNIFORM_A, PRINTED_UNIFORM_U, UNIFORM, 5))
    A8, U8 = eq8(UNIFORM, exact=True)
    for p in range(6):
        assert _taylor_defect(A8, U8, UNIFORM, p) == [0, 0, 0]
    assert A8 != PRINTED_UNIFORM_A
    assert A8[0][0] == F(2501, 8018)          # eq. (8)'s own uniform scheme (denominators 4009)


def test_rk_stable_stability_function():
    """M(z) has one nonzero eigenvalue R(z) = (108 + 30z + z^2)/(108 - 78z + 25z^2 - 4z^3):
    A-stable on the imaginary axis, L-stable at infinity."""
    s = PRESETS["uniform_rk"]
    for z in (-0.5, -7.0, 3j, -1 + 2j):
        ev = np.sort(np.abs(np.linalg.eigvals(s.stability_matrix(z))))
        r = (108 + 30 * z + z**2) / (108 - 78 * z + 25 * z**2 - 4 * z**3)
        assert ev[-1] == pytest.approx(abs(r), rel=1e-12) and ev[1] <= 1e-6
    assert max(s.spectral_radius(1j * y) for y in np.linspace(0, 100, 401)) <= 1 + 1e-12
    assert s.spectral_radius(-1e8) <= 1e-7


def test_eq8_schemes_are_not_a_stable():
    """On the imaginary axis |M(iy)| exceeds 1: uniform eq. (8) beyond y ~ 3.3,
    Chebyshev and Legendre already at small y (weakly: 1 + O(y^6))."""
    assert PRESETS["uniform_eq8"].spectral_radius(3.0j) < 1 < PRESETS["uniform_eq8"].spectral_radius(3.6j)
    for name in ("chebyshev", "legendre"):
        assert 1 < PRESETS[name].spectral_radius(0.5j) < 1 + 1e-3


def test_chebyshev_and_legendre_printed_to_printed_precision():
    """Our eq. (8) matrices match the printed 4-5 digit fractions entry by entry
    (relative 2e-6), except the documented typo U(1,2) = -1070/3380 (for -1071/3380)."""
    cheb, leg = PRESETS["chebyshev"], PRESETS["legendre"]
    for ours, printed in ((cheb.A, PRINTED_CHEB_A), (cheb.U, PRINTED_CHEB_U), (leg.A, PRINTED_LEG_A),
                          (leg.U, PRINTED_LEG_U)):
        rel = np.abs(ours - np.array(printed)) / np.abs(ours)
        typo = ours is cheb.U
        if typo:
            assert rel[0, 1] > 1e-4                        # -1070/3380 is off ...
            assert abs(-1071 / 3380 - ours[0, 1]) / abs(ours[0, 1]) <= 2e-6   # ... -1071/3380 is right
            rel[0, 1] = 0
        assert np.max(rel) <= 2e-6
    # the printed Legendre nodes ((3 -+ sqrt 3)/12) do not give the printed matrices
    A12, _ = eq8(((3 - 3**0.5) / 12, (3 + 3**0.5) / 12, 1.0))
    assert np.max(np.abs(A12 - np.array(PRINTED_LEG_A)) / np.abs(leg.A)) > 0.1


def test_row_sums_of_u_equal_one():
    for s in PRESETS.values():
        assert np.max(np.abs(s.U.sum(axis=1) - 1)) <= 1e-14, s.name
    # ... which the printed 4-5 digit fractions miss (seed 003: never run with them)
    assert np.max(np.abs(np.array(PRINTED_CHEB_U).sum(axis=1) - 1)) > 1e-4
    assert np.max(np.abs(np.array(PRINTED_LEG_U).sum(axis=1) - 1)) > 1e-7


def _scalar_block(A, U, c, f, dfdy, exact, t_end, h):
    """The block method (9) on y' = f(t, y), Newton per block, exact start values;
    returns the largest error at the block ends."""
    r = len(c)
    nb = int(round(t_end / h))
    yold = np.array([exact((ck - 1) * h) for ck in c])
    err = 0.0
    for b in range(nb):
        tk = b * h + c * h
        dy = np.array([f(t, y) for t, y in zip(tk, yold @ U.T)])
        for _ in range(50):
            y = h * A @ dy + U @ yold
            res = dy - np.array([f(t, yy) for t, yy in zip(tk, y)])
            jac = np.eye(r) - h * np.diag([dfdy(t, yy) for t, yy in zip(tk, y)]) @ A
            step = np.linalg.solve(jac, res)
            dy -= step
            if np.max(np.abs(step)) <= 1e-15 * (1 + np.max(np.abs(dy))):
                break
        yold = h * A @ dy + U @ yold
        err = max(err, abs(yold[-1] - exact(tk[-1])))
    return err


SCALAR = dict(f=lambda t, y: np.cos(t) * y, dfdy=lambda t, y: np.cos(t), exact=lambda t: np.exp(np.sin(t)), t_end=6.0)


@pytest.mark.parametrize("name,order", [("uniform_rk", 4), ("uniform_eq8", 5), ("chebyshev", 5), ("legendre", 5)])
def test_measured_order_on_a_scalar_ode(name, order):
    """y' = cos(t) y, y = exp(sin t) on [0, 6]: 4 for the RK-stable scheme, 5 for eq. (8)."""
    s = PRESETS[name]
    hs = 0.3 / 2.0 ** np.arange(4)
    errs = [_scalar_block(s.A, s.U, s.c, h=h, **SCALAR) for h in hs]
    slope = fit_order(hs, errs)
    assert abs(slope - order) <= 0.2, (slope, errs)


def test_printed_fractions_diverge():
    """Seed 003 section 2: with the printed Chebyshev fractions (row sums of U miss 1) the error
    grows as h shrinks, while the scheme built in code converges."""
    s = PRESETS["chebyshev"]
    A, U = np.array(PRINTED_CHEB_A), np.array(PRINTED_CHEB_U)
    hs = (0.05, 0.025, 0.0125)
    printed = [_scalar_block(A, U, s.c, h=h, **SCALAR) for h in hs]
    ours = [_scalar_block(s.A, s.U, s.c, h=h, **SCALAR) for h in hs]
    assert printed[2] > printed[1] > printed[0] > 1e4 * ours[0]
    assert ours[2] < ours[1] < ours[0]


def test_extrapolation_weights_exact_for_polynomials():
    for s in PRESETS.values():
        for blocks, degree in ((1, s.r - 1), (2, 2 * s.r - 1)):
            W = s.extrapolation(blocks)
            x = np.concatenate([s.c - b for b in range(blocks, 0, -1)])
            p = np.polynomial.Polynomial(np.arange(1, degree + 2))
            assert np.max(np.abs(W @ p(x) - p(s.c))) <= 1e-9 * np.max(np.abs(p(s.c)))


def test_diagonalization_reproduces_a():
    for s in PRESETS.values():
        mu, t, ti = s.diagonalization()
        assert np.max(np.abs(t @ np.diag(mu) @ ti - s.A)) <= 1e-13


def test_bad_nodes_rejected():
    with pytest.raises(ValueError, match="c_r = 1"):
        eq8([0.2, 0.5, 0.9])
    with pytest.raises(ValueError, match="increase"):
        eq8([0.5, 0.5, 1.0])
    with pytest.raises(ValueError, match="ill-conditioned"):
        eq8([0.5, 0.5 + 1e-9, 1.0])
    with pytest.raises(ValueError, match="r = 3"):
        rk_stable([0.25, 0.5, 0.75, 1.0])
    with pytest.raises(TypeError, match="rational"):
        eq8([1 / 3, 2 / 3, 1.0], exact=True)
    with pytest.raises(ValueError, match="unknown block scheme"):
        scheme("gauss")
    s = scheme((0.25, 0.6, 1.0))                 # any nodes by eq. (8), checked where built
    assert isinstance(s, BlockScheme) and s.order == 5 and np.allclose(s.U.sum(axis=1), 1)
    assert scheme(NODES["uniform"], construction="rk").rk_stable


# -- the integrator -----------------------------------------------------------------
def test_acceleration_constraint_at_round_off_for_every_scheme():
    """The index-1 form keeps G a + gamma = 0 exactly (seed 003: ~1e-12)."""
    m = two_link_manipulator()
    q0, v0 = m.initial_state()
    for name in PRESETS:
        r = BlockMethod(name).integrate(m, q0, v0, 2.0, 0.01)
        assert r.eps_acc <= 1e-13 * max(1.0, np.max(np.abs(r.v))), (name, r.eps_acc)
        assert 1e-10 < r.eps_pos < 1e-3           # the position level drifts (index 1)


def test_callback_path_equals_fortran_path():
    m = two_link_manipulator()
    q0, v0 = m.initial_state()
    a = BlockUniformRK().integrate(m, q0, v0, 0.5, 0.01, backend="fortran")
    b = BlockUniformRK().integrate(m, q0, v0, 0.5, 0.01, backend="callback")
    assert np.max(np.abs(a.q - b.q)) <= 1e-12 and np.max(np.abs(a.lam - b.lam)) <= 1e-9
    assert a.stats["newton_iterations"] == b.stats["newton_iterations"]


def test_ode_with_configuration_dependent_mass():
    """The independent-coordinate ODE (14) (M(theta), no constraints): block method and RK4
    agree with a tight DOP853 solution to their orders' accuracy."""
    from pyint.problems import ode_reference
    m = TwoLinkAngles()
    q0, v0 = np.zeros(2), np.zeros(2)
    qr, vr, _ = ode_reference(m, q0, v0, [1.0])
    # errors at h = 0.01 (from the order study): ~5e-8, ~2e-6, ~7e-6
    for meth, tol in ((BlockMethod("legendre"), 2e-7), (BlockUniformRK(), 5e-6), (RK4Index1(), 2e-5)):
        r = meth.integrate(m, q0, v0, 1.0, 0.01)
        assert np.max(np.abs(r.q[-1] - qr[0])) <= tol, meth.name
        assert r.eps_acc == 0.0 and np.max(np.abs(r.energy - r.energy[0])) <= 1e3 * tol


def test_start_up_values_come_from_rk4():
    """The first sample after t0 is RK4's (start_substeps steps per node interval)."""
    m = PendulumChain(2)
    q0, v0 = m.initial_state([0.4, 0.9])
    s = PRESETS["uniform_rk"]
    blk = BlockMethod(s, start_substeps=1).integrate(m, q0, v0, 0.03, 0.03)
    rk = RK4Index1().integrate(m, q0, v0, 0.03, 0.01)        # three RK4 steps of h/3 = the node intervals
    assert np.max(np.abs(blk.q[-1] - rk.q[-1])) <= 1e-14


def test_bad_options_and_newton_failure():
    with pytest.raises(ValueError, match="unknown block scheme"):
        BlockMethod("uniform")
    with pytest.raises(TypeError, match="BlockScheme"):
        BlockMethod(42)
    with pytest.raises(ValueError, match="choose a block scheme"):
        BlockMethod()
    for kw, msg in (({"tol": 0.0}, "tol"), ({"maxit": 0}, "maxit"), ({"theta_refresh": 2.0}, "theta_refresh"),
                    ({"start_substeps": 0}, "start_substeps")):
        with pytest.raises(ValueError, match=msg):
            BlockMethod("legendre", **kw)
    m = two_link_manipulator()
    q0, v0 = m.initial_state()
    with pytest.raises(NewtonConvergenceError) as exc:
        # a block far too long for the motion (tol = 1e-30 no longer fails: the round-off
        # floor of fortran/core/newton_control.f90 stops the iteration as converged)
        BlockMethod("legendre", maxit=1).integrate(m, q0, v0, 1.0, 0.25)
    assert exc.value.step == 2 and len(exc.value.result.t) == 2     # t0 and the RK4 start-up block


class _FDPendulum(Model):
    """A plain unit pendulum as a user writes it: mass, force and hol only, every
    other item by the base class's finite differences."""
    name = "fd_pendulum"
    n = 2
    n_hol = 1
    scleronomic = True

    def mass(self, q):
        return np.eye(2)

    def force(self, t, q, v):
        return np.array([0.0, -9.81])

    def hol(self, t, q):
        return np.array([q @ q - 1.0])


class _AnalyticPendulum(_FDPendulum):
    def hol_jac(self, t, q):
        return 2 * np.asarray(q).reshape(1, 2)

    def hol_gamma(self, t, q, v):
        return np.array([2 * v @ v])


@pytest.mark.parametrize("h", [1e-2, 1e-3])
def test_finite_difference_only_pendulum_runs_with_defaults(h):
    """Issue 14 item 3: BlockMethod("legendre") failed Newton at t = 0.35 on this model:
    its acceleration-constraint term (G v)_q v was a difference of differences (noise
    ~ eps / step^2 ~ 1e-5 relative).  Now to t = 1, within 5e-10 of the analytic-derivative
    model (measured 4.5e-11 under both OpenBLAS kernels tried, bound 10x)."""
    q0, v0 = np.array([np.sin(1.0), -np.cos(1.0)]), np.zeros(2)
    r = BlockMethod("legendre").integrate(_FDPendulum(), q0, v0, 1.0, h)
    exact = BlockMethod("legendre").integrate(_AnalyticPendulum(), q0, v0, 1.0, h)
    assert r.t[-1] == pytest.approx(1.0)
    assert np.max(np.abs(r.q - exact.q)) <= 5e-10 and np.max(np.abs(r.v - exact.v)) <= 5e-10
