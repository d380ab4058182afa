"""Snakeboard of seed 004 (Man, Gao, Zhong 2020, example 2): wheel axles coupled, no forces.

The seed-000 snakeboard (:mod:`.snakeboard`) with the axle angles coupled,
phi_f = -phi_b = phi, no thrust and no springs; q = (x, y, theta, psi, phi).

Derivation.  Substitute phi_b = -phi, phi_f = phi (so phi_b' = -phi',
phi_f' = phi') into the seed-000 kinetic energy:

    T = 1/2 m (x'^2 + y'^2) + 1/2 J theta'^2 + 1/2 J_r (theta' + psi')^2
        + 1/2 J_w [(theta' - phi')^2 + (theta' + phi')^2]
      = 1/2 m (x'^2 + y'^2) + 1/2 (J + J_r + 2 J_w) theta'^2 + J_r theta' psi'
        + 1/2 J_r psi'^2 + J_w phi'^2,

the cross terms theta' phi' cancel, hence the constant

    M = [[m, 0, 0,              0,   0    ],
         [0, m, 0,              0,   0    ],
         [0, 0, J + J_r + 2J_w, J_r, 0    ],
         [0, 0, J_r,            J_r, 0    ],
         [0, 0, 0,              0,   2 J_w]].

The seed-000 constraints contain no axle rates, so the substitution acts on A
directly (cos(-phi) = cos phi):

    A = [[-sin(theta - phi), cos(theta - phi), -l cos phi, 0, 0],    back wheel
         [-sin(theta + phi), cos(theta + phi), +l cos phi, 0, 0]],   front wheel

A v = 0.  While cos phi != 0 the two rows say: the board does not slide
sideways, and theta' = u tan(phi) / l with u = x' cos theta + y' sin theta
the forward speed.  The system is conservative (energy = T).

Free motion.  Column phi of A is zero and M is constant, so phi'' = 0 and
(rotor momentum) theta' + psi' is constant.  With phi' = 0 (locked
steering) the board's centre runs on a circle of radius R = l cot(phi) with
constant speed u (:meth:`SnakeboardCoupled.locked_steering` gives the exact
motion and multipliers).  With phi' != 0, phi grows linearly and reaches
+/-pi/2 (both wheels perpendicular to the board): there the two rows of A
become opposite, A drops rank and the multipliers are not unique; the motion
itself stays smooth (the energy bounds it).  :meth:`rank_drop_times` lists
those instants so a study can avoid or expose them.

Parameters of seed 004: m = 6, l = 0.2, J = 0.016, J_r = 0.072,
J_w = 0.0013 (SI units).  Fortran twin: fortran/models/snakeboard_coupled.f90.
"""
from __future__ import annotations

import numpy as np

from ._params import real
from .snakeboard import WheeledBoard


