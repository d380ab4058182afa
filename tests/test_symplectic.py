"""Constrained symplectic family (seed 002) and Baumgarte-RK4: coefficients, the
canonical field, the paper's triple pendulum, orders on a nonlinear potential,
numerical symplecticity on the constraint manifold, M(q), rheonomic
constraints, Fortran/callback paths, failures and bad input."""
from dataclasses import replace

import numpy as np
import pytest

from pyint.models._fortran_model import model_args
from pyint.methods.baumgarte import BaumgarteRK4
from pyint._driver import _option_arrays, call_run, driver_buffers
from pyint.convergence import fit_order, measured_orders
from pyint.errors import NewtonConvergenceError
from pyint.invariants import symplecticity_defect
from pyint.models import AnharmonicChain, Model
from pyint.models.base import fd_jacobian
from pyint.problems import PROBLEMS
from pyint.reference.ode import ode_reference
from pyint.methods.symplectic import (ExplicitMidpointComposition, LobattoIIIAB, Rattle, SymplecticComposition,
                                      canonical_field, tableau)


SYMPLECTIC = [SymplecticComposition(1), SymplecticComposition(2), Rattle(), LobattoIIIAB(3)]
SYMPLECTIC_IDS = ["gl1", "gl2", "rattle", "lobatto3"]


# -- coefficients ---------------------------------------------------------------

def _order_conditions(a, ahat, b, c):
    """Max defects of: row sums, B(k) for k = 1..2s+1, C(s) of a, D(s) of ahat, symplectic pairing."""
    s = len(b)
    k = np.arange(1, 2 * s + 2)
    bk = np.array([b @ c ** (j - 1) - 1 / j for j in k])
    cs = max(np.max(np.abs(a @ c ** (j - 1) - c ** j / j)) for j in range(1, s + 1))
    ds = max(np.max(np.abs((b * c ** (j - 1)) @ ahat - b * (1 - c ** j) / j)) for j in range(1, s + 1))
    pair = np.max(np.abs(b[:, None] * ahat + (b[:, None] * a).T - np.outer(b, b)))
    return np.max(np.abs(a.sum(1) - c)), np.abs(bk), cs, ds, pair


def test_gauss_legendre_tableaux():
    a, ahat, b, c = tableau("gauss", 1)
    assert np.allclose([a[0, 0], b[0], c[0]], [0.5, 1.0, 0.5], atol=1e-16)   # implicit midpoint
    a, ahat, b, c = tableau("gauss", 2)
    r = np.sqrt(3) / 6
    assert np.allclose(a, [[0.25, 0.25 - r], [0.25 + r, 0.25]], rtol=0, atol=1e-15)  # as printed in seed 002
    assert np.allclose(c, [0.5 - r, 0.5 + r], atol=1e-15) and np.allclose(b, [0.5, 0.5], atol=1e-15)
    for s in range(1, 8):
        a, ahat, b, c = tableau("gauss", s)
        rows, bk, cs, ds, pair = _order_conditions(a, ahat, b, c)
        assert np.max(np.abs(a - ahat)) <= 1e-15
        assert max(rows, cs, ds, pair, np.max(bk[:2 * s])) <= 2e-14, s
        assert bk[2 * s] > 1e-12, s          # quadrature order exactly 2s


def test_lobatto_iiia_iiib_tableaux():
    a, ahat, b, c = tableau("lobatto", 2)     # Stormer-Verlet
    assert np.allclose(a, [[0, 0], [0.5, 0.5]], atol=1e-15) and np.allclose(ahat, [[0.5, 0], [0.5, 0]], atol=1e-15)
    a, ahat, b, c = tableau("lobatto", 3)
    assert np.allclose(a, [[0, 0, 0], [5 / 24, 1 / 3, -1 / 24], [1 / 6, 2 / 3, 1 / 6]], atol=1e-15)
    assert np.allclose(ahat, [[1 / 6, -1 / 6, 0], [1 / 6, 1 / 3, 0], [1 / 6, 5 / 6, 0]], atol=1e-15)
    assert np.allclose(b, [1 / 6, 2 / 3, 1 / 6], atol=1e-15) and np.allclose(c, [0, 0.5, 1], atol=1e-15)
    for s in range(2, 8):
        a, ahat, b, c = tableau("lobatto", s)
        rows, bk, cs, ds, pair = _order_conditions(a, ahat, b, c)
        assert max(rows, cs, ds, pair, np.max(bk[:2 * s - 2])) <= 2e-14, s
        assert bk[2 * s - 2] > 1e-12, s
        assert np.allclose(a[-1], b, atol=1e-15) and np.all(a[0] == 0) and np.allclose(ahat[:, -1], 0, atol=1e-15)


