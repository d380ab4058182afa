"""Exact derivatives of random SymbolicModels, property-based (issue 17, acceptance).

Hypothesis draws one of a handful of random model structures (sizes n, mh, mn
and random polynomial / trigonometric / exponential terms, fixed per structure
so each is derived and compiled once; the compile cache makes it cheap), random
values of the structure's coefficients (parameters: runtime inputs, no
recompile), and a random state (t, q, v, a, lam).  Every derived item of the
compiled model, read through the kernels' model_t (pyint.models._fortran_model.
fortran_eval), is compared with central differences (pyint.models.base's
fd_jacobian / fd_derivative, the helpers test_symbolic.py uses) of the items it
is derived from.  derandomize=True, database=None: the same examples on every
run (CI is reproducible).

Tolerance (derived).  fd_jacobian / fd_derivative take the step
h = 6e-6 max(1, |x|) (~ eps^(1/3)); the states are drawn with |q|, |v| <= 1 and
0 <= t <= 2, so 6e-6 <= h <= 1.2e-5.  The central difference of f errs by
    h^2 / 6 |f'''|          (truncation)
  + k u F / h               (round-off: f evaluated to k u F, u = 2.2e-16,
                             F the magnitude of f's terms)
With S = max(1, |item|, |difference|, |f|) as the scale of an item and the
model's terms (coefficients <= 2 in size, products of at most four pool terms
whose derivatives grow at most by a factor 2 per order on the drawn box) we
take |f'''| <= 1e3 S and k F <= 1e2 S:
    err <= (1.2e-5)^2 / 6 * 1e3 S + 1e2 * 2.2e-16 S / 6e-6 = 2.4e-8 S + 3.7e-9 S,
so TOL = 3e-8 (relative to S).  Measured: <= 6.4e-11 S over two sets of 60 examples
(mass_dq; margin ~470); mass_dqq (d/dq [(M a)_q w], the central difference of
the compiled mass_dq) <= 6.1e-11 S (margin ~490).  A wrong derivative is off by O(S): an entry of
mass_dq scaled by 1 + 1e-6 already fails (1e-6 S = 33 TOL).
"""
import functools

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyint.models.base as base
from pyint.models._fortran_model import fortran_eval
from pyint.methods.genalpha import GeneralizedAlpha
from pyint.models import SymbolicModel
from pyint.models.base import Model, fd_derivative, fd_jacobian

TOL = 3e-8

#: (n, mh, mn) of the random structures; the structure's index seeds its terms
STRUCTURES = [(2, 1, 0), (3, 1, 1), (3, 0, 2), (4, 2, 1), (2, 0, 1)]
N_COEF = 48  # coefficients c0..c47 (parameters), more than any structure uses


# compiled models of this module go to a fresh cache (tests/conftest.py), not the user's
pytestmark = pytest.mark.usefixtures("fresh_model_cache")


@functools.lru_cache(maxsize=None)
def structure(index):
    """The random model of structure ``index``, compiled; its coefficients are the parameters c0, c1, ..."""
    n, mh, mn = STRUCTURES[index]
    rng = np.random.default_rng(1000 + index)
    q = sp.symbols(f"q0:{n}")
    v = sp.symbols(f"v0:{n}")
    t = sp.Symbol("t")
    c = sp.symbols(f"c0:{N_COEF}")
    used = []

    def coef():
        used.append(c[len(used)])
        return used[-1]

    pick = lambda seq: seq[int(rng.integers(len(seq)))]  # noqa: E731
    pool_q = [*q, *(sp.sin(x) for x in q), *(sp.cos(x * y) for x, y in zip(q, q[1:] + q[:1])),
              *(x**2 for x in q), sp.exp(q[-1] / 3), sp.sqrt(2 + sp.sin(q[0]))]
    pool_t = pool_q + [t * q[0], sp.sin(t) * q[-1], sp.cos(2 * t) * q[0], t**2, sp.sin(t)]
    pool_v = pool_t + [*v, v[0] * v[-1], v[0] * q[-1], sp.sin(v[-1]) * q[0], v[0]**2]

    def expr(pool, terms=2):
        out = 0
        for _ in range(terms):
            term = pick(pool) * (pick(pool) if rng.random() < 0.5 else 1)
            out += coef() * term
        return out

    # M = I + B^T B: symmetric positive definite for every q and every coefficient
    B = sp.Matrix(n, n, lambda i, j: expr(pool_q, 1) / 2 if rng.random() < 0.6 else 0)
    M = sp.eye(n) + B.T * B
    f = [expr(pool_v) for _ in range(n)]
    hol = [expr(pool_t) + q[i] for i in range(mh)] or None
    A = sp.Matrix(mn, n, lambda i, j: expr(pool_t, 1) + (1 if i == j else 0))
    b = [expr(pool_t, 1) for _ in range(mn)]
    V = expr(pool_t)
    m = SymbolicModel(q, v, t=t, mass=M, force=f, potential=V, hol=hol,
                      nonhol=(A, b) if mn else None, params={s: 1.0 for s in used}, name=f"prop{index}")
    fortran_eval(m, "mass", 0.0, np.zeros(n), np.zeros(n))  # compiled and loaded once: with_params copies share it
    return m


