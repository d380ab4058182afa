"""Natural coordinates (direction-vector method, seed 003 §1): a builder.

A body is its reference point r and its unit direction vectors e_1, e_2 (and
e_3 in 3-D), all in global components:

    q_body = (r, e_1, ..., e_d),  d = 2 (planar) or 3 (spatial),

so a body has d (d + 1) coordinates (6 planar, 12 spatial).  A point with body
coordinates x is at r + sum_j x_j e_j and a vector with body components a is
sum_j a_j e_j: both are LINEAR in q.  That is the point of the method: every
constraint below is a product of two such linear vectors, so Phi is quadratic
in q, Phi_q is linear, (Phi_q v)_q v does not depend on q, and the mass matrix
is constant (seed 003 eq. (1)):

    T = 1/2 v^T M v,  M_body = S (x) E_d,  S = [[m, m c^T], [m c, J]],

with m the mass, c the centre of mass in body coordinates and
J_jk = int rho x_j x_k dV the second moments about r.  With r at the centre of
mass and e_j along principal axes (the paper's choice) c = 0 and
J = diag(Pi_1, ..., Pi_d), Pi_j = int rho x_j^2 dV: M_body = diag(m E, Pi_1 E, ...).
Principal moments of inertia follow as I_1 = Pi_2 + Pi_3 etc.

Constraints (all holonomic, scleronomic):

* direction constraints (2) of every body: 1/2 (e_j.e_j - 1) = 0, e_j.e_k = 0 (j < k);
* the six joint primitives of seed 003:
  (1) ``perpendicular``          a_i . a_j = 0
  (2) ``perpendicular_offset``   a_i . d_ij = 0        (d_ij = P_j - P_i)
  (3) ``coincident``             P_j - P_i = 0          (d equations)
  (4) ``distance``               d_ij . d_ij - C^2 = 0
  (5) ``parallel``               h_i || h_j: f_i.h_j = g_i.h_j = 0 (f_i, g_i perpendicular to h_i;
                                 one equation in the plane)
  (6) ``parallel_offset``        h_i || d_ij: f_i.d_ij = g_i.d_ij = 0
* joints built from them: ``spherical`` = (3); ``revolute`` = (3) in the plane,
  (3) + (5) in space; ``universal`` = (3) + (1); ``cylindrical`` = (5) + (6);
  ``prismatic`` = (5) + (6) in the plane, plus (1) locking the rotation about
  the axis in space.

Forces: gravity (a constant generalized force, potential V = -g . sum m r_com)
and point-to-point spring-dampers.  Body 0 is the ground: its points and
vectors are given in global components and are constants.

Every scalar constraint is stored as  Phi = s (u . w) - c  with u = U q + u0
and w = W q + w0 linear vectors, from which

    Phi_q = s (w^T U + u^T W),   (Phi_q v)_q v = 2 s (U v).(W v),
    (Phi_q^T lam)_q = sum_k lam_k s_k (U_k^T W_k + W_k^T U_k).

The assembled system is a :class:`NaturalModel` (a :class:`pyint.models.Model`
with every item analytic).  Its Fortran twin ``natural_system``
(fortran/models/natural_system.f90) evaluates the same system from the integer
and real parameter arrays of :meth:`NaturalModel.fortran_params`, so the whole
time loop of an integrator runs in Fortran.  Seed 003's mechanisms built with it:
:mod:`pyint.models.natural_mechanisms`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._params import nonnegative, positive, vector
from .base import Model


# --------------------------------------------------------------------------
# Linear vectors: u(q) = const + sum_t coef_t * q[off_t : off_t + d]
# --------------------------------------------------------------------------
@dataclass
class LinVec:
    """A d-vector linear in q: ``const + sum(coef * q[off:off + d])``."""

    dim: int
    terms: list = field(default_factory=list)   # [(offset, coef)]
    const: np.ndarray = None

    def __post_init__(self):
        self.const = np.zeros(self.dim) if self.const is None else np.asarray(self.const, dtype=float)

    def __add__(self, other):
        return LinVec(self.dim, _merge(self.terms + other.terms), self.const + other.const)

    def __sub__(self, other):
        return self + other.scaled(-1.0)

    def scaled(self, s):
        return LinVec(self.dim, [(o, s * c) for o, c in self.terms], s * self.const)

    def matrix(self, n):
        """The (d, n) matrix of the linear part."""
        u = np.zeros((self.dim, n))
        for off, coef in self.terms:
            u[:, off:off + self.dim] += coef * np.eye(self.dim)
        return u


def _merge(terms):
    acc = {}
    for off, coef in terms:
        acc[off] = acc.get(off, 0.0) + float(coef)
    return [(o, c) for o, c in sorted(acc.items()) if c != 0.0]


@dataclass
class Body:
    """A body of a :class:`NaturalSystem` (index 0 is the ground)."""

    index: int
    name: str
    offset: int = -1              # position of r in q (-1 for the ground)
    mass: float = 0.0
    com: np.ndarray = None        # centre of mass in body coordinates
    second_moments: np.ndarray = None   # J_jk = int rho x_j x_k dV about r

    @property
    def is_ground(self):
        return self.index == 0


@dataclass
class _Scalar:
    s: float
    c: float
    u: LinVec
    w: LinVec
    label: str


@dataclass
class _Spring:
    d: LinVec                     # P_j - P_i
    stiffness: float
    rest_length: float
    damping: float
    label: str


class NaturalSystem:
    r"""Assemble a multibody system in natural coordinates; :meth:`build` gives the model.

    Points and vectors on a body are given in its body coordinates (the
    components along :math:`e_1, \ldots, e_d`, relative to :math:`r`); on the ground in global
    coordinates.

    Examples
    --------
    A rod hinged at the origin (a compound pendulum), integrated from its pose:

    >>> from pyint import GeneralizedAlpha
    >>> from pyint.models import NaturalSystem
    >>> s = NaturalSystem(dim=2, gravity=(0.0, -9.81))
    >>> b = s.add_body(mass=1.0, pi=(1 / 12, 1e-3), name="rod")
    >>> s.revolute(s.ground, (0.0, 0.0), b, (-0.5, 0.0))
    >>> s.set_pose(b, (0.5, 0.0), 0.0)
    >>> model = s.build()
    >>> q0, v0 = model.initial_state()
    >>> GeneralizedAlpha().integrate(model, q0, v0, t_end=0.5, h=1e-3).status
    'ok'
    """

    def __init__(self, dim=3, gravity=None, name=None):
        if dim not in (2, 3):
            raise ValueError(f"dim must be 2 (planar) or 3 (spatial), got {dim!r}")
        self.dim = dim
        self.gravity = np.zeros(dim) if gravity is None else self._vec(gravity, "gravity")
        self.name = name
        self.ground = Body(0, "ground")
        self.bodies: list[Body] = []
        self.scalars: list[_Scalar] = []
        self.springs: list[_Spring] = []
        self.joints: list[tuple] = []
        self._pose: dict[int, np.ndarray] = {}
        self.drawn_points: dict[int, list] = {}   # body index -> body-fixed points its joints use (drawing)

    # -- bodies ----------------------------------------------------------------
    @property
    def block(self):
        r"""Coordinates per body: :math:`d\,(d + 1)`."""
        return self.dim * (self.dim + 1)

    @property
    def n(self):
        return self.block * len(self.bodies)

    def add_body(self, mass, pi=None, name=None, com=None, second_moments=None):
        r"""A body of mass ``mass`` with reference point :math:`r` and direction vectors :math:`e_j`.

        Give either ``pi`` = :math:`(\Pi_1, \ldots, \Pi_d)`, :math:`\Pi_j = \int \rho x_j^2\, dV` (:math:`r` at the
        centre of mass, :math:`e_j` along principal axes: the paper's case), or the full
        ``second_moments`` :math:`J_{jk} = \int \rho\, x_j x_k\, dV` about :math:`r` together with the
        centre of mass ``com`` in body coordinates.
        """
        d = self.dim
        mass = positive("mass", mass)
        if (pi is None) == (second_moments is None):
            raise ValueError("give exactly one of pi (principal second moments) or second_moments")
        if pi is not None:
            j = np.diag(self._vec(pi, "pi"))
        else:
            j = np.asarray(second_moments, dtype=float)
            if j.shape != (d, d) or not np.all(np.isfinite(j)) or np.max(np.abs(j - j.T)) > 1e-14 * np.max(np.abs(j)):
                raise ValueError(f"second_moments must be a finite symmetric ({d}, {d}) array")
        c = np.zeros(d) if com is None else self._vec(com, "com")
        s = self._small_mass(mass, c, j)
        if np.min(np.linalg.eigvalsh(s)) <= 0:
            raise ValueError("the body's mass matrix is not positive definite: check pi / second_moments "
                             "(in the plane both Pi_1, Pi_2 > 0; in space each Pi_j > 0)")
        b = Body(len(self.bodies) + 1, name or f"body{len(self.bodies) + 1}", self.n, mass, c, j)
        self.bodies.append(b)
        return b

    @staticmethod
    def _small_mass(m, c, j):
        d = len(c)
        s = np.zeros((d + 1, d + 1))
        s[0, 0] = m
        s[0, 1:] = s[1:, 0] = m * c
        s[1:, 1:] = j
        return s

    def set_pose(self, body, r, rotation):
        r"""Initial configuration of ``body``: reference point :math:`r` and the rotation
        (an angle in the plane, a 3x3 rotation matrix in space; its columns are :math:`e_j`)."""
        self._check_body(body, ground=False)
        r = self._vec(r, "r")
        if self.dim == 2:
            th = float(rotation)
            rot = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
        else:
            rot = np.asarray(rotation, dtype=float)
            if rot.shape != (3, 3) or np.max(np.abs(rot.T @ rot - np.eye(3))) > 1e-12:
                raise ValueError("rotation must be a 3x3 orthogonal matrix")
        self._pose[body.index] = np.concatenate([r, rot.T.ravel()])

    # -- linear vectors of a body --------------------------------------------
    def point(self, body, x):
        """Global position of the point with body coordinates :math:`x`: :math:`r + E x` (linear in :math:`q`)."""
        return self._body_fixed(body, x, "point")

    def vector(self, body, a):
        """Global components of the body-fixed vector with body components :math:`a`: :math:`E a`."""
        return self._body_fixed(body, a, "vector")

    def _body_fixed(self, body, x, kind):
        """r + E x (kind "point") or E x (kind "vector") of ``body``, E = [e_1 .. e_d]; the ground: x."""
        self._check_body(body)
        x = self._vec(x, kind)
        if kind == "point":
            seen = self.drawn_points.setdefault(body.index, [])
            if not any(np.array_equal(x, p) for p in seen):
                seen.append(x)
        if body.is_ground:
            return LinVec(self.dim, [], x)
        d = self.dim
        origin = [(body.offset, 1.0)] if kind == "point" else []
        return LinVec(d, _merge(origin + [(body.offset + d * (j + 1), x[j]) for j in range(d)]))

    def _perpendiculars(self, h):
        """Body components of vectors perpendicular to :math:`h`: one in the plane, two in space."""
        h = np.asarray(h, dtype=float)
        if np.linalg.norm(h) == 0:
            raise ValueError("axis vector must be nonzero")
        if self.dim == 2:
            return [np.array([-h[1], h[0]])]
        _, _, vt = np.linalg.svd(h.reshape(1, 3))
        return [vt[1], vt[2]]

    # -- the six primitives of seed 003 ---------------------------------------
    def _add(self, s, c, u, w, label):
        self.scalars.append(_Scalar(float(s), float(c), u, w, label))

    def perpendicular(self, bi, ai, bj, aj, label="perpendicular"):
        r"""(1) :math:`a_i \cdot a_j = 0`: the vectors :math:`a_i` on body i and :math:`a_j` on body j stay perpendicular."""
        self._add(1.0, 0.0, self.vector(bi, ai), self.vector(bj, aj), label)

    def perpendicular_offset(self, bi, ai, pi, bj, pj, label="perpendicular_offset"):
        r"""(2) :math:`a_i \cdot d_{ij} = 0` with :math:`d_{ij} = P_j - P_i`."""
        d = self.point(bj, pj) - self.point(bi, pi)
        self._add(1.0, 0.0, self.vector(bi, ai), d, label)

    def coincident(self, bi, pi, bj, pj, label="coincident"):
        """(3) :math:`P_j - P_i = 0` (:math:`d` equations)."""
        d = self.point(bj, pj) - self.point(bi, pi)
        for k in range(self.dim):
            self._add(1.0, 0.0, d, LinVec(self.dim, [], np.eye(self.dim)[k]), f"{label}[{k}]")

    def distance(self, bi, pi, bj, pj, length, label="distance"):
        r"""(4) :math:`d_{ij} \cdot d_{ij} - C^2 = 0`: the points keep the distance :math:`C`."""
        length = float(length)
        if not np.isfinite(length) or length <= 0:
            raise ValueError(f"distance length must be finite and > 0, got {length}")
        d = self.point(bj, pj) - self.point(bi, pi)
        self._add(1.0, length**2, d, d, label)

    def parallel(self, bi, hi, bj, hj, label="parallel"):
        r"""(5) :math:`h_i \parallel h_j`: the vectors perpendicular to :math:`h_i` on body i stay perpendicular to :math:`h_j`."""
        hj_ = self.vector(bj, hj)
        for k, f in enumerate(self._perpendiculars(hi)):
            self._add(1.0, 0.0, self.vector(bi, f), hj_, f"{label}[{k}]")

    def parallel_offset(self, bi, hi, pi, bj, pj, label="parallel_offset"):
        r"""(6) :math:`h_i \parallel d_{ij}`: the vectors perpendicular to :math:`h_i` stay perpendicular to :math:`P_j - P_i`."""
        d = self.point(bj, pj) - self.point(bi, pi)
        for k, f in enumerate(self._perpendiculars(hi)):
            self._add(1.0, 0.0, self.vector(bi, f), d, f"{label}[{k}]")

    # -- joints ------------------------------------------------------------------
    def _joint(self, kind, bi, bj, neq):
        self.joints.append((kind, bi.name, bj.name, neq))

    def spherical(self, bi, pi, bj, pj):
        r"""Spherical joint (space): :math:`P_i = P_j`, 3 equations."""
        self._need_dim(3, "spherical")
        self.coincident(bi, pi, bj, pj, label="spherical")
        self._joint("spherical", bi, bj, 3)

    def revolute(self, bi, pi, bj, pj, axis_i=None, axis_j=None):
        r"""Revolute joint at :math:`P_i = P_j`; in space about the axis :math:`h_i \parallel h_j`.
        Plane: 2 equations; space: 5."""
        self.coincident(bi, pi, bj, pj, label="revolute")
        if self.dim == 3:
            if axis_i is None or axis_j is None:
                raise ValueError("a spatial revolute joint needs axis_i and axis_j")
            self.parallel(bi, axis_i, bj, axis_j, label="revolute_axis")
        self._joint("revolute", bi, bj, 2 if self.dim == 2 else 5)

    def universal(self, bi, pi, ai, bj, pj, aj):
        r"""Universal (Hooke) joint (space): :math:`P_i = P_j` and the cross axes :math:`a_i`, :math:`a_j` stay perpendicular; 4 equations."""
        self._need_dim(3, "universal")
        self.coincident(bi, pi, bj, pj, label="universal")
        self.perpendicular(bi, ai, bj, aj, label="universal_cross")
        self._joint("universal", bi, bj, 4)

    def cylindrical(self, bi, pi, hi, bj, pj, hj):
        r"""Cylindrical joint (space): axes :math:`h_i \parallel h_j` and :math:`P_j` on the axis of body i; 4 equations."""
        self._need_dim(3, "cylindrical")
        self.parallel(bi, hi, bj, hj, label="cylindrical_axis")
        self.parallel_offset(bi, hi, pi, bj, pj, label="cylindrical_line")
        self._joint("cylindrical", bi, bj, 4)

    def prismatic(self, bi, pi, hi, bj, pj, hj, ui=None, uj=None):
        r"""Prismatic (translational) joint: slide along :math:`h_i \parallel h_j` with :math:`P_j` on the axis
        of body i.  Plane: 2 equations.  Space: 5; the rotation about the axis is
        locked by keeping ``ui`` (on body i) parallel to ``uj`` (on body j), both
        perpendicular to the axis (imposed as :math:`u_i \cdot (h_j \times u_j) = 0`)."""
        self.parallel(bi, hi, bj, hj, label="prismatic_axis")
        self.parallel_offset(bi, hi, pi, bj, pj, label="prismatic_line")
        if self.dim == 3:
            if ui is None or uj is None:
                raise ValueError("a spatial prismatic joint needs ui and uj (perpendicular to the axis)")
            hj_, uj_ = self._vec(hj, "hj"), self._vec(uj, "uj")
            self.perpendicular(bi, ui, bj, np.cross(hj_, uj_), label="prismatic_lock")
        self._joint("prismatic", bi, bj, 2 if self.dim == 2 else 5)

    def spring(self, bi, pi, bj, pj, stiffness, rest_length=0.0, damping=0.0):
        r"""Spring-damper between :math:`P_i` and :math:`P_j`: force magnitude :math:`k\,(l - l_0) + c\, \dot l`
        along :math:`P_j - P_i`."""
        vals = [nonnegative("stiffness", stiffness), nonnegative("rest_length", rest_length),
                nonnegative("damping", damping)]
        d = self.point(bj, pj) - self.point(bi, pi)
        self.springs.append(_Spring(d, *vals, label=f"spring {bi.name}-{bj.name}"))

    # -- checks --------------------------------------------------------------
    def _vec(self, x, name):
        return vector(name, x, self.dim)

    def _check_body(self, body, ground=True):
        if not isinstance(body, Body):
            raise TypeError(f"expected a Body of this system, got {body!r}")
        if body.is_ground:
            if not ground:
                raise ValueError("the ground has no coordinates")
            return
        if body.index > len(self.bodies) or self.bodies[body.index - 1] is not body:
            raise ValueError(f"body {body.name!r} does not belong to this system")

    def _need_dim(self, d, what):
        if self.dim != d:
            raise ValueError(f"a {what} joint needs a {'spatial' if d == 3 else 'planar'} system (dim={d})")

    # -- assembly --------------------------------------------------------------
    def direction_scalars(self):
        """The direction constraints (2) of every body."""
        out = []
        d = self.dim
        for b in self.bodies:
            e = [self.vector(b, np.eye(d)[j]) for j in range(d)]
            for j in range(d):
                out.append(_Scalar(0.5, 0.5, e[j], e[j], f"{b.name}: |e{j + 1}|^2 = 1"))
            for j in range(d):
                for k in range(j + 1, d):
                    out.append(_Scalar(1.0, 0.0, e[j], e[k], f"{b.name}: e{j + 1}.e{k + 1} = 0"))
        return out

    def build(self):
        """The assembled :class:`NaturalModel`."""
        if not self.bodies:
            raise ValueError("the system has no bodies")
        return NaturalModel(self)


class NaturalModel(Model):
    """A multibody system in natural coordinates, assembled by :class:`NaturalSystem`.

    Every item is analytic (the constraints are quadratic); energy = kinetic +
    gravity + spring potential (conserved when no spring has damping).
    Fortran twin: ``natural_system``.

    Examples
    --------
    >>> from pyint import RK4Index1, two_link_manipulator
    >>> model = two_link_manipulator()             # a NaturalModel (NaturalSystem.build)
    >>> q0, v0 = model.initial_state()
    >>> res = RK4Index1(projection="steps").integrate(model, q0, v0, t_end=0.5, h=1e-2)
    >>> type(model).__name__, res.status, res.eps_pos < 1e-12
    ('NaturalModel', 'ok', True)
    """

    fortran_name = "natural_system"
    constant_mass = True
    scleronomic = True

    def __init__(self, system: NaturalSystem):
        d, n = system.dim, system.n
        self.system = system
        self.dim = d
        self.name = system.name or f"natural{d}d_{len(system.bodies)}bodies"
        self.n = n
        self.scalars = system.direction_scalars() + list(system.scalars)
        self.n_hol = len(self.scalars)
        self.n_nonhol = 0
        self.springs = list(system.springs)
        self.conservative = all(s.damping == 0 for s in self.springs)
        self.constraint_labels = tuple(s.label for s in self.scalars)
        comp = "xyz"[:d]
        self.coord_names = tuple(f"{b.name}.{part}{c}" for b in system.bodies
                                 for part in ["r"] + [f"e{j + 1}" for j in range(d)] for c in comp)
        self.coord_units = tuple(u for b in system.bodies for u in ["m"] * d + ["1"] * (d * d))
        # constant mass matrix and gravity force
        self._m = np.zeros((n, n))
        self._fg = np.zeros(n)
        blk = d * (d + 1)
        for b in system.bodies:
            s = NaturalSystem._small_mass(b.mass, b.com, b.second_moments)
            sl = slice(b.offset, b.offset + blk)
            self._m[sl, sl] = np.kron(s, np.eye(d))
            self._fg[sl] = np.kron(s[0], system.gravity)
        # dense constraint data: Phi_k = s_k (U_k q + u0_k).(W_k q + w0_k) - c_k
        m = self.n_hol
        self._s = np.array([c.s for c in self.scalars])
        self._c = np.array([c.c for c in self.scalars])
        self._U = np.array([c.u.matrix(n) for c in self.scalars]).reshape(m, d, n)
        self._W = np.array([c.w.matrix(n) for c in self.scalars]).reshape(m, d, n)
        self._u0 = np.array([c.u.const for c in self.scalars]).reshape(m, d)
        self._w0 = np.array([c.w.const for c in self.scalars]).reshape(m, d)
        # The Hessians H_k = s_k (U_k^T W_k + W_k^T U_k) are used only through U and W: stored, they
        # would take m n^2 doubles (0.9 GB and 9 s for IFToMM A02 with N = 40).
        self._D = np.array([sp.d.matrix(n) for sp in self.springs]).reshape(len(self.springs), d, n)
        self._d0 = np.array([sp.d.const for sp in self.springs]).reshape(len(self.springs), d)
        self._q0 = (np.concatenate([system._pose[b.index] for b in system.bodies])
                    if all(b.index in system._pose for b in system.bodies) else None)

    # -- constraint vectors ------------------------------------------------------
    def _uw(self, q):
        u = self._U @ q + self._u0
        w = self._W @ q + self._w0
        return u, w

    # -- the model -----------------------------------------------------------------
    def mass(self, q):
        return self._m.copy()

    def force(self, t, q, v):
        f = self._fg.copy()
        for k in range(len(self.springs)):
            f += self._D[k].T @ self._spring_phi(q, v, k)[0]
        return f

    def _spring_phi(self, q, v, k):
        """Force on the line vector d (its generalized force is D^T phi) and its derivatives."""
        sp = self.springs[k]
        d = self._D[k] @ q + self._d0[k]
        dd = self._D[k] @ v
        ell = np.linalg.norm(d)
        if ell == 0:
            raise FloatingPointError(f"{sp.label}: the two points coincide (direction undefined)")
        u = d / ell
        ldot = u @ dd
        mag = sp.stiffness * (ell - sp.rest_length) + sp.damping * ldot
        proj = (np.eye(self.dim) - np.outer(u, u)) / ell
        phi = -mag * u
        phi_d = -np.outer(u, sp.stiffness * u + sp.damping * (proj @ dd)) - mag * proj
        phi_dd = -sp.damping * np.outer(u, u)
        return phi, phi_d, phi_dd

    def force_jac(self, t, q, v):
        fq = np.zeros((self.n, self.n))
        fv = np.zeros((self.n, self.n))
        for k in range(len(self.springs)):
            _, pd, pv = self._spring_phi(q, v, k)
            fq += self._D[k].T @ pd @ self._D[k]
            fv += self._D[k].T @ pv @ self._D[k]
        return fq, fv

    def hol(self, t, q):
        u, w = self._uw(q)
        return self._s * np.einsum("ka,ka->k", u, w) - self._c

    def hol_jac(self, t, q):
        u, w = self._uw(q)
        return self._s[:, None] * (np.einsum("ka,kan->kn", w, self._U) + np.einsum("ka,kan->kn", u, self._W))

    def hol_vel_q(self, t, q, v):
        # (G(q) v)_q = H_k v: G is linear in q; H_k v = s_k (U_k^T (W_k v) + W_k^T (U_k v))
        uv, wv = self._U @ v, self._W @ v
        return self._s[:, None] * (np.einsum("ka,kan->kn", wv, self._U) + np.einsum("ka,kan->kn", uv, self._W))

    def hol_gamma(self, t, q, v):
        # v^T H_k v = 2 s_k (U_k v).(W_k v)
        return 2.0 * self._s * np.einsum("ka,ka->k", self._U @ v, self._W @ v)

    def hol_gtl_q(self, t, q, lam):
        # sum_k lam_k H_k = X + X^T, X = sum_k lam_k s_k U_k^T W_k: one (n x m d) (m d x n) product
        m, d, n = self._U.shape
        x = (self._U * (lam * self._s)[:, None, None]).reshape(m * d, n).T @ self._W.reshape(m * d, n)
        return x + x.T

    def energy(self, t, q, v):
        e = 0.5 * v @ self._m @ v - self._fg @ q
        for k, sp in enumerate(self.springs):
            ell = np.linalg.norm(self._D[k] @ q + self._d0[k])
            e += 0.5 * sp.stiffness * (ell - sp.rest_length) ** 2
        return float(e)

    # -- natural-coordinate extras --------------------------------------------
    def direction_error(self, q):
        r""":math:`\Delta = \max_\text{bodies} \max \lvert E^\mathsf{T} E - I\rvert` (:math:`E = [e_1 \ldots e_d]`) at each
        sample of ``q`` (shape (..., n))."""
        d, blk = self.dim, self.dim * (self.dim + 1)
        q = np.asarray(q, dtype=float)
        qb = q.reshape(q.shape[:-1] + (len(self.system.bodies), blk))
        e = qb[..., d:].reshape(qb.shape[:-1] + (d, d))      # rows: e_1, ..., e_d
        gram = np.einsum("...ia,...ja->...ij", e, e) - np.eye(d)
        return np.max(np.abs(gram), axis=(-1, -2, -3))

    def dataset_variables(self, result):
        """(coords, variables) natural coordinates add to :meth:`pyint.results.Result.to_xarray`: the
        direction-vector error Delta (seed 003) at each sample and its maximum over the samples."""
        delta = self.direction_error(result.q) if len(result.q) else np.zeros(0)
        return {}, {
            "delta": ("time", delta, {"units": "1", "long_name": "direction-vector error Delta = max |E^T E - I|"}),
            "direction_error": ((), float(np.max(delta, initial=0.0)),
                                {"units": "1", "long_name": "max of Delta = max |E^T E - I| over the samples"}),
        }

    def initial_state(self):
        """(q0, v0 = 0) from the poses given with :meth:`NaturalSystem.set_pose`."""
        if self._q0 is None:
            raise ValueError("set_pose was not called for every body")
        return self._q0.copy(), np.zeros(self.n)

    def drawing(self, q):
        """What :func:`pyint.plotting.animate` draws: each body as the polyline through the points
        its joints and springs use (r + E x), or from r to its one point; the ground's points alone."""
        q = np.asarray(q, dtype=float)
        d, blk = self.dim, self.dim * (self.dim + 1)
        lines = []
        for b in [self.system.ground] + self.system.bodies:
            pts = self.system.drawn_points.get(b.index, [])
            if b.is_ground:
                lines.extend(np.asarray([p]) for p in pts)
                continue
            r = q[b.offset:b.offset + d]
            e = q[b.offset + d:b.offset + blk].reshape(d, d).T    # columns e_j
            world = [r + e @ p for p in pts]
            lines.append(np.asarray(world if len(world) > 1 else [r] + world))
        return lines

    def describe(self):
        d = super().describe()
        d.update(dim=self.dim, bodies=[b.name for b in self.system.bodies],
                 joints=[f"{k} {a}-{b}" for k, a, b, _ in self.system.joints],
                 springs=len(self.springs), gravity=self.system.gravity.tolist())
        return d

    def fortran_params(self):
        """ipar/rpar of fortran/models/natural_system.f90 (layout documented there).

        Built once (read-only arrays): the model is a snapshot of its system (its scalars, springs,
        mass matrix and gravity force are taken at construction), and building the lists in Python
        cost 1 ms per call on IFToMM A04 (60 rows), twice per integrate call (run, residuals)."""
        if getattr(self, "_fparams", None) is None:
            ipar, rpar = self._build_fortran_params()
            ipar.setflags(write=False)
            rpar.setflags(write=False)
            self._fparams = (ipar, rpar)
        return self._fparams

    def _build_fortran_params(self):
        sysm = self.system
        d = self.dim
        vecs = []                       # every linear vector, once per use
        for c in self.scalars:
            vecs += [c.u, c.w]
        vecs += [sp.d for sp in self.springs]
        ipar = [d, len(sysm.bodies), self.n_hol, len(self.springs), len(vecs)]
        ipar += [len(v.terms) for v in vecs]
        ipar += [o for v in vecs for o, _ in v.terms]
        rpar = list(sysm.gravity)
        for b in sysm.bodies:
            rpar += list(NaturalSystem._small_mass(b.mass, b.com, b.second_moments).ravel(order="F"))
        for c in self.scalars:
            rpar += [c.s, c.c]
        for sp in self.springs:
            rpar += [sp.stiffness, sp.rest_length, sp.damping]
        for v in vecs:
            rpar += [cf for _, cf in v.terms] + list(v.const)
        return np.array(ipar, dtype=np.int32), np.array(rpar, dtype=float)

    @classmethod
    def example(cls):
        """A spatial chain along x with every joint type, a distance, a (2) and a
        spring-damper, assembled at rest in the identity orientation (7 DOF)."""
        s = NaturalSystem(dim=3, gravity=(0.0, 0.0, -9.81), name="natural3d_example")
        x, y, z = np.eye(3)
        b1 = s.add_body(2.0, pi=(0.2, 0.01, 0.01), name="crank")
        b2 = s.add_body(1.5, name="cross", com=(0.05, 0.0, 0.0),
                        second_moments=[[0.1, 0.01, 0.0], [0.01, 0.02, 0.0], [0.0, 0.0, 0.01]])
        b3 = s.add_body(1.0, pi=(0.05, 0.05, 0.002), name="sleeve")
        b4 = s.add_body(0.5, pi=(0.01, 0.003, 0.003), name="slider")
        b5 = s.add_body(0.3, pi=(0.002, 0.002, 0.002), name="bob")
        s.revolute(s.ground, (0, 0, 0), b1, (-0.5, 0, 0), axis_i=z, axis_j=z)
        s.universal(b1, (0.5, 0, 0), y, b2, (-0.3, 0, 0), z)
        s.cylindrical(b2, (0.3, 0, 0), x, b3, (0, 0, 0), x)
        s.prismatic(b3, (0, 0, 0), x, b4, (0.1, 0, 0), x, ui=y, uj=y)
        s.spherical(b4, (0.2, 0, 0), b5, (0, 0, 0.3))
        s.distance(s.ground, (2.0, 0.0, 1.0), b5, (0, 0, -0.1), np.sqrt(2.0))
        s.perpendicular_offset(b1, z, (0, 0, 0), b3, (0, 0, 0))
        s.spring(s.ground, (0.0, 1.0, 0.0), b3, (0.1, 0.0, 0.0), stiffness=5.0, rest_length=2.0, damping=0.7)
        for b, r in ((b1, (0.5, 0, 0)), (b2, (1.3, 0, 0)), (b3, (1.8, 0, 0)), (b4, (2.0, 0, 0)), (b5, (2.2, 0, -0.3))):
            s.set_pose(b, r, np.eye(3))
        return s.build()


#: Seed 003's mechanisms moved to :mod:`pyint.models.natural_mechanisms`: importable from here for one
#: release, with a warning (imported on first use: that module builds on this one).
_MOVED = ("two_link_manipulator", "parallelogram")


def __getattr__(name):
    if name in _MOVED:
        import importlib
        import warnings
        warnings.warn(f"pyint.models.natural.{name} moved to pyint.models.natural_mechanisms.{name} "
                      f"(also pyint.models.{name})", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module("pyint.models.natural_mechanisms"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
