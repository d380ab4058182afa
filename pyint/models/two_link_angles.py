"""The planar two-link manipulator in independent coordinates (seed 003 eq. (14)).

q = (theta1, theta2): theta1 is the angle of link 1 from the horizontal,
theta2 the angle of link 2 relative to link 1 (eq. (14)'s cos(theta2) and
cos(theta1 + theta2) say so).  Uniform bars of mass m_i, length L_i and width
``width``, gravity -g along y.  Lagrange's equations M(theta) theta'' = f:

    M11 = I1 + m2 L1^2 + I2 + 2 k cos(theta2),  M12 = I2 + k cos(theta2),  M22 = I2,
    f1 = -(m1/2 + m2) g L1 cos(theta1) - m2 g L2/2 cos(theta1 + theta2)
         + k sin(theta2) (2 theta1' theta2' + theta2'^2),
    f2 = -m2 g L2/2 cos(theta1 + theta2) - k sin(theta2) theta1'^2,

with I_i = m_i L_i^2 / 3 + m_i width^2 / 12 (moment of inertia about the joint)
and k = m2 L1 L2 / 2.  width = 0 is eq. (14) as printed (thin bars); the
direction-vector model of the paper has Pi_2 = m a^2 / 12, i.e. width = a
(0.1): give width=a for the same mechanical system as
:func:`pyint.models.natural_mechanisms.two_link_manipulator`.  Fortran twin:
fortran/models/two_link_angles.f90.
"""
from __future__ import annotations

import numpy as np

from ._params import nonnegative, positive
from .base import Model


