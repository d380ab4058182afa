"""Rigid bodies on (R^3 x SO(3))^nb with joints as constraint functions (seed 001).

The configuration of body i is (x_i, R_i): centre of mass and rotation
(body -> world); its velocity is V_i = (v_i, Omega_i) with xdot = v and
Rdot = R hat(Omega) (body angular velocity).  The system is

    M Vdot + B(q)^T lam = Q(V),   Phi(q) = 0,
    M = diag(m_1 I, J_1, m_2 I, J_2, ...),  Q_i = (m_i g, -Omega_i x J_i Omega_i),

with B V = d/dt Phi (the Lie-group Jacobian) and the acceleration constraint
B Vdot + (Bdot V) = 0.  V stacks the bodies (v_1, Omega_1, v_2, Omega_2, ...).

This is the Lie-group counterpart of :class:`pyint.models.Model`, and like a
built-in model it is data with a Fortran twin (fortran/core/rigid_body.f90):
bodies and joint primitives, encoded in (ipar, rpar) so that the whole time
loop of every Lie-group integrator runs in Fortran.  The NumPy items here are
the reference implementation the tests compare the Fortran ones with; the
quaternion reference solution (:mod:`pyint.reference.lie`) uses them too.

Joint primitives (the Fortran ``kind``):

* :class:`PointJoint` (3 rows): ``x_a + R_a s_a - x_b - R_b s_b = 0`` -- a
  spherical joint; ``b=None`` is the ground and ``s_b`` a world point.
* :class:`PerpJoint` (1 row): ``(R_a s_a) . (R_b s_b) = 0`` -- two body-fixed
  directions stay perpendicular (``b=None``: ``s_b`` a fixed world direction).

:func:`revolute` is a point joint plus two perpendicularity rows.

Derivatives with respect to the configuration are Lie-algebra derivatives: a
perturbation delta = (dx_1, dth_1, dx_2, dth_2, ...) moves x_i -> x_i + dx_i
and R_i -> R_i expm(dth_i).

The configuration space's checks (rotations, a consistent state, its projection), the trajectory
residuals and the dense output on the group are in :mod:`pyint.models.rigid_states`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as V
from ._params import positive, real, vector
# the configuration space's checks and residuals; interpolated_states stays importable from here
# (the dense output on given samples: tests import it so)
from .rigid_states import as_configuration, interpolated_states, lie_residuals, start_tolerances, \
    start_violation  # noqa: F401
from .so3 import cross, expm, hat

GROUND = None
_KIND = {"point": 1, "perp": 2}


@dataclass(frozen=True)
class Body:
    """A rigid body: mass m (kg), body-frame inertia J (kg m^2, 3x3 or its diagonal)."""

    mass: float
    inertia: tuple
    name: str = ""

    def J(self):
        j = np.asarray(self.inertia, dtype=float)
        return np.diag(j) if j.shape == (3,) else j


@dataclass(frozen=True)
class _Joint:
    """A joint primitive between body a (vector s_a in its frame) and body b (s_b in its
    frame); b=None: the ground, s_b in world coordinates.  ``rows`` constraint equations."""

    a: int
    s_a: tuple
    b: int | None = GROUND
    s_b: tuple = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class PointJoint(_Joint):
    """x_a + R_a s_a = x_b + R_b s_b (spherical joint); b=None: s_b is a world point."""

    kind = "point"
    rows = 3


@dataclass(frozen=True)
class PerpJoint(_Joint):
    """(R_a s_a) . (R_b s_b) = 0; b=None: s_b is a fixed world direction."""

    s_b: tuple = (1.0, 0.0, 0.0)
    kind = "perp"
    rows = 1


def spherical(a, s_a, b=GROUND, s_b=(0.0, 0.0, 0.0)):
    return [PointJoint(a, tuple(s_a), b, tuple(s_b))]


def revolute(a, s_a, axis_a, b=GROUND, s_b=(0.0, 0.0, 0.0), axis_b=(0.0, 0.0, 1.0)):
    """Point joint plus axis_a (body a) kept parallel to axis_b (body b or world):
    axis_a perpendicular to two directions orthogonal to axis_b."""
    n = np.asarray(axis_b, dtype=float)
    n = n / np.linalg.norm(n)
    e = np.eye(3)[int(np.argmin(np.abs(n)))]
    u1 = cross(n, e)
    u1 /= np.linalg.norm(u1)
    u2 = cross(n, u1)
    ax = np.asarray(axis_a, dtype=float) / np.linalg.norm(axis_a)
    return [PointJoint(a, tuple(s_a), b, tuple(s_b)),
            PerpJoint(a, tuple(ax), b, tuple(u1)), PerpJoint(a, tuple(ax), b, tuple(u2))]


def _ddcross(om, e):
    """d/dOmega of Omega x (Omega x e)."""
    return np.outer(om, e) + (om @ e) * np.eye(3) - 2 * np.outer(e, om)


class RigidBodySystem:
    """Rigid bodies and joints (see the module docstring).

    bodies: list of :class:`Body`; joints: list of :class:`PointJoint` /
    :class:`PerpJoint` (body indices 0-based, ``None`` = ground);
    gravity: the gravity vector g (m/s^2).
    """

    conservative = True
    n_nonhol = 0
    #: a Lie group: q = pack(x, R) is not a vector with additive updates; the Lie-group methods
    #: (pyint.methods.lie) integrate it
    configuration_space = "(R^3 x SO(3))^nb"

    def __init__(self, bodies, joints, gravity=(0.0, 0.0, -9.81), name="rigid_bodies"):
        self.bodies = list(bodies)
        self.joints = [j for j in joints]
        if not self.bodies:
            raise ValueError("a rigid-body system needs at least one body")
        for i, b in enumerate(self.bodies):
            positive(f"body {i}: mass", b.mass)
            j = b.J()
            if j.shape != (3, 3) or not np.all(np.isfinite(j)):
                raise ValueError(f"body {i}: inertia must be 3 values or a 3x3 matrix, got {b.inertia!r}")
            if not np.allclose(j, j.T) or np.min(np.linalg.eigvalsh(j)) <= 0:
                raise ValueError(f"body {i}: inertia must be symmetric positive definite")
        nb = len(self.bodies)
        for k, jt in enumerate(self.joints):
            if not isinstance(jt, (PointJoint, PerpJoint)):
                raise TypeError(f"joint {k}: expected PointJoint or PerpJoint, got {type(jt).__name__}")
            if not (0 <= jt.a < nb) or not (jt.b is None or 0 <= jt.b < nb) or jt.a == jt.b:
                raise ValueError(f"joint {k}: bodies must be distinct indices in 0..{nb - 1} "
                                 f"(b may be None for the ground), got a={jt.a}, b={jt.b}")
            vector(f"joint {k}: s_a", jt.s_a, 3)
            vector(f"joint {k}: s_b", jt.s_b, 3)
        self.gravity = vector("gravity", gravity, 3)
        self.name = name
        self.nb = nb
        self.nv = 6 * nb
        self.rows = np.cumsum([0] + [jt.rows for jt in self.joints])
        self.m = int(self.rows[-1])
        self.n_hol = self.m
        self._J = [b.J() for b in self.bodies]
        self._mass = np.zeros((self.nv, self.nv))
        for i, b in enumerate(self.bodies):
            self._mass[6 * i:6 * i + 3, 6 * i:6 * i + 3] = b.mass * np.eye(3)
            self._mass[6 * i + 3:6 * i + 6, 6 * i + 3:6 * i + 6] = self._J[i]

    # -- the paper's example -----------------------------------------------------
    @classmethod
    def two_link_manipulator(cls, mass=5.0, length=1.0, radius=0.05, gravity=9.81):
        """Seed 001's two-link spatial manipulator (section 3).  The paper gives no
        inertias: each link is a solid cylinder of the given radius along its
        body x axis, J = diag(m r^2/2, m(3r^2 + l^2)/12, m(3r^2 + l^2)/12)."""
        m, l, r = positive("mass", mass), positive("length", length), positive("radius", radius)
        gravity = real("gravity", gravity)
        j = (m * r * r / 2, m * (3 * r * r + l * l) / 12, m * (3 * r * r + l * l) / 12)
        bodies = [Body(m, j, "link1"), Body(m, j, "link2")]
        joints = [PointJoint(0, (-l / 2, 0.0, 0.0)),                            # Phi_1 = x1 + R1 X10
                  PointJoint(0, (l / 2, 0.0, 0.0), 1, (-l / 2, 0.0, 0.0))]      # Phi_2
        sys_ = cls(bodies, joints, gravity=(0.0, 0.0, -gravity), name="two_link_manipulator")
        sys_.paper = dict(mass=m, length=l, radius=r, gravity=gravity)
        return sys_

    def manipulator_initial_state(self, spin=1.0):
        """The paper's initial state: R1 = R2 = I, x1 = (l/2,0,0), x2 = (3l/2,0,0),
        Omega1 = (10pi,0,0), Omega2 = (10pi,10pi,20pi) (times ``spin``) and the
        consistent v1 = 0, v2 = Omega1 x X11 - Omega2 x X21 = (0, 10pi, -5pi)."""
        l = self.paper["length"]
        x = np.array([[l / 2, 0, 0], [3 * l / 2, 0, 0]], dtype=float)
        rot = np.stack([np.eye(3), np.eye(3)])
        om1 = spin * np.array([10 * np.pi, 0, 0])
        om2 = spin * np.array([10 * np.pi, 10 * np.pi, 20 * np.pi])
        x11, x21 = np.array([l / 2, 0, 0]), np.array([-l / 2, 0, 0])
        v2 = cross(om1, x11) - cross(om2, x21)
        v = np.concatenate([np.zeros(3), om1, v2, om2])
        return x, rot, v

    @classmethod
    def heavy_top(cls, mass=1.0, inertia=(0.6, 0.6, 0.2), arm=0.5, gravity=9.81):
        """A heavy symmetric top: one body, its point (0, 0, -arm) fixed at the origin."""
        b = Body(mass, inertia, "top")
        return cls([b], [PointJoint(0, (0.0, 0.0, -real("arm", arm)))], gravity=(0.0, 0.0, -real("gravity", gravity)),
                   name="heavy_top")

    # -- state packing -----------------------------------------------------------
    def pack(self, x, rot):
        """Flat configuration q = (x_1, R_1 row-major, x_2, ...): 12 per body (the layout of Result.q)."""
        x = np.asarray(x, dtype=float).reshape(self.nb, 3)
        rot = np.asarray(rot, dtype=float).reshape(self.nb, 3, 3)
        return np.concatenate([np.concatenate([x[i], rot[i].ravel()]) for i in range(self.nb)])

    def unpack(self, q):
        q = np.asarray(q, dtype=float).reshape(self.nb, 12)
        return q[:, :3].copy(), q[:, 3:].reshape(self.nb, 3, 3).copy()


    # -- the configuration space's hooks (pyint.integrator.Integrator, pyint.results.Result) ---------
    # (R^3 x SO(3))^nb is a Lie group: q = pack(x, R) (12 per body), v = V (6 per body) is not q'.
    has_energy = True

    def units(self):
        """Units of the flat configuration q: x in m, R dimensionless."""
        return tuple(u for _ in range(self.nb) for u in ("m",) * 3 + ("1",) * 9)

    def checked_initial_state(self, t0, q0, v0, project=False):
        """(q0, v0, tols) for an integrator: q0 a tuple (x0, R0) or the flat q of :meth:`pack`, R0
        rotations (checked here); the run checks Phi = 0 and B V = 0 at its start against tols, or with
        project=True projects onto them (fortran/core/lie_stepper.f90: lie_checked_start), and a
        refused start is a ValueError naming the level (:meth:`start_violation`)."""
        x0, r0 = as_configuration(self, q0)
        v0 = V.as_vector(v0, self.nv, "v0")
        return self.pack(x0, r0), v0, start_tolerances(x0, v0, project)

    def start_violation(self, t0, start, tols):
        """The ValueError of a start the run refused (its diagnostics ``start``), or None
        (:func:`pyint.models.rigid_states.start_violation`)."""
        return start_violation(self, t0, start, tols)

    def trajectory_residuals(self, t, q, v, a, backend="auto", keep_going=False):
        """(residual (nt, 5), energy (nt,), extra) of a trajectory, in Fortran: the columns of
        :attr:`pyint.results.Result.residual` (|Phi|, |B V|, |B A + Bdot V|; no nonholonomic
        columns) and extra["orthogonality"] = max_i |R_i^T R_i - I|_F per sample."""
        x, rot = self.split(q)
        res, energy = lie_residuals(self, x, rot, v, a)
        residual, extra = self.sample_residuals(res)
        return residual, energy, extra

    def sample_residuals(self, res):
        """(residual (nt, 5), extra) from the per-sample |Phi|, |B V|, |B A + Bdot V|,
        max_i |R_i^T R_i - I|_F (the Lie kernels' and the driver's columns): the columns of
        :attr:`pyint.results.Result.residual` (no nonholonomic ones) and extra["orthogonality"]."""
        residual = np.zeros((len(res), 5))
        residual[:, :3] = res[:, :3]
        return residual, {"orthogonality": res[:, 3]}

    def split(self, q):
        """Views x (nt, nb, 3) and R (nt, nb, 3, 3) of a time-major flat q (nt, 12 nb)."""
        q = np.asarray(q)
        blocks = q.reshape(len(q), self.nb, 12)
        return blocks[:, :, :3], blocks[:, :, 3:].reshape(len(q), self.nb, 3, 3)

    def result_views(self, result):
        """x, R (views of q), V (= v) and the run's orthogonality error max over samples and steps."""
        x, rot = self.split(result.q)
        orth = float(np.max(result.extra.get("orthogonality", np.zeros(0)), initial=0.0))
        return {"x": x, "R": rot, "V": result.v,
                "orthogonality": float(np.fmax(orth, result.step_max("orthogonality")))}

    def dataset_variables(self, result):
        """(coords, variables) the Lie group adds to :meth:`pyint.results.Result.to_xarray`: x, R,
        V on (time, body, ...), the orthogonality error per sample and its maximum."""
        nt, nb = len(result.t), self.nb
        x, rot = self.split(result.q)
        coords = {
            "body": ("body", np.arange(1, nb + 1), {"units": "1", "long_name": "body number"}),
            "axis": ("axis", ["x", "y", "z"], {"units": "", "long_name": "world axis"}),
            "row": ("row", [1, 2, 3], {"units": "1", "long_name": "row of the rotation matrix"}),
            "col": ("col", [1, 2, 3], {"units": "1", "long_name": "column of the rotation matrix"}),
            "velocity_component": ("velocity_component", ["vx", "vy", "vz", "Omega_x", "Omega_y", "Omega_z"],
                                   {"units": "", "long_name": "body velocity component (v world, Omega body)"}),
        }
        variables = {
            "x": (("time", "body", "axis"), x, {"units": "m", "long_name": "centre of mass"}),
            "R": (("time", "body", "row", "col"), rot, {"units": "1", "long_name": "rotation matrix (body to world)"}),
            "V": (("time", "body", "velocity_component"), np.asarray(result.v).reshape(nt, nb, 6),
                  {"units": "m/s, rad/s", "long_name": "body velocity V_i = (v_i, Omega_i)"}),
            "orthogonality_max": ((), result.orthogonality,
                                  {"units": "1", "long_name": "max |R^T R - I|_F over the run"}),
        }
        if "orthogonality" in result.extra:
            variables["orthogonality"] = ("time", result.extra["orthogonality"],
                                          {"units": "1", "long_name": "max_i |R_i^T R_i - I|_F"})
        return coords, variables

    def names(self):
        """Names of the flat configuration q (12 per body)."""
        out = []
        for i in range(self.nb):
            out += [f"x{i + 1}", f"y{i + 1}", f"z{i + 1}"]
            out += [f"R{i + 1}_{r}{c}" for r in range(1, 4) for c in range(1, 4)]
        return tuple(out)

    def velocity_names(self):
        return tuple(f"{c}{i + 1}" for i in range(self.nb)
                     for c in ("vx", "vy", "vz", "Omega_x", "Omega_y", "Omega_z"))

    def describe(self):
        d = {"model": self.name, "bodies": self.nb, "constraints": self.m,
             "gravity": self.gravity.tolist(),
             "masses": [b.mass for b in self.bodies],
             "inertias": [b.J().tolist() for b in self.bodies],
             "joints": [(jt.kind, jt.a, jt.b, list(jt.s_a), list(jt.s_b)) for jt in self.joints]}
        return d

    def fortran_params(self):
        """(ipar, rpar) of fortran/core/rigid_body.f90: rigid_system_new."""
        ipar = [self.nb, len(self.joints)]
        rpar = list(self.gravity)
        for b in self.bodies:
            rpar += [b.mass] + list(b.J().ravel(order="F"))
        for jt in self.joints:
            ipar += [_KIND[jt.kind], jt.a + 1, 0 if jt.b is None else jt.b + 1]
            rpar += list(map(float, jt.s_a)) + list(map(float, jt.s_b))
        return np.asarray(ipar, dtype=np.int32), np.asarray(rpar, dtype=float)

    # -- helpers -------------------------------------------------------------------
    def _om(self, v, i):
        return np.asarray(v[6 * i + 3:6 * i + 6], dtype=float)

    def _joint_rows(self):
        """(first row j, joint, bodies a and b -- b None: the ground --, s_a, s_b as arrays, and the
        angular-velocity columns of a and of b (None for the ground)) of each joint primitive."""
        for j, jt in zip(self.rows, self.joints):
            a, b = jt.a, jt.b
            yield (j, jt, a, b, np.asarray(jt.s_a, dtype=float), np.asarray(jt.s_b, dtype=float),
                   slice(6 * a + 3, 6 * a + 6), None if b is None else slice(6 * b + 3, 6 * b + 6))

    def _wb(self, jt, rot):
        s_b = np.asarray(jt.s_b, dtype=float)
        return s_b if jt.b is None else rot[jt.b] @ s_b

    # -- constraint items ------------------------------------------------------------
    def phi(self, x, rot):
        out = np.zeros(self.m)
        for j, jt, a, b, sa, sb, ia, ib in self._joint_rows():
            if jt.kind == "point":
                out[j:j + 3] = x[a] + rot[a] @ sa - self._wb(jt, rot)
                if b is not None:
                    out[j:j + 3] -= x[b]
            else:
                out[j] = (rot[a] @ sa) @ self._wb(jt, rot)
        return out

    def bmat(self, rot):
        bm = np.zeros((self.m, self.nv))
        for j, jt, a, b, sa, sb, ia, ib in self._joint_rows():
            if jt.kind == "point":
                bm[j:j + 3, 6 * a:6 * a + 3] = np.eye(3)
                bm[j:j + 3, ia] = -rot[a] @ hat(sa)
                if b is not None:
                    bm[j:j + 3, 6 * b:6 * b + 3] = -np.eye(3)
                    bm[j:j + 3, ib] = rot[b] @ hat(sb)
            else:
                wa, wb = rot[a] @ sa, self._wb(jt, rot)
                bm[j, ia] = cross(sa, rot[a].T @ wb)
                if b is not None:
                    bm[j, ib] = cross(sb, rot[b].T @ wa)
        return bm

    def _perp_vectors(self, jt, rot, v):
        a, b = jt.a, jt.b
        sa, sb = np.asarray(jt.s_a, dtype=float), np.asarray(jt.s_b, dtype=float)
        oa = self._om(v, a)
        wa, da = rot[a] @ sa, rot[a] @ cross(oa, sa)
        dda = rot[a] @ cross(oa, cross(oa, sa))
        if b is None:
            return wa, sb, da, np.zeros(3), dda, np.zeros(3)
        ob = self._om(v, b)
        return (wa, rot[b] @ sb, da, rot[b] @ cross(ob, sb), dda,
                rot[b] @ cross(ob, cross(ob, sb)))

    def bdotv(self, rot, v):
        """Bdot V = d/dt (B V) at frozen V."""
        out = np.zeros(self.m)
        for j, jt, a, b, sa, sb, ia, ib in self._joint_rows():
            if jt.kind == "point":
                oa = self._om(v, a)
                out[j:j + 3] = rot[a] @ cross(oa, cross(oa, sa))
                if b is not None:
                    ob = self._om(v, b)
                    out[j:j + 3] -= rot[b] @ cross(ob, cross(ob, sb))
            else:
                wa, wb, da, db, dda, ddb = self._perp_vectors(jt, rot, v)
                out[j] = dda @ wb + 2 * da @ db + wa @ ddb
        return out

    def btl_q(self, rot, lam):
        """d(B^T lam)/dq (nv, nv)."""
        kq = np.zeros((self.nv, self.nv))
        for j, jt, a, b, sa, sb, ia, ib in self._joint_rows():
            if jt.kind == "point":
                l3 = lam[j:j + 3]
                kq[ia, ia] += hat(sa) @ hat(rot[a].T @ l3)
                if b is not None:
                    kq[ib, ib] -= hat(sb) @ hat(rot[b].T @ l3)
            else:
                wa, wb = rot[a] @ sa, self._wb(jt, rot)
                kq[ia, ia] += lam[j] * hat(sa) @ hat(rot[a].T @ wb)
                if b is not None:
                    kq[ib, ib] += lam[j] * hat(sb) @ hat(rot[b].T @ wa)
                    kq[ia, ib] -= lam[j] * hat(sa) @ rot[a].T @ rot[b] @ hat(sb)
                    kq[ib, ia] -= lam[j] * hat(sb) @ rot[b].T @ rot[a] @ hat(sa)
        return kq

    def bw_q(self, rot, w):
        """d(B w)/dq (m, nv) for a fixed w (nv)."""
        kq = np.zeros((self.m, self.nv))
        for j, jt, a, b, sa, sb, ia, ib in self._joint_rows():
            oa = self._om(w, a)
            if jt.kind == "point":
                kq[j:j + 3, ia] = rot[a] @ hat(cross(sa, oa))
                if b is not None:
                    ob = self._om(w, b)
                    kq[j:j + 3, ib] = -rot[b] @ hat(cross(sb, ob))
            else:
                wa, wb = rot[a] @ sa, self._wb(jt, rot)
                kq[j, ia] = oa @ hat(sa) @ hat(rot[a].T @ wb)
                if b is not None:
                    ob = self._om(w, b)
                    rab = rot[a].T @ rot[b]
                    kq[j, ib] = ob @ hat(sb) @ hat(rot[b].T @ wa) - oa @ hat(sa) @ rab @ hat(sb)
                    kq[j, ia] -= ob @ hat(sb) @ rab.T @ hat(sa)
        return kq

    def bdotv_jac(self, rot, v):
        """(d(Bdot V)/dq, d(Bdot V)/dV), each (m, nv)."""
        kq = np.zeros((self.m, self.nv))
        kv = np.zeros((self.m, self.nv))
        for j, jt, a, b, sa, sb, ia, ib in self._joint_rows():
            oa = self._om(v, a)
            if jt.kind == "point":
                kq[j:j + 3, ia] = -rot[a] @ hat(cross(oa, cross(oa, sa)))
                kv[j:j + 3, ia] = rot[a] @ _ddcross(oa, sa)
                if b is not None:
                    ob = self._om(v, b)
                    kq[j:j + 3, ib] = rot[b] @ hat(cross(ob, cross(ob, sb)))
                    kv[j:j + 3, ib] = -rot[b] @ _ddcross(ob, sb)
            else:
                wa, wb, da, db, dda, ddb = self._perp_vectors(jt, rot, v)
                ta, dta, ddta = rot[a].T @ wb, rot[a].T @ db, rot[a].T @ ddb
                kq[j, ia] = (cross(cross(oa, cross(oa, sa)), ta)
                             + 2 * cross(cross(oa, sa), dta) + cross(sa, ddta))
                kv[j, ia] = ta @ _ddcross(oa, sa) - 2 * dta @ hat(sa)
                if b is not None:
                    ob = self._om(v, b)
                    tb, dtb, ddtb = rot[b].T @ wa, rot[b].T @ da, rot[b].T @ dda
                    kq[j, ib] = (cross(cross(ob, cross(ob, sb)), tb)
                                 + 2 * cross(cross(ob, sb), dtb) + cross(sb, ddtb))
                    kv[j, ib] = tb @ _ddcross(ob, sb) - 2 * dtb @ hat(sb)
        return kq, kv

    # -- dynamics ----------------------------------------------------------------------
    def mass_matrix(self):
        return self._mass.copy()

    def force(self, v):
        q = np.zeros(self.nv)
        for i, b in enumerate(self.bodies):
            om = self._om(v, i)
            q[6 * i:6 * i + 3] = b.mass * self.gravity
            q[6 * i + 3:6 * i + 6] = -cross(om, self._J[i] @ om)
        return q

    def force_v(self, v):
        qv = np.zeros((self.nv, self.nv))
        for i, b in enumerate(self.bodies):
            om = self._om(v, i)
            qv[6 * i + 3:6 * i + 6, 6 * i + 3:6 * i + 6] = hat(self._J[i] @ om) - hat(om) @ self._J[i]
        return qv

    def energy(self, x, v):
        e = 0.0
        for i, b in enumerate(self.bodies):
            vi, om = v[6 * i:6 * i + 3], self._om(v, i)
            e += 0.5 * b.mass * vi @ vi + 0.5 * om @ self._J[i] @ om - b.mass * self.gravity @ x[i]
        return float(e)

    def consistent_acceleration(self, rot, v, rows=None):
        """(A, lam) from [M B^T; B 0] [A; lam] = [Q; -Bdot V] on the joint rows ``rows`` (default:
        :meth:`independent_rows` at rot: every row unless the joints are redundant); lam has every
        row, zero on the others (the kernels' multipliers of a redundant system: B^T lam is unique)."""
        bm = self.bmat(rot)
        keep = self.independent_rows(rot, bm) if rows is None else np.asarray(rows, dtype=int)
        n, m = self.nv, len(keep)
        kkt = np.zeros((n + m, n + m))
        kkt[:n, :n] = self._mass
        kkt[:n, n:] = bm[keep].T
        kkt[n:, :n] = bm[keep]
        sol = np.linalg.solve(kkt, np.concatenate([self.force(v), -self.bdotv(rot, v)[keep]]))
        lam = np.zeros(self.m)
        lam[keep] = sol[n:]
        return sol[:n], lam

    def independent_rows(self, rot, bm=None):
        """The joint rows a redundant system keeps at rot: the first rank(B) pivots of the
        column-pivoted QR of B^T, sorted (:func:`pyint._validate.independent_rows`, the kernels'
        choice: fortran/core/rigid_body.f90 rigid_drop_redundant_rows); every row when B has
        full row rank."""
        return V.independent_rows(self.bmat(rot) if bm is None else bm)

    def row_name(self, i):
        """Joint row i (0-based) named by its joint primitive: 'joint k (point, body a - body b) row c'."""
        k = int(np.searchsorted(self.rows, i, side="right") - 1)
        jt = self.joints[k]
        other = "ground" if jt.b is None else f"body {jt.b}"
        return f"joint {k} ({jt.kind}, body {jt.a} - {other}) row {i - int(self.rows[k])}"

    @staticmethod
    def orthogonality(rot):
        """max_i |R_i^T R_i - I|_F."""
        rot = np.asarray(rot, dtype=float)
        return float(max(np.linalg.norm(r.T @ r - np.eye(3)) for r in rot))

    # -- moving on the group ---------------------------------------------------------
    def advance(self, x, rot, psi):
        """q o exp(psi): x_i + psi_x,i, R_i expm(psi_th,i)."""
        psi = np.asarray(psi, dtype=float).reshape(self.nb, 6)
        return x + psi[:, :3], np.stack([rot[i] @ expm(psi[i, 3:]) for i in range(self.nb)])
