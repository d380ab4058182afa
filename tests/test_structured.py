"""Structured Newton solves, Jacobian reuse and batched trajectories (issue 9).

* the pendulum chain's O(N) hooks equal the dense defaults of model_t;
* the three solvers (dense, banded after RCM, sparse KLU) solve the same systems;
* whole trajectories agree to round-off between solvers (Newton's method), and
  within the Newton tolerance between simplified and full Newton;
* a batch gives bit-for-bit the trajectories of one-by-one runs.
"""
import numpy as np
import pytest

from pyint.models._fortran_model import model_query
from pyint.methods.genalpha import AlphaRattle, GeneralizedAlpha
from pyint.models import Model, PendulumChain
from pyint.models.structured import consistent_acceleration, solve_coo, sparse_solver_available

SOLVERS = ["dense", "banded"] + (["sparse"] if sparse_solver_available() else [])


def _hooks(model, dflt, t, q, v, a, lam, coef, s):
    n = model.n
    return model_query(model, "structured", [t, q, v, a, lam, coef, s], [(n, n, 7), (n, 5)], [dflt], "fortran")


@pytest.mark.parametrize("nlinks", [1, 3, 6])
def test_chain_hooks_equal_dense_defaults(nlinks, rng):
    m = PendulumChain(nlinks, mass=rng.uniform(0.5, 2, nlinks), length=rng.uniform(0.5, 1.5, nlinks))
    q, v, a = (rng.normal(size=m.n) for _ in range(3))
    lam = rng.normal(size=m.n_hol)
    coef = rng.normal(size=6)
    fast_b, fast_o = _hooks(m, 0, 0.3, q, v, a, lam, coef, -1.7)
    dense_b, dense_o = _hooks(m, 1, 0.3, q, v, a, lam, coef, -1.7)
    assert np.max(np.abs(dense_b[:, :, [0, 1, 2, 3]])) > 0.1  # the blocks are not trivially zero
    assert np.max(np.abs(fast_b - dense_b)) <= 1e-13 * np.max(np.abs(dense_b))
    assert np.max(np.abs(fast_o - dense_o)) <= 1e-13 * max(1.0, np.max(np.abs(dense_o)))
    # and the defaults are the analytic items: M, (G^T lam)_q, G
    n = m.n
    assert np.allclose(dense_b[:, :, 0], coef[0] * m.mass(q) + coef[4] * m.hol_gtl_q(0.3, q, lam), atol=1e-13)
    assert np.allclose(dense_b[:nlinks, :, 1], -1.7 * m.hol_jac(0.3, q), atol=1e-13)
    assert np.allclose(dense_b[:, :nlinks, 2], -1.7 * m.hol_jac(0.3, q).T, atol=1e-13)
    assert np.allclose(fast_o[:, 0], m.mass(q) @ a) and np.allclose(fast_o[:n, 2], m.hol_jac(0.3, q).T @ lam)


def _random_system(rng, nx, kind):
    if kind == "band":  # a tridiagonal matrix with its unknowns shuffled: RCM must find the band
        rows = np.concatenate([np.arange(nx), np.arange(nx - 1), np.arange(1, nx)])
        cols = np.concatenate([np.arange(nx), np.arange(1, nx), np.arange(nx - 1)])
        perm = rng.permutation(nx)
        rows, cols = perm[rows], perm[cols]
    else:  # random pattern plus the diagonal: general sparsity
        k = 4 * nx
        rows = np.concatenate([np.arange(nx), rng.integers(0, nx, k)])
        cols = np.concatenate([np.arange(nx), rng.integers(0, nx, k)])
    vals = rng.normal(size=rows.size)
    vals[:nx] += 0.0 if kind == "band" else 3.0
    a = np.zeros((nx, nx))
    np.add.at(a, (rows, cols), vals)
    return rows, cols, vals, a


@pytest.mark.parametrize("kind", ["band", "general"])
def test_solvers_solve_the_same_system(kind, rng):
    nx = 60
    rows, cols, vals, a = _random_system(rng, nx, kind)
    b = rng.normal(size=nx)
    want = np.linalg.solve(a, b)
    for solver in SOLVERS:
        x, info = solve_coo(nx, rows, cols, vals, b, solver)
        assert info["linear_solver"] == solver
        assert np.max(np.abs(x - want)) <= 1e-10 * np.max(np.abs(want)), solver
    if kind == "band":
        _, info = solve_coo(nx, rows, cols, vals, b, "banded")
        assert info["band_lower"] == 1 and info["band_upper"] == 1  # RCM recovered the tridiagonal order