def test_explicit_midpoint_is_not_symplectic():
    a, ahat, b, c = tableau("explicit_midpoint", 2)
    *_, pair = _order_conditions(a, ahat, b, c)
    assert pair >= 0.5


@pytest.mark.parametrize("kind,s", [("gauss", 0), ("gauss", 11), ("lobatto", 1), ("explicit_midpoint", 3)])
def test_bad_stage_counts(kind, s):
    with pytest.raises(ValueError, match="stages"):
        tableau(kind, s)


def test_bad_options():
    with pytest.raises(ValueError, match="tableau kind"):
        tableau("radau", 3)
    with pytest.raises(ValueError, match="stages"):
        SymplecticComposition(stages=0)
    with pytest.raises(ValueError, match="stages"):
        LobattoIIIAB(stages=1)
    with pytest.raises(TypeError, match="stages"):
        SymplecticComposition(stages=2.5)
    with pytest.raises(ValueError, match="tol"):
        Rattle(tol=0.0)
    with pytest.raises(ValueError, match="tol"):
        Rattle(tol=float("nan"))
    with pytest.raises(ValueError, match="maxit"):
        LobattoIIIAB(maxit=0)
    with pytest.raises(ValueError, match="alpha"):
        BaumgarteRK4(alpha=-1.0)
    with pytest.raises(ValueError, match="beta"):
        BaumgarteRK4(beta=float("inf"))


# -- models used below -------------------------------------------------------------

class PolarBead(Model):
    """A bead (mass m) on a circle of radius R centred at c, in polar coordinates
    (r, th) about the origin: M(q) = diag(m, m r^2) depends on q.  Gravity g and
    a spring k r^2 / 2 to the origin; f carries the centrifugal/Coriolis terms
    (pyint's convention M a = f - G^T lam)."""

    name = "polar_bead"
    n, n_hol = 2, 1
    constant_mass = False
    conservative = True
    m, g, k, R, c = 1.0, 1.0, 2.0, 0.6, np.array([0.3, -0.8])

    def pos(self, q):
        return q[0] * np.array([np.sin(q[1]), -np.cos(q[1])])

    def xq(self, q):
        r, th = q
        return np.array([[np.sin(th), r * np.cos(th)], [-np.cos(th), r * np.sin(th)]])

    def mass(self, q):
        return np.diag([self.m, self.m * q[0] ** 2])

    def mass_dq(self, q, a):
        return np.array([[0.0, 0.0], [2 * self.m * q[0] * a[1], 0.0]])

    def force(self, t, q, v):
        (r, th), (rd, thd) = q, v
        return np.array([self.m * self.g * np.cos(th) - self.k * r + self.m * r * thd ** 2,
                         -self.m * self.g * r * np.sin(th) - 2 * self.m * r * rd * thd])

    def hol(self, t, q):
        d = self.pos(q) - self.c
        return np.array([0.5 * (d @ d - self.R ** 2)])

    def hol_jac(self, t, q):
        return ((self.pos(q) - self.c) @ self.xq(q)).reshape(1, 2)

    def hol_gamma(self, t, q, v):
        (r, th), (rd, thd) = q, v
        xd = self.xq(q) @ v
        xdd = np.array([2 * rd * thd * np.cos(th) - r * thd ** 2 * np.sin(th),
                        2 * rd * thd * np.sin(th) + r * thd ** 2 * np.cos(th)])
        return np.array([xd @ xd + (self.pos(q) - self.c) @ xdd])

    def energy(self, t, q, v):
        (r, th), (rd, thd) = q, v
        return 0.5 * self.m * (rd ** 2 + r ** 2 * thd ** 2) - self.m * self.g * r * np.cos(th) + 0.5 * self.k * r * r

    def state(self, phi=0.3, w=1.0):
        x = self.c + self.R * np.array([np.sin(phi), -np.cos(phi)])
        xd = self.R * w * np.array([np.cos(phi), np.sin(phi)])
        r, th = np.hypot(*x), np.arctan2(x[0], -x[1])
        er, et = np.array([np.sin(th), -np.cos(th)]), np.array([np.cos(th), np.sin(th)])
        return np.array([r, th]), np.array([xd @ er, xd @ et / r])


