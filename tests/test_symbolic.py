"""SymbolicModel: models written as SymPy expressions, compiled to Fortran.

The models are defined here, the way a user writes them (not taken from pyint):
the N-link pendulum chain and the seed-000 snakeboard, each compared with its
built-in twin (pyint.models.PendulumChain, Snakeboard), and random models
whose every derived item is checked against central differences.
"""
import os
import stat

import numpy as np
import pytest
import sympy as sp

import pyint.methods  # noqa: F401  registers every method
from pyint.integrator import METHODS
from pyint.models import ChaplyginSleigh, PendulumChain, Snakeboard, SymbolicModel, SymbolicModelError, TwoLinkAngles
from pyint.models.base import fd_derivative, fd_jacobian
from pyint.models._fortran_model import fortran_eval, model_query
from pyint.methods.genalpha import GeneralizedAlpha
from pyint.models.symbolic_examples import (magnet_pendulum_reference, magnet_pendulum_state, symbolic_chain,
                                            symbolic_magnet_pendulum, symbolic_sleigh, symbolic_snakeboard,
                                            symbolic_two_link_angles)

# compiled models of this module go to a fresh cache (tests/conftest.py), not the user's
pytestmark = pytest.mark.usefixtures("fresh_model_cache")


# Trajectories of the compiled model and of the built-in twin agree to roundoff
# (the same discrete equations, items summed in another order): measured
# <= 1.3e-14 over 0.5-1 s on the 3-link chain and the snakeboard; bound 1e-12.
TRAJ_TOL = 1e-12


# the user's models (pyint/models/symbolic_examples.py, also the benchmark's)
chain = symbolic_chain
snakeboard = symbolic_snakeboard


HOL_METHODS = ["genalpha", "symplectic_gl", "rattle", "lobatto_iiiab", "baumgarte_rk4", "rk4_index1",
               "block_uniform_rk", "block_chebyshev"]
NONHOL_METHODS = ["genalpha", "alpha_rattle", "galerkin_s2", "galerkin_s4", "rk4_index1", "block_legendre"]


@pytest.mark.parametrize("n_links", [2, 3])
@pytest.mark.parametrize("method", HOL_METHODS)
def test_chain_trajectory_equals_builtin(n_links, method):
    sym, ref = chain(n_links), PendulumChain(n_links)
    q0, v0 = ref.initial_state(np.array([0.5, 1.0, 1.5])[:n_links])
    meth = METHODS[method]()
    r_ref = meth.integrate(ref, q0, v0, 0.5, 0.01, backend="fortran")
    r_sym = meth.integrate(sym, q0, v0, 0.5, 0.01, backend="fortran")
    assert r_sym.status == "ok"
    assert np.max(np.abs(r_sym.q - r_ref.q)) <= TRAJ_TOL
    assert np.max(np.abs(r_sym.v - r_ref.v)) <= TRAJ_TOL * 10  # velocities: measured 2e-14
    if method in ("genalpha", "rattle"):  # the Python path of the same model: same trajectory
        r_cb = meth.integrate(sym, q0, v0, 0.5, 0.01, backend="callback")
        assert np.max(np.abs(r_cb.q - r_sym.q)) <= TRAJ_TOL


@pytest.mark.parametrize("method", NONHOL_METHODS)
def test_snakeboard_trajectory_equals_builtin(method):
    sym, ref = snakeboard(), Snakeboard()
    q0, v0 = ref.initial_state()
    meth = METHODS[method]()
    r_ref = meth.integrate(ref, q0, v0, 1.0, 0.01, backend="fortran")
    r_sym = meth.integrate(sym, q0, v0, 1.0, 0.01, backend="fortran")
    assert np.max(np.abs(r_sym.q - r_ref.q)) <= TRAJ_TOL
    r_cb = meth.integrate(sym, q0, v0, 1.0, 0.01, backend="callback")
    assert np.max(np.abs(r_cb.q - r_sym.q)) <= TRAJ_TOL


