"""Snakeboard of seed 000 (Ma, Chen, Zhang 2008, section 4): two wheel axles, a rotor, no lateral slip.

q = (x, y, theta, psi, phi_b, phi_f): board mass centre, board heading, rotor
angle relative to the board, back and front wheel-axle angles relative to the
board.  Kinetic energy (seed 000 section 4, written out to give its constant M):

    T = 1/2 m (x'^2 + y'^2) + 1/2 J theta'^2 + 1/2 J_r (theta' + psi')^2
        + 1/2 J_w [(theta' + phi_b')^2 + (theta' + phi_f')^2],

so M is constant and equal to the matrix printed in the paper::

    [[m, 0, 0,              0,   0,   0  ],
     [0, m, 0,              0,   0,   0  ],
     [0, 0, J + J_r + 2J_w, J_r, J_w, J_w],
     [0, 0, J_r,            J_r, 0,   0  ],
     [0, 0, J_w,            0,   J_w, 0  ],
     [0, 0, J_w,            0,   0,   J_w]].

Applied forces f = (F cos theta, F sin theta, 0, -k_r psi, -k_w phi_b,
-k_w phi_f): a thrust F along the board axis and torsion springs on the rotor
and on both axles.  The wheels sit at (x, y) -/+ L (cos theta, sin theta) with
headings theta + phi_b, theta + phi_f and do not slip sideways:

    A = [[-sin(theta+phi_b), cos(theta+phi_b), -L cos phi_b, 0, 0, 0],
         [-sin(theta+phi_f), cos(theta+phi_f), +L cos phi_f, 0, 0, 0]],   A v = 0.

Parameters printed in the paper: F = 20 N, k_r = 1 N m/rad, k_w = 0.1 N m/rad.
The paper's m, J, J_r, J_w, L are illegible in the OCR; the defaults
m = 6 kg, L = 0.2 m, J = 0.016, J_r = 0.072, J_w = 0.0013 kg m^2 are the
values of seed 004 (Man, Gao, Zhong 2020): our choice.

The system is not conservative (the thrust F does work): ``energy`` returns
the mechanical energy T + 1/2 k_r psi^2 + 1/2 k_w (phi_b^2 + phi_f^2), whose
rate is the thrust power F (x' cos theta + y' sin theta).

The no-slip rows live in :class:`WheeledBoard`, shared with
:mod:`.snakeboard_coupled`: a wheel sits at distance ``d`` along the board
axis (d = -L back, +L front) and has heading theta + beta with
beta = s * q[i] (s = +/-1) for one wheel coordinate q[i].
Fortran twin: fortran/models/snakeboard.f90.
"""
from __future__ import annotations

import numpy as np

from ._params import nonnegative, positive, real
from .base import Model


class WheeledBoard(Model):
    """A board with two no-slip wheels (shared by both snakeboards).

    (x, y, theta) = q[0:3]; ``self._wheels`` holds one (d, i, s) per wheel:
    distance d along the board axis, wheel coordinate q[i], heading
    theta + s * q[i].  Row k of A is [-sin(th+b), cos(th+b), d cos b] on
    (x, y, theta) with b = s q[i].
    """

    n_hol = 0
    n_nonhol = 2
    constant_mass = True
    _wheels = ()

    def __init__(self, mass, inertia, rotor_inertia, wheel_inertia, wheel_distance):
        self.m = positive("mass", mass)
        self.J = positive("inertia", inertia)
        self.Jr = positive("rotor_inertia", rotor_inertia)
        self.Jw = positive("wheel_inertia", wheel_inertia)
        self.L = positive("wheel_distance", wheel_distance)

    def _heading(self, q, v=None):
        """Per wheel: (d, i, s, b, P) with P = cos(th+b) x' + sin(th+b) y' (speed along the heading)."""
        for d, i, s in self._wheels:
            b = s * q[i]
            p = None if v is None else np.cos(q[2] + b) * v[0] + np.sin(q[2] + b) * v[1]
            yield d, i, s, b, p

    def nh_A(self, t, q):
        q = np.asarray(q, dtype=float)
        a = np.zeros((2, self.n))
        for k, (d, _, _, b, _) in enumerate(self._heading(q)):
            a[k, :3] = (-np.sin(q[2] + b), np.cos(q[2] + b), d * np.cos(b))
        return a

    def nh_b(self, t, q):
        return np.zeros(2)

    def nh_vel_q(self, t, q, v):
        """(A v)_q: by theta -P, by the wheel coordinate s (-P - d sin(b) theta')."""
        q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
        out = np.zeros((2, self.n))
        for k, (d, i, s, b, p) in enumerate(self._heading(q, v)):
            out[k, 2] = -p
            out[k, i] += s * (-p - d * np.sin(b) * v[2])
        return out

    def nh_dt(self, t, q, v):
        return np.zeros(2)

    def nh_gamma(self, t, q, v):
        """(A v)_q v = -P (theta' + b') - d sin(b) theta' b'."""
        q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
        return np.array([-p * (v[2] + s * v[i]) - d * np.sin(b) * v[2] * s * v[i]
                         for d, i, s, b, p in self._heading(q, v)])

    def nh_atl_q(self, t, q, lam):
        r""":math:`(A^\mathsf{T}\lambda)_q`: columns :math:`\theta` and the wheel coordinates."""
        q = np.asarray(q, dtype=float)
        out = np.zeros((self.n, self.n))
        for k, (d, i, s, b, _) in enumerate(self._heading(q)):
            c = lam[k] * np.array([-np.cos(q[2] + b), -np.sin(q[2] + b)])
            out[:2, 2] += c
            out[:2, i] += s * c
            out[2, i] -= s * lam[k] * d * np.sin(b)
        return out

    def kinetic_energy(self, q, v):
        v = np.asarray(v, dtype=float)
        return float(0.5 * v @ self.mass(q) @ v)

    def describe(self):
        d = super().describe()
        d.update(mass=self.m, inertia=self.J, rotor_inertia=self.Jr, wheel_inertia=self.Jw,
                 wheel_distance=self.L)
        return d