class ShakenPendulum(Model):
    """Point-mass pendulum whose support moves as s(t) = (A sin(W t), 0): a rheonomic constraint."""

    name = "shaken_pendulum"
    n, n_hol = 2, 1
    conservative = False
    m, g, l, A, W = 1.0, 1.0, 1.0, 0.2, 2.0

    def s(self, t, k=0):
        return np.array([self.A * self.W ** k * (np.sin, np.cos, lambda x: -np.sin(x))[k](self.W * t), 0.0])

    def mass(self, q):
        return self.m * np.eye(2)

    def force(self, t, q, v):
        return np.array([0.0, -self.m * self.g])

    def hol(self, t, q):
        d = q - self.s(t)
        return np.array([0.5 * (d @ d - self.l ** 2)])

    def hol_jac(self, t, q):
        return (q - self.s(t)).reshape(1, 2)

    def hol_t(self, t, q):
        return np.array([-(q - self.s(t)) @ self.s(t, 1)])

    def hol_gamma(self, t, q, v):
        w = v - self.s(t, 1)
        return np.array([w @ w - (q - self.s(t)) @ self.s(t, 2)])

    def state(self, angle=0.5, omega=0.0):
        e = np.array([np.sin(angle), -np.cos(angle)])
        return self.s(0.0) + self.l * e, self.s(0.0, 1) + self.l * omega * np.array([np.cos(angle), np.sin(angle)])


# -- the canonical field -------------------------------------------------------------

def _hamiltonian(model):
    return lambda q, p: model.energy(0.0, q, np.linalg.solve(model.mass(q), p))


@pytest.mark.parametrize("model", [AnharmonicChain.example(), PolarBead()], ids=["anharmonic", "polar_bead"])
def test_canonical_field_is_hamiltonian(model, rng):
    """v = H_p and psi = -H_q (finite differences of H = energy), and the analytic Jacobians."""
    H = _hamiltonian(model)
    for _ in range(3):
        q = rng.normal(size=model.n) + (np.array([1.5, 0.3]) if model.n == 2 else 0)
        p = rng.normal(size=model.n)
        v, psi, phq, php, psq, psp = canonical_field(model, 0.0, q, p)
        assert np.allclose(v, fd_jacobian(lambda x: H(q, x), p).ravel(), rtol=0, atol=1e-8)
        assert np.allclose(psi, -fd_jacobian(lambda x: H(x, p), q).ravel(), rtol=0, atol=1e-7 * max(1, np.abs(psi).max()))
        field = lambda x, y: np.concatenate(canonical_field(model, 0.0, x, y)[:2])
        jq, jp = fd_jacobian(lambda x: field(x, p), q), fd_jacobian(lambda y: field(q, y), p)
        scale = max(1.0, np.abs(jq).max(), np.abs(jp).max())
        assert np.max(np.abs(np.vstack([phq, psq]) - jq)) <= 1e-6 * scale
        assert np.max(np.abs(np.vstack([php, psp]) - jp)) <= 1e-6 * scale


# -- the paper's triple pendulum ----------------------------------------------------------

def _gp(model, r):
    """max_k |G(q_k) H_p(q_k, p_k)| with H_p = M^{-1} p from the returned momenta."""
    p = r.extra["p"]
    return max(np.max(np.abs(model.hol_jac(0.0, q) @ np.linalg.solve(model.mass(q), pk))) for q, pk in zip(r.q, p))


@pytest.mark.parametrize("method", [SymplecticComposition(1), SymplecticComposition(2), Rattle()],
                         ids=["gl1", "gl2", "rattle"])
