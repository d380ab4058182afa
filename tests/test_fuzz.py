"""Property-based fuzzing of every registered vector method (issue 15, acceptance).

Random small user models (n <= 4, linear constraints of random counts, a
nonlinear force) with one random fault in one random item (a wrong shape, NaN,
an exception of its own, after a random number of calls) and random options
(valid and invalid).  Each run either succeeds with finite output, the final
state as last sample and no fault that reached pyint, or raises one of pyint's
documented errors (IntegrationError and subclasses, ValueError, TypeError) or
the model's own exception, with a message.  Never a silent status "ok" after a
fault, never a crash of the interpreter.  derandomize=True: the same examples
on every run (CI is reproducible).
"""
import inspect
import math

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import pyint.methods  # noqa: F401  (registers every method)
from pyint._driver import n_samples
from pyint.errors import IntegrationError
from pyint.methods.galerkin import VARIANTS
from pyint.methods.genalpha import _FORMULATIONS, _MASS_MODES, _START_MODES
from pyint.integrator import METHODS
from pyint.models.base import Model
from pyint.models.structured import LINEAR_SOLVERS

VECTOR_METHODS = sorted(name for name, cls in METHODS.items() if "R^n" in cls.spaces)
ITEMS = ("mass", "force", "force_jac", "hol", "hol_jac", "nh_A", "nh_b")
FAULTS = ("none", "wrong_shape", "nan", "raise")
#: valid values of the string options (invalid ones are drawn too)
CHOICES = {"formulation": list(_FORMULATIONS), "mass_update": list(_MASS_MODES), "start": list(_START_MODES),
           "linear_solver": list(LINEAR_SOLVERS), "variant": list(VARIANTS)}


class Injected(Exception):
    """The fuzzed model's own exception."""


def _acceptable(got, expected):
    """pyint.models.base.check_item_shape's rule: equal up to axes of length 1."""
    return got == expected or (int(np.prod(got)) == int(np.prod(expected))
                               and tuple(d for d in got if d != 1) == tuple(d for d in expected if d != 1))


def _wrong(value, variant):
    value = np.asarray(value, dtype=float)
    if variant == 0 or value.ndim == 0:
        return float(value.flat[0]) if value.size else 0.0          # a scalar
    if variant == 1:
        return value[:-1] if value.shape[0] > 0 else np.zeros((1,) + value.shape[1:])   # one row short
    if variant == 2:
        return np.concatenate([value, np.zeros((1,) + value.shape[1:])])                # one row more
    return value.T if value.ndim == 2 else value[:, None] * np.ones(2)                  # transposed / widened


class Fuzzed(Model):
    """M = diag(m), f = -k q - c q^3 - d v + sin t e_1, G q = 0, A v = 0 (G, A constant)."""

    name = "fuzzed"
    constant_mass = True
    scleronomic = True

    def __init__(self, n, gmat, amat, m, k, fault, item, after, variant):
        self.n, self.n_hol, self.n_nonhol = n, gmat.shape[0], amat.shape[0]
        self.gmat, self.amat, self.m, self.k = gmat, amat, m, k
        self.fault, self.item, self.after, self.variant = fault, item, after, variant
        self.calls = 0
        self.fired = False        # a harmful fault reached pyint

    def _out(self, name, value, shape):
        if name != self.item or self.fault == "none":
            return value
        self.calls += 1
        if self.calls <= self.after:
            return value
        if self.fault == "raise":
            self.fired = True
            raise Injected(f"{name} failed on purpose")
        if self.fault == "nan":
            bad = np.array(value, dtype=float)
            if bad.size:
                bad.flat[0] = np.nan
                self.fired = True
            return bad if np.ndim(value) else float("nan")
        bad = _wrong(value, self.variant)
        self.fired = self.fired or not _acceptable(np.shape(bad), shape)
        return bad

    def mass(self, q):
        return self._out("mass", np.diag(self.m), (self.n, self.n))

    def force(self, t, q, v):
        f = -self.k * q - 0.1 * q ** 3 - 0.05 * v
        f[0] += np.sin(t)
        return self._out("force", f, (self.n,))

    def force_jac(self, t, q, v):
        fq = np.diag(-self.k - 0.3 * q ** 2)
        fv = -0.05 * np.eye(self.n)
        if self.item != "force_jac" or self.fault == "none":
            return fq, fv
        # both parts faulty: pyint requests f_q and f_v separately, each with its own call
        return self._out("force_jac", fq, (self.n, self.n)), _wrong(fv, self.variant) if self.fault == "wrong_shape" \
            else np.full_like(fv, np.nan) if self.fault == "nan" else fv

    def hol(self, t, q):
        return self._out("hol", self.gmat @ q, (self.n_hol,))

    def hol_jac(self, t, q):
        return self._out("hol_jac", self.gmat.copy(), (self.n_hol, self.n))

    def nh_A(self, t, q):
        return self._out("nh_A", self.amat.copy(), (self.n_nonhol, self.n))

    def nh_b(self, t, q):
        return self._out("nh_b", np.zeros(self.n_nonhol), (self.n_nonhol,))