@st.composite
def cases(draw):
    index = draw(st.integers(0, len(STRUCTURES) - 1))
    m = structure(index)
    unit = st.floats(-1.0, 1.0, allow_nan=False)
    coefs = {name: draw(st.floats(-2.0, 2.0, allow_nan=False)) for name in m.params}
    m = m.with_params(**coefs)
    n = m.n
    t = draw(st.floats(0.0, 2.0, allow_nan=False))
    q, v, a = (np.array(draw(st.lists(unit, min_size=n, max_size=n))) for _ in range(3))
    lh = np.array(draw(st.lists(unit, min_size=m.n_hol, max_size=m.n_hol)))
    ln = np.array(draw(st.lists(unit, min_size=m.n_nonhol, max_size=m.n_nonhol)))
    return m, t, q, v, a, lh, ln


def _close(item, exact, approx, *more):
    """|exact - approx| <= TOL S, S = max(1, |exact|, |approx|, the differenced values)."""
    exact, approx = np.asarray(exact, dtype=float), np.asarray(approx, dtype=float)
    assert exact.shape == approx.shape or exact.size == approx.size, item
    scale = max([1.0] + [float(np.max(np.abs(x), initial=0.0)) for x in (exact, approx, *more)])
    err = float(np.max(np.abs(exact.ravel() - approx.ravel()), initial=0.0))
    assert err <= TOL * scale, f"{item}: |exact - central difference| = {err:.3g} > {TOL:g} * {scale:.3g}"
    return err / scale


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_item_is_the_exact_derivative(case):
    m, t, q, v, a, lh, ln = case
    mh, mn = m.n_hol, m.n_nonhol

    def F(req, t_=t, q_=q, v_=v, w=None):   # an item through the kernels' model_t (the compiled routine)
        return np.asarray(fortran_eval(m, req, t_, q_, v_, w), dtype=float)

    M = F("mass")
    assert np.allclose(M, M.T, rtol=0, atol=1e-15 * np.max(np.abs(M)))
    assert np.min(np.linalg.eigvalsh(M)) >= 1 - 1e-12   # M = I + B^T B
    _close("mass_dq", F("mass_dq", w=a), fd_jacobian(lambda x: F("mass", q_=x) @ a, q), M)
    # mass_dqq(q, a, w) = d/dq [(M a)_q w] (its a is the routine's v), here with w = v
    D_v = lambda x: F("mass_dq", q_=x, w=a) @ v   # noqa: E731
    _close("mass_dqq", F("mass_dqq", v_=a, w=v), fd_jacobian(D_v, q), D_v(q))
    fv0 = F("force")
    _close("force_q", F("force_q"), fd_jacobian(lambda x: F("force", q_=x), q), fv0)
    _close("force_v", F("force_v"), fd_jacobian(lambda x: F("force", v_=x), v), fv0)
    # the energy T + V: dE/dv = M v
    _close("energy_v", M @ v, fd_jacobian(lambda x: np.atleast_1d(F("energy", v_=x)), v).ravel(), F("energy"))
    if mh:
        g0 = F("hol")
        G = F("hol_jac")
        _close("hol_jac", G, fd_jacobian(lambda x: F("hol", q_=x), q), g0)
        gt = F("hol_t")
        _close("hol_t", gt, fd_derivative(lambda s: F("hol", t_=s), t), g0)
        # G_t and g_tt: the Python items (not compiled items; hol_gamma below holds them)
        Gt, gtt = m.hol_jac_t(t, q), m.hol_tt(t, q)
        _close("hol_jac_t", Gt, fd_derivative(lambda s: F("hol_jac", t_=s), t), G)
        _close("hol_tt", gtt, fd_derivative(lambda s: F("hol_t", t_=s), t), gt)
        hv = lambda s, x: F("hol_jac", t_=s, q_=x) @ v + F("hol_t", t_=s, q_=x)  # noqa: E731
        Hq = F("hol_vel_q")
        _close("hol_vel_q", Hq, fd_jacobian(lambda x: hv(t, x), q), hv(t, q))
        gam = F("hol_gamma")
        _close("hol_gamma", gam, Hq @ v + fd_derivative(lambda s: hv(s, q), t), hv(t, q))
        _close("hol_gamma = (G v)_q v + 2 G_t v + g_tt", gam, Hq @ v + Gt @ v + gtt, hv(t, q))
        _close("hol_gtl_q", F("hol_gtl_q", w=lh), fd_jacobian(lambda x: F("hol_jac", q_=x).T @ lh, q), G)
    if mn:
        A = F("nh_A")
        av = lambda s, x: F("nh_A", t_=s, q_=x) @ v + F("nh_b", t_=s, q_=x)  # noqa: E731
        Aq = F("nh_vel_q")
        _close("nh_vel_q", Aq, fd_jacobian(lambda x: av(t, x), q), av(t, q))
        dt = m.nh_dt(t, q, v)
        _close("nh_dt", dt, fd_derivative(lambda s: av(s, q), t), av(t, q))
        _close("nh_gamma", F("nh_gamma"), Aq @ v + fd_derivative(lambda s: av(s, q), t), av(t, q))
        _close("nh_atl_q", F("nh_atl_q", w=ln), fd_jacobian(lambda x: F("nh_A", q_=x).T @ ln, q), A)


