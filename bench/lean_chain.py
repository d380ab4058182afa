"""The planar N-link chain (pyint.models.PendulumChain) with its Python items
written for the callback path: every item is a few whole-array NumPy
operations on operators built once (no Python loop, no reshape), the constant
mass matrix, force and force Jacobians are returned as stored arrays.  Through
the callback it shows what the path itself costs when the user's items are
cheap (bench/run.py, section paths); the items equal PendulumChain's
(lean_items_agree, checked by the benchmark before it times anything).

With r = D q the links' relative positions (r_i = p_i - p_{i-1}) and S the
(N x 2N) sum over each link's two components:
    g = S (r * r) / 2 - l^2 / 2,    G = (S * r) D,    hol_gamma = S (D v)^2,
    (G v)_q = G(v),                 (G^T lam)_q = D^T diag(S^T lam) D.
"""
from __future__ import annotations

import numpy as np

from pyint.models import PendulumChain


class LeanChain(PendulumChain):
    """PendulumChain whose Python items cost a few NumPy calls each."""

    def __init__(self, n_links=2, **kw):
        super().__init__(n_links, **kw)
        n, nl = self.n, self.n_links
        self._d = np.eye(n) - np.eye(n, k=-2)                  # r = D q
        self._s = np.kron(np.eye(nl), np.ones(2))              # (N, 2N): sum of a link's x and y
        self._half_s = 0.5 * self._s
        self._half_l2 = 0.5 * self.l ** 2
        self._m = super().mass(None)
        self._f = super().force(0.0, None, None)
        self._zero = np.zeros((n, n))
        self._half_mv = 0.5 * np.repeat(self.m, 2)
        self._gm = np.zeros(n)
        self._gm[1::2] = self.grav * self.m                    # potential energy: gm . q

    def mass(self, q):
        return self._m

    def force(self, t, q, v):
        return self._f

    def force_jac(self, t, q, v):
        return self._zero, self._zero

    def hol(self, t, q):
        r = self._d @ q
        return self._half_s @ (r * r) - self._half_l2

    def hol_jac(self, t, q):
        return (self._s * (self._d @ q)) @ self._d

    def hol_vel_q(self, t, q, v):
        return self.hol_jac(t, v)

    def hol_gamma(self, t, q, v):
        r = self._d @ v
        return self._s @ (r * r)

    def hol_gtl_q(self, t, q, lam):
        return self._d.T @ ((self._s.T @ lam)[:, None] * self._d)

    def energy(self, t, q, v):
        return float(self._half_mv @ (v * v) + self._gm @ q)


def lean_items_agree(n_links, seed=0):
    """Max relative difference between LeanChain's and PendulumChain's items at a random state."""
    rng = np.random.default_rng(seed)
    lean, ref = LeanChain(n_links), PendulumChain(n_links)
    t, q, v, lam = 0.3, rng.normal(size=ref.n), rng.normal(size=ref.n), rng.normal(size=n_links)
    worst = 0.0
    for name, args in (("mass", (q,)), ("force", (t, q, v)), ("hol", (t, q)), ("hol_jac", (t, q)),
                       ("hol_vel_q", (t, q, v)), ("hol_gamma", (t, q, v)), ("hol_gtl_q", (t, q, lam)),
                       ("energy", (t, q, v))):
        a, b = np.asarray(getattr(lean, name)(*args)), np.asarray(getattr(ref, name)(*args))
        worst = max(worst, float(np.max(np.abs(a - b), initial=0.0)) / max(1.0, float(np.max(np.abs(b)))))
    return worst