class SnakeboardCoupled(WheeledBoard):
    r"""Seed-004 snakeboard: :math:`q = (x, y, \theta, \psi, \phi)`, 2 nonholonomic constraints, conservative.

    Parameters
    ----------
    mass : board mass m [kg]
    inertia : board moment of inertia J [kg m^2]
    rotor_inertia : rotor moment of inertia J_r [kg m^2]
    wheel_inertia : moment of inertia J_w of one wheel axle [kg m^2]
    wheel_distance : distance l from the board's mass centre to each axle [m]

    Examples
    --------
    >>> from pyint import SnakeboardCoupled, GalerkinLobatto
    >>> model = SnakeboardCoupled()
    >>> q0, v0 = model.initial_state()                # seed 004's general run
    >>> res = GalerkinLobatto(s=3).integrate(model, q0, v0, t_end=1.0, h=1e-2)
    >>> res.status, res.eps_vel < 1e-9
    ('ok', True)
    """

    name = "snakeboard_coupled"
    fortran_name = "snakeboard_coupled"
    n = 5
    conservative = True
    coord_names = ("x", "y", "theta", "psi", "phi")
    coord_units = ("m", "m", "rad", "rad", "rad")

    def __init__(self, mass=6.0, inertia=0.016, rotor_inertia=0.072, wheel_inertia=0.0013,
                 wheel_distance=0.2):
        super().__init__(mass, inertia, rotor_inertia, wheel_inertia, wheel_distance)
        self._wheels = ((-self.L, 4, -1.0), (self.L, 4, 1.0))   # phi_b = -phi, phi_f = +phi

    # -- states ------------------------------------------------------------------
    def state(self, theta=0.0, phi=0.0, speed=1.0, psi_dot=0.0, phi_dot=0.0, x=0.0, y=0.0, psi=0.0):
        r"""A consistent state from the forward speed u = ``speed`` and the free rates psi', phi'.

        :math:`v = (u \cos\theta, u \sin\theta, u \tan\phi / l, \dot\psi, \dot\phi)` satisfies :math:`A v = 0`.
        """
        theta, phi, u = real("theta", theta), real("phi", phi), real("speed", speed)
        if abs(np.cos(phi)) < 1e-8:
            raise ValueError(f"phi = {phi} puts both wheels perpendicular to the board (A drops rank)")
        q = np.array([real("x", x), real("y", y), theta, real("psi", psi), phi])
        v = np.array([u * np.cos(theta), u * np.sin(theta), u * np.tan(phi) / self.L,
                      real("psi_dot", psi_dot), real("phi_dot", phi_dot)])
        return q, v

    def initial_state(self, kind="general", **kw):
        """Consistent initial states for the three seed-004 runs.

        kind="straight": phi = 0, board moving along its axis at ``speed``
            (default 1 m/s), theta' = 0; keywords speed, theta, psi_dot.
        kind="locked": steering locked at ``phi`` (default pi/8; the study
            uses pi/8, pi/16, pi/32), phi' = 0: the centre runs on a circle of
            radius l cot(phi) with theta' = speed tan(phi) / l; keywords phi,
            speed, theta, psi_dot.
        kind="general": phi = pi/8, phi' = 0.1, psi' = 1, theta = 0.3,
            speed 1 (each a keyword).  phi reaches pi/2 at
            t = (pi/2 - pi/8)/0.1 = 11.8 s, where A drops rank (see
            :meth:`rank_drop_times`).
        """
        if kind == "straight":
            allowed = {"speed", "theta", "psi_dot"}
            args = {}
        elif kind == "locked":
            allowed = {"phi", "speed", "theta", "psi_dot"}
            args = {"phi": np.pi / 8}
        elif kind == "general":
            allowed = {"phi", "speed", "theta", "psi_dot", "phi_dot"}
            args = {"phi": np.pi / 8, "phi_dot": 0.1, "psi_dot": 1.0, "theta": 0.3}
        else:
            raise ValueError(f"kind must be 'straight', 'locked' or 'general', got {kind!r}")
        bad = set(kw) - allowed
        if bad:
            raise TypeError(f"initial_state(kind={kind!r}) takes no argument(s) {sorted(bad)}; "
                            f"allowed: {sorted(allowed)}")
        args.update(kw)
        return self.state(**args)

    def circle_radius(self, phi):
        r"""Radius :math:`l \cot\phi` of the locked-steering circle of the board's centre."""
        return self.L / np.tan(real("phi", phi))

    def locked_steering(self, t, phi=np.pi / 8, speed=1.0, theta=0.0, psi_dot=0.0):
        r"""Exact locked-steering motion from :meth:`initial_state` ("locked") at time t.

        :math:`\theta = \theta_0 + W t` with :math:`W = u \tan\phi / l`; the centre runs on the
        circle of radius :math:`R = l \cot\phi` through the origin; :math:`\psi = \dot\psi t`;
        :math:`\phi` fixed.  Returns :math:`(q, v, a, \lambda)` with both multipliers equal,
        :math:`\lambda_b = \lambda_f = -m u W / (2 \cos\phi) = -m u^2 \sin\phi / (2 l \cos^2\phi)`.
        """
        t = real("t", t)
        q0, v0 = self.state(theta=theta, phi=phi, speed=speed, psi_dot=psi_dot)
        u, w = real("speed", speed), v0[2]
        th = q0[2] + w * t
        if w == 0.0:
            xy = q0[:2] + u * t * np.array([np.cos(q0[2]), np.sin(q0[2])])
        else:
            xy = q0[:2] + (u / w) * np.array([np.sin(th) - np.sin(q0[2]), np.cos(q0[2]) - np.cos(th)])
        q = np.array([xy[0], xy[1], th, q0[3] + v0[3] * t, q0[4]])
        v = np.array([u * np.cos(th), u * np.sin(th), w, v0[3], 0.0])
        a = np.array([-u * w * np.sin(th), u * w * np.cos(th), 0.0, 0.0, 0.0])
        lam = np.full(2, -self.m * u * w / (2 * np.cos(q0[4])))
        return q, v, a, lam

    @staticmethod
    def rank_drop_times(q, v, t_end):
        """Times in [0, t_end] at which the free motion from (q, v) has cos(phi) = 0 (A drops rank).

        Exact for this model: phi(t) = phi0 + phi' t.
        """
        phi0, w = float(q[4]), float(v[4])
        if w == 0.0:
            return np.zeros(0) if np.cos(phi0) != 0 else np.array([0.0])
        k = np.arange(np.ceil((min(phi0, phi0 + w * t_end) - np.pi / 2) / np.pi),
                      np.floor((max(phi0, phi0 + w * t_end) - np.pi / 2) / np.pi) + 1)
        return np.sort((np.pi / 2 + k * np.pi - phi0) / w)

    # -- the model ---------------------------------------------------------------
    def mass(self, q):
        m, J, Jr, Jw = self.m, self.J, self.Jr, self.Jw
        return np.array([[m, 0, 0, 0, 0],
                         [0, m, 0, 0, 0],
                         [0, 0, J + Jr + 2 * Jw, Jr, 0],
                         [0, 0, Jr, Jr, 0],
                         [0, 0, 0, 0, 2 * Jw]], dtype=float)

    def force(self, t, q, v):
        return np.zeros(5)

    def force_jac(self, t, q, v):
        return np.zeros((5, 5)), np.zeros((5, 5))

    def energy(self, t, q, v):
        return self.kinetic_energy(q, v)

    def fortran_params(self):
        return np.zeros(0, dtype=np.int32), np.array([self.m, self.J, self.Jr, self.Jw, self.L])

    def describe(self):
        d = super().describe()
        d.update(parameter_source="seed 004")
        return d