def test_integrate_batch_parameter_sweep():
    """integrate_batch (OpenMP) over lengths: one library, rpar per trajectory; equal to the built-in batch."""
    base = chain(2)
    lengths = [0.8, 1.0, 1.3]
    syms = [base.with_params(l1=ell, l2=ell) for ell in lengths]
    refs = [PendulumChain(2, length=ell) for ell in lengths]
    q0s = np.array([r.initial_state(np.array([0.4, 0.9]))[0] for r in refs])
    v0s = np.zeros_like(q0s)
    meth = GeneralizedAlpha()
    out_sym = meth.integrate_batch(syms, q0s, v0s, 0.5, 0.01, threads=2)
    out_ref = meth.integrate_batch(refs, q0s, v0s, 0.5, 0.01, threads=2)
    # Generalized-alpha's Newton stop allows a fraction of the step's local error
    # (fortran/core/newton_control.f90), so items equal to round-off can end a step one
    # iteration apart: at l = 1.3 the runs take 241 and 242 iterations and part by 2.4e-11
    # in q (0.8 and 1.0: same iterations, 4.5e-15).  Bound 10x the measured.
    for a, b in zip(out_sym, out_ref):
        assert np.max(np.abs(a.q - b.q)) <= 2.5e-10
    for a, m, q0 in zip(out_sym, syms, q0s):   # the batch is integrate() of each model, bit for bit
        np.testing.assert_array_equal(a.q, meth.integrate(m, q0, np.zeros_like(q0), 0.5, 0.01).q)
    assert np.max(np.abs(out_sym[0].q - out_sym[2].q)) > 0.1  # the parameters did reach the kernel


ITEMS_Q = ["mass", "hol", "hol_jac", "hol_t", "nh_A", "nh_b"]
ITEMS_QV = ["force", "force_q", "force_v", "hol_vel_q", "hol_gamma", "nh_vel_q", "nh_gamma", "energy"]


def _compare_items(sym, ref, rng, t=0.37):
    q, v = rng.standard_normal((2, sym.n))
    w = rng.standard_normal(sym.n)
    for req in ITEMS_Q + ITEMS_QV + ["mass_dq", "mass_dqq", "hol_gtl_q", "nh_atl_q"]:
        a = np.asarray(fortran_eval(sym, req, t, q, v, w))
        b = np.asarray(fortran_eval(ref, req, t, q, v, w))
        scale = max(1.0, np.max(np.abs(b), initial=0.0))
        assert np.max(np.abs(a - b), initial=0.0) <= 1e-14 * 16 * scale, req  # roundoff of a few ops


def test_items_equal_builtin_twins():
    rng = np.random.default_rng(7)
    for _ in range(3):
        _compare_items(chain(3), PendulumChain(3), rng)
        _compare_items(snakeboard(), Snakeboard(), rng)
        # M(q): the built-ins' analytic mass_dq and mass_dqq (a finite difference would be ~1e-10 off)
        _compare_items(symbolic_two_link_angles(width=0.1), TwoLinkAngles(width=0.1), rng)
        _compare_items(symbolic_sleigh(), ChaplyginSleigh(), rng)


# A configuration-dependent mass through the kernels that need its second derivatives: the canonical form
# (fortran/core/hamiltonian.f90: symplectic_gl, rattle, lobatto_iiiab) and the dual-variable form
# (fortran/core/dual_form.f90: galerkin_s*).  Measured over T = 1, h = 0.01 against the built-in twins:
# two-link q <= 2.3e-14, v <= 3.3e-13 (|v| up to ~8: the arm falls from rest); sleigh q, v <= 2e-15.
M_Q_CASES = [("two_link", m) for m in ("symplectic_gl", "rattle", "lobatto_iiiab", "galerkin_s2", "galerkin_s4")] + \
            [("sleigh", m) for m in ("galerkin_s2", "galerkin_s4")]


def _mq_twins(name):
    if name == "two_link":
        return (symbolic_two_link_angles(width=0.1), TwoLinkAngles(width=0.1),
                np.array([0.3, 0.5]), np.zeros(2))
    return (symbolic_sleigh(), ChaplyginSleigh(), *ChaplyginSleigh().initial_state())


@pytest.mark.parametrize("name,method", M_Q_CASES)
def test_configuration_dependent_mass_trajectory_equals_builtin(name, method):
    sym, ref, q0, v0 = _mq_twins(name)
    meth = METHODS[method]()
    r_ref = meth.integrate(ref, q0, v0, 1.0, 0.01, backend="fortran")
    r_sym = meth.integrate(sym, q0, v0, 1.0, 0.01, backend="fortran")
    assert r_ref.status == r_sym.status == "ok"
    assert np.max(np.abs(r_sym.q - r_ref.q)) <= TRAJ_TOL
    assert np.max(np.abs(r_sym.v - r_ref.v)) <= TRAJ_TOL * 10
    if method in ("rattle", "galerkin_s2"):   # the Python items (mass_dqq through the callback): same trajectory
        r_cb = meth.integrate(sym, q0, v0, 1.0, 0.01, backend="callback")
        assert np.max(np.abs(r_cb.q - r_sym.q)) <= TRAJ_TOL