def test_paper_triple_pendulum(method):
    """Seed 002 at h = 0.12, T = 60: both constraint levels at round-off, energy error ~ 2.9e-2."""
    prob = PROBLEMS["triple_pendulum"]
    m = prob.model
    q0, v0 = prob.initial_state
    assert np.allclose(q0, [0.5, -np.sqrt(0.75), 0, -2 * np.sqrt(0.75), 0, -1 - 2 * np.sqrt(0.75)], atol=1e-15)
    r = method.integrate(m, q0, v0, 60.0, 0.12)
    assert r.eps_pos <= 1e-13 and _gp(m, r) <= 1e-13, (r.eps_pos, _gp(m, r))
    dh = np.max(np.abs(r.energy - r.energy[0]))
    assert 2.7e-2 <= dh <= 3.1e-2, dh


def test_same_map_on_triple_pendulum_not_on_nonlinear_potential():
    """Seed 002 section 3 (our check): with a linear potential the midpoint, Gauss and Verlet middle steps give the
    same map; with the anharmonic spring they differ.  Verlet composition == Lobatto s = 2 (RATTLE)."""
    def final(method, prob, t_end, h):
        return method.integrate(prob.model, *prob.initial_state, t_end, h).q[-1]

    tp, ac = PROBLEMS["triple_pendulum"], PROBLEMS["anharmonic_chain2"]
    ref = final(Rattle(), tp, 6.0, 0.12)
    for meth in (SymplecticComposition(1), SymplecticComposition(2), SymplecticComposition(3), LobattoIIIAB(2)):
        assert np.max(np.abs(final(meth, tp, 6.0, 0.12) - ref)) <= 1e-11
    qs = {name: final(meth, ac, 2.0, 0.1) for name, meth in
          [("gl1", SymplecticComposition(1)), ("gl2", SymplecticComposition(2)), ("rattle", Rattle()),
           ("lob2", LobattoIIIAB(2))]}
    assert np.max(np.abs(qs["gl1"] - qs["rattle"])) >= 1e-4
    assert np.max(np.abs(qs["gl1"] - qs["gl2"])) >= 1e-4
    assert np.max(np.abs(qs["gl2"] - qs["rattle"])) >= 1e-4
    assert np.max(np.abs(qs["lob2"] - qs["rattle"])) <= 1e-12


def test_long_run_energy_bounded_symplectic_drifting_baumgarte():
    """Triple pendulum, h = 0.12 over T = 1200 (10^4 steps): the composition's energy error
    oscillates at its T = 60 level with no trend; Baumgarte-RK4's grows steadily."""
    prob = PROBLEMS["triple_pendulum"]
    q0, v0 = prob.initial_state
    t_end, h = 1200.0, 0.12
    sym = SymplecticComposition(1).integrate(prob.model, q0, v0, t_end, h, every=5)
    bg = BaumgarteRK4().integrate(prob.model, q0, v0, t_end, h, every=5)

    def trend(r):   # change of H - H0 over the run along its least-squares line
        return abs(np.polyfit(r.t, r.energy - r.energy[0], 1)[0]) * t_end

    def window_max(r):
        return np.abs(r.energy - r.energy[0])[1:].reshape(10, -1).max(axis=1)

    assert np.max(np.abs(sym.energy - sym.energy[0])) <= 4e-2 and trend(sym) <= 2e-2, trend(sym)
    assert sym.eps_pos <= 1e-13
    assert trend(bg) >= 0.2, trend(bg)
    assert np.all(np.diff(window_max(bg)) > 0), window_max(bg)


# -- orders ----------------------------------------------------------------------------

@pytest.mark.parametrize("method,order", [(SymplecticComposition(1), 2), (SymplecticComposition(3), 2),
                                          (ExplicitMidpointComposition(), 2), (LobattoIIIAB(4), 6)],
                         ids=["gl1", "gl3", "explicit_midpoint", "lobatto4"])
def test_orders_on_nonlinear_potential(method, order):
    """Orders of the variants the shared list does not run (gl2, RATTLE, Lobatto s = 3 and
    Baumgarte-RK4 are in tests/test_methods.py), on the anharmonic chain."""
    prob = PROBLEMS["anharmonic_chain2"]
    if order > 4:   # h = 1/16, 1/32, 1/64: asymptotic, and above the reference's 1e-13 floor
        prob = replace(prob, h0=1 / 16)
    slopes, errs = measured_orders(method, prob, halvings=2 if order > 4 else 4)
    assert np.all(np.abs(slopes - order) <= 0.25), (slopes, errs)


