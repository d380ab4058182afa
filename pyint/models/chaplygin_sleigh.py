"""Chaplygin sleigh in contact-point coordinates: a nonholonomic model whose mass matrix depends on q.

Why this model.  Seed 000 claims its alpha-methods allow M(q); the sleigh is
the smallest physically meaningful nonholonomic system that shows it.  A
rigid body (mass m, moment of inertia J about its mass centre C) slides on a
knife edge at the point P; C lies a distance ``a`` ahead of P on the blade
axis e = (cos theta, sin theta).  Taking q = (x, y, theta) with (x, y) the
contact point P (not C) makes the constraint simple and M depend on theta:

    r_C = (x + a cos theta, y + a sin theta),
    T   = 1/2 m |r_C'|^2 + 1/2 J theta'^2
        = 1/2 m (x'^2 + y'^2) + m a theta' (-sin theta x' + cos theta y')
          + 1/2 (J + m a^2) theta'^2,

    M(q) = [[m,              0,             -m a sin theta],
            [0,              m,              m a cos theta],
            [-m a sin theta, m a cos theta,  J + m a^2    ]],

det M = m^2 J > 0 for every q (M = B^T diag(m, m, J) B with det B = 1).
No lateral slip at P:  A = [-sin theta, cos theta, 0],  A v = 0.

Forces.  Lagrange's equations d/dt(dT/dv) - dT/dq = Q - A^T lam read
M(q) a - (m a cos theta theta'^2, m a sin theta theta'^2, 0) = Q - A^T lam
(the theta row has no velocity term), and pyint writes M(q) a = f - A^T lam,
so f carries that centrifugal term besides the applied forces Q:

    f_gyro   = (m a cos theta theta'^2, m a sin theta theta'^2, 0)
    f_spring = -k (x + a cos theta, y + a sin theta, a (y cos theta - x sin theta))
               (a spring of stiffness k from the origin to C, V = 1/2 k |r_C|^2)
    f_damp   = (0, 0, -c theta')     (a rotational damper at the blade)

so f_q and f_v are both nonzero.  ``energy`` is T + 1/2 k |r_C|^2; it is
conserved when c = 0 (``conservative`` is then True) and decays at the rate
c theta'^2 otherwise.

Check against the textbook sleigh (k = c = 0; Bloch, Nonholonomic Mechanics
and Control, sec. 1.7): with u the speed of P along e and w = theta',

    u' = a w^2,   (J + m a^2) w' = -m a u w,

so u tends to sqrt(2E/m) and w to 0 (tests check these equations on the
model's own accelerations).  Fortran twin: fortran/models/chaplygin_sleigh.f90.
"""
from __future__ import annotations

import numpy as np

from ._params import nonnegative, positive, real
from .base import Model