def _exact_second_derivatives(sym):
    """NumPy functions (q, v) -> M, f, D = (M v)_q, K = (D v)_q, Mdot = sum_k M_k v_k, f_q, f_v, straight
    from the model's SymPy expressions (independent of pyint's derivation)."""
    q, v = sp.Matrix(sym._q), sp.Matrix(sym._v)
    M, f = sym._inputs[0], sym._inputs[1]
    D = (M * v).jacobian(q)
    mdot = sum((M.diff(qk) * vk for qk, vk in zip(q, v)), sp.zeros(*M.shape))
    exprs = (M, f, D, (D * v).jacobian(q), mdot, f.jacobian(q), f.jacobian(v))
    funs = [sp.lambdify([sym._q, sym._v, sym._p], e, "numpy") for e in exprs]
    return lambda q_, v_: [np.array(F(q_, v_, sym._pvals), dtype=float) for F in funs]


@pytest.mark.parametrize("name", ["two_link", "sleigh"])
def test_newton_blocks_of_a_configuration_dependent_mass_are_exact(name):
    """The Jacobian blocks of the canonical form (hamiltonian.f90) and the dual form (dual_form.f90) of a
    compiled M(q) model equal their exact assembly from the SymPy expressions: no finite difference of M is
    left in them.  The blocks multiply exact items by M^{-1}: bound 100 cond(M) eps relative (cond(M) = 13
    and 24 at the last state; measured <= 1.4e-15 and 9.0e-15).  The central differences of mass_dq the
    kernels took before were off by up to 5e-10."""
    sym = _mq_twins(name)[0]
    exact = _exact_second_derivatives(sym)
    n = sym.n
    rng = np.random.default_rng(5)
    shapes = [(n,), (n,)] + 4 * [(n, n)]
    for _ in range(5):
        q, p = rng.standard_normal((2, n))
        M = exact(q, q)[0]
        minv = np.linalg.inv(M)
        v = minv @ p
        M, f, D, K, mdot, fq, fv = exact(q, v)
        f = f.ravel()
        tol = 100 * np.linalg.cond(M) * np.finfo(float).eps
        # canonical: phi_q = -M^-1 D, psi_v = f_v + D + Mdot, psi_q = f_q + K + psi_v phi_q, psi_p = psi_v M^-1
        phq, psv = -minv @ D, fv + D + mdot
        canonical = [v, f + D @ v, phq, minv, fq + K + psv @ phq, psv @ minv]
        # dual: H_q = -f - D v, H_pq = -M^-1 D, K_v = -f_v - Mdot - D, H_qq = -f_q - K + K_v H_pq, H_qp = K_v M^-1
        kv = -fv - mdot - D
        dual = [v, -f - D @ v, phq, minv, -fq - K + kv @ phq, kv @ minv]
        for what, want in (("canonical_field", canonical), ("dual", dual)):
            got = model_query(sym, what, [0.3, q, p], shapes)
            for k, (a, b) in enumerate(zip(got, want)):
                assert np.max(np.abs(a - b)) <= tol * max(1.0, np.max(np.abs(b))), (what, k)


def random_model(rng):
    """A random nonlinear, rheonomic model: q-dependent mass, t/q/v-dependent force, g(t, q), A(t, q) v + b(t, q)."""
    x, y, z = q = sp.symbols("x y z")
    v = sp.symbols("u w s")
    t, k = sp.symbols("t k")
    c = [sp.Float(round(float(a), 3)) for a in rng.uniform(0.5, 1.5, 12)]
    B = sp.Matrix([[1 + c[0] * sp.sin(y)**2, c[1] * sp.cos(z), 0],
                   [c[2] * x / 4, 1 + y**2 / 4, c[3] * sp.sin(x)],
                   [0, 0, 2 + c[4] * sp.cos(x * y)]])
    M = B.T * B
    f = [k * sp.sin(t) * v[0] * y, -c[5] * v[1] * v[2] + z * sp.cos(t), c[6] * x * v[0]**2 - k * z]
    hol = [x**2 + c[7] * y * z - 1 + c[8] * sp.sin(t) * x]
    A = sp.Matrix([[sp.cos(z) + c[9] * t, sp.sin(x * y), 1]])
    b = [c[10] * sp.cos(t) * y + c[11] * t**2]
    return SymbolicModel(q, v, t=t, mass=M, force=f, potential=k * x**2 * y, hol=hol, nonhol=(A, b),
                         params={k: 0.7}, name="random")