# -- numerical symplecticity ---------------------------------------------------------------

@pytest.fixture(scope="module")
def moving_state():
    """A state of the anharmonic chain in motion (on the manifold)."""
    prob = PROBLEMS["anharmonic_chain2"]
    r = Rattle().integrate(prob.model, *prob.initial_state, 0.5, 0.01)
    return prob.model, r.q[-1], r.v[-1]


@pytest.mark.parametrize("cls,stages", [(SymplecticComposition, 1), (SymplecticComposition, 2), (Rattle, None),
                                        (LobattoIIIAB, 3)], ids=["gl1", "gl2", "rattle", "lobatto3"])
def test_symplectic_on_the_constraint_manifold(cls, stages, moving_state):
    method = cls(tol=1e-12) if stages is None else cls(stages, tol=1e-12)
    defect = symplecticity_defect(method, *moving_state, h=0.1, nsteps=5)
    assert defect <= 1e-10, defect


@pytest.mark.parametrize("method", [BaumgarteRK4(), ExplicitMidpointComposition(tol=1e-12)],
                         ids=["baumgarte_rk4", "explicit_midpoint"])
def test_not_symplectic_controls(method, moving_state):
    """Same test, visibly failed: Baumgarte-RK4, and the composition with the explicit midpoint
    (which keeps both constraint levels; seed 002 section 1)."""
    defect = symplecticity_defect(method, *moving_state, h=0.1, nsteps=5)
    assert defect >= 1e-5, defect


def test_symplectic_with_configuration_dependent_mass():
    m = PolarBead()
    q0, v0 = m.state()
    assert symplecticity_defect(LobattoIIIAB(3, tol=1e-12), m, q0, v0, 0.1, 5) <= 1e-10
    assert symplecticity_defect(BaumgarteRK4(), m, q0, v0, 0.1, 5) >= 1e-6


# -- M(q), rheonomic constraints ------------------------------------------------------------

@pytest.mark.parametrize("model", [PolarBead(), ShakenPendulum()], ids=["mass_of_q", "rheonomic"])
def test_orders_and_constraints_general_models(model):
    """q-dependent M (through the callback) and a moving support: orders 2 and 4, both
    constraint levels at round-off."""
    q0, v0 = model.state()
    t_end = 2.0
    qr, vr, _ = (x[-1] for x in ode_reference(model, q0, v0, [t_end]))
    hs = 0.1 / 2.0 ** np.arange(4)
    for method, order in [(SymplecticComposition(2), 2), (Rattle(), 2), (LobattoIIIAB(3), 4)]:
        errs = []
        for h in hs:
            r = method.integrate(model, q0, v0, t_end, h)
            errs.append(max(np.max(np.abs(r.q[-1] - qr)), np.max(np.abs(r.v[-1] - vr))))
            assert r.eps_pos <= 1e-14 and r.eps_vel <= 1e-13, (method.name, r.eps_pos, r.eps_vel)
        slope = fit_order(hs, errs)
        assert abs(slope - order) <= 0.2, (method.name, slope, errs)


# -- outputs, paths, failures -----------------------------------------------------------------

def test_outputs_consistent_acceleration_and_multipliers():
    prob = PROBLEMS["anharmonic_chain2"]
    m = prob.model
    r = LobattoIIIAB(3).integrate(m, *prob.initial_state, 1.0, 0.05)
    for k in range(0, len(r.t), 5):
        q, v, a, lam = r.q[k], r.v[k], r.a[k], r.lam[k]
        assert np.allclose(m.mass(q) @ a + m.hol_jac(0.0, q).T @ lam, m.force(0.0, q, v), atol=1e-12)
        assert np.max(np.abs(m.hol_jac(0.0, q) @ a + m.hol_gamma(0.0, q, v))) <= 1e-12
        assert np.allclose(r.extra["p"][k], m.mass(q) @ v, atol=1e-14)


@pytest.mark.parametrize("method", [SymplecticComposition(2), LobattoIIIAB(3), BaumgarteRK4()],
                         ids=["gl2", "lobatto3", "baumgarte_rk4"])