def _null_space(mat, n):
    if mat.shape[0] == 0:
        return np.eye(n)
    _, s, vt = np.linalg.svd(mat)
    return vt[len(s):].T


@st.composite
def cases(draw):
    method = draw(st.sampled_from(VECTOR_METHODS))
    cls = METHODS[method]
    n = draw(st.integers(1, 4))
    mh = draw(st.integers(0, min(2, n - 1))) if "holonomic" in cls.supports else 0
    mn = draw(st.integers(0, min(1, n - 1 - mh))) if "nonholonomic" in cls.supports else 0
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    gmat, amat = rng.normal(size=(mh, n)), rng.normal(size=(mn, n))
    m, k = rng.uniform(0.5, 2.0, n), rng.uniform(0.5, 2.0, n)
    zq = _null_space(gmat, n)
    q0 = zq @ rng.normal(size=zq.shape[1])
    zv = _null_space(np.vstack([gmat, amat]), n)
    v0 = zv @ rng.normal(size=zv.shape[1]) if zv.shape[1] else np.zeros(n)
    model = Fuzzed(n, gmat, amat, m, k, draw(st.sampled_from(FAULTS)), draw(st.sampled_from(ITEMS)),
                   draw(st.sampled_from([0, 1, 3, 20])), draw(st.integers(0, 3)))
    options = {}
    for pname, par in inspect.signature(cls.__init__).parameters.items():
        if par.default is inspect.Parameter.empty or pname == "scheme" or not draw(st.booleans()):
            continue
        d = par.default
        if pname in CHOICES:
            options[pname] = draw(st.sampled_from(CHOICES[pname] + ["bogus"]))
        elif isinstance(d, bool):
            options[pname] = draw(st.booleans())
        elif isinstance(d, int):
            options[pname] = draw(st.sampled_from([d, 1, 2 * d, 0, -1] + ([1, 2, 3, 4] if pname == "stages" else [])))
        elif isinstance(d, float):
            options[pname] = draw(st.sampled_from([d, d / 10, d * 10, 0.0, -1.0, float("nan")]
                                                  + ([0.0, 0.5, 1.0, 1.5] if pname == "rho_inf" else [])))
    h = draw(st.sampled_from([0.05, 0.02]))
    nsteps = draw(st.integers(1, 30))
    every = draw(st.sampled_from([1, 2, 3, 7, 50]))
    backend = draw(st.sampled_from(["auto", "callback"]))
    return method, options, model, q0, v0, h, nsteps, every, backend


