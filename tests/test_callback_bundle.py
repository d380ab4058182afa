"""The bundled callback path (fortran/core/callback_model.f90): the items of one
evaluation point computed in one Python call and served from a per-point cache.

Every cached item is the value the per-item path (``callback_bundle = False``)
would have computed at the same arguments, so the two paths do the same
arithmetic: trajectories are equal bit for bit, whatever order a kernel asks
the items in."""
import copy

import numpy as np
import pytest

import pyint.methods  # noqa: F401  (registers every method)
from pyint.integrator import METHODS
from pyint.models import DrivenPendulum, PendulumChain, Snakeboard
from pyint.models.base import Model
from pyint.results import trajectory_residuals


def _per_item(model):
    m = copy.copy(model)
    m.callback_bundle = False
    return m


class _Recorder(Model):
    """A Python model counting its item calls (the bundle's Python calls)."""

    def __init__(self, inner):
        self.inner = inner
        for k in ("name", "n", "n_hol", "n_nonhol", "constant_mass", "scleronomic", "conservative"):
            setattr(self, k, getattr(inner, k))
        self.calls = 0

    def __getattribute__(self, name):
        if name in ("mass", "force", "force_jac", "hol", "hol_jac", "hol_t", "hol_gamma", "hol_vel_q",
                    "hol_gtl_q", "nh_A", "nh_b", "nh_gamma", "nh_vel_q", "nh_atl_q", "energy", "mass_dq"):
            object.__setattr__(self, "calls", object.__getattribute__(self, "calls") + 1)
            return getattr(object.__getattribute__(self, "inner"), name)
        return object.__getattribute__(self, name)


CASES = [("genalpha", "chain3"), ("rattle", "chain3"), ("lobatto_iiiab", "chain3"),
         ("baumgarte_rk4", "chain3"), ("genalpha", "driven"), ("rattle", "driven"),
         ("genalpha", "snakeboard"), ("galerkin_s2", "snakeboard"), ("rk4_index1", "snakeboard")]


def _model(name):
    return {"chain3": lambda: PendulumChain(3), "driven": DrivenPendulum, "snakeboard": Snakeboard}[name]()


@pytest.mark.parametrize("method,name", CASES)
def test_bundled_equals_per_item_bit_for_bit(method, name):
    model = _model(name)
    q0, v0 = model.initial_state()
    meth = METHODS[method]()
    a = meth.integrate(model, q0, v0, 0.3, 0.01, backend="callback")
    b = meth.integrate(_per_item(model), q0, v0, 0.3, 0.01, backend="callback")
    assert a.status == b.status == "ok"
    for x, y in ((a.q, b.q), (a.v, b.v), (a.lam, b.lam), (a.energy, b.energy)):
        assert np.array_equal(x, y)
    counts = [k for k in a.stats if "time" not in k]
    assert [a.stats[k] for k in counts] == [b.stats[k] for k in counts]


def test_bundled_callback_calls_python_less_and_matches_builtin():
    """The bundle serves repeated items of a point from the cache (fewer Python item
    calls than the per-item path) and the trajectory stays the built-in one's."""
    ref = PendulumChain(2)
    q0, v0 = ref.initial_state()
    meth = METHODS["genalpha"](jacobian_reuse=False, linear_solver="dense")
    rb, ri = _Recorder(PendulumChain(2)), _Recorder(PendulumChain(2))
    ri.callback_bundle = False
    a = meth.integrate(rb, q0, v0, 0.5, 1e-2, backend="callback")
    b = meth.integrate(ri, q0, v0, 0.5, 1e-2, backend="callback")
    c = meth.integrate(ref, q0, v0, 0.5, 1e-2, backend="fortran")
    assert np.array_equal(a.q, b.q)
    assert rb.calls < ri.calls
    # the chain's built-in twin does the same arithmetic on q (tests/test_genalpha.py: 1e-13)
    assert np.max(np.abs(a.q - c.q)) <= 1e-13