def test_fortran_and_callback_paths_identical(method):
    prob = PROBLEMS["anharmonic_chain2"]
    a = method.integrate(prob.model, *prob.initial_state, 0.5, 0.05, backend="fortran")
    b = method.integrate(prob.model, *prob.initial_state, 0.5, 0.05, backend="callback")
    assert np.max(np.abs(a.q - b.q)) <= 1e-13 and np.max(np.abs(a.v - b.v)) <= 1e-13
    assert a.stats == b.stats


def test_builtin_model_time_loop_never_calls_python():
    m = AnharmonicChain.example()
    q0, v0 = m.initial_state([1.0, 1.5])
    calls = []

    def never(req, t, q, v, w, out):  # f2py reads the callback's signature: explicit arguments
        calls.append(req)

    args = model_args(m, "fortran")
    nsteps, n, nl = 100, m.n, m.n_hol
    for method in (SymplecticComposition(2), Rattle(), LobattoIIIAB(3), BaumgarteRK4()):
        iopt, ropt = _option_arrays(method.kernel_options(m))
        buf = driver_buffers(n, n, nl, nsteps, 1, nstats=len(method.STATS), naux=sum(method.kernel_aux(m).values()))
        istat, _, _ = call_run(method.KERNEL, dict(args, usercb=never), n, iopt, ropt, 0.0, 0.01, nsteps, 1, q0, v0,
                               buf)
        assert istat[0] == 0 and istat[1] == nsteps and istat[2] == nsteps + 1
    assert calls == []


def test_newton_failure_raises_with_partial_result():
    prob = PROBLEMS["anharmonic_chain2"]
    with pytest.raises(NewtonConvergenceError) as exc:
        LobattoIIIAB(3, maxit=1).integrate(prob.model, *prob.initial_state, 1.0, 0.25)
    assert exc.value.step == 1 and exc.value.time == pytest.approx(0.25)
    assert len(exc.value.result.t) == 1 and exc.value.result.status == "newton_failed"
    r = LobattoIIIAB(3, maxit=1).integrate(prob.model, *prob.initial_state, 1.0, 0.25, raise_on_failure=False)
    assert not r.ok and "Newton" in r.message


class _Knife(Model):
    name = "knife"
    n, n_nonhol = 3, 1

    def mass(self, q):
        return np.eye(3)

    def force(self, t, q, v):
        return np.zeros(3)

    def nh_A(self, t, q):
        return np.array([[np.sin(q[2]), -np.cos(q[2]), 0.0]])


def test_bad_input():
    prob = PROBLEMS["triple_pendulum"]
    q0, v0 = prob.initial_state
    for method in (SymplecticComposition(), Rattle(), LobattoIIIAB(), BaumgarteRK4()):
        with pytest.raises(ValueError, match="nonholonomic"):
            method.integrate(_Knife(), np.zeros(3), np.zeros(3), 1.0, 0.1)
        with pytest.raises(ValueError, match="h must be > 0"):
            method.integrate(prob.model, q0, v0, 1.0, -0.1)
        with pytest.raises(ValueError, match="holonomic constraints"):
            method.integrate(prob.model, q0 + 0.01, v0, 1.0, 0.1)
        with pytest.raises(ValueError, match="velocity"):
            method.integrate(prob.model, q0, v0 + 1.0, 1.0, 0.1)
        with pytest.raises(ValueError, match="NaN"):
            method.integrate(prob.model, q0, np.full(6, np.nan), 1.0, 0.1)
        with pytest.raises(ValueError, match="shape"):
            method.integrate(prob.model, q0[:4], v0, 1.0, 0.1)


def test_baumgarte_damps_but_does_not_remove_drift():
    prob = PROBLEMS["triple_pendulum"]
    q0, v0 = prob.initial_state
    stab = BaumgarteRK4().integrate(prob.model, q0, v0, 60.0, 0.12)
    plain = BaumgarteRK4(0.0, 0.0).integrate(prob.model, q0, v0, 60.0, 0.12)
    assert 1e-8 <= stab.eps_pos <= plain.eps_pos / 100, (stab.eps_pos, plain.eps_pos)
    assert 1e-8 <= stab.eps_vel, stab.eps_vel