#: Model's items whose default is a central difference (pyint/models/base.py, "finite-difference fallbacks")
FD_FALLBACKS = ("mass_dq", "mass_dqq", "force_jac", "hol_jac", "hol_t", "hol_jac_t", "hol_tt", "hol_vel_q", "hol_gamma",
                "hol_gtl_q", "nh_vel_q", "nh_dt", "nh_gamma", "nh_atl_q")


def test_no_finite_difference_in_a_run(monkeypatch):
    """SymbolicModel overrides every finite-difference fallback of Model, and a run through the Python
    items (callback backend) never reaches base.py's difference quotients.  (The Fortran side has no
    such hook; fortran/core/compiled_model.f90 overrides every item of model_t with a finite-difference
    default.)"""
    for name in FD_FALLBACKS:
        assert getattr(SymbolicModel, name) is not getattr(Model, name), name

    def boom(*args, **kwargs):
        raise AssertionError("a finite difference in a SymbolicModel's run")

    monkeypatch.setattr(base, "_central", boom)
    monkeypatch.setattr(base, "_second", boom)
    with pytest.raises(AssertionError, match="finite difference"):   # the patch is live
        fd_jacobian(np.sin, np.zeros(1))
    x, y, vx, vy, k, ell = sp.symbols("x y vx vy k l")
    # a pendulum on a rotating circle of radius l: rheonomic g(t, q), q-dependent force
    t = sp.Symbol("t")
    m = SymbolicModel([x, y], [vx, vy], t=t, mass=sp.diag(1 + x**2 / 4, 1 + x**2 / 4), potential=k * y,
                      force=[-0.1 * vx * y, 0], hol=[((x - sp.sin(t) / 4)**2 + y**2 - ell**2) / 2],
                      nonhol=None, params={k: 9.81, ell: 1.0}, name="prop_run")
    for backend in ("callback", "fortran"):
        r = GeneralizedAlpha().integrate(m, [1.0, 0.0], [0.0, 0.0], 0.2, 0.01, backend=backend, project=True)
        assert r.status == "ok"