def test_singular_matrix_reported_by_every_solver():
    rows, cols, vals = [0, 0, 1, 1, 2], [0, 1, 0, 1, 2], [1.0, 2.0, 2.0, 4.0, 1.0]
    for solver in SOLVERS:
        with pytest.raises(np.linalg.LinAlgError):
            solve_coo(3, rows, cols, vals, np.ones(3), solver)


def test_consistent_acceleration_structured_matches_dense():
    m = PendulumChain(5, mass=[1, 2, 1, 3, 1], length=[1, 0.5, 1, 0.7, 1.2])
    q0, _ = m.initial_state([0.3, 0.9, -0.4, 1.2, 2.0])
    v0 = np.tile([np.cos(0.3), np.sin(0.3)], 5)  # all points alike, perpendicular to link 1: G v = 0
    want = m.consistent_acceleration(0.0, q0, v0)
    for solver in SOLVERS + ["auto"]:
        got = consistent_acceleration(m, 0.0, q0, v0, linear_solver=solver)
        for g, w in zip(got, want):
            assert np.max(np.abs(g - w), initial=0.0) <= 1e-11 * max(1.0, np.max(np.abs(w), initial=0.0))


@pytest.mark.parametrize("nlinks", [2, 8, 32])
def test_structured_and_dense_trajectories_identical(nlinks):
    m = PendulumChain(nlinks)
    q0, v0 = m.initial_state(np.linspace(0.4, 1.6, nlinks))
    runs = {s: GeneralizedAlpha(linear_solver=s, jacobian_reuse=False).integrate(m, q0, v0, 0.3, 1e-3, every=10)
            for s in SOLVERS}
    ref = runs["dense"]
    # lam (and a) carry a round-off floor ~ eps / (beta h^2) relative (the README's
    # Newton section): that is "round-off" for them
    lam_tol = 100 * np.finfo(float).eps / (ref.params["beta"] * 1e-3**2)
    for s, r in runs.items():
        assert r.stats["linear_solver"] == s
        assert r.stats["newton_iterations"] == ref.stats["newton_iterations"]
        assert np.max(np.abs(r.q - ref.q)) <= 1e-12 * max(1.0, np.max(np.abs(ref.q))), s
        assert np.max(np.abs(r.v - ref.v)) <= 1e-10, s
        assert np.max(np.abs(r.lam - ref.lam)) <= lam_tol * np.max(np.abs(ref.lam)), s


def test_simplified_newton_within_tolerance_and_keeps_constraints():
    m = PendulumChain(8)
    q0, v0 = m.initial_state(np.linspace(0.4, 1.6, 8))
    full = GeneralizedAlpha(jacobian_reuse=False).integrate(m, q0, v0, 0.3, 1e-3)
    simp = GeneralizedAlpha(jacobian_reuse=True).integrate(m, q0, v0, 0.3, 1e-3)
    st = simp.stats
    assert st["jacobian_reuses"] > 0 and st["jacobian_factorizations"] < 0.5 * st["steps"]
    assert full.stats["jacobian_reuses"] == 0
    assert full.stats["jacobian_factorizations"] == full.stats["newton_iterations"]
    # Newton tolerance 1e-10 in position units per step; over 300 steps
    assert np.max(np.abs(simp.q - full.q)) <= 1e-8
    scale = max(1.0, np.max(np.abs(simp.q)))
    assert simp.eps_pos <= 1e-13 * scale  # still the position level at round-off


def test_auto_choice_and_large_chain_without_dense_storage():
    auto = "sparse" if sparse_solver_available() else "banded"
    small = GeneralizedAlpha().integrate(PendulumChain(2), *PendulumChain(2).initial_state(), 0.01, 1e-3)
    assert small.stats["linear_solver"] == ("sparse" if sparse_solver_available() else "dense")
    m = PendulumChain(400)  # dense (1200)^2 Newton matrices would take 11 MB each and O(N^3) work
    q0, v0 = m.initial_state(np.linspace(0.5, 1.5, 400))
    r = GeneralizedAlpha().integrate(m, q0, v0, 0.02, 1e-3, every=20)
    assert r.stats["linear_solver"] == auto
    assert r.eps_pos <= 1e-13 * np.max(np.abs(r.q))
    rb = GeneralizedAlpha(linear_solver="banded").integrate(m, q0, v0, 0.02, 1e-3, every=20)
    assert rb.stats["band_lower"] <= 6 and rb.stats["band_upper"] <= 6  # RCM: the band does not grow with N
    assert np.max(np.abs(rb.q - r.q)) <= 1e-9