def _damped_two_link():
    """Two bars in natural coordinates (n = 12, m = 10, constant M) under gravity, the tip held by
    a damped spring: f depends on v, so RATTLE's reduced step has the f_v block."""
    from pyint.models import NaturalSystem
    s = NaturalSystem(dim=2, gravity=(0.0, -9.81), name="damped_two_link")
    b1 = s.add_body(1.0, pi=(1 / 12, 1 / 12))
    s.set_pose(b1, (0.5, 0.0), 0.0)
    s.revolute(s.ground, (0.0, 0.0), b1, (-0.5, 0.0))
    b2 = s.add_body(1.0, pi=(1 / 12, 1 / 12))
    s.set_pose(b2, (1.5, 0.0), 0.0)
    s.revolute(b1, (0.5, 0.0), b2, (-0.5, 0.0))
    s.spring(s.ground, (1.0, 1.0), b2, (0.5, 0.0), stiffness=50.0, rest_length=0.5, damping=20.0)
    return s.build()


def _rattle_step_reference(model, t, h, q, p):
    """One RATTLE step by Newton's method with a fresh Jacobian at every iterate, on the reduced
    system of fortran/symplectic.f90 (header: RATTLE): x = (u, mu),
    M u - p + G(q)^T mu - h/2 f(t, q, u) = 0, g(t + h, q + h u) / h = 0; then the explicit pbar and
    the projection onto G v + g_t = 0.  Iterated until the increment is at round-off."""
    n, m = model.n, model.n_hol
    M, G0 = model.mass(q), model.hol_jac(t, q)
    x = np.concatenate([np.linalg.solve(M, p), np.zeros(m)])

    def res(x):
        u, mu = x[:n], x[n:]
        return np.concatenate([M @ u - p + G0.T @ mu - h / 2 * model.force(t, q, u), model.hol(t + h, q + h * u) / h])

    for _ in range(50):
        u = x[:n]
        J = np.block([[M - h / 2 * model.force_jac(t, q, u)[1], G0.T], [model.hol_jac(t + h, q + h * u), np.zeros((m, m))]])
        dx = np.linalg.solve(J, -res(x))
        x = x + dx
        if np.max(np.abs(dx)) <= 4 * np.finfo(float).eps * max(1.0, np.max(np.abs(x))):
            break
    u, mu = x[:n], x[n:]
    q1 = q + h * u
    pbar = p - G0.T @ mu + h / 2 * (model.force(t, q, u) + model.force(t + h, q1, u))
    G1 = model.hol_jac(t + h, q1)
    K = np.block([[M, G1.T], [G1, np.zeros((m, m))]])
    y = np.linalg.solve(K, np.concatenate([pbar, -model.hol_t(t + h, q1)]))
    return q1, pbar - G1.T @ y[n:]


@pytest.mark.parametrize("case", ["triple_pendulum", "damped_two_link"])
def test_rattle_kept_matrix_step_is_the_fresh_jacobian_step(case):
    """RATTLE's simplified Newton with kept matrices (fortran/symplectic.f90) lands on the step
    Newton's method with a fresh Jacobian finds (_rattle_step_reference), step by step from the
    run's own states: within the Newton tolerance, |dq| <= tol (1 + |q|), |dp| <= tol (1 + |p|)
    (the rule stops at eta |dx| <= KAPPA tol = tol / 10 against 1 + |x| in each group: a margin of
    10), and at a tight tol the two agree to 1e-13.  The damped case (f depends on v) exercises the
    f_v block and the rule's fresh matrix."""
    if case == "triple_pendulum":
        prob = PROBLEMS["triple_pendulum"]
        model, (q0, v0), h = prob.model, prob.initial_state, 0.12
    else:
        model = _damped_two_link()
        (q0, v0), h = model.initial_state(), 1e-2
    for tol in (1e-10, 1e-13):
        r = Rattle(tol=tol).integrate(model, q0, v0, 30 * h, h)
        assert r.status == "ok"
        P = r.extra["p"]
        worst = 0.0
        for k in range(len(r.t) - 1):
            q1, p1 = _rattle_step_reference(model, r.t[k], h, r.q[k], P[k])
            worst = max(worst, np.max(np.abs(r.q[k + 1] - q1)) / (1 + np.max(np.abs(q1))),
                        np.max(np.abs(P[k + 1] - p1)) / (1 + np.max(np.abs(p1))))
        assert worst <= max(tol, 1e-13), (tol, worst)