def random_structure_model(rng):
    """A model whose every expression is a random sum of random products from a pool of terms."""
    x, y, z = q = sp.symbols("x y z")
    v = sp.symbols("u w s")
    t, k = sp.symbols("t k")
    pool_q = [x, y, z, sp.sin(x), sp.cos(y * z), x * y, sp.exp(z / 3), x**2, sp.sqrt(2 + sp.sin(y)), k * z]
    pool_t = pool_q + [t * x, sp.sin(t) * y, sp.cos(2 * t) * z, t**2]
    pool_v = pool_t + [v[0], v[1] * v[2], v[0] * x, sp.sin(v[2]) * y, k * v[1]**2]

    def expr(pool, terms=3):
        out = 0
        for _ in range(terms):
            a, b = rng.choice(len(pool), 2)
            c = sp.Float(round(float(rng.uniform(-1, 1)), 3))
            out += c * (pool[a] * pool[b] if rng.random() < 0.5 else pool[a])
        return out

    B = sp.Matrix(3, 3, lambda i, j: expr(pool_q, 2) / 4)
    M = sp.eye(3) + B.T * B  # symmetric positive definite for every q
    f = [expr(pool_v) for _ in range(3)]
    hol = [expr(pool_t) + x]
    A = sp.Matrix([[expr(pool_t, 2) + 1, expr(pool_t, 2), expr(pool_t, 2)]])
    b = [expr(pool_t, 2)]
    return SymbolicModel(q, v, t=t, mass=M, force=f, potential=expr(pool_t), hol=hol, nonhol=(A, b),
                         params={k: float(rng.uniform(0.5, 2))}, name="random_structure")


def test_items_are_exact_derivatives_of_random_models():
    """Every derived item against central differences of the items it comes from (base.py's definitions),
    and the compiled items against the NumPy ones: random coefficients and random structure."""
    rng = np.random.default_rng(2026)
    models = [random_model(rng) for _ in range(2)] + [random_structure_model(rng) for _ in range(4)]
    for m in models:
        t = rng.uniform(0, 2)
        q, v, a = rng.uniform(-1, 1, (3, m.n))
        lh, ln = rng.standard_normal(m.n_hol), rng.standard_normal(m.n_nonhol)
        # central differences with step ~eps^(1/3): error ~1e-10 relative; bound 1e-7 (margin > 100)
        tol = 1e-7

        def close(x, y):
            x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
            assert np.max(np.abs(x - y), initial=0.0) <= tol * max(1.0, np.max(np.abs(y), initial=0.0))

        close(m.mass_dq(q, a), fd_jacobian(lambda x: m.mass(x) @ a, q))
        fq, fv = m.force_jac(t, q, v)
        close(fq, fd_jacobian(lambda x: m.force(t, x, v), q))
        close(fv, fd_jacobian(lambda x: m.force(t, q, x), v))
        close(m.hol_jac(t, q), fd_jacobian(lambda x: m.hol(t, x), q))
        close(m.hol_t(t, q), fd_derivative(lambda s: m.hol(s, q), t))
        hv = lambda s, x: m.hol_jac(s, x) @ v + m.hol_t(s, x)  # noqa: E731
        close(m.hol_vel_q(t, q, v), fd_jacobian(lambda x: hv(t, x), q))
        close(m.hol_gamma(t, q, v), m.hol_vel_q(t, q, v) @ v + fd_derivative(lambda s: hv(s, q), t))
        close(m.hol_gtl_q(t, q, lh), fd_jacobian(lambda x: m.hol_jac(t, x).T @ lh, q))
        av = lambda s, x: m.nh_A(s, x) @ v + m.nh_b(s, x)  # noqa: E731
        close(m.nh_vel_q(t, q, v), fd_jacobian(lambda x: av(t, x), q))
        close(m.nh_gamma(t, q, v), m.nh_vel_q(t, q, v) @ v + fd_derivative(lambda s: av(s, q), t))
        close(m.nh_atl_q(t, q, ln), fd_jacobian(lambda x: m.nh_A(t, x).T @ ln, q))
        if m.name == "random":  # the energy T + V
            assert not m.constant_mass and not m.scleronomic
            close(m.energy(t, q, v), 0.5 * v @ m.mass(q) @ v + 0.7 * q[0]**2 * q[1])
        # compiled == NumPy, item by item
        w = a
        for req in ITEMS_Q + ITEMS_QV + ["mass_dq"]:
            num = getattr(m, req)(q) if req == "mass" else (
                m.mass_dq(q, a) if req == "mass_dq" else (
                    getattr(m, req)(t, q) if req in ITEMS_Q else (
                        m.force_jac(t, q, v)[req == "force_v"] if req in ("force_q", "force_v")
                        else getattr(m, req)(t, q, v))))
            comp = fortran_eval(m, req, t, q, v, w)
            close(comp, num)
        close(fortran_eval(m, "hol_gtl_q", t, q, v, lh), m.hol_gtl_q(t, q, lh))
        close(fortran_eval(m, "nh_atl_q", t, q, v, ln), m.nh_atl_q(t, q, ln))