class _NoDenseG(PendulumChain):
    """The chain (its Fortran twin) whose Python G refuses to be formed: the start of a run
    on the twin must check the constraint levels through the twin's O(N) items."""

    def hol_jac(self, t, q):
        raise AssertionError("the dense G was formed in Python")


def test_start_checks_constraint_levels_on_the_fortran_twin():
    m = _NoDenseG(300)
    q0, v0 = m.initial_state(np.linspace(0.5, 1.5, 300))
    r = GeneralizedAlpha().integrate(m, q0, v0, 0.005, 1e-3)   # ca04593: G v + g_t from the dense G
    ref = GeneralizedAlpha().integrate(PendulumChain(300), q0, v0, 0.005, 1e-3)
    assert np.array_equal(r.q, ref.q) and np.array_equal(r.lam, ref.lam)
    bad_v = v0.copy()
    bad_v[0] += 1e-6          # |G v + g_t| ~ 1e-6 |d_1| > 1e-10: refused, the level named
    with pytest.raises(ValueError, match=r"max\|G v \+ g_t\|"):
        GeneralizedAlpha().integrate(m, q0, bad_v, 0.005, 1e-3)
    bad_q = q0.copy()
    bad_q[0] += 1e-6
    with pytest.raises(ValueError, match=r"max\|g\(q0\)\|"):
        GeneralizedAlpha().integrate(m, bad_q, v0, 0.005, 1e-3)


def test_batch_identical_to_one_by_one(rng):
    m = PendulumChain(4)
    states = [m.initial_state(rng.uniform(0.2, 2.0, 4)) for _ in range(5)]
    q0s = np.array([s[0] for s in states])
    v0s = np.array([s[1] for s in states])
    ga = GeneralizedAlpha(linear_solver="sparse" if sparse_solver_available() else "banded")
    batch = ga.integrate_batch(m, q0s, v0s, 0.5, 1e-3, every=50, threads=2)
    for r, q0, v0 in zip(batch, q0s, v0s):
        one = ga.integrate(m, q0, v0, 0.5, 1e-3, every=50)
        assert np.array_equal(r.q, one.q) and np.array_equal(r.v, one.v) and np.array_equal(r.lam, one.lam)
        assert r.stats["newton_iterations"] == one.stats["newton_iterations"]
        assert r.stats["threads"] == 2 and r.stats["batch_size"] == 5
    # parameter sets: the same start, different masses and lengths
    models = [PendulumChain(4, mass=[1.0, 1.0 + 0.5 * k, 1.0, 1.0]) for k in range(4)]
    q0, v0 = models[0].initial_state([0.5, 1.0, 1.5, 2.0])
    batch = ga.integrate_batch(models, q0, v0, 0.5, 1e-3, threads=2)
    ones = [ga.integrate(mm, q0, v0, 0.5, 1e-3) for mm in models]
    assert all(np.array_equal(b.q, o.q) for b, o in zip(batch, ones))
    assert np.max(np.abs(batch[0].q[-1] - batch[-1].q[-1])) > 1e-3  # the parameters did reach the kernel
    assert all(b.model is mm for b, mm in zip(batch, models))


def test_batch_bad_input_and_callback_fallback():
    ga = GeneralizedAlpha()
    m2, m3 = PendulumChain(2), PendulumChain(3)
    q0, v0 = m2.initial_state()
    with pytest.raises(ValueError, match="one kind and size"):
        ga.integrate_batch([m2, m3], q0, v0, 0.1, 1e-2)
    with pytest.raises(ValueError, match="one row per trajectory"):
        ga.integrate_batch([m2, m2], np.array([q0, q0, q0]), v0, 0.1, 1e-2)
    with pytest.raises(ValueError, match="threads"):
        ga.integrate_batch(m2, np.array([q0]), np.array([v0]), 0.1, 1e-2, threads=0)
    with pytest.raises(ValueError, match="NaN"):
        ga.integrate_batch(m2, np.array([q0, q0 * np.nan]), np.array([v0, v0]), 0.1, 1e-2)
    # a model without a Fortran twin runs serially through integrate (no Python in threads)
    batch = ga.integrate_batch(_Knife(), np.zeros((2, 3)), np.array([[1.0, 0, 0.5], [0.5, 0, -1.0]]), 0.2, 1e-2)
    one = ga.integrate(_Knife(), np.zeros(3), np.array([1.0, 0, 0.5]), 0.2, 1e-2)
    assert np.array_equal(batch[0].q, one.q)


