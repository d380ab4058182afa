"""Every built-in model: Fortran twin == NumPy twin, analytic Jacobians == finite differences."""
import numpy as np
import pytest

from pyint.models._fortran_model import QUERIES, QueryFailed, fortran_eval, model_query
from pyint.models import Model, Skate
from pyint.models.base import CALLBACK_REQUESTS, fd_jacobian, fd_derivative

from conftest import builtin_examples

MODELS = builtin_examples() + [Skate(torsion=0.5)]  # and the skate's torsion spring (not in its example)
IDS = [m.name for m in MODELS]


def _items(model):
    for req in CALLBACK_REQUESTS.values():
        if req.startswith("hol") and not model.n_hol:
            continue
        if req.startswith("nh") and not model.n_nonhol:
            continue
        if req == "energy" and not model.has_energy:
            continue
        yield req


def _state(model, rng):
    return 0.1 + rng.random(), rng.normal(size=model.n), rng.normal(size=model.n), rng.normal(size=model.n)


def _numpy_item(model, req, t, q, v, w):
    cb = model.fortran_callback()
    n = model.n
    out = np.zeros(max(n * n, 1))
    code = {v_: k for k, v_ in CALLBACK_REQUESTS.items()}[req]
    wbuf = np.zeros(max(n, model.n_hol, model.n_nonhol, 1)); wbuf[:len(w)] = w
    size = np.asarray(fortran_eval(model, req, t, q, v, w)).size
    cb(code, t, q, v, wbuf, out[:size])
    return out[:size]


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_fortran_twin_matches_numpy(model, rng):
    """At random states every item of the Fortran model equals the NumPy one to 1e-12."""
    for _ in range(5):
        t, q, v, w = _state(model, rng)
        for req in _items(model):
            f = np.ravel(fortran_eval(model, req, t, q, v, w))  # the callback writes rows (C order)
            p = _numpy_item(model, req, t, q, v, w)
            scale = max(1.0, np.max(np.abs(p)) if p.size else 1.0)
            assert np.max(np.abs(f - p), initial=0.0) <= 1e-12 * scale, (model.name, req)


def _along(fun, t, q, v):
    """d/ds fun(s, q + (s - t) v) at s = t: gamma straight from the velocity-level residual,
    independent of the model's own time derivatives (hol_jac_t, hol_tt, nh_dt)."""
    return fd_derivative(lambda s: fun(s, q + (s - t) * v), t)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_analytic_jacobians_match_finite_differences(model, rng):
    """Each analytic derivative the model defines agrees with a central difference."""
    base = Model  # the finite-difference fallbacks
    for _ in range(3):
        t, q, v, w = _state(model, rng)
        lam_h, lam_n = w[:model.n_hol], w[:model.n_nonhol]
        pairs = [
            (model.mass_dq(q, w), fd_jacobian(lambda x: model.mass(x) @ w, q)),
            (model.mass_dqq(q, v, w), fd_jacobian(lambda x: model.mass_dq(x, v) @ w, q)),
            (model.force_jac(t, q, v)[0], fd_jacobian(lambda x: model.force(t, x, v), q)),
            (model.force_jac(t, q, v)[1], fd_jacobian(lambda x: model.force(t, q, x), v)),
        ]
        if model.n_hol:
            pairs += [
                (model.hol_jac(t, q), fd_jacobian(lambda x: model.hol(t, x), q)),
                (model.hol_t(t, q), fd_derivative(lambda s: model.hol(s, q), t)),
                (model.hol_vel_q(t, q, v), fd_jacobian(lambda x: model.hol_vel(t, x, v), q)),
                (model.hol_gamma(t, q, v), base.hol_gamma(model, t, q, v)),
                (model.hol_gtl_q(t, q, lam_h), fd_jacobian(lambda x: model.hol_jac(t, x).T @ lam_h, q)),
                (model.hol_jac_t(t, q), fd_derivative(lambda s: model.hol_jac(s, q), t)),
                (model.hol_tt(t, q), fd_derivative(lambda s: model.hol_t(s, q), t)),
                (model.hol_gamma(t, q, v), _along(lambda s, x: model.hol_vel(s, x, v), t, q, v)),
            ]
        if model.n_nonhol:
            pairs += [
                (model.nh_vel_q(t, q, v), fd_jacobian(lambda x: model.nh_vel(t, x, v), q)),
                (model.nh_gamma(t, q, v), base.nh_gamma(model, t, q, v)),
                (model.nh_atl_q(t, q, lam_n), fd_jacobian(lambda x: model.nh_A(t, x).T @ lam_n, q)),
                (model.nh_dt(t, q, v), fd_derivative(lambda s: model.nh_vel(s, q, v), t)),
                (model.nh_gamma(t, q, v), _along(lambda s, x: model.nh_vel(s, x, v), t, q, v)),
            ]
        for k, (exact, fd) in enumerate(pairs):
            exact = np.asarray(exact, dtype=float).reshape(np.shape(fd))
            scale = max(1.0, np.max(np.abs(exact), initial=0.0))
            assert np.max(np.abs(exact - fd), initial=0.0) <= 1e-6 * scale, (model.name, k)


def test_callback_path_equals_fortran_path(rng):
    """A model evaluated through the Python callback gives the Fortran values."""
    for model in MODELS:
        t, q, v, w = _state(model, rng)
        for req in _items(model):
            a = np.asarray(fortran_eval(model, req, t, q, v, w, backend="fortran"))
            b = np.asarray(fortran_eval(model, req, t, q, v, w, backend="callback"))
            assert np.allclose(a, b, rtol=1e-12, atol=1e-12), (model.name, req)


@pytest.mark.parametrize("backend", ["fortran", "callback"])
def test_model_query_rejects_packed_inputs_of_the_wrong_size(backend):
    """The one f2py entry of model queries (fortran/queries.f90) checks the packed sizes of
    every query: a missing or extra element is bad input (status 3), never a shifted read."""
    m = Skate(torsion=0.5)
    n, t, q = m.n, 0.0, np.ones(m.n)
    field = [(n,), (n,)] + 4 * [(n, n)]
    assert model_query(m, "canonical_field", [t, q, q], field, backend=backend)[0].shape == (n,)
    bad = {"item": ([t, q, q, np.zeros(n - 1)], [(n * n,)], [1]),
           "residuals": ([[t], q, q], [(5, 1), (1,)], [1]),
           "structured": ([t, q, q, q, np.zeros(m.n_nonhol), np.zeros(5), 1.0], [(n, n, 7), (n, 5)], [0]),
           "consistent_acceleration": ([t, q, q[1:]], [(n,), (m.n_nonhol,)], [1]),
           "galerkin_system": ([t, 0.1, q, q], [(1,), (1, 1)], [1, 0]),
           "dual": ([t, q, q, [0.0]], field, []),
           "canonical_field": ([t, q, q], field[:-1], []),
           "outputs": ([[t], q, q[1:]], [(n, 1), (n, 1), (n, 1), (m.n_nonhol, 1), (1,)], [1, 0])}
    assert sorted(bad) == sorted(QUERIES)
    for what, (x, shapes, iarg) in bad.items():
        with pytest.raises(QueryFailed, match=f"model_query '{what}' failed \\(ierr=3\\)"):
            model_query(m, what, x, shapes, iarg, backend)