def test_random_model_runs_in_fortran_like_the_callback_path():
    m = random_model(np.random.default_rng(5))
    q0 = np.array([1.0, 0.0, 0.0])  # g(0, q0) = 0
    v0 = np.array([0.0, 0.3, 0.0])  # made consistent by project=True
    meth = GeneralizedAlpha()
    r1 = meth.integrate(m, q0, v0, 0.3, 0.005, backend="fortran", project=True)
    r2 = meth.integrate(m, q0, v0, 0.3, 0.005, backend="callback", project=True)
    assert r1.status == "ok"
    assert np.max(np.abs(r1.q - r2.q)) <= TRAJ_TOL


@pytest.mark.parametrize("method", ["rattle", "symplectic_gl", "lobatto_iiiab", "genalpha"])
def test_force_of_time_alone_follows_time_in_fortran(method):
    """A force free of q and v (here a horizontal push A sin(w t) and gravity on a pendulum bob)
    lets the compiled model tell the kernels so (its f_q, f_v have no nonzero: they evaluate f once
    per stage time instead of at every Newton iterate); the trajectory must follow the push as the
    callback path of the same model does, which evaluates f everywhere (measured: equal to the last
    bit for each method; the bob without the push ends 0.198 away)."""
    t = sp.Symbol("t")
    x, y, vx, vy = sp.symbols("x y vx vy")
    m = SymbolicModel([x, y], [vx, vy], mass=sp.eye(2), force=[0.8 * sp.sin(3 * t), -1], t=t,
                      hol=[(x**2 + y**2 - 1) / 2])
    q0, v0 = np.array([0.0, -1.0]), np.array([0.5, 0.0])
    meth = METHODS[method]()
    r_f = meth.integrate(m, q0, v0, 1.0, 0.01, backend="fortran")
    r_cb = meth.integrate(m, q0, v0, 1.0, 0.01, backend="callback")
    assert r_f.status == r_cb.status == "ok"
    assert np.max(np.abs(r_f.q - r_cb.q)) <= TRAJ_TOL
    # and the push matters: without it the bob ends elsewhere (far beyond TRAJ_TOL)
    still = SymbolicModel([x, y], [vx, vy], mass=sp.eye(2), force=[0, -1], hol=[(x**2 + y**2 - 1) / 2])
    assert np.max(np.abs(meth.integrate(still, q0, v0, 1.0, 0.01).q[-1] - r_f.q[-1])) > 1e-3

# -- errors -------------------------------------------------------------------------

def test_non_square_mass_is_refused():
    x, y, u, w = sp.symbols("x y u w")
    with pytest.raises(ValueError, match="square"):
        SymbolicModel([x, y], [u, w], mass=sp.Matrix([[1, 0, 0], [0, 1, 0]]))
    with pytest.raises(ValueError, match="3x3 but there are 2 coordinates"):
        SymbolicModel([x, y], [u, w], mass=sp.eye(3))


def test_symbols_without_value_are_named():
    x, u, k, c = sp.symbols("x u k c")
    with pytest.raises(ValueError, match=r"symbols without a value in force: c, k"):
        SymbolicModel([x], [u], mass=[[1]], force=[-k * x - c * u])
    with pytest.raises(ValueError, match="symbols without a value in hol: t"):
        SymbolicModel([x], [u], mass=[[1]], hol=[x - sp.Symbol("t")])  # t not declared


def test_compile_failure_reports_message_and_source(tmp_path, monkeypatch):
    fake = tmp_path / "badfc"
    fake.write_text("#!/bin/sh\necho 'badfc: fatal error: generated.f90:3: no such intrinsic' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PYINT_MODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PYINT_FC", str(fake))
    x, u = sp.symbols("x u")
    m = SymbolicModel([x], [u], mass=[[1]], force=[-x * 1.25], name="fails")
    with pytest.raises(SymbolicModelError) as err:
        GeneralizedAlpha().integrate(m, [1.0], [0.0], 0.1, 0.01, backend="fortran")
    msg = str(err.value)
    assert "no such intrinsic" in msg
    src = msg.split("source: ")[1].split("\n")[0]
    assert os.path.isfile(src) and src.endswith(".f90") and "pyint_model_eval" in open(src).read()
    assert not [p for p in os.listdir(tmp_path / "cache") if p.startswith(".tmp")]  # nothing half-written