def test_option_validation():
    with pytest.raises(ValueError, match="linear_solver"):
        GeneralizedAlpha(linear_solver="lu")
    with pytest.raises(TypeError, match="jacobian_reuse"):
        GeneralizedAlpha(jacobian_reuse="yes")


class _Knife(Model):
    """A knife edge (Chaplygin sleigh at its contact point) pushed along its
    heading and turned by a torque: one nonholonomic constraint, Python only."""
    name = "knife_edge"
    n = 3
    n_nonhol = 1

    def mass(self, q):
        return np.diag([2.0, 2.0, 0.5])

    def force(self, t, q, v):
        return np.array([np.cos(q[2]), np.sin(q[2]), 0.3 - 0.1 * v[2]])

    def nh_A(self, t, q):
        return np.array([[-np.sin(q[2]), np.cos(q[2]), 0.0]])

    def nh_b(self, t, q):
        return np.zeros(1)


@pytest.mark.parametrize("cls", [GeneralizedAlpha, AlphaRattle])
def test_nonholonomic_path_solvers_and_reuse(cls):
    """The dense defaults of the hooks on a nonholonomic user model: every solver
    and simplified Newton give the same motion, A v + b kept to round-off."""
    m = _Knife()
    q0, v0 = np.zeros(3), np.array([1.0, 0.0, 0.5])
    ref = cls(jacobian_reuse=False, linear_solver="dense").integrate(m, q0, v0, 1.0, 1e-2)
    assert ref.eps_vel <= 1e-13
    for solver in SOLVERS:
        r = cls(jacobian_reuse=False, linear_solver=solver).integrate(m, q0, v0, 1.0, 1e-2)
        assert np.max(np.abs(r.q - ref.q)) <= 1e-13, solver
        assert r.stats["linear_solver"] == ("dense" if cls is AlphaRattle else solver)
    r = cls(jacobian_reuse=True).integrate(m, q0, v0, 1.0, 1e-2)
    assert r.stats["jacobian_reuses"] > 0
    assert np.max(np.abs(r.q - ref.q)) <= 1e-9 and r.eps_vel <= 1e-13


def test_integrate_cases_groups_batches_and_keeps_order():
    from pyint.batch import integrate_cases

    ga = GeneralizedAlpha()
    chains = [PendulumChain(3, mass=[1.0, 1.0 + 0.3 * k, 1.0]) for k in range(3)]
    cases = [dict(method=ga, model=mm, q0=mm.initial_state([0.3 * k + 0.2, 1.0, 1.5])[0], v0=np.zeros(6),
                  t_end=0.2, h=1e-3, every=20) for k, mm in enumerate(chains)]
    cases.insert(1, dict(method=ga, model=_Knife(), q0=np.zeros(3), v0=np.array([1.0, 0, 0.5]), t_end=0.2, h=1e-2))
    cases.append(dict(cases[0], h=2e-3))  # another step: its own group of one
    res = integrate_cases(cases, threads=2)
    assert len(res) == len(cases)
    for c, r in zip(cases, res):
        one = ga.integrate(c["model"], c["q0"], c["v0"], c["t_end"], c["h"], every=c.get("every", 1))
        assert r.model is c["model"] and r.h == c["h"]
        assert np.array_equal(r.q, one.q)
    assert res[0].stats.get("batch_size") == 3 and "batch_size" not in res[1].stats
    with pytest.raises(ValueError, match="lacks"):
        integrate_cases([dict(method=ga, model=chains[0])])


