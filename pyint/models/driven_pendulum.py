"""Pendulum with a moving suspension point: a rheonomic (time-dependent) holonomic constraint.

A point mass m on a massless rod of length l hangs from the point
s(t) = (A_x sin(W t), A_y sin(W t)), which moves on a prescribed path; gravity
g along -y.  q = (x, y) is the mass in Cartesian coordinates, d = q - s(t):

    g(t, q)   = 1/2 (|d|^2 - l^2),
    G         = d^T,                 G_t  = -s'^T,
    g_t       = -d . s',             g_tt = |s'|^2 - d . s'',
    G v + g_t = d . (v - s'),
    hol_gamma = (G v)_q v + 2 G_t v + g_tt = |v - s'|^2 - d . s''.

A_y alone is Kapitza's vertically shaken pendulum; A_x alone a horizontally
driven one.  The constraint does work (the drive feeds energy in), so
``energy`` = 1/2 m |v|^2 + m g y is not conserved: on a solution
d(energy)/dt = -lam d . s' (:meth:`DrivenPendulum.drive_power`).

Closed form used by the tests: with A_x = 0 the pendulum hanging straight
down, q = (0, A_y sin(W t) - l), follows the support exactly, with
lam = m (g + y'') / l (:meth:`DrivenPendulum.hanging_exact`).
Fortran twin: fortran/models/driven_pendulum.f90.
"""
from __future__ import annotations

import numpy as np

from ._params import nonnegative, positive, real
from .base import Model


class DrivenPendulum(Model):
    r"""Point-mass pendulum on a support moving as :math:`(A_x, A_y) \sin(W t)`: 2 coordinates, 1 rheonomic constraint.

    Parameters
    ----------
    mass : m [kg]
    length : l, rod length [m]
    grav : g [m/s^2]
    amp_x, amp_y : amplitudes A_x, A_y of the support motion [m]
    freq : W, angular frequency of the support motion [rad/s]

    Examples
    --------
    >>> from pyint import DrivenPendulum, GeneralizedAlpha
    >>> model = DrivenPendulum(amp_x=0.1, freq=3.0)
    >>> q0, v0 = model.initial_state(angle=0.5)
    >>> res = GeneralizedAlpha().integrate(model, q0, v0, t_end=2.0, h=1e-3)
    >>> res.status, res.eps_pos < 1e-12
    ('ok', True)
    """

    name = "driven_pendulum"
    fortran_name = "driven_pendulum"
    n = 2
    n_hol = 1
    n_nonhol = 0
    constant_mass = True
    conservative = False
    coord_names = ("x", "y")
    coord_units = ("m", "m")

    def __init__(self, mass=1.0, length=1.0, grav=9.81, amp_x=0.1, amp_y=0.05, freq=3.0):
        self.m = positive("mass", mass)
        self.l = positive("length", length)
        self.grav = real("grav", grav)
        self.amp = np.array([real("amp_x", amp_x), real("amp_y", amp_y)])
        self.freq = nonnegative("freq", freq)

    # -- the prescribed support motion -------------------------------------------
    def support(self, t, k=0):
        """k-th time derivative of the support position s(t) (k = 0, 1, 2)."""
        w = self.freq
        base = (np.sin, np.cos, lambda x: -np.sin(x))[k]
        return self.amp * w**k * base(w * t)

    def initial_state(self, angle=np.pi / 6, omega=0.0, t0=0.0):
        """Rod at ``angle`` from the downward vertical turning at ``omega`` relative to the support.

        q = s(t0) + l (sin angle, -cos angle), v = s'(t0) + l omega (cos angle, sin angle):
        consistent at position and velocity level at time t0.
        """
        th, om, t0 = real("angle", angle), real("omega", omega), real("t0", t0)
        q = self.support(t0) + self.l * np.array([np.sin(th), -np.cos(th)])
        v = self.support(t0, 1) + self.l * om * np.array([np.cos(th), np.sin(th)])
        return q, v

    def hanging_exact(self, t):
        r"""Exact motion :math:`(q, v, a, \lambda)` hanging straight below the support (requires :math:`A_x = 0`)."""
        if self.amp[0] != 0.0:
            raise ValueError("hanging_exact needs amp_x = 0 (a purely vertical drive)")
        t = real("t", t)
        q = self.support(t) + np.array([0.0, -self.l])
        v, a = self.support(t, 1), self.support(t, 2)
        lam = np.array([self.m * (self.grav + a[1]) / self.l])
        return q, v, a, lam

    def drive_power(self, t, q, lam):
        r"""Power of the constraint force, :math:`-\lambda\, d \cdot \dot s` (:math:`= dE/dt` on a solution)."""
        return float(-lam[0] * (np.asarray(q) - self.support(t)) @ self.support(t, 1))

    # -- the model ---------------------------------------------------------------
    def mass(self, q):
        return self.m * np.eye(2)

    def force(self, t, q, v):
        return np.array([0.0, -self.m * self.grav])

    def force_jac(self, t, q, v):
        return np.zeros((2, 2)), np.zeros((2, 2))

    def hol(self, t, q):
        d = np.asarray(q, dtype=float) - self.support(t)
        return np.array([0.5 * (d @ d - self.l**2)])

    def hol_jac(self, t, q):
        return (np.asarray(q, dtype=float) - self.support(t)).reshape(1, 2)

    def hol_t(self, t, q):
        return np.array([-(np.asarray(q, dtype=float) - self.support(t)) @ self.support(t, 1)])

    def hol_jac_t(self, t, q):
        return -self.support(t, 1).reshape(1, 2)

    def hol_tt(self, t, q):
        s1 = self.support(t, 1)
        return np.array([s1 @ s1 - (np.asarray(q, dtype=float) - self.support(t)) @ self.support(t, 2)])

    def hol_vel_q(self, t, q, v):
        return (np.asarray(v, dtype=float) - self.support(t, 1)).reshape(1, 2)

    def hol_gamma(self, t, q, v):
        r = np.asarray(v, dtype=float) - self.support(t, 1)
        return np.array([r @ r - (np.asarray(q, dtype=float) - self.support(t)) @ self.support(t, 2)])

    def hol_gtl_q(self, t, q, lam):
        return lam[0] * np.eye(2)

    def energy(self, t, q, v):
        """Mechanical energy ``1/2 m |v|^2 + m g y`` (NOT conserved: the support does work)."""
        return float(0.5 * self.m * (v[0] ** 2 + v[1] ** 2) + self.m * self.grav * q[1])

    def fortran_params(self):
        return (np.zeros(0, dtype=np.int32),
                np.array([self.m, self.l, self.grav, self.amp[0], self.amp[1], self.freq]))

    def describe(self):
        d = super().describe()
        d.update(mass=self.m, length=self.l, grav=self.grav, amp_x=float(self.amp[0]),
                 amp_y=float(self.amp[1]), freq=self.freq)
        return d