def test_items_in_an_unusual_order():
    """Points that share q but not t, or share (t, q) but not v, one after the other in
    one kernel call (model_query "residuals"): the t- and v-dependent items of the cache are
    recomputed, the q-only ones kept; equal to the per-item path and the built-in model."""
    model = DrivenPendulum()             # rheonomic: g, G, g_t and hol_gamma depend on t
    q0, v0 = model.initial_state()
    rng = np.random.default_rng(17)
    q1 = q0 + 0.01 * rng.standard_normal(q0.shape)
    v1, a1 = rng.standard_normal(q0.shape), rng.standard_normal(q0.shape)
    # same q at three times; same (t, q) with two velocities; back to an earlier point
    t = np.array([0.0, 0.1, 0.2, 0.2, 0.2, 0.0, 0.1])
    q = np.array([q0, q0, q0, q0, q1, q1, q0])
    v = np.array([v0, v0, v0, v1, v1, v1, v1])
    a = np.array([a1, a1, -a1, a1, a1, -a1, a1])
    res_b, e_b = trajectory_residuals(model, t, q, v, a, backend="callback")
    res_i, e_i = trajectory_residuals(_per_item(model), t, q, v, a, backend="callback")
    res_f, e_f = trajectory_residuals(DrivenPendulum(), t, q, v, a, backend="fortran")
    assert np.array_equal(res_b, res_i) and np.array_equal(e_b, e_i)
    # the Python and Fortran twins of the model round differently: a few eps of the residuals' scale
    scale = 1 + np.max(np.abs(res_f))
    assert np.max(np.abs(res_b - res_f)) <= 100 * np.finfo(float).eps * scale


class _Boom(PendulumChain):
    """hol_jac raises from t = 0.105 on: in a bundle it is first computed ahead, with force."""

    def hol_jac(self, t, q):
        if t > 0.105:
            raise RuntimeError(f"boom at t = {t:.3f}")
        return super().hol_jac(t, q)


def test_an_item_raising_is_reported_as_on_the_per_item_path():
    m = _Boom(2)
    q0, v0 = m.initial_state()
    meth = METHODS["genalpha"]()
    with pytest.raises(RuntimeError, match="boom") as bundled:
        meth.integrate(m, q0, v0, 0.3, 0.01, backend="callback")
    with pytest.raises(RuntimeError, match="boom") as per_item:
        meth.integrate(_per_item(m), q0, v0, 0.3, 0.01, backend="callback")
    assert str(bundled.value) == str(per_item.value)


class _NonFinite(PendulumChain):
    """hol returns NaN from t = 0.105 on (computed ahead in a bundle, with force and hol_jac)."""

    def hol(self, t, q):
        return super().hol(t, q) * (np.nan if t > 0.105 else 1.0)


class _Transposed(PendulumChain):
    """hol_jac returns G^T (n x mh, the size of G) from t = 0.105 on."""

    def hol_jac(self, t, q):
        g = super().hol_jac(t, q)
        return g.T.copy() if t > 0.105 else g


@pytest.mark.parametrize("cls,error,match", [(_NonFinite, "NonFiniteError", r"hol\(\) returned a non-finite value"),
                                             (_Transposed, "ValueError", r"hol_jac\(\) returned shape \(4, 2\)")])
def test_a_bad_item_in_a_bundle_is_reported_as_on_the_per_item_path(cls, error, match):
    """The bundle copies float64 arrays of the declared shape without pyint's checks: an item
    of another shape goes through them, a non-finite one is caught by the Fortran side; both
    raise the per-item path's error (same message), none reaches the kernel as a value."""
    m = cls(2)
    q0, v0 = m.initial_state()
    meth = METHODS["genalpha"]()
    with pytest.raises(Exception, match=match) as bundled:
        meth.integrate(m, q0, v0, 0.3, 0.01, backend="callback")
    with pytest.raises(Exception, match=match) as per_item:
        meth.integrate(_per_item(m), q0, v0, 0.3, 0.01, backend="callback")
    assert type(bundled.value).__name__ == type(per_item.value).__name__ == error
    assert str(bundled.value) == str(per_item.value)
