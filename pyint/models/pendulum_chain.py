"""Planar N-link pendulum chain of point masses in Cartesian coordinates.

q = (x1, y1, ..., xN, yN); link i joins point i-1 to point i (point 0 is the
fixed origin); g_i = ((x_i - x_{i-1})^2 + (y_i - y_{i-1})^2 - l_i^2) / 2;
gravity ``grav`` along -y.  Holonomic, index 3, any N: the scale model of the
benchmarks.  Fortran twin: fortran/models/pendulum_chain.f90.
"""
from __future__ import annotations

import numpy as np

from ._params import integer, positive_array, real
from .base import Model


class PendulumChain(Model):
    r"""Planar N-link pendulum chain of point masses in Cartesian coordinates (holonomic, index 3).

    :math:`q = (x_1, y_1, \ldots, x_N, y_N)`; link i joins point i-1 to point i (point 0 is the
    fixed origin) through the constraint
    :math:`g_i = \left((x_i - x_{i-1})^2 + (y_i - y_{i-1})^2 - l_i^2\right) / 2 = 0`;
    gravity along :math:`-y`.  Conservative, constant mass matrix; a Fortran twin (the whole loop runs
    in Fortran).

    Parameters
    ----------
    n_links : int, default 2
        The number of links N (n = 2N coordinates, N holonomic constraints).
    mass : float or array_like of N floats, default 1.0
        The point masses [kg].
    length : float or array_like of N floats, default 1.0
        The link lengths [m].
    grav : float, default 9.81
        The gravitational acceleration [m/s^2].

    Examples
    --------
    >>> import numpy as np
    >>> from pyint import PendulumChain
    >>> model = PendulumChain(n_links=3, mass=[1.0, 2.0, 1.0])
    >>> q0, v0 = model.initial_state([np.pi / 2, np.pi / 3, 0.0])   # angles from the downward vertical
    >>> model.n, model.n_hol, float(np.max(np.abs(model.hol(0.0, q0)))) < 1e-15
    (6, 3, True)
    """

    fortran_name = "pendulum_chain"
    constant_mass = True
    scleronomic = True
    conservative = True

    def __init__(self, n_links=2, mass=1.0, length=1.0, grav=9.81):
        self.n_links = integer("n_links", n_links, minimum=1)
        self.m = positive_array("mass", mass, self.n_links)
        self.l = positive_array("length", length, self.n_links)
        self.grav = real("grav", grav)
        self.name = f"pendulum_chain_{self.n_links}"
        self.n = 2 * self.n_links
        self.n_hol = self.n_links
        self.n_nonhol = 0
        self.coord_names = tuple(f"{c}{i + 1}" for i in range(self.n_links) for c in "xy")
        self.coord_units = ("m",) * self.n

    # -- helpers ---------------------------------------------------------------
    def _rel(self, x):
        p = np.asarray(x, dtype=float).reshape(self.n_links, 2)
        d = p.copy()
        d[1:] -= p[:-1]
        return d

    def initial_state(self, angles=None):
        """Chain hanging at the given angles from the downward vertical, at rest."""
        th = np.full(self.n_links, np.pi / 2) if angles is None else np.asarray(angles, dtype=float)
        d = np.stack([self.l * np.sin(th), -self.l * np.cos(th)], axis=1)
        return np.cumsum(d, axis=0).ravel(), np.zeros(self.n)

    def drawing(self, q):
        """What :func:`pyint.plotting.animate` draws: the chain from its pivot, one polyline."""
        return [np.vstack([np.zeros(2), np.asarray(q, dtype=float).reshape(self.n_links, 2)])]

    # -- the model ---------------------------------------------------------------
    def mass(self, q):
        return np.diag(np.repeat(self.m, 2))

    def force(self, t, q, v):
        f = np.zeros(self.n)
        f[1::2] = -self.grav * self.m
        return f

    def force_jac(self, t, q, v):
        return np.zeros((self.n, self.n)), np.zeros((self.n, self.n))

    def hol(self, t, q):
        d = self._rel(q)
        return 0.5 * (np.sum(d**2, axis=1) - self.l**2)

    def hol_jac(self, t, q):
        d = self._rel(q)
        gq = np.zeros((self.n_links, self.n))
        for i in range(self.n_links):
            gq[i, 2 * i:2 * i + 2] = d[i]
            if i:
                gq[i, 2 * i - 2:2 * i] = -d[i]
        return gq

    def hol_vel_q(self, t, q, v):
        return self.hol_jac(t, v)  # the constraints are quadratic: (G(q) v)_q = G(v)

    def hol_gamma(self, t, q, v):
        return np.sum(self._rel(v) ** 2, axis=1)

    def hol_gtl_q(self, t, q, lam):
        d = np.zeros((self.n, self.n))
        i2 = np.eye(2)
        for i in range(self.n_links):
            s = slice(2 * i, 2 * i + 2)
            d[s, s] += lam[i] * i2
            if i:
                p = slice(2 * i - 2, 2 * i)
                d[p, p] += lam[i] * i2
                d[s, p] -= lam[i] * i2
                d[p, s] -= lam[i] * i2
        return d

    def energy(self, t, q, v):
        v2 = np.asarray(v).reshape(self.n_links, 2)
        y = np.asarray(q).reshape(self.n_links, 2)[:, 1]
        return float(np.sum(self.m * (0.5 * np.sum(v2**2, axis=1) + self.grav * y)))

    def fortran_params(self):
        return (np.array([self.n_links], dtype=np.int32),
                np.concatenate([[self.grav], self.m, self.l]))

    def describe(self):
        d = super().describe()
        d.update(n_links=self.n_links, grav=self.grav, mass=self.m.tolist(), length=self.l.tolist())
        return d
