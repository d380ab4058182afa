"""Numerical checks of the invariants a method may claim (``Integrator.invariants``).

* :func:`symplecticity_defect` -- "symplectic": the step map's Jacobian,
  restricted to the constraint manifold {g = 0, G M^{-1} p = 0}, preserves
  the canonical symplectic form.
* :func:`energy_halves` -- "energy_bounded": the largest energy error of the
  second half of a long run against that of the first half (a linear drift
  doubles it, a bounded error does not).

Both are for conservative models with scleronomic holonomic constraints
(evaluated at t = 0).
"""
from __future__ import annotations

import numpy as np

from .models.base import fd_jacobian


def manifold_point(model, q0, p0, xi, eps):
    """The point of {g(q) = 0, G(q) M(q)^{-1} p = 0} near (q0, p0) + eps xi, reached along
    the fixed directions M(q0)^{-1} G(q0)^T (positions) and G(q)^T (momenta): a smooth
    curve through (q0, p0) whose tangent is the projection of xi onto the tangent space."""
    n = model.n
    dq = np.linalg.solve(model.mass(q0), model.hol_jac(0.0, q0).T)
    q = q0 + eps * xi[:n]
    eta = np.zeros(model.n_hol)
    for _ in range(20):   # Newton on eta: converged to round-off long before
        eta -= np.linalg.solve(model.hol_jac(0.0, q + dq @ eta) @ dq, model.hol(0.0, q + dq @ eta))
    q = q + dq @ eta
    g, minv = model.hol_jac(0.0, q), np.linalg.inv(model.mass(q))
    p = p0 + eps * xi[n:]
    return q, p - g.T @ np.linalg.solve(g @ minv @ g.T, g @ minv @ p)


def symplecticity_defect(method, model, q0, v0, h, nsteps=5, eps=1e-3):
    """max|W' - W| / max|W|: W_ab = omega(xi_a, xi_b) for a basis xi of the tangent space
    of the constraint manifold at (q0, p0 = M v0), W' the same for the images of the xi
    under the derivative of ``nsteps`` steps of ``method`` (step h).

    Derivatives are Richardson-extrapolated central differences (eps, eps/2) along
    curves on the manifold (:func:`manifold_point`), so the defect of a symplectic
    method is ~1e-12 (round-off and Newton tolerance), that of a non-symplectic one
    of the size of its local error.
    """
    from .models.subset import independent_subset
    n = model.n
    mechanism, model = model, independent_subset(model, 0.0, q0)   # a redundant one: its manifold's rows
    p0 = model.mass(q0) @ v0
    g = model.hol_jac(0.0, q0)
    gp_q = fd_jacobian(lambda x: model.hol_jac(0.0, x) @ np.linalg.solve(model.mass(x), p0), q0)
    c = np.block([[g, np.zeros_like(g)], [gp_q, g @ np.linalg.inv(model.mass(q0))]])
    basis = np.linalg.svd(c)[2][c.shape[0]:]          # rows span the null space of c

    def flow(q, p):
        r = method.integrate(mechanism, q, np.linalg.solve(model.mass(q), p), nsteps * h, h)
        return np.concatenate([r.q[-1], model.mass(r.q[-1]) @ r.v[-1]])

    def tangent(fun, xi):
        def curve(e):
            return fun(*manifold_point(model, q0, p0, xi, e))
        d1 = (curve(eps) - curve(-eps)) / (2 * eps)
        d2 = (curve(eps / 2) - curve(-eps / 2)) / eps
        return (4 * d2 - d1) / 3

    x = np.array([tangent(lambda q, p: np.concatenate([q, p]), xi) for xi in basis]).T
    y = np.array([tangent(flow, xi) for xi in basis]).T
    j = np.block([[np.zeros((n, n)), np.eye(n)], [-np.eye(n), np.zeros((n, n))]])
    w0, w1 = x.T @ j @ x, y.T @ j @ y
    return float(np.max(np.abs(w1 - w0)) / np.max(np.abs(w0)))


def energy_halves(result):
    """(max |H - H0| over the first half of the run, the same over the second half)."""
    e = np.abs(result.energy - result.energy[0])
    k = len(e) // 2
    return float(e[:k].max()), float(e[k:].max())
