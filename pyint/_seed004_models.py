"""The seed-004 models, by name: the built-in ones when present, NumPy twins otherwise.

TEMPORARY BRIDGE.  The built-in models ``skate`` and ``snakeboard_coupled``
(Fortran + NumPy, branch ``models``) were written at the same time as the
Galerkin integrator.  Until they are merged, :func:`seed004_model` returns the
small NumPy twins below (same constructor keywords, same helper methods, no
Fortran twin: they run through the Python-callback path).  Once
``pyint.models.Skate`` / ``pyint.models.SnakeboardCoupled`` exist,
:func:`seed004_model` returns those (the whole time loop then runs in
Fortran) and this file's classes can be deleted.

Sign of the multiplier: pyint writes M a = f - A^T lam; seed 004 writes
p' = -H_q + G^T lam, so its lam is minus ours.
"""
from __future__ import annotations

import numpy as np

from .models.base import Model


def seed004_model(name, **kw):
    """The model ``name`` ("skate" or "snakeboard_coupled"): built-in if available, else the twin."""
    from .models import BUILTIN_MODELS
    if name in BUILTIN_MODELS:
        return BUILTIN_MODELS[name](**kw)
    twins = {"skate": SkateTwin, "snakeboard_coupled": SnakeboardCoupledTwin}
    if name not in twins:
        raise ValueError(f"unknown seed-004 model {name!r}; expected one of {sorted(twins)}")
    return twins[name](**kw)


class SkateTwin(Model):
    """Skate (knife edge) on an inclined plane, q = (x, y, theta), x down the slope (seed 004, ex. 1).

    L = 1/2 m (x'^2 + y'^2) + 1/2 J theta'^2 + m g x sin(alpha) - 1/2 k theta^2,
    A = [sin theta, -cos theta, 0]:  M = diag(m, m, J), f = (m g sin alpha, 0, -k theta).

    ``torsion`` k is a spring on the blade heading that seed 004 does not have
    (default 0).  Without it theta = omega t exactly, and the multiplier of
    several methods is then exact to round-off, so no order can be measured
    on it; the shared problem ``skate_torsion`` (pyint.problems) uses k > 0.
    That problem keeps this NumPy model after the built-in skate is merged.
    """

    name = "skate"
    n, n_hol, n_nonhol = 3, 0, 1
    constant_mass = True
    conservative = True
    coord_names = ("x", "y", "theta")
    coord_units = ("m", "m", "rad")

    def __init__(self, mass=1.0, inertia=1.0, grav=10.0, slope=np.pi / 12, torsion=0.0):
        self.m, self.J, self.grav, self.alpha = float(mass), float(inertia), float(grav), float(slope)
        self.k = float(torsion)
        if self.k:
            self.name = "skate_torsion"

    def initial_state(self, omega=1.0):
        """q = 0, v = (0, 0, omega): the start of the closed form."""
        return np.zeros(3), np.array([0.0, 0.0, float(omega)])

    def exact(self, t, omega=1.0):
        """Closed form (q, v, a, lam) from :meth:`initial_state` (SPEC, seed 004; lam in pyint's sign)."""
        if self.k:
            raise ValueError("the closed form holds for torsion = 0 only")
        c, w = self.grav * np.sin(self.alpha), float(omega)
        s, co = np.sin(w * t), np.cos(w * t)
        q = np.array([c / (2 * w**2) * s**2, c / (2 * w**2) * (w * t - s * co), w * t])
        v = np.array([c / w * s * co, c / w * s**2, w])
        a = np.array([c * (co**2 - s**2), 2 * c * s * co, 0.0])
        return q, v, a, np.array([2 * self.m * c * s])

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

    def nh_vel_q(self, t, q, v):
        return np.array([[0.0, 0.0, np.cos(q[2]) * v[0] + np.sin(q[2]) * v[1]]])

    def nh_atl_q(self, t, q, lam):
        d = np.zeros((3, 3))
        d[0, 2], d[1, 2] = lam[0] * np.cos(q[2]), lam[0] * np.sin(q[2])
        return d

    def energy(self, t, q, v):
        return float(0.5 * self.m * (v[0]**2 + v[1]**2) + 0.5 * self.J * v[2]**2
                     - self.m * self.grav * np.sin(self.alpha) * q[0] + 0.5 * self.k * q[2]**2)

    def describe(self):
        d = super().describe()
        d.update(mass=self.m, inertia=self.J, grav=self.grav, slope=self.alpha, torsion=self.k)
        return d