@pytest.mark.parametrize("damage", ["foreign", "corrupt"])
def test_stale_or_corrupt_cache_entry_is_rebuilt(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("PYINT_MODEL_CACHE", str(tmp_path))
    x, u = sp.symbols("x u")
    # a model of its own (the process-wide table of loaded libraries is keyed by source)
    m = SymbolicModel([x], [u], mass=[[1]], force=[-x * (2.0 + (1.5 if damage == "corrupt" else 0.5))])
    key, _, _ = m.fortran_source()
    lib = tmp_path / f"{key}.so"
    if damage == "foreign":  # a valid library of another model under this key (stale)
        other = SymbolicModel([x], [u], mass=[[1]], force=[-x * 7.125])
        okey, _, _ = other.fortran_source()
        other.compiled_ipar()
        lib.write_bytes((tmp_path / f"{okey}.so").read_bytes())
    else:  # truncated: carries the key but does not load
        lib.write_bytes(b"\x7fELF" + f"pyint-model-key:{key}".encode())
    r = GeneralizedAlpha().integrate(m, [1.0], [0.0], 0.2, 0.01, backend="fortran")
    r_cb = GeneralizedAlpha().integrate(m, [1.0], [0.0], 0.2, 0.01, backend="callback")
    assert np.max(np.abs(r.q - r_cb.q)) <= TRAJ_TOL
    assert f"pyint-model-key:{key}".encode() in lib.read_bytes() and lib.stat().st_size > 1000


def test_cache_index_without_an_item_is_derived_again(tmp_path, monkeypatch):
    """An index of the cache whose patterns miss a matrix item (as written before mass_dqq existed; the
    generator's version in the key keeps such an index from being found, this is the second guard) is
    not trusted: the model is derived again and its mass_dqq reaches the kernels (not zeros)."""
    import json
    monkeypatch.setenv("PYINT_MODEL_CACHE", str(tmp_path))
    x, u = sp.symbols("x u")
    make = lambda: SymbolicModel([x], [u], mass=[[2 + sp.sin(x)]], force=[-x])  # noqa: E731
    m = make()
    m.compiled_ipar()
    index = tmp_path / f"{m._input_key()}.json"
    data = json.loads(index.read_text())
    del data["patterns"]["mass_dqq"]
    index.write_text(json.dumps(data))
    fresh = make()
    q, a, w = np.array([0.4]), np.array([1.5]), np.array([-0.7])
    k = fortran_eval(fresh, "mass_dqq", 0.0, q, a, w)   # -sin(q) a w
    assert abs(float(np.ravel(k)[0]) + np.sin(0.4) * 1.5 * -0.7) <= 1e-15
    assert "mass_dqq" in json.loads(index.read_text())["patterns"]


def test_cache_is_shared_across_symbol_names_and_parameter_values(tmp_path, monkeypatch):
    monkeypatch.setenv("PYINT_MODEL_CACHE", str(tmp_path))
    a = chain(2)
    b = chain(2).with_params(g=1.62)
    assert a.fortran_source()[0] == b.fortran_source()[0]
    x1, y1, vx1, vy1, mm, gg = sp.symbols("X Y VX VY mass grav")
    one = SymbolicModel([x1, y1], [vx1, vy1], mass=sp.diag(mm, mm), potential=mm * gg * y1,
                        params={mm: 1.0, gg: 9.81})
    x2, y2, vx2, vy2, m2, g2 = sp.symbols("p r pv rv mu gamma")
    two = SymbolicModel([x2, y2], [vx2, vy2], mass=sp.diag(m2, m2), potential=m2 * g2 * y2,
                        params={m2: 1.0, g2: 9.81})
    assert one.fortran_source()[0] == two.fortran_source()[0]
    with pytest.raises(ValueError, match="not a parameter"):
        a.with_params(h=1.0)


def test_from_lagranges_method_chain_equals_builtin():
    """The 2-link chain from sympy.physics.mechanics.LagrangesMethod (Cartesian, hol_coneqs)."""
    from sympy.physics.mechanics import LagrangesMethod, dynamicsymbols
    x1, y1, x2, y2 = q = dynamicsymbols("x1 y1 x2 y2")
    qd = [c.diff(dynamicsymbols._t) for c in q]
    m, g = sp.symbols("m g")
    L = m * sum(c**2 for c in qd) / 2 - m * g * (y1 + y2)
    hol = [(x1**2 + y1**2 - 1) / 2, ((x2 - x1)**2 + (y2 - y1)**2 - 1) / 2]
    lm = LagrangesMethod(L, q, hol_coneqs=hol)
    sym = SymbolicModel.from_lagranges_method(lm, params={m: 1.0, g: 9.81}, name="lm_chain")
    ref = PendulumChain(2)
    assert (sym.n, sym.n_hol, sym.n_nonhol) == (4, 2, 0) and sym.conservative and sym.constant_mass
    q0, v0 = ref.initial_state(np.array([0.7, 1.2]))
    r_ref = GeneralizedAlpha().integrate(ref, q0, v0, 0.5, 0.01, backend="fortran")
    r_sym = GeneralizedAlpha().integrate(sym, q0, v0, 0.5, 0.01, backend="fortran")
    assert np.max(np.abs(r_sym.q - r_ref.q)) <= TRAJ_TOL
    # the index-3 step determines lam through q scaled by beta h^2 (beta >= 1/4): a q-level difference d
    # is a lam-level difference d / (beta h^2) (measured 6.4e-10 here)
    assert np.max(np.abs(r_sym.lam - r_ref.lam)) <= TRAJ_TOL / (0.25 * 0.01**2)
    rng = np.random.default_rng(3)
    _compare_items(sym, ref, rng)


def test_from_lagranges_method_snakeboard_equals_builtin():
    """The snakeboard from LagrangesMethod: nonhol_coneqs linear in q', thrust in forcelist-free form."""
    from sympy.physics.mechanics import LagrangesMethod, dynamicsymbols
    q = dynamicsymbols("x y theta psi phi_b phi_f")
    x, y, th, psi, pb, pf = q
    qd = [c.diff(dynamicsymbols._t) for c in q]
    xd, yd, thd, psid, pbd, pfd = qd
    m, J, Jr, Jw, L_, kr, kw = p = sp.symbols("m J J_r J_w L k_r k_w")
    T = (m * (xd**2 + yd**2) + J * thd**2 + Jr * (thd + psid)**2 + Jw * ((thd + pbd)**2 + (thd + pfd)**2)) / 2
    V = (kr * psi**2 + kw * (pb**2 + pf**2)) / 2
    nonhol = [-sp.sin(th + pb) * xd + sp.cos(th + pb) * yd - L_ * sp.cos(pb) * thd,
              -sp.sin(th + pf) * xd + sp.cos(th + pf) * yd + L_ * sp.cos(pf) * thd]
    lm = LagrangesMethod(T - V, q, nonhol_coneqs=nonhol)
    sym = SymbolicModel.from_lagranges_method(lm, params=dict(zip(p, (6.0, 0.016, 0.072, 0.0013, 0.2, 0.0, 0.1))),
                                              name="lm_board")
    ref = Snakeboard(thrust=0.0, k_rotor=0.0)
    assert (sym.n, sym.n_hol, sym.n_nonhol) == (6, 0, 2) and sym.conservative
    q0 = np.array([0.0, 0.0, 0.0, 0.2, 0.1, 0.9])
    v0 = np.array([0.0, 0.0, 0.0, 1.5, 0.0, 0.0])  # rotor spin: A v = 0
    for name in ("genalpha", "galerkin_s2"):
        r_ref = METHODS[name]().integrate(ref, q0, v0, 1.0, 0.01, backend="fortran")
        r_sym = METHODS[name]().integrate(sym, q0, v0, 1.0, 0.01, backend="fortran")
        assert np.max(np.abs(r_sym.q - r_ref.q)) <= TRAJ_TOL
    _compare_items(sym, ref, np.random.default_rng(4))


def test_reference_solves_a_symbolic_model():
    """pyint.reference (IDA) on the symbolic chain: the built-in chain's reference, within IDA's tolerance
    (both rtol = 1e-10 runs; measured 4.0e-10 apart at T = 1, bound 1e-8)."""
    import pyint.reference as reference
    sym, ref = chain(2), PendulumChain(2)
    q0, v0 = ref.initial_state(np.array([0.5, 1.0]))
    times = np.linspace(0.0, 1.0, 11)
    a = reference.solve(ref, times, q0, v0, cache_dir=False)
    b = reference.solve(sym, times, q0, v0, cache_dir=False)
    assert np.max(np.abs(a.q - b.q)) <= 1e-8


def test_no_finite_difference_is_left():
    """Every item with a finite-difference fallback in Model is defined by SymbolicModel itself
    (and by compiled_model_t in Fortran: fortran/core/compiled_model.f90 overrides every model_t item)."""
    from pyint.models.base import Model
    fallbacks = ["mass_dq", "mass_dqq", "force_jac", "hol_jac", "hol_t", "hol_jac_t", "hol_tt", "hol_vel_q", "hol_gamma",
                 "hol_gtl_q", "nh_vel_q", "nh_dt", "nh_gamma", "nh_atl_q"]
    assert [f for f in fallbacks if getattr(SymbolicModel, f) is getattr(Model, f)] == []


def test_undefined_functions_are_refused():
    x, u = sp.symbols("x u")
    with pytest.raises(ValueError, match="undefined functions in force: drag"):
        SymbolicModel([x], [u], mass=[[1]], force=[-sp.Function("drag")(u)])


def test_concurrent_processes_share_one_cache(tmp_path):
    """Three processes build the same new model into an empty cache at once: each loads a whole library
    (temporary name + rename) and computes the same trajectory."""
    import subprocess
    import sys
    code = ("import sympy as sp, numpy as np\n"
            "from pyint.models import SymbolicModel\n"
            "from pyint.methods.genalpha import GeneralizedAlpha\n"
            "x, u = sp.symbols('x u')\n"
            "m = SymbolicModel([x], [u], mass=[[1 + x**2 / 8]], force=[-x**3 - 0.0625 * u])\n"
            "r = GeneralizedAlpha().integrate(m, [1.0], [0.0], 1.0, 0.01, backend='fortran')\n"
            "print(repr(float(r.q[-1, 0])))\n")
    env = {**os.environ, "PYINT_MODEL_CACHE": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [o[1][-500:] for o in outs]
    assert len({o[0] for o in outs}) == 1
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".tmp")]
    assert len([p for p in os.listdir(tmp_path) if p.endswith(".so")]) == 1


