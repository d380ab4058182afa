"""Planar pendulum chain whose last mass is tied to a fixed anchor by an
anharmonic (Duffing) spring: the nonlinear-potential test problem of the
constrained symplectic methods (seed 002).

The chain is :class:`~pyint.models.PendulumChain` (point masses in Cartesian
coordinates, rigid links, gravity ``grav`` along -y) plus the spring energy

    V_s = k/2 |d|^2 + kappa/4 |d|^4,    d = (x_N, y_N) - anchor,

whose force on the last mass is f = -(k + kappa |d|^2) d, with Jacobian
df/dq = -(k + kappa |d|^2) I - 2 kappa d d^T.  The total energy
sum m_i (|v_i|^2/2 + grav y_i) + V_s is conserved.

Why it exists: on the seed's triple pendulum the potential is linear
(constant force), so the implicit midpoint, Stormer-Verlet and Gauss-Legendre
middle steps of the seed's composition give the same map (tests/test_symplectic.py checks it);
the quartic spring makes the force nonlinear in q, and the methods differ.
Fortran twin: fortran/models/anharmonic_chain.f90.
"""
from __future__ import annotations

import numpy as np

from ._params import nonnegative, vector
from .pendulum_chain import PendulumChain


class AnharmonicChain(PendulumChain):
    r"""N-link planar pendulum chain with a :math:`\frac{k}{2} \lvert d\rvert^2 + \frac{\kappa}{4} \lvert d\rvert^4` spring from the last mass to ``anchor``.

    Parameters: n_links, mass, length, grav as for PendulumChain; k [N/m] and
    kappa [N/m^3], :math:`k, \kappa \ge 0`, the quadratic and quartic spring constants; anchor
    :math:`(x, y)` [m], the fixed end of the spring.

    Examples
    --------
    >>> import numpy as np
    >>> from pyint import AnharmonicChain, SymplecticComposition
    >>> model = AnharmonicChain(n_links=2, k=1.0, kappa=4.0)
    >>> q0, v0 = model.initial_state([np.pi / 4, np.pi / 2])
    >>> res = SymplecticComposition().integrate(model, q0, v0, t_end=1.0, h=1e-2)
    >>> res.status, res.eps_pos < 1e-12
    ('ok', True)
    """

    fortran_name = "anharmonic_chain"

    def __init__(self, n_links=2, mass=1.0, length=1.0, grav=1.0, k=1.0, kappa=4.0, anchor=(1.0, -1.0)):
        super().__init__(n_links, mass=mass, length=length, grav=grav)
        self.k = nonnegative("k", k)
        self.kappa = nonnegative("kappa", kappa)
        self.anchor = vector("anchor", anchor, 2)
        self.name = f"anharmonic_chain_{self.n_links}"

    @classmethod
    def example(cls):
        return cls(2, mass=[1.0, 1.5], length=[1.0, 0.8], grav=1.0, k=1.0, kappa=4.0, anchor=(1.0, -1.0))

    def _tip(self, q):
        return np.asarray(q, dtype=float)[-2:] - self.anchor

    def force(self, t, q, v):
        f = super().force(t, q, v)
        d = self._tip(q)
        f[-2:] -= (self.k + self.kappa * (d @ d)) * d
        return f

    def force_jac(self, t, q, v):
        fq, fv = super().force_jac(t, q, v)
        d = self._tip(q)
        fq[-2:, -2:] -= (self.k + self.kappa * (d @ d)) * np.eye(2) + 2 * self.kappa * np.outer(d, d)
        return fq, fv

    def energy(self, t, q, v):
        d2 = float(self._tip(q) @ self._tip(q))
        return super().energy(t, q, v) + 0.5 * self.k * d2 + 0.25 * self.kappa * d2 * d2

    def fortran_params(self):
        ipar, rpar = super().fortran_params()
        return ipar, np.concatenate([rpar, [self.k, self.kappa], self.anchor])

    def describe(self):
        d = super().describe()
        d.update(k=self.k, kappa=self.kappa, anchor=self.anchor.tolist())
        return d
