"""Rigid bodies in Euler parameters: a vector model of a :class:`RigidBodySystem`.

The Lie-group integrators move (x_i, R_i) on R^3 x SO(3); the IDA reference
layer (:mod:`pyint.reference`) consumes vector models (q' = v).  This model is
the same system in unit quaternions p_i = (w, u) -- 7 coordinates per body,
q = (x_1, p_1, x_2, p_2, ...), v = q' -- with the norm conditions as extra
holonomic constraints, so the reference is independent of every Lie-group
kernel (no exponential map, no tangent operator, no Crouch-Grossman update).

Derivation (checked numerically in tests/test_lie_ida_reference.py).  With
R(p) = (w^2 - u.u) I + 2 u u^T + 2 w hat(u) (homogeneous of degree 2; a
rotation when |p| = 1) and L(p) the 4x3 matrix of p' = L(p) Omega / 2
(:func:`pyint.models.so3.quat_rate`), L^T L = |p|^2 I, L^T p = 0 and
L(y)^T y = 0 for every y, so

    Omega = 2 L(p)^T p',   Omegadot = 2 L(p)^T p''.

Multiplying Euler's equations J Omegadot + Omega x J Omega = -B_th^T lam by
2 L gives, for each body,

    m x''                     = m g         - Phi_x^T lam
    (4 L J L^T + c p p^T) p'' = -2 L (Omega x J Omega) - Phi_p^T lam - p nu

with nu the multiplier of (|p|^2 - 1)/2 = 0.  Phi_p L = 2 B_th on |p| = 1, so
the joint multipliers lam are those of the Lie-group form M V' + B^T lam = Q
(compared directly).  The term c p p^T (c = 4 tr(J)/3) makes the mass matrix
positive definite; it acts only along p, where the acceleration constraint
p.p'' + |p'|^2 = 0 fixes p'' and nu absorbs the rest, so it changes nu and
nothing else.

Constraint rows: the joints in the order of ``system.joints`` (as
:meth:`RigidBodySystem.phi`), then one norm row per body.  Every residual item
is analytic (Phi, Phi_q, the acceleration term 2 Phi(p', p') of the quadratic
R(p)), and so are the constraint items of IDA's Newton matrix ((Phi_q v)_q,
(Phi_q^T lam)_q); (M(q) a)_q and the force Jacobians use the finite-difference
fallbacks of :class:`Model`.  The constraints do not depend on t (scleronomic).
"""
from __future__ import annotations

import numpy as np

from .so3 import cross, quat_rate, quat_to_rot, rot_to_quat
from .base import Model


def quat_L(p):
    """L(p) (4x3): p' = L(p) Omega / 2 (body angular velocity Omega)."""
    w, x, y, z = p
    return np.array([[-x, -y, -z],
                     [w, -z, y],
                     [z, w, -x],
                     [-y, x, w]])


def quat_R(p):
    """The homogeneous quadratic R(p) = (w^2 - u.u) I + 2 u u^T + 2 w hat(u) (not normalised)."""
    w, x, y, z = p
    d = w * w - x * x - y * y - z * z
    return np.array([[d + 2 * x * x, 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), d + 2 * y * y, 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), d + 2 * z * z]])


def quat_Rs_jac(p, s):
    """d(R(p) s)/dp (3x4): columns 2(w s + u x s) and 2(u s^T - s u^T + (u.s) I - w hat(s)).
    Linear in p: quat_Rs_jac(p, s) @ p = 2 R(p) s, and d/dp (quat_Rs_jac(p, s) y) = quat_Rs_jac(y, s)."""
    w, x, y, z = p
    a, b, c = s
    us = x * a + y * b + z * c
    return 2 * np.array([[w * a + y * c - z * b, us, x * b - a * y + w * c, x * c - a * z - w * b],
                         [w * b + z * a - x * c, y * a - b * x - w * c, us, y * c - b * z + w * a],
                         [w * c + x * b - y * a, z * a - c * x + w * b, z * b - c * y - w * a, us]])


def quat_Rs_hess(lam, s):
    """Hessian of lam . R(p) s in p (4x4, constant: R is quadratic)."""
    return np.stack([quat_Rs_jac(e, s).T @ lam for e in np.eye(4)], axis=1)