class ChaplyginSleigh(Model):
    r"""Chaplygin sleigh, :math:`q = (x_P, y_P, \theta)`, :math:`M(q)` configuration dependent, 1 nonholonomic constraint.

    Parameters
    ----------
    mass : m [kg]
    inertia : J, moment of inertia about the mass centre C [kg m^2]
    offset : a, distance from the contact point P to C along the blade [m] (any sign)
    stiffness : k, spring from the origin to C [N/m] (0: free sleigh)
    damping : c, rotational damper on theta [N m s] (0: conservative)

    Examples
    --------
    >>> from pyint import ChaplyginSleigh, GeneralizedAlpha
    >>> model = ChaplyginSleigh(stiffness=0.0, damping=0.0)       # the free sleigh
    >>> q0, v0 = model.initial_state(speed=1.0, omega=1.0)
    >>> res = GeneralizedAlpha().integrate(model, q0, v0, t_end=2.0, h=1e-3)
    >>> res.status, res.eps_vel < 1e-12
    ('ok', True)
    """

    name = "chaplygin_sleigh"
    fortran_name = "chaplygin_sleigh"
    n = 3
    n_hol = 0
    n_nonhol = 1
    constant_mass = False
    coord_names = ("x", "y", "theta")
    coord_units = ("m", "m", "rad")
    PARAMETERS = (("mass", "m"), ("inertia", "J"), ("offset", "a"), ("stiffness", "k"), ("damping", "c"))

    def __init__(self, mass=1.0, inertia=0.05, offset=0.3, stiffness=2.0, damping=0.05):
        self.m = positive("mass", mass)
        self.J = positive("inertia", inertia)
        self.a = real("offset", offset)
        self.k = nonnegative("stiffness", stiffness)
        self.c = nonnegative("damping", damping)
        self.conservative = self.c == 0.0

    def initial_state(self, speed=1.0, omega=1.0, theta=0.0, x=0.0, y=0.0):
        """Consistent state: P at (x, y), moving at ``speed`` along the blade, turning at ``omega``."""
        th, u = real("theta", theta), real("speed", speed)
        return (np.array([real("x", x), real("y", y), th]),
                np.array([u * np.cos(th), u * np.sin(th), real("omega", omega)]))

    def center(self, q):
        """Position of the mass centre C."""
        return np.array([q[0] + self.a * np.cos(q[2]), q[1] + self.a * np.sin(q[2])])

    # -- the model ---------------------------------------------------------------
    def mass(self, q):
        m, ma = self.m, self.m * self.a
        s, c = np.sin(q[2]), np.cos(q[2])
        return np.array([[m, 0.0, -ma * s],
                         [0.0, m, ma * c],
                         [-ma * s, ma * c, self.J + m * self.a**2]])

    def mass_dq(self, q, a):
        ma = self.m * self.a
        s, c = np.sin(q[2]), np.cos(q[2])
        d = np.zeros((3, 3))
        d[:, 2] = (-ma * c * a[2], -ma * s * a[2], -ma * (c * a[0] + s * a[1]))
        return d

    def mass_dqq(self, q, a, w):
        ma = self.m * self.a
        s, c = np.sin(q[2]), np.cos(q[2])
        k = np.zeros((3, 3))
        k[:, 2] = w[2] * np.array([ma * s * a[2], -ma * c * a[2], ma * (s * a[0] - c * a[1])])
        return k

    def force(self, t, q, v):
        ma, k = self.m * self.a, self.k
        s, c = np.sin(q[2]), np.cos(q[2])
        w = v[2]
        return np.array([ma * c * w**2 - k * (q[0] + self.a * c),
                         ma * s * w**2 - k * (q[1] + self.a * s),
                         -k * self.a * (c * q[1] - s * q[0]) - self.c * w])

    def force_jac(self, t, q, v):
        ma, k, a = self.m * self.a, self.k, self.a
        s, c = np.sin(q[2]), np.cos(q[2])
        w = v[2]
        fq = np.array([[-k, 0.0, -ma * s * w**2 + k * a * s],
                       [0.0, -k, ma * c * w**2 - k * a * c],
                       [k * a * s, -k * a * c, k * a * (c * q[0] + s * q[1])]])
        fv = np.zeros((3, 3))
        fv[:, 2] = (2 * ma * c * w, 2 * ma * s * w, -self.c)
        return fq, fv

    def nh_A(self, t, q):
        return np.array([[-np.sin(q[2]), np.cos(q[2]), 0.0]])

    def nh_b(self, t, q):
        return np.zeros(1)

    def nh_vel_q(self, t, q, v):
        return np.array([[0.0, 0.0, -np.cos(q[2]) * v[0] - np.sin(q[2]) * v[1]]])

    def nh_dt(self, t, q, v):
        return np.zeros(1)

    def nh_gamma(self, t, q, v):
        return np.array([-v[2] * (np.cos(q[2]) * v[0] + np.sin(q[2]) * v[1])])

    def nh_atl_q(self, t, q, lam):
        d = np.zeros((3, 3))
        d[0, 2] = -lam[0] * np.cos(q[2])
        d[1, 2] = -lam[0] * np.sin(q[2])
        return d

    def energy(self, t, q, v):
        """``T + 1/2 k |r_C|^2`` (conserved only when damping = 0)."""
        v = np.asarray(v, dtype=float)
        rc = self.center(q)
        return float(0.5 * v @ self.mass(q) @ v + 0.5 * self.k * rc @ rc)