class SnakeboardCoupledTwin(Model):
    """Seed-004 snakeboard, q = (x, y, theta, psi, phi), axles coupled phi_f = -phi_b = phi, no forces.

    T = 1/2 m (x'^2 + y'^2) + 1/2 J theta'^2 + 1/2 J_r (theta' + psi')^2
        + 1/2 J_w [(theta' - phi')^2 + (theta' + phi')^2]  (constant M),
    wheels at (x, y) -/+ l (cos theta, sin theta) heading theta -/+ phi, no lateral slip:
        A = [[-sin(theta - phi), cos(theta - phi), -l cos phi, 0, 0],
             [-sin(theta + phi), cos(theta + phi), +l cos phi, 0, 0]].
    """

    name = "snakeboard_coupled"
    n, n_hol, n_nonhol = 5, 0, 2
    constant_mass = True
    conservative = True
    coord_names = ("x", "y", "theta", "psi", "phi")
    coord_units = ("m", "m", "rad", "rad", "rad")

    def __init__(self, mass=6.0, inertia=0.016, rotor_inertia=0.072, wheel_inertia=0.0013,
                 wheel_distance=0.2):
        self.m, self.J, self.Jr = float(mass), float(inertia), float(rotor_inertia)
        self.Jw, self.l = float(wheel_inertia), float(wheel_distance)

    def state(self, theta=0.0, phi=0.0, speed=1.0, psi_dot=0.0, phi_dot=0.0, x=0.0, y=0.0, psi=0.0):
        """Consistent state: forward speed u, theta' = u tan(phi) / l, free psi', phi'."""
        q = np.array([x, y, theta, psi, phi], dtype=float)
        v = np.array([speed * np.cos(theta), speed * np.sin(theta), speed * np.tan(phi) / self.l,
                      psi_dot, phi_dot], dtype=float)
        return q, v

    def initial_state(self, kind="general", **kw):
        """kind = "straight" (phi = 0), "locked" (phi = pi/8, phi' = 0) or "general"."""
        base = {"straight": {}, "locked": {"phi": np.pi / 8},
                "general": {"phi": np.pi / 8, "phi_dot": 0.1, "psi_dot": 1.0, "theta": 0.3}}
        if kind not in base:
            raise ValueError(f"kind must be 'straight', 'locked' or 'general', got {kind!r}")
        return self.state(**{**base[kind], **kw})

    def circle_radius(self, phi):
        return self.l / np.tan(phi)

    def locked_steering(self, t, phi=np.pi / 8, speed=1.0, theta=0.0, psi_dot=0.0):
        """Exact locked-steering motion (q, v, a, lam) from state(theta, phi, speed, psi_dot)."""
        q0, v0 = self.state(theta=theta, phi=phi, speed=speed, psi_dot=psi_dot)
        w = v0[2]
        th = theta + w * t
        xy = (speed / w) * np.array([np.sin(th) - np.sin(theta), np.cos(theta) - np.cos(th)])
        q = np.array([xy[0], xy[1], th, psi_dot * t, phi])
        v = np.array([speed * np.cos(th), speed * np.sin(th), w, psi_dot, 0.0])
        a = np.array([-speed * w * np.sin(th), speed * w * np.cos(th), 0.0, 0.0, 0.0])
        return q, v, a, np.full(2, -self.m * speed * w / (2 * np.cos(phi)))

    def mass(self, q):
        m, J, Jr, Jw = self.m, self.J, self.Jr, self.Jw
        return np.array([[m, 0, 0, 0, 0], [0, m, 0, 0, 0], [0, 0, J + Jr + 2 * Jw, Jr, 0],
                         [0, 0, Jr, Jr, 0], [0, 0, 0, 0, 2 * Jw]], dtype=float)

    def force(self, t, q, v):
        return np.zeros(5)

    def force_jac(self, t, q, v):
        return np.zeros((5, 5)), np.zeros((5, 5))

    def nh_A(self, t, q):
        th, ph, l = q[2], q[4], self.l
        return np.array([[-np.sin(th - ph), np.cos(th - ph), -l * np.cos(ph), 0.0, 0.0],
                         [-np.sin(th + ph), np.cos(th + ph), l * np.cos(ph), 0.0, 0.0]])

    def nh_vel_q(self, t, q, v):
        th, ph, l = q[2], q[4], self.l
        cb, sb, cf, sf = np.cos(th - ph), np.sin(th - ph), np.cos(th + ph), np.sin(th + ph)
        d = np.zeros((2, 5))
        d[0, 2] = -cb * v[0] - sb * v[1]
        d[0, 4] = cb * v[0] + sb * v[1] + l * np.sin(ph) * v[2]
        d[1, 2] = -cf * v[0] - sf * v[1]
        d[1, 4] = -cf * v[0] - sf * v[1] - l * np.sin(ph) * v[2]
        return d

    def nh_atl_q(self, t, q, lam):
        th, ph, l = q[2], q[4], self.l
        cb, sb, cf, sf = np.cos(th - ph), np.sin(th - ph), np.cos(th + ph), np.sin(th + ph)
        d = np.zeros((5, 5))
        d[:3, 2] = lam[0] * np.array([-cb, -sb, 0.0]) + lam[1] * np.array([-cf, -sf, 0.0])
        d[:3, 4] = lam[0] * np.array([cb, sb, l * np.sin(ph)]) + lam[1] * np.array([-cf, -sf, -l * np.sin(ph)])
        return d

    def energy(self, t, q, v):
        v = np.asarray(v, dtype=float)
        return float(0.5 * v @ self.mass(q) @ v)

    def describe(self):
        d = super().describe()
        d.update(mass=self.m, inertia=self.J, rotor_inertia=self.Jr, wheel_inertia=self.Jw,
                 wheel_distance=self.l)
        return d