class Snakeboard(WheeledBoard):
    """Seed-000 snakeboard (6 coordinates, 2 nonholonomic constraints, constant M).

    Parameters
    ----------
    mass : board mass m [kg] (seed 004 value; illegible in seed 000)
    inertia : board moment of inertia J [kg m^2] (seed 004)
    rotor_inertia : rotor moment of inertia J_r [kg m^2] (seed 004)
    wheel_inertia : moment of inertia J_w of one wheel axle [kg m^2] (seed 004)
    wheel_distance : distance L from the board's mass centre to each axle [m] (seed 004)
    thrust : force F along the board axis [N] (printed)
    k_rotor : rotor torsion-spring stiffness k_r [N m/rad] (printed)
    k_wheel : axle torsion-spring stiffness k_w [N m/rad] (printed)

    Examples
    --------
    >>> from pyint import Snakeboard, GeneralizedAlpha
    >>> model = Snakeboard()
    >>> q0, v0 = model.initial_state()                # seed 000's start, at rest
    >>> res = GeneralizedAlpha(rho_inf=0.9).integrate(model, q0, v0, t_end=1.0, h=1e-3)
    >>> res.status, res.eps_vel < 1e-12
    ('ok', True)
    """

    name = "snakeboard"
    fortran_name = "snakeboard"
    n = 6
    conservative = False
    coord_names = ("x", "y", "theta", "psi", "phi_b", "phi_f")
    coord_units = ("m", "m", "rad", "rad", "rad", "rad")

    def __init__(self, mass=6.0, inertia=0.016, rotor_inertia=0.072, wheel_inertia=0.0013,
                 wheel_distance=0.2, thrust=20.0, k_rotor=1.0, k_wheel=0.1):
        super().__init__(mass, inertia, rotor_inertia, wheel_inertia, wheel_distance)
        self.F = real("thrust", thrust)
        self.kr = nonnegative("k_rotor", k_rotor)
        self.kw = nonnegative("k_wheel", k_wheel)
        self._wheels = ((-self.L, 4, 1.0), (self.L, 5, 1.0))

    def initial_state(self, psi=0.2, phi_b=0.0, phi_f=np.pi / 3):
        r"""The paper's start: :math:`x = y = \theta = 0`, the given angles, at rest (consistent: :math:`v = 0`)."""
        q = np.array([0.0, 0.0, 0.0, real("psi", psi), real("phi_b", phi_b), real("phi_f", phi_f)])
        return q, np.zeros(self.n)

    # -- the model ---------------------------------------------------------------
    def mass(self, q):
        m, J, Jr, Jw = self.m, self.J, self.Jr, self.Jw
        return np.array([[m, 0, 0, 0, 0, 0],
                         [0, m, 0, 0, 0, 0],
                         [0, 0, J + Jr + 2 * Jw, Jr, Jw, Jw],
                         [0, 0, Jr, Jr, 0, 0],
                         [0, 0, Jw, 0, Jw, 0],
                         [0, 0, Jw, 0, 0, Jw]], dtype=float)

    def force(self, t, q, v):
        return np.array([self.F * np.cos(q[2]), self.F * np.sin(q[2]), 0.0,
                         -self.kr * q[3], -self.kw * q[4], -self.kw * q[5]])

    def force_jac(self, t, q, v):
        fq = np.zeros((6, 6))
        fq[0, 2] = -self.F * np.sin(q[2])
        fq[1, 2] = self.F * np.cos(q[2])
        fq[3, 3] = -self.kr
        fq[4, 4] = fq[5, 5] = -self.kw
        return fq, np.zeros((6, 6))

    def energy(self, t, q, v):
        """Mechanical energy T + V_springs (NOT conserved: the thrust does work)."""
        return (self.kinetic_energy(q, v)
                + 0.5 * self.kr * q[3] ** 2 + 0.5 * self.kw * (q[4] ** 2 + q[5] ** 2))

    def thrust_power(self, q, v):
        r"""Power of the thrust, :math:`F (\dot x \cos\theta + \dot y \sin\theta) = dE/dt` on a solution."""
        return float(self.F * (v[0] * np.cos(q[2]) + v[1] * np.sin(q[2])))

    def fortran_params(self):
        return (np.zeros(0, dtype=np.int32),
                np.array([self.m, self.J, self.Jr, self.Jw, self.L, self.F, self.kr, self.kw]))

    def describe(self):
        d = super().describe()
        d.update(thrust=self.F, k_rotor=self.kr, k_wheel=self.kw,
                 parameter_source="F, k_r, k_w: seed 000 (printed); m, J, J_r, J_w, L: seed 004")
        return d