class TwoLinkAngles(Model):
    """The planar two-link manipulator in independent coordinates (seed 003, equation (14)): an ODE.

    q = (theta1, theta2): link 1's angle from the horizontal and link 2's relative to link 1;
    uniform bars, gravity along -y, no constraints (the module docstring has M and f).  The
    same mechanism as :func:`pyint.two_link_manipulator` (direction vectors, constrained) with
    ``width`` = its a.

    Parameters
    ----------
    L1, L2 : float, default 0.5, 1.0
        The link lengths [m].
    m1, m2 : float, default 10.0, 20.0
        The link masses [kg].
    g : float, default 9.81
        The gravitational acceleration [m/s^2].
    width : float, default 0.0
        The bars' width [m] (0: thin bars, eq. (14) as printed).

    Examples
    --------
    >>> from pyint import TwoLinkAngles, RK4Index1
    >>> model = TwoLinkAngles()
    >>> q0, v0 = model.initial_state()          # both links horizontal, at rest
    >>> res = RK4Index1().integrate(model, q0, v0, t_end=0.5, h=1e-3)
    >>> res.status, res.q.shape
    ('ok', (501, 2))
    """

    fortran_name = "two_link_angles"
    constant_mass = False
    conservative = True
    n = 2
    n_hol = 0
    n_nonhol = 0
    coord_names = ("theta1", "theta2")
    coord_units = ("rad", "rad")

    def __init__(self, L1=0.5, L2=1.0, m1=10.0, m2=20.0, g=9.81, width=0.0):
        self.L1, self.L2 = positive("L1", L1), positive("L2", L2)
        self.m1, self.m2 = positive("m1", m1), positive("m2", m2)
        self.g, self.width = nonnegative("g", g), nonnegative("width", width)
        self.name = "two_link_angles" if self.width == 0 else f"two_link_angles_w{self.width:g}"
        self.I1 = self.m1 * self.L1**2 / 3 + self.m1 * self.width**2 / 12
        self.I2 = self.m2 * self.L2**2 / 3 + self.m2 * self.width**2 / 12
        self.k = 0.5 * self.m2 * self.L1 * self.L2

    @classmethod
    def example(cls):
        return cls(width=0.1)

    def initial_state(self, theta=(0.0, 0.0), rates=(0.0, 0.0)):
        """(q0, v0): both links horizontal and at rest by default (seed 003)."""
        return np.array(theta, dtype=float), np.array(rates, dtype=float)

    def mass(self, q):
        c2 = np.cos(q[1])
        m12 = self.I2 + self.k * c2
        return np.array([[self.I1 + self.m2 * self.L1**2 + self.I2 + 2 * self.k * c2, m12], [m12, self.I2]])

    def mass_dq(self, q, a):
        s2 = np.sin(q[1])
        return np.array([[0.0, -self.k * s2 * (2 * a[0] + a[1])], [0.0, -self.k * s2 * a[0]]])

    def mass_dqq(self, q, a, w):
        c2 = np.cos(q[1])
        return np.array([[0.0, -self.k * c2 * (2 * a[0] + a[1]) * w[1]], [0.0, -self.k * c2 * a[0] * w[1]]])

    def _gravity(self, q):
        c1, c12 = np.cos(q[0]), np.cos(q[0] + q[1])
        g2 = 0.5 * self.m2 * self.g * self.L2 * c12
        return np.array([-(0.5 * self.m1 + self.m2) * self.g * self.L1 * c1 - g2, -g2])

    def force(self, t, q, v):
        s2 = np.sin(q[1])
        return self._gravity(q) + self.k * s2 * np.array([2 * v[0] * v[1] + v[1] ** 2, -v[0] ** 2])

    def force_jac(self, t, q, v):
        s1, s12 = np.sin(q[0]), np.sin(q[0] + q[1])
        s2, c2 = np.sin(q[1]), np.cos(q[1])
        g2 = 0.5 * self.m2 * self.g * self.L2 * s12
        g1 = (0.5 * self.m1 + self.m2) * self.g * self.L1 * s1 + g2
        fq = np.array([[g1, g2 + self.k * c2 * (2 * v[0] * v[1] + v[1] ** 2)],
                       [g2, g2 - self.k * c2 * v[0] ** 2]])
        fv = self.k * s2 * np.array([[2 * v[1], 2 * v[0] + 2 * v[1]], [-2 * v[0], 0.0]])
        return fq, fv

    def potential(self, q):
        s1, s12 = np.sin(q[0]), np.sin(q[0] + q[1])
        return self.g * (self.m1 * self.L1 / 2 * s1 + self.m2 * (self.L1 * s1 + self.L2 / 2 * s12))

    def energy(self, t, q, v):
        return float(0.5 * v @ self.mass(q) @ v + self.potential(q))

    def to_natural(self, q, v):
        """Natural coordinates (r, e1, e2 of each link, as in two_link_manipulator) and
        their velocities for angles q = (theta1, theta2) and rates v; q, v may be (..., 2)."""
        q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
        th1, ph2 = q[..., 0], q[..., 0] + q[..., 1]
        w1, w2 = v[..., 0], v[..., 0] + v[..., 1]

        def link(th, w):
            e1 = np.stack([np.cos(th), np.sin(th)], -1)
            e2 = np.stack([-np.sin(th), np.cos(th)], -1)
            return e1, e2, w[..., None] * e2, -w[..., None] * e1

        e11, e12, de11, de12 = link(th1, w1)
        e21, e22, de21, de22 = link(ph2, w2)
        r1, dr1 = self.L1 / 2 * e11, self.L1 / 2 * de11
        r2, dr2 = self.L1 * e11 + self.L2 / 2 * e21, self.L1 * de11 + self.L2 / 2 * de21
        return (np.concatenate([r1, e11, e12, r2, e21, e22], -1),
                np.concatenate([dr1, de11, de12, dr2, de21, de22], -1))

    def fortran_params(self):
        return np.zeros(0, dtype=np.int32), np.array([self.m1, self.m2, self.L1, self.L2, self.width, self.g])

    def describe(self):
        d = super().describe()
        d.update(L1=self.L1, L2=self.L2, m1=self.m1, m2=self.m2, g=self.g, width=self.width)
        return d
