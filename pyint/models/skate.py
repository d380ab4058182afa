"""Skate (knife edge) on an inclined plane: seed 004 (Man, Gao, Zhong 2020), example 1.

q = (x, y, theta): contact point and blade heading; x points down the slope.

    L = 1/2 m (x'^2 + y'^2) + 1/2 J theta'^2 + m g x sin(alpha),
    A = [sin theta, -cos theta, 0],   A v = x' sin theta - y' cos theta = 0,

so M = diag(m, m, J), f = (m g sin alpha, 0, 0) and the energy
T - m g x sin(alpha) is conserved.  Seed 004: m = J = 1, g = 10, alpha = pi/12.

Torsion spring.  ``torsion`` k adds a spring on the blade heading that seed 004
does not have (default 0): L gains -1/2 k theta^2, so f_3 = -k theta and the
energy gains +1/2 k theta^2.  Without it theta = omega t exactly and the
multiplier of several methods is exact to round-off, so no order can be
measured on it; the shared problem ``skate_torsion`` (pyint.problems) uses
k = 0.5.  The closed form below holds for k = 0 only.

Closed form from q(0) = 0, v(0) = (0, 0, omega) (:meth:`Skate.exact`):

    theta = omega t,
    x = g sin(alpha) / (2 omega^2) sin^2(omega t),
    y = g sin(alpha) / (2 omega^2) (omega t - 1/2 sin(2 omega t)).

Multiplier sign.  Seed 004 writes p' = -H_q + G^T lam with
G = [sin theta, -cos theta, 0] and get lam = -2 m g sin(alpha) sin(omega t).
pyint writes M a = f - A^T lam, the opposite sign, so here

    lam = +2 m g sin(alpha) sin(omega t)

(check: the y row m y'' = +lam cos theta with y'' = g sin(alpha) sin(2 omega t)).
Fortran twin: fortran/models/skate.f90.
"""
from __future__ import annotations

import numpy as np

from ._params import nonnegative, positive, real
from .base import Model


class Skate(Model):
    r"""Knife edge on an inclined plane (3 coordinates, 1 nonholonomic constraint, conservative).

    Parameters
    ----------
    mass : m [kg]
    inertia : J, moment of inertia about the vertical axis [kg m^2]
    grav : g [m/s^2]
    slope : :math:`\alpha`, inclination of the plane [rad]; :math:`x` points down the slope
    torsion : :math:`k \ge 0`, a torsion spring on the heading :math:`\theta` [N m/rad] (not in seed 004; 0:
        the seed's skate, named ``skate``; :math:`k > 0`: named ``skate_torsion``)

    Examples
    --------
    >>> from pyint import Skate, GalerkinLobatto
    >>> model = Skate()
    >>> q0, v0 = model.initial_state(omega=1.0)
    >>> res = GalerkinLobatto(s=3).integrate(model, q0, v0, t_end=2.0, h=1e-2)
    >>> res.status, res.eps_vel < 1e-9
    ('ok', True)
    """

    name = "skate"
    fortran_name = "skate"
    n = 3
    n_hol = 0
    n_nonhol = 1
    constant_mass = True
    conservative = True
    coord_names = ("x", "y", "theta")
    coord_units = ("m", "m", "rad")
    PARAMETERS = (("mass", "m"), ("inertia", "J"), ("grav", "grav"), ("slope", "alpha"), ("torsion", "k"))

    def __init__(self, mass=1.0, inertia=1.0, grav=10.0, slope=np.pi / 12, torsion=0.0):
        self.m = positive("mass", mass)
        self.J = positive("inertia", inertia)
        self.grav = real("grav", grav)
        self.alpha = real("slope", slope)
        self.k = nonnegative("torsion", torsion)
        if self.k:
            self.name = "skate_torsion"

    def initial_state(self, omega=1.0):
        """q = 0, v = (0, 0, omega): the start of the closed form (consistent)."""
        return np.zeros(3), np.array([0.0, 0.0, real("omega", omega)])

    def exact(self, t, omega=1.0):
        r"""Closed-form :math:`(q, v, a, \lambda)` at time t from :meth:`initial_state` (:math:`\omega \ne 0`, torsion 0)."""
        if self.k:
            raise ValueError("the closed form holds for torsion = 0 only")
        t, w = real("t", t), real("omega", omega)
        if w == 0.0:
            raise ValueError("the closed form needs omega != 0")
        c = self.grav * np.sin(self.alpha)
        s, co = np.sin(w * t), np.cos(w * t)
        q = np.array([c / (2 * w**2) * s**2, c / (2 * w**2) * (w * t - s * co), w * t])
        v = np.array([c / w * s * co, c / w * s**2, w])
        a = np.array([c * (co**2 - s**2), 2 * c * s * co, 0.0])
        lam = np.array([2 * self.m * c * s])
        return q, v, a, lam

    # -- the model ---------------------------------------------------------------
    def mass(self, q):
        return np.diag([self.m, self.m, self.J])

    def force(self, t, q, v):
        return np.array([self.m * self.grav * np.sin(self.alpha), 0.0, -self.k * q[2]])

    def force_jac(self, t, q, v):
        fq = np.zeros((3, 3))
        fq[2, 2] = -self.k
        return fq, np.zeros((3, 3))

    def nh_A(self, t, q):
        return np.array([[np.sin(q[2]), -np.cos(q[2]), 0.0]])

    def nh_b(self, t, q):
        return np.zeros(1)

    def nh_vel_q(self, t, q, v):
        return np.array([[0.0, 0.0, np.cos(q[2]) * v[0] + np.sin(q[2]) * v[1]]])

    def nh_dt(self, t, q, v):
        return np.zeros(1)

    def nh_gamma(self, t, q, v):
        return np.array([v[2] * (np.cos(q[2]) * v[0] + np.sin(q[2]) * v[1])])

    def nh_atl_q(self, t, q, lam):
        d = np.zeros((3, 3))
        d[0, 2] = lam[0] * np.cos(q[2])
        d[1, 2] = lam[0] * np.sin(q[2])
        return d

    def energy(self, t, q, v):
        return float(0.5 * self.m * (v[0] ** 2 + v[1] ** 2) + 0.5 * self.J * v[2] ** 2
                     - self.m * self.grav * np.sin(self.alpha) * q[0] + 0.5 * self.k * q[2] ** 2)