def test_pickled_model_runs_in_another_process():
    """A SymbolicModel goes through pickle (process pools, Dask: the study runner's workers) and runs there."""
    import pickle
    from concurrent.futures import ProcessPoolExecutor
    sym = chain(2).with_params(g=3.5)
    q0, v0 = PendulumChain(2).initial_state(np.array([0.5, 1.0]))
    local = GeneralizedAlpha().integrate(sym, q0, v0, 0.3, 0.01, backend="fortran")
    blob = pickle.dumps(sym)
    with ProcessPoolExecutor(1) as pool:
        remote = pool.submit(_integrate_pickled, blob, q0, v0).result(timeout=300)
    assert np.array_equal(remote, local.q)


def _integrate_pickled(blob, q0, v0):
    import pickle
    m = pickle.loads(blob)
    return GeneralizedAlpha().integrate(m, q0, v0, 0.3, 0.01, backend="fortran").q


def test_python_items_come_from_the_compiled_library_once_loaded():
    """After compiled_ipar() (what pyint.reference does first) a SymbolicModel's Python items call the
    compiled routine through ctypes: every item equals the lambdified one to roundoff (two evaluations
    of the same expressions after different common-subexpression eliminations; measured <= 1 eps of
    the item's scale on seeds 11-13, bound 64 eps), on a random rheonomic model with nonzero w-items."""
    rng = np.random.default_rng(11)
    m = random_model(rng)
    names = ["mass", "mass_dq", "force", "force_q", "force_v", "hol", "hol_jac", "hol_t", "hol_vel_q",
             "hol_gamma", "hol_gtl_q", "nh_A", "nh_b", "nh_vel_q", "nh_gamma", "nh_atl_q", "energy"]
    t, (q, v, w) = 0.3, rng.standard_normal((3, m.n))
    lam = [m._eval(k, t, q, v, w) for k in names]
    assert m.__dict__.get("_lib") is None
    m.compiled_ipar()
    assert m.__dict__.get("_lib") is not None

    class _NoLambdify(dict):
        def get(self, *args):
            raise AssertionError("a lambdified item was used after the library was loaded")

    m._num = _NoLambdify()
    for k, a in zip(names, lam):
        b = m._eval(k, t, q, v, w)
        scale = max(1.0, np.max(np.abs(a), initial=0.0))
        assert np.shape(b) == np.shape(a), k
        assert np.max(np.abs(np.asarray(b) - a), initial=0.0) <= 64 * np.finfo(float).eps * scale, k


def test_magnet_pendulum_converges_to_its_angle_ode():
    """The benchmark's problem with bursts (bench/run.py, section adaptive): the Cartesian SymbolicModel
    and its reference, the angle ODE of the same potential by DOP853, are the same motion: fixed-step
    generalized-alpha converges to it at order 2 over [0, 1] (one passage of the magnet).  Measured max
    errors over 16 samples 4.37e-7 (h = 2^-13) and 1.10e-7 (2^-14), log2 ratio 1.99; the reference at
    rtol 1e-12 is 2.1e-12 from 1e-13."""
    model, (q0, v0) = symbolic_magnet_pendulum(), magnet_pendulum_state()
    times = np.linspace(0.0, 1.0, 17)
    qref = magnet_pendulum_reference(times)
    err = [np.max(np.abs(GeneralizedAlpha().integrate(model, q0, v0, 1.0, 2.0 ** -k, every=2 ** k // 16).q - qref))
           for k in (13, 14)]
    assert abs(np.log2(err[0] / err[1]) - 2) <= 0.1      # measured 0.01
    assert err[1] <= 1.1e-6                               # measured 1.1e-7