@settings(max_examples=100, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_fuzzed_models_and_options(case):
    method, options, model, q0, v0, h, nsteps, every, backend = case
    try:
        integ = METHODS[method](**options)
    except (ValueError, TypeError) as err:
        assert str(err)
        event("option rejected")
        return
    try:
        res = integ.integrate(model, q0, v0, nsteps * h, h, every=every, backend=backend)
    except (IntegrationError, ValueError, TypeError, Injected) as err:
        assert str(err), repr(err)
        event(f"{type(err).__name__} ({model.fault}{', fired' if model.fired else ''})")
        partial = getattr(err, "result", None)
        if partial is not None:   # the steps computed before the fault, finite
            assert len(partial.t) <= n_samples(nsteps, every)
            for arr in (partial.t, partial.q, partial.v):
                assert np.all(np.isfinite(arr))
        return
    event(f"ok ({model.fault})")
    assert not model.fired, f"{model.item}: {model.fault} reached pyint, yet status {res.status!r}"
    assert res.status == "ok"
    assert len(res.t) == n_samples(nsteps, every) and abs(res.t[-1] - nsteps * h) < 1e-12
    assert np.all(np.isfinite(res.q)) and np.all(np.isfinite(res.v))
    if not method.startswith("galerkin"):     # Galerkin reports no a (and lam only for s = 1): NaN
        assert np.all(np.isfinite(res.a)) and np.all(np.isfinite(res.lam))


# -- issue 30: misspelt options, undeclared constraints, a massless coordinate, time far from zero --

def _misspelt(name, how):
    """``name`` with one edit: a letter dropped, doubled, or a suffix added."""
    if how == 0 and len(name) > 2:
        return name[:-1]
    if how == 1:
        return name + name[-1]
    return name + "_x"


@st.composite
def cases_round3(draw):
    kind = draw(st.sampled_from(["misspelt", "undeclared", "massless", "far_from_zero"]))
    methods = {"undeclared": [k for k in VECTOR_METHODS if "holonomic" in METHODS[k].supports],
               "far_from_zero": [k for k in VECTOR_METHODS if METHODS[k].ADAPTIVE_REFUSAL is None]}
    method = draw(st.sampled_from(methods.get(kind, VECTOR_METHODS)))
    cls = METHODS[method]
    n = draw(st.integers(2, 4))
    mh = draw(st.integers(1 if kind == "undeclared" else 0, min(2, n - 1))) if "holonomic" in cls.supports else 0
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    gmat, amat = rng.normal(size=(mh, n)), np.zeros((0, n))
    m, k = rng.uniform(0.5, 2.0, n), rng.uniform(0.5, 2.0, n)
    zq = _null_space(gmat, n)
    q0 = zq @ rng.normal(size=zq.shape[1])
    v0 = zq @ rng.normal(size=zq.shape[1])
    option = draw(st.sampled_from([p for p in inspect.signature(cls.__init__).parameters if p != "self"] or [""]))
    how = draw(st.integers(0, 2))
    t0 = draw(st.sampled_from([0.0, 1e6, 1e8, 1e9]))
    massless = draw(st.integers(0, n - 1))
    return method, n, gmat, amat, m, k, q0, v0, kind, option, how, t0, massless


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(cases_round3())
def test_fuzzed_faults_of_issue_30(case):
    """A misspelt option names the public class (and a close match when there is one); constraints
    defined but not declared (n_hol = 0) are named; a massless coordinate is either harmless (the
    constraints remove it) or named as a singular mass matrix; variable steps far from t = 0 add up to
    t_end - t0 as at t0 = 0 (summation bound: len(h) eps span)."""
    method, n, gmat, amat, m, k, q0, v0, kind, option, how, t0, massless = case
    cls = METHODS[method]
    if kind == "misspelt":
        if not option:
            return
        wrong = _misspelt(option, how)
        try:
            cls(**{wrong: 1})
        except TypeError as err:
            assert str(err).startswith(f"{cls.__name__} has no option {wrong!r}"), str(err)
            event("misspelt option named")
            return
        raise AssertionError(f"{cls.__name__}({wrong}=1) accepted")
    model = Fuzzed(n, gmat, amat, m, k, "none", "mass", 0, 0)
    if kind == "undeclared":
        if not gmat.shape[0]:
            return
        model.n_hol = 0                      # hol() still returns gmat @ q
        try:
            cls().integrate(model, q0, v0, 0.1, 0.05)
        except ValueError as err:
            assert f"declares n_hol = 0: set n_hol = {gmat.shape[0]}" in str(err), str(err)
            event("undeclared constraints named")
            return
        raise AssertionError("constraints defined with n_hol = 0 ran")
    if kind == "massless":
        model.m = m.copy()
        model.m[massless] = 0.0
        try:
            res = cls().integrate(model, q0, v0, 0.1, 0.05)
        except ValueError as err:
            assert "mass matrix M(q) of model 'fuzzed' is singular" in str(err), str(err)
            event("singular mass named")
            return
        except IntegrationError as err:
            assert str(err)
            event(f"massless: {type(err).__name__}")
            return
        assert res.status == "ok" and np.all(np.isfinite(res.q))
        event("massless coordinate constrained away")
        return
    integ = cls()
    if integ.adaptive_refusal(model) is not None:
        return
    span = 0.5
    try:
        res = integ.integrate(model, q0, v0, t0 + span, t0=t0, rtol=1e-4)
    except (IntegrationError, ValueError) as err:
        assert str(err)
        event(f"far from zero: {type(err).__name__}")
        return
    assert res.status == "ok" and res.t[-1] == t0 + span
    assert abs(math.fsum(res.h) - span) <= len(res.h) * np.finfo(float).eps * span, math.fsum(res.h) - span
    event(f"far from zero: ok (t0 = {t0:g})")


@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 6), st.sampled_from([0.5, 1.0, 2.0]), st.integers(2, 6), st.sampled_from([0.5, 1.0, 2.0]),
       st.sampled_from(["swap", "truncate", "garbage"]))
def test_fuzzed_reference_cache_entries(n_asked, end_asked, n_other, end_other, damage):
    """Whatever sits at a reference cache key's name (another solve's file, a truncated or a garbage
    file) is never returned as the answer: the solve comes back with the times asked for and the
    values of an uncached solve (issue 30)."""
    import tempfile
    import warnings
    from pathlib import Path

    from pyint.models import PendulumChain
    from pyint.reference import solve

    model = PendulumChain(n_links=1)
    q0, v0 = model.initial_state([1.0])
    asked, other = np.linspace(0.0, end_asked, n_asked), np.linspace(0.0, end_other, n_other)
    with tempfile.TemporaryDirectory() as cache, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        first = solve(model, asked, q0, v0, rtol=1e-6, cache_dir=cache)
        path = Path(first.cache_file)
        if damage == "swap":
            path.write_bytes(Path(solve(model, other, q0, v0, rtol=1e-6, cache_dir=cache).cache_file).read_bytes())
        elif damage == "truncate":
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        else:
            path.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(range(256)) * 4)
        again = solve(model, asked, q0, v0, rtol=1e-6, cache_dir=cache)
    same = damage == "swap" and n_other == n_asked and end_other == end_asked
    assert again.from_cache == same
    np.testing.assert_array_equal(again.t, asked)
    np.testing.assert_array_equal(again.q, first.q)
    event(f"{damage}: {'the same solve, from the cache' if same else 'recomputed'}")