class _RedundantChain(PendulumChain):
    """A 300-link chain with its first link constraint written twice (Python only)."""
    fortran_name = None

    def __init__(self):
        super().__init__(300)
        self.n_hol = 301

    def hol(self, t, q):
        g = super().hol(t, q)
        return np.append(g, g[0])

    def hol_jac(self, t, q):
        gq = super().hol_jac(t, q)
        return np.vstack([gq, gq[:1]])

    def hol_vel_q(self, t, q, v):
        d = super().hol_vel_q(t, q, v)
        return np.vstack([d, d[:1]])

    def hol_gamma(self, t, q, v):
        g = super().hol_gamma(t, q, v)
        return np.append(g, g[0])

    def hol_gtl_q(self, t, q, lam):
        lam = np.asarray(lam, dtype=float)
        return super().hol_gtl_q(t, q, lam[:-1] + np.eye(lam.size - 1)[0] * lam[-1])


def test_a_large_model_with_a_redundant_row_runs_as_its_twin():
    """The 300-link chain with one row written twice: the start drops the copy (Result.redundant),
    the run is the chain's own (the same kept equations: equal to round-off) and the copy's
    multiplier is zero."""
    m = _RedundantChain()
    q0, v0 = PendulumChain(300).initial_state()
    r = GeneralizedAlpha().integrate(m, q0, v0, 0.01, 1e-3)
    twin = GeneralizedAlpha().integrate(PendulumChain(300), q0, v0, 0.01, 1e-3)
    assert list(r.redundant) == [300]
    assert np.max(np.abs(r.q - twin.q)) <= 1e-13 * np.max(np.abs(twin.q))
    assert np.all(r.lam[:, 300] == 0)
    assert np.max(np.abs(r.lam[:, :300] - twin.lam)) <= 1e-9 * np.max(np.abs(twin.lam))


@pytest.mark.parametrize("name", ["A02_N2", "A04", "A05"])
def test_natural_system_hooks_equal_dense_defaults(name, rng):
    """The natural-coordinate model's structured items (fortran/models/natural_system.f90: G, (G v)_q,
    M, (G^T lam)_q, the springs' f_q, f_v (A05), G v, G^T lam) are its dense items entry by entry
    (measured: 2e-16 relative; the bound keeps the chain test's 1e-13, a margin of 500)."""
    from pyint.models.iftomm import bricard, flyball_governor, n_four_bar
    m = {"A02_N2": lambda: n_four_bar(2), "A04": bricard, "A05": flyball_governor}[name]()
    q, v, a = (rng.normal(size=m.n) for _ in range(3))
    lam, coef = rng.normal(size=m.n_hol), rng.normal(size=6)
    fast_b, fast_o = _hooks(m, 0, 0.3, q, v, a, lam, coef, -1.7)
    dense_b, dense_o = _hooks(m, 1, 0.3, q, v, a, lam, coef, -1.7)
    assert np.max(np.abs(dense_b[:, :, [0, 1, 2, 3]])) > 0.1
    assert np.max(np.abs(fast_b - dense_b)) <= 1e-13 * np.max(np.abs(dense_b))
    assert np.max(np.abs(fast_o - dense_o)) <= 1e-13 * max(1.0, np.max(np.abs(dense_o)))


def test_redundant_natural_model_keeps_the_sparse_newton_matrix():
    """IFToMM A04 (60 rows of rank 59): the kept rows' Newton matrix keeps the base's structured
    items (the reduced model's row remap), so the automatic choice sees its band (kl = ku = 24
    after RCM: the banded LU, fortran/core/newton_matrix.f90 BAND_WIDE), not a dense LU of 119
    unknowns, and the run matches the dense solver's within the Newton tolerance."""
    if not sparse_solver_available():
        pytest.skip("built without KLU")
    from pyint.models.iftomm import bricard
    m = bricard()
    from pyint.studies.iftomm_benchmarks import benchmark_model
    _, q0, v0 = benchmark_model("A04")
    r = GeneralizedAlpha(rho_inf=0.9).integrate(m, q0, v0, 0.5, 0.01)
    d = GeneralizedAlpha(rho_inf=0.9, linear_solver="dense").integrate(m, q0, v0, 0.5, 0.01)
    assert r.stats["linear_solver"] == "banded" and (r.stats["band_lower"], r.stats["band_upper"]) == (24, 24)
    assert list(r.redundant) == list(d.redundant) and len(r.redundant) == 1
    # measured 1.6e-15 relative (Newton's method converged on both: the solvers' round-off); margin 600
    assert np.max(np.abs(r.q - d.q)) <= 1e-12 * np.max(np.abs(d.q))
