"""The stabilized index-2 generalized-alpha (fortran/genalpha.f90 VARIANT_STAB2) through the structured
solvers (banded / KLU): its Newton matrix gains the auxiliary unknowns z = G(q_n)^T mu (stab2_blocks),
so that every block is one of the model's add_* (docs/adaptive_steps.md section 6.1).  Eliminating z
gives back the dense matrix (stab2_jacobian, today's path for at most 60 unknowns): the Newton step
of both forms is the same to cond x eps, whole runs the same to Newton's tolerance, and both keep the
constraints at round-off."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from genalpha_numpy import alpha_constants, newton_matrix
from pyint.methods.genalpha import GeneralizedAlpha
from pyint.models import PendulumChain, SymbolicModel
from pyint.models.structured import sparse_solver_available

EPS = np.finfo(float).eps
STRUCTURED = ["banded"] + (["sparse"] if sparse_solver_available() else [])
#: what linear_solver="auto" takes for the stabilized matrix of more than 60 unknowns
AUTO = "sparse" if sparse_solver_available() else "banded"


def railed_sleigh():
    """Holonomic and nonholonomic rows together, M(q): the Chaplygin sleigh (pyint/models/symbolic_examples.py
    symbolic_sleigh) with a pendulum bob z tied to its x by x^2 + z^2 = 1."""
    x, y, th, z, vx, vy, w, vz = sp.symbols("x y theta z vx vy omega vz")
    m, J, a, mz = 1.0, 0.05, 0.3, 0.5
    M = sp.Matrix([[m, 0, -m * a * sp.sin(th), 0], [0, m, m * a * sp.cos(th), 0],
                   [-m * a * sp.sin(th), m * a * sp.cos(th), J + m * a**2, 0], [0, 0, 0, mz]])
    qv, vv = sp.Matrix([x, y, th, z]), sp.Matrix([vx, vy, w, vz])
    f = -(M * vv).jacobian(qv) * vv + ((vv.T * M * vv) / 2).jacobian(qv).T
    return SymbolicModel([x, y, th, z], [vx, vy, w, vz], mass=M, force=f,
                         potential=2 * th**2 + 9.81 * mz * z, hol=[(x**2 + z**2 - 1) / 2],
                         nonhol=([[-sp.sin(th), sp.cos(th), 0, 0]], None), name="railed_sleigh")


def random_chain_state(model, seed):
    """A consistent state of the chain: random angles, a random velocity projected onto G v = 0."""
    rng = np.random.default_rng(seed)
    q0, _ = model.initial_state(rng.uniform(-np.pi, np.pi, model.n_hol))
    g = model.hol_jac(0.0, q0)
    vr = rng.standard_normal(model.n)
    return q0, vr - g.T @ np.linalg.solve(g @ g.T, g @ vr)


def cases():
    """(label, model, q0, v0, h, solvers): chain 16 (64 unknowns: "auto" takes the structured form)
    and the structured form forced on small models."""
    c16 = PendulumChain(16)
    c2 = PendulumChain(2)
    rs = railed_sleigh()
    return [("chain16", c16, *random_chain_state(c16, 1), 0.05, ["auto"] + STRUCTURED),
            ("chain2", c2, *random_chain_state(c2, 2), 0.05, STRUCTURED),
            ("railed_sleigh", rs, np.array([1.0, 0.0, 0.3, 0.0]), np.array([0.0, 0.0, 0.7, 0.5]), 0.05, STRUCTURED)]


CASES = cases()
PARAMS = [(c[0], s) for c in CASES for s in c[5]]


def _case(label):
    return next(c for c in CASES if c[0] == label)


@pytest.mark.parametrize("label,solver", PARAMS)
def test_newton_step_equals_the_dense_one(label, solver):
    """One Newton iteration (maxit 1, tol 1e3: the first iterate is the step) from a random consistent
    state, h = 0.05: the structured form's increment (a, lam) against the dense matrix's.  Both are
    backward-stable solves of the same system (z eliminated), so they differ by cond(J) eps |dx|
    (J: tests/genalpha_numpy.py newton_matrix at the start iterate) plus the rounding of x + dx,
    eps |x|: bound 10 cond eps |dx| + 2 eps |x| (measured: at most 0.42 cond eps |dx|, chain2 with KLU)."""
    _, m, q0, v0, h, _ = _case(label)
    opts = dict(jacobian_reuse=False, tol=1e3, maxit=1, stabilized=True)
    d = GeneralizedAlpha(linear_solver="dense", **opts).integrate(m, q0, v0, h, h)
    r = GeneralizedAlpha(linear_solver=solver, **opts).integrate(m, q0, v0, h, h)
    assert d.stats["linear_solver"] == "dense"
    assert r.stats["linear_solver"] == (AUTO if solver == "auto" else solver)
    # the dense matrix at the start iterate x_n = (a_0, lam_0, mu = 0) (Arnold-Bruls: M multiplies a - ahist)
    p = alpha_constants(0.9)
    a0, lh, ln = m.consistent_acceleration(0.0, q0, v0)
    lam0 = np.concatenate([lh, ln])
    sh = p["beta"] * h * h
    q1 = q0 + h * v0 + h * h * (0.5 - p["beta"]) * a0 + sh * a0
    v1 = v0 + h * a0
    jac = newton_matrix(m, p, h, h, q1, v1, a0 - (p["d"] - p["k"]) * a0, lam0, sh * m.hol_jac(0.0, q0).T)
    cond = np.linalg.cond(jac)
    dx = max(np.max(np.abs(d.a[1] - a0)), np.max(np.abs(d.lam[1] - lam0)))
    x = max(np.max(np.abs(d.a[1])), np.max(np.abs(d.lam[1])))
    assert dx > 0.1     # a real Newton step (measured 0.28 .. 7.7)
    diff = max(np.max(np.abs(r.a[1] - d.a[1])), np.max(np.abs(r.lam[1] - d.lam[1])))
    assert diff <= 10 * cond * EPS * dx + 2 * EPS * x, (diff, cond, dx)


@pytest.mark.parametrize("label,solver", PARAMS)
def test_fixed_step_run_equals_the_dense_one(label, solver):
    """stabilized=True at a fixed step h = 0.01, 64 steps, full Newton at tol 1e-13 on both sides: the
    structured run equals the dense one within 1e-12 (Newton's tolerance 1e-13 times 10 |q|, |q| <= 4.8:
    what two Newton iterations stopped at tol may differ by; measured <= 4.9e-15) and keeps both
    constraint levels at round-off (bounds of tests/test_adaptive.py; measured <= 0.8 eps (1 + |q|),
    eps (1 + |v|))."""
    _, m, q0, v0, _, _ = _case(label)
    h = 0.01
    opts = dict(jacobian_reuse=False, tol=1e-13, stabilized=True)
    d = GeneralizedAlpha(linear_solver="dense", **opts).integrate(m, q0, v0, 64 * h, h)
    r = GeneralizedAlpha(linear_solver=solver, **opts).integrate(m, q0, v0, 64 * h, h)
    assert r.stats["linear_solver"] == (AUTO if solver == "auto" else solver)
    assert np.max(np.abs(r.q - d.q)) <= 1e-12 and np.max(np.abs(r.v - d.v)) <= 1e-12
    assert r.step_max("eps_pos") <= 10 * EPS * (1 + np.max(np.abs(r.q)))
    assert r.step_max("eps_vel") <= 100 * EPS * (1 + np.max(np.abs(r.v)))


# Adaptive runs (rtol 1e-6, Newton tol 1e-10, simplified, a fresh factorization at every new h:
# jacobian_reuse="per_h"), structured against dense over
# t in [0, 0.5] (the estimates' projections structured too: project_structured): measured max
# |h_s - h_d| / h 1.7e-9, |q_s - q_d| 7.3e-13, |v_s - v_d| 3.6e-12 (chain2, 1445 steps; chain16 6.5e-10,
# 2.4e-12, 4.8e-12; railed_sleigh 1.1e-9, 7.4e-13, 2.5e-12): round-off carried along the trajectory, as
# much as the dense run differs from itself with q0 changed by one ulp.  Bounds 10x.  (The default keeps
# its factorization across steps and changes of h: the two solvers' iterations then stop at different
# points within Newton's tolerance, not at a fresh matrix's quadratic margin below it; chain16:
# |h_s - h_d| / h 1.2e-7.  What is compared here is the structured solve, at round-off.)
@pytest.mark.parametrize("label,solver", PARAMS)
def test_adaptive_run_equals_the_dense_one(label, solver):
    """Same accepted and rejected steps, the same steps and states within the bounds above, both
    constraint levels at round-off after every accepted step (tests/test_adaptive.py's bounds;
    measured <= 3 eps (1 + |v|))."""
    _, m, q0, v0, _, _ = _case(label)
    d = GeneralizedAlpha(linear_solver="dense", jacobian_reuse="per_h").integrate(m, q0, v0, 0.5, rtol=1e-6)
    r = GeneralizedAlpha(linear_solver=solver, jacobian_reuse="per_h").integrate(m, q0, v0, 0.5, rtol=1e-6)
    assert d.stats["linear_solver"] == "dense"
    assert r.stats["linear_solver"] == (AUTO if solver == "auto" else solver)
    assert (r.stats["accepted"], r.stats["rejected"]) == (d.stats["accepted"], d.stats["rejected"])
    assert np.max(np.abs(r.h - d.h) / d.h) <= 1.7e-8
    assert np.max(np.abs(r.q - d.q)) <= 2.4e-11 and np.max(np.abs(r.v - d.v)) <= 4.8e-11
    assert r.step_max("eps_pos") <= 10 * EPS * (1 + np.max(np.abs(r.q)))
    assert r.step_max("eps_vel") <= 100 * EPS * (1 + np.max(np.abs(r.v)))


def test_a_full_pattern_keeps_the_dense_matrix():
    """"auto" above 60 unknowns asks choose_solver about the structured pattern: the chain through the
    Python callback has the dense add_* defaults (a full pattern), so it keeps the dense matrix
    (stab2_jacobian, without z), the same run as the built-in chain's "dense" (fixed step h = 0.01,
    16 steps, full Newton at tol 1e-13: bound 1e-12 as test_fixed_step_run_equals_the_dense_one)."""
    m = PendulumChain(16)
    q0, v0 = random_chain_state(m, 1)
    opts = dict(jacobian_reuse=False, tol=1e-13, stabilized=True)
    r = GeneralizedAlpha(**opts).integrate(m, q0, v0, 0.16, 0.01, backend="callback")
    d = GeneralizedAlpha(linear_solver="dense", **opts).integrate(m, q0, v0, 0.16, 0.01)
    assert r.stats["linear_solver"] == "dense"
    assert np.max(np.abs(r.q - d.q)) <= 1e-12 and np.max(np.abs(r.v - d.v)) <= 1e-12