class QuaternionRigidBodies(Model):
    """The vector (Euler-parameter) model of a :class:`RigidBodySystem` (module docstring).

    The rigid bodies' rotations as unit quaternions: a vector model of the shared interface,
    so every vector method and the IDA reference integrate the Lie-group methods' systems
    (the norm of each quaternion is a holonomic constraint).

    Parameters
    ----------
    system : RigidBodySystem
        The bodies and joints (``pyint.models.rigid_bodies``).
    rows : sequence of int, optional
        The joint rows a redundant system keeps (``RigidBodySystem.independent_rows``;
        default every row): the model's constraints are then those rows and the norm rows.

    Examples
    --------
    >>> from pyint import GeneralizedAlpha, QuaternionRigidBodies
    >>> from pyint.models.rigid_bodies import RigidBodySystem
    >>> model = QuaternionRigidBodies(RigidBodySystem.heavy_top())
    >>> model.n_hol > 0, GeneralizedAlpha.accepts(model)
    (True, True)
    """

    constant_mass = False
    scleronomic = True
    conservative = True

    def __init__(self, system, rows=None):
        self.system = system
        nb = system.nb
        self.nb = nb
        self.n = 7 * nb
        self.n_joint = system.m
        self._all = system.m + nb            # every joint row, then the norm rows
        self._sel = None if rows is None else np.concatenate([np.asarray(rows, dtype=int),
                                                              system.m + np.arange(nb)])
        self.n_hol = self._all if self._sel is None else len(self._sel)
        self.n_nonhol = 0
        self.name = f"{system.name}_quaternion"
        self._J = [b.J() for b in system.bodies]
        self._c = [4 * np.trace(j) / 3 for j in self._J]
        self.coord_names = tuple(c for i in range(nb)
                                 for c in (f"x{i + 1}", f"y{i + 1}", f"z{i + 1}",
                                           f"w{i + 1}", f"u{i + 1}", f"v{i + 1}", f"s{i + 1}"))
        self.coord_units = ("m", "m", "m", "1", "1", "1", "1") * nb

    # -- layout ------------------------------------------------------------------
    def _x(self, q, i):
        return q[7 * i:7 * i + 3]

    def _p(self, q, i):
        return q[7 * i + 3:7 * i + 7]

    def _joints(self):
        """(first row j, joint, body a, body b, quaternion slices of a and of b) of each joint
        primitive of the system; b and its slice None for the ground."""
        for j, jt in zip(self.system.rows, self.system.joints):
            a, b = jt.a, jt.b
            yield j, jt, a, b, slice(7 * a + 3, 7 * a + 7), None if b is None else slice(7 * b + 3, 7 * b + 7)

    def _omega(self, q, v, i):
        return 2 * quat_L(self._p(q, i)).T @ self._p(v, i)

    # -- conversions to and from the Lie-group state ----------------------------------
    def from_lie(self, x, rot, V):
        r"""(q, v) of the state (x (nb,3), R (nb,3,3), :math:`V = (v_1, \Omega_1, \ldots)`)."""
        x = np.asarray(x, dtype=float).reshape(self.nb, 3)
        rot = np.asarray(rot, dtype=float).reshape(self.nb, 3, 3)
        V = np.asarray(V, dtype=float)
        q, v = np.empty(self.n), np.empty(self.n)
        for i in range(self.nb):
            p = rot_to_quat(rot[i])
            q[7 * i:7 * i + 3], q[7 * i + 3:7 * i + 7] = x[i], p
            v[7 * i:7 * i + 3] = V[6 * i:6 * i + 3]
            v[7 * i + 3:7 * i + 7] = quat_rate(p, V[6 * i + 3:6 * i + 6])
        return q, v

    def to_lie(self, q, v):
        """(x (nb,3), R (nb,3,3), V (6 nb)) of (q, v); R from the normalised p,
        ``Omega = 2 L(p)^T p' / |p|^2``."""
        x = np.stack([self._x(q, i) for i in range(self.nb)])
        rot = np.stack([quat_to_rot(self._p(q, i)) for i in range(self.nb)])
        V = np.concatenate([np.concatenate([self._x(v, i),
                                            self._omega(q, v, i) / (self._p(q, i) @ self._p(q, i))])
                            for i in range(self.nb)])
        return x, rot, V

    # -- dynamics ----------------------------------------------------------------------
    def mass(self, q):
        m = np.zeros((self.n, self.n))
        for i, b in enumerate(self.system.bodies):
            p = self._p(q, i)
            lm = quat_L(p)
            m[7 * i:7 * i + 3, 7 * i:7 * i + 3] = b.mass * np.eye(3)
            m[7 * i + 3:7 * i + 7, 7 * i + 3:7 * i + 7] = 4 * lm @ self._J[i] @ lm.T + self._c[i] * np.outer(p, p)
        return m

    def force(self, t, q, v):
        f = np.zeros(self.n)
        for i, b in enumerate(self.system.bodies):
            om = self._omega(q, v, i)
            f[7 * i:7 * i + 3] = b.mass * self.system.gravity
            f[7 * i + 3:7 * i + 7] = -2 * quat_L(self._p(q, i)) @ cross(om, self._J[i] @ om)
        return f

    def energy(self, t, q, v):
        e = 0.0
        for i, b in enumerate(self.system.bodies):
            vi, om = self._x(v, i), self._omega(q, v, i)
            e += 0.5 * b.mass * vi @ vi + 0.5 * om @ self._J[i] @ om - b.mass * self.system.gravity @ self._x(q, i)
        return float(e)

    # -- constraints ---------------------------------------------------------------------
    def _joint_vectors(self, jt, q):
        """(R_a s_a, R_b s_b or the world s_b) of a joint, with the quadratic R(p)."""
        wa = quat_R(self._p(q, jt.a)) @ np.asarray(jt.s_a, dtype=float)
        sb = np.asarray(jt.s_b, dtype=float)
        wb = sb if jt.b is None else quat_R(self._p(q, jt.b)) @ sb
        return wa, wb

    def _hol_all(self, t, q):
        out = np.zeros(self._all)
        for j, jt, *_ in self._joints():
            wa, wb = self._joint_vectors(jt, q)
            if jt.kind == "point":
                out[j:j + 3] = self._x(q, jt.a) + wa - wb
                if jt.b is not None:
                    out[j:j + 3] -= self._x(q, jt.b)
            else:
                out[j] = wa @ wb
        for i in range(self.nb):
            p = self._p(q, i)
            out[self.n_joint + i] = 0.5 * (p @ p - 1.0)
        return out

    def _hol_jac_all(self, t, q):
        g = np.zeros((self._all, self.n))
        for j, jt, a, b, ia, ib in self._joints():
            da = quat_Rs_jac(self._p(q, a), jt.s_a)
            db = None if b is None else quat_Rs_jac(self._p(q, b), jt.s_b)
            if jt.kind == "point":
                g[j:j + 3, 7 * a:7 * a + 3] = np.eye(3)
                g[j:j + 3, ia] = da
                if b is not None:
                    g[j:j + 3, 7 * b:7 * b + 3] = -np.eye(3)
                    g[j:j + 3, ib] = -db
            else:
                wa, wb = self._joint_vectors(jt, q)
                g[j, ia] = wb @ da
                if b is not None:
                    g[j, ib] += wa @ db
        for i in range(self.nb):
            g[self.n_joint + i, 7 * i + 3:7 * i + 7] = self._p(q, i)
        return g

    def _hol_gamma_all(self, t, q, v):
        """(G v)_q v: the constraints are quadratic in each p, so d^2/dt^2 at p'' = 0
        is 2 R(p') s for a point, and the product rule for a perpendicularity."""
        out = np.zeros(self._all)
        for j, jt, a, b, _, _ in self._joints():
            sa, sb = np.asarray(jt.s_a, dtype=float), np.asarray(jt.s_b, dtype=float)
            dda = 2 * quat_R(self._p(v, a)) @ sa
            ddb = np.zeros(3) if b is None else 2 * quat_R(self._p(v, b)) @ sb
            if jt.kind == "point":
                out[j:j + 3] = dda - ddb
            else:
                wa, wb = self._joint_vectors(jt, q)
                da = quat_Rs_jac(self._p(q, a), sa) @ self._p(v, a)
                db = np.zeros(3) if b is None else quat_Rs_jac(self._p(q, b), sb) @ self._p(v, b)
                out[j] = dda @ wb + 2 * da @ db + wa @ ddb
        for i in range(self.nb):
            pd = self._p(v, i)
            out[self.n_joint + i] = pd @ pd
        return out

    def _hol_vel_q_all(self, t, q, v):
        """(G v)_q (n_hol, n): G is linear in each p, so d/dp_a (D(p_a, s) p_a') = D(p_a', s)."""
        k = np.zeros((self._all, self.n))
        for j, jt, a, b, ia, ib in self._joints():
            dva = quat_Rs_jac(self._p(v, a), jt.s_a)
            if jt.kind == "point":
                k[j:j + 3, ia] = dva
                if b is not None:
                    k[j:j + 3, ib] = -quat_Rs_jac(self._p(v, b), jt.s_b)
            else:
                wa, wb = self._joint_vectors(jt, q)
                da = quat_Rs_jac(self._p(q, a), jt.s_a)
                k[j, ia] = wb @ dva
                if b is not None:
                    db = quat_Rs_jac(self._p(q, b), jt.s_b)
                    dvb = quat_Rs_jac(self._p(v, b), jt.s_b)
                    k[j, ia] += (db @ self._p(v, b)) @ da
                    k[j, ib] = (da @ self._p(v, a)) @ db + wa @ dvb
        for i in range(self.nb):
            k[self.n_joint + i, 7 * i + 3:7 * i + 7] = self._p(v, i)
        return k

    def _hol_gtl_q_all(self, t, q, lam):
        """(G^T lam)_q (n, n): the Hessians of the quadratic constraints."""
        k = np.zeros((self.n, self.n))
        for j, jt, a, b, ia, ib in self._joints():
            if jt.kind == "point":
                l3 = lam[j:j + 3]
                k[ia, ia] += quat_Rs_hess(l3, jt.s_a)
                if b is not None:
                    k[ib, ib] -= quat_Rs_hess(l3, jt.s_b)
            else:
                wa, wb = self._joint_vectors(jt, q)
                k[ia, ia] += lam[j] * quat_Rs_hess(wb, jt.s_a)
                if b is not None:
                    da = quat_Rs_jac(self._p(q, a), jt.s_a)
                    db = quat_Rs_jac(self._p(q, b), jt.s_b)
                    k[ib, ib] += lam[j] * quat_Rs_hess(wa, jt.s_b)
                    k[ia, ib] += lam[j] * da.T @ db
                    k[ib, ia] += lam[j] * db.T @ da
        for i in range(self.nb):
            k[7 * i + 3:7 * i + 7, 7 * i + 3:7 * i + 7] += lam[self.n_joint + i] * np.eye(4)
        return k

    # the constraint items: every row, or the kept joint rows and the norm rows (rows=)
    def _pick(self, a):
        return a if self._sel is None else a[self._sel]

    def _spread(self, lam):
        if self._sel is None:
            return np.asarray(lam, dtype=float)
        full = np.zeros(np.shape(lam)[:-1] + (self._all,))
        full[..., self._sel] = lam
        return full

    def hol(self, t, q):
        return self._pick(self._hol_all(t, q))

    def hol_jac(self, t, q):
        return self._pick(self._hol_jac_all(t, q))

    def hol_gamma(self, t, q, v):
        return self._pick(self._hol_gamma_all(t, q, v))

    def hol_vel_q(self, t, q, v):
        return self._pick(self._hol_vel_q_all(t, q, v))

    def hol_gtl_q(self, t, q, lam):
        return self._hol_gtl_q_all(t, q, self._spread(lam))

    def joint_multipliers(self, lam):
        r"""The joint rows of :math:`\lambda` (those of the Lie-group form, zero on rows a redundant system
        dropped); the norm multipliers dropped."""
        return self._spread(lam)[..., :self.n_joint]

    def describe(self):
        d = super().describe()
        d.update({"system": self.system.name, "parametrization": "unit quaternions (w, x, y, z), |p| = 1 constraints"})
        return d
