"""Mechanisms of the IFToMM / A Coruña multibody benchmark library.

The library (M. Gonzalez, D. Dopico, U. Lugris, J. Cuadrado, "A benchmarking system for MBS
simulation software: problem standardization and performance measurement", Multibody System
Dynamics 16 (2006) 179-190; problem pages http://lim.ii.udc.es/mbsbenchmark/dist/A0k/, now
https://www.iftomm-multibody.org/benchmark/) poses its problems as mechanisms, not as equations:
each function below assembles one, in natural coordinates (seed 003, :mod:`pyint.models.natural`)
or, for A03, in the relative angles of its classical formulation, so its whole time loop runs in
Fortran, and says which point the benchmark reports.  The study ``iftomm_benchmarks``
(studies/iftomm_benchmarks.py) runs them and holds the benchmarks' specifications.

* :func:`n_four_bar` -- A02, N four-bar windows: 2N + 1 uniform bars (1 m, 1 kg), N + 1 cranks
  pinned to the ground at x = 0, 1, ..., N and N couplers on their tips; cranks vertical at t = 0,
  B0 (the tip of the first crank) moving at 1 m/s along +x; gravity 9.81 along -y.  One degree of
  freedom, N + 1 whenever the cranks are horizontal (a singular configuration).
* :func:`n_four_bar_spatial` -- A02 built in space from revolute joints, the way a planar loop is
  modelled in 3D: a :class:`~pyint.models.rigid_bodies.RigidBodySystem` for the Lie-group methods,
  with 3N redundant joint rows besides the singular configurations; :func:`n_four_bar_state`,
  :func:`n_four_bar_point`, :func:`n_four_bar_reduced` and :func:`n_four_bar_reduced_motion` serve both models.
* :func:`andrews` -- A03, Andrews' squeezing mechanism: seven planar bodies in Hairer & Wanner's
  seven relative angles (Solving ODEs II, sec. VII.7), six loop-closure equations, a motor torque
  against a stiff spring; a :class:`~pyint.models.SymbolicModel` (M depends on q), compiled to
  Fortran like the NaturalSystem models.  Reported point: F, the crank's tip.
* :func:`bricard` -- A04, Bricard's mechanism: five bars (1 m, 1 kg, square section 0.1 m) closed
  by the ground through six revolute joints; Grubler's count gives 0 degrees of freedom, the
  mechanism has 1: one constraint is redundant.

A01, the simple pendulum (a 1 kg point mass on a massless 1 m bar), is the built-in
:class:`~pyint.models.PendulumChain` with one link.

Bars are slender: the planar bar has J = diag(Pi_1, Pi_2) with Pi_1 + Pi_2 = m L^2 / 12 (in the
plane only the sum enters the kinetic energy, 1/2 (Pi_1 + Pi_2) omega^2, because |e_1'| = |e_2'| =
|omega|); it is split evenly so the mass matrix stays positive definite.
"""
from __future__ import annotations

import numpy as np

from ._params import integer, positive
from .natural import NaturalSystem
from .rigid_bodies import Body, RigidBodySystem, revolute
from .so3 import expm

G = 9.81


def n_four_bar(n=2, mass=1.0, length=1.0, g=G):
    """A02: the assembly of ``n`` four-bar windows (2n + 1 bars), cranks vertical, at rest.

    Bodies, in order: crank 0, then for k = 1..n coupler k and crank k.  Every bar has r at its
    centre and e_1 along it (cranks: e_1 upward at t = 0).  The model's ``initial_state`` is at
    rest; :func:`n_four_bar_state` gives the state at any crank angle and rate (the benchmark's
    start: angle 0, rate 1 m/s / L, B0 moving along +x).  ``model.params`` holds the data,
    ``model.iftomm`` the body offsets the reported point B0 needs.
    """
    n = integer("n", n, minimum=1)
    m, L = positive("mass", mass), positive("length", length)
    s = NaturalSystem(dim=2, gravity=(0.0, -g), name=f"iftomm_a02_n{n}")
    pi = (m * L**2 / 24, m * L**2 / 24)
    bottom, top = (-L / 2, 0.0), (L / 2, 0.0)
    cranks, couplers = [], []
    for k in range(n + 1):
        if k:
            c = s.add_body(m, pi=pi, name=f"coupler{k}")
            s.set_pose(c, ((k - 0.5) * L, L), 0.0)
            couplers.append(c)
        b = s.add_body(m, pi=pi, name=f"crank{k}")
        s.set_pose(b, (k * L, L / 2), np.pi / 2)
        s.revolute(s.ground, (k * L, 0.0), b, bottom)   # pivots L apart
        if k:
            s.revolute(cranks[-1], top, c, bottom)
            s.revolute(b, top, c, top)
        cranks.append(b)
    model = s.build()
    model.params = dict(n=n, mass=m, length=L, g=g)
    model.iftomm = dict(cranks=[b.offset for b in cranks], couplers=[c.offset for c in couplers])
    return model


#: the plane of :func:`n_four_bar_spatial`'s loop by default: a generic orientation (no joint axis
#: or bar along a world axis), so no row of the joints' Jacobian vanishes by accident of the layout
A02_FRAME = expm(np.array([0.3, -0.5, 0.7]))


def n_four_bar_spatial(n=2, mass=1.0, length=1.0, g=G, frame=None):
    """A02 in space: the bars of :func:`n_four_bar` as rigid bodies, joined by spatial revolute joints.

    The planar mechanism in the plane spanned by the first two columns of ``frame`` (a rotation;
    default :data:`A02_FRAME`, a generic orientation), its normal the third: plane coordinates
    (X, Y, Z) are the world point ``frame @ (X, Y, Z)``.  Bodies in the order of
    :func:`n_four_bar` (crank 0, then coupler k and crank k for k = 1..n), each a slender rod
    along its body x axis with J = m L^2 / 12 (1/100, 1, 1) (only the transverse inertia m L^2 / 12
    enters the planar motion; the axial one keeps J positive definite), the hinges along body z.
    Crank k is hinged to the ground at plane point (k L, 0, 0); couplers join the cranks' tips.
    Gravity ``frame @ (0, -g, 0)``.

    Each of the 3n + 1 revolute joints gives 5 rows (:func:`~pyint.models.rigid_bodies.revolute`):
    15n + 5 rows on 6 (2n + 1) velocities, rank 12n + 5 (mobility 1), so 3n rows are redundant --
    a planar loop closed in space -- and the start reports them (``Result.redundant``).  Whenever
    the cranks are horizontal the rank drops by n more (mobility n + 1: the singular configuration
    of A02).  The exact motion is the planar one: :func:`n_four_bar_reduced` holds for both models.

    Returns the system; ``model.params`` holds the data, ``model.iftomm`` the frame and the body
    indices of cranks and couplers.  :func:`n_four_bar_state` gives its state (flat q, V),
    :func:`n_four_bar_point` the reported point B0 in plane coordinates.

    Examples
    --------
    >>> from pyint.models.iftomm import n_four_bar_spatial, n_four_bar_state
    >>> s = n_four_bar_spatial(2)
    >>> s.nb, s.m, len(s.independent_rows(s.unpack(n_four_bar_state(s, 0.3, 1.0)[0])[1]))
    (5, 35, 29)
    """
    n = integer("n", n, minimum=1)
    m, L = positive("mass", mass), positive("length", length)
    g = positive("g", g)
    frame = A02_FRAME if frame is None else np.asarray(frame, dtype=float)
    if frame.shape != (3, 3) or not np.allclose(frame.T @ frame, np.eye(3), atol=1e-12) or np.linalg.det(frame) <= 0:
        raise ValueError(f"frame must be a 3x3 rotation matrix, got {frame!r}")
    rod = (m * L**2 / 1200, m * L**2 / 12, m * L**2 / 12)
    z, zb, h = frame[:, 2], (0.0, 0.0, 1.0), (L / 2, 0.0, 0.0)
    mh = (-L / 2, 0.0, 0.0)
    bodies, joints, cranks, couplers = [], [], [], []
    for k in range(n + 1):
        if k:
            couplers.append(len(bodies))
            bodies.append(Body(m, rod, f"coupler{k}"))
        cranks.append(len(bodies))
        bodies.append(Body(m, rod, f"crank{k}"))
        c = cranks[-1]
        joints += revolute(c, mh, zb, None, frame @ (k * L, 0.0, 0.0), z)
        if k:                                   # coupler k from crank k-1's tip to crank k's tip
            joints += revolute(cranks[-2], h, zb, couplers[-1], mh, zb)
            joints += revolute(c, h, zb, couplers[-1], h, zb)
    model = RigidBodySystem(bodies, joints, gravity=tuple(frame @ (0.0, -g, 0.0)), name=f"iftomm_a02_n{n}_spatial")
    model.params = dict(n=n, mass=m, length=L, g=g)
    model.iftomm = dict(cranks=cranks, couplers=couplers, frame=frame)
    return model


def _rotz(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _spatial_state(model, theta, omega):
    """n_four_bar_state of n_four_bar_spatial: the crank's body x axis at (sin theta, cos theta, 0)
    in the plane, i.e. R = F rotz(pi/2 - theta), body angular velocity (0, 0, -omega)."""
    L, F = model.params["length"], model.iftomm["frame"]
    e = np.array([np.sin(theta), np.cos(theta), 0.0])
    de = omega * np.array([np.cos(theta), -np.sin(theta), 0.0])
    x, rot = np.zeros((model.nb, 3)), np.zeros((model.nb, 3, 3))
    v = np.zeros(model.nv)
    for k, b in enumerate(model.iftomm["cranks"]):
        x[b], rot[b] = F @ ((k * L, 0.0, 0.0) + L / 2 * e), F @ _rotz(np.pi / 2 - theta)
        v[6 * b:6 * b + 6] = np.concatenate([F @ (L / 2 * de), (0.0, 0.0, -omega)])
    for k, b in enumerate(model.iftomm["couplers"], start=1):
        x[b], rot[b] = F @ (((k - 0.5) * L, 0.0, 0.0) + L * e), F
        v[6 * b:6 * b + 3] = F @ (L * de)
    return model.pack(x, rot), v


def n_four_bar_state(model, theta, omega):
    """(q, v) of :func:`n_four_bar` with every crank at angle ``theta`` from the upward vertical
    (clockwise positive: B0 = L (sin theta, cos theta)) turning at ``omega``; the couplers
    translate.  Exact on the constraint manifold: the reduced solution's full state.  For
    :func:`n_four_bar_spatial` the same in its plane: q the flat configuration
    (:meth:`~pyint.models.rigid_bodies.RigidBodySystem.pack`), v the bodies' V."""
    if isinstance(model, RigidBodySystem):
        return _spatial_state(model, theta, omega)
    L = model.params["length"]
    q = np.zeros(model.n)
    v = np.zeros(model.n)
    st, ct = np.sin(theta), np.cos(theta)
    e1, de1 = np.array([st, ct]), omega * np.array([ct, -st])
    e2, de2 = np.array([-ct, st]), omega * np.array([st, ct])
    for k, off in enumerate(model.iftomm["cranks"]):
        q[off:off + 6] = np.concatenate([(k * L + L / 2 * st, L / 2 * ct), e1, e2])
        v[off:off + 6] = np.concatenate([L / 2 * de1, de1, de2])
    for k, off in enumerate(model.iftomm["couplers"], start=1):
        q[off:off + 6] = np.concatenate([((k - 0.5) * L + L * st, L * ct), (1.0, 0.0), (0.0, 1.0)])
        v[off:off + 2] = L * de1
    return q, v


def n_four_bar_reduced(n, mass=1.0, length=1.0, g=G):
    """(J, K) of the reduced equation J theta'' = K g sin(theta) of :func:`n_four_bar` (all cranks
    parallel at theta from the upward vertical): J = (n + 1) m L^2 / 3 + n m L^2 (cranks about
    their pivots, couplers translating with the crank tips), K = (n + 1) m L / 2 + n m L."""
    return (n + 1) * mass * length**2 / 3 + n * mass * length**2, (n + 1) * mass * length / 2 + n * mass * length



def n_four_bar_reduced_motion(n, times, mass=1.0, length=1.0, g=G):
    """(theta, omega) at ``times`` (increasing, in [0, times[-1]]) of the reduced equation of
    :func:`n_four_bar_reduced` from the benchmark's start, theta = 0 and B0' = 1 m/s (omega = 1 /
    length): DOP853, rtol = atol = 1e-12.  The reference of A02, planar and in space."""
    from scipy.integrate import solve_ivp
    jj, kk = n_four_bar_reduced(n, mass, length, g)
    times = np.asarray(times, dtype=float)
    return solve_ivp(lambda _, y: (y[1], kk * g / jj * np.sin(y[0])), (0.0, times[-1]), (0.0, 1.0 / length),
                     method="DOP853", rtol=1e-12, atol=1e-12, t_eval=times).y

def n_four_bar_reduced_point(theta, omega, length=1.0):
    """Position and velocity of B0 (the tip of crank 0), (..., 2) each, at crank angles ``theta``
    (from the upward vertical, clockwise positive) and rates ``omega`` (e.g. from
    :func:`n_four_bar_reduced_motion`): the reference that :func:`n_four_bar_point` is compared with."""
    theta, omega = np.asarray(theta, dtype=float), np.asarray(omega, dtype=float)
    pos = length * np.stack([np.sin(theta), np.cos(theta)], axis=-1)
    vel = length * omega[..., None] * np.stack([np.cos(theta), -np.sin(theta)], axis=-1)
    return pos, vel


def n_four_bar_point(model, q, v):
    """Position and velocity of B0 (the tip of crank 0) at each sample of q, v (..., n): (..., 2) each.
    For :func:`n_four_bar_spatial`: B0 in the loop's plane coordinates (X, Y); its distance from
    the plane is the pivot's, held by the joints' position rows."""
    L = model.params["length"]
    if isinstance(model, RigidBodySystem):
        b, F = model.iftomm["cranks"][0], model.iftomm["frame"]
        q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
        x, rot = q[..., 12 * b:12 * b + 3], q[..., 12 * b + 3:12 * b + 12].reshape(q.shape[:-1] + (3, 3))
        tip = L / 2 * rot[..., :, 0]                        # R (L/2, 0, 0)
        om = v[..., 6 * b + 3:6 * b + 6]
        # d/dt R s = R (Omega x s); with s = (L/2, 0, 0): Omega x s = L/2 (0, Omega_z, -Omega_y)
        dtip = L / 2 * (rot[..., :, 1] * om[..., 2:3] - rot[..., :, 2] * om[..., 1:2])
        pos, vel = (x + tip) @ F, (v[..., 6 * b:6 * b + 3] + dtip) @ F
        return pos[..., :2], vel[..., :2]
    off = model.iftomm["cranks"][0]
    q, v = np.asarray(q), np.asarray(v)
    return q[..., off:off + 2] + L / 2 * q[..., off + 2:off + 4], v[..., off:off + 2] + L / 2 * v[..., off + 2:off + 4]


#: Bricard's mechanism (A04): the six joint points P0 .. P5 (P0 and P5 on the ground) and the
#: revolute axis at each, in global coordinates at t = 0, for L = 1: the five bars go P0 -> P1 -> ...
#: -> P5 along +x, -y, +z, -x, +y, the ground closes the loop P5 -> P0 along -z, and each bar's two
#: axes are perpendicular to it and to each other (the geometry of the library's figure, also
#: Exudyn's TestModels/bricardMechanism.py).
BRICARD_POINTS = np.array([[0, 0, 0], [1, 0, 0], [1, -1, 0], [1, -1, 1], [0, -1, 1], [0, 0, 1]], dtype=float)
BRICARD_AXES = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=float)


def bricard(mass=1.0, length=1.0, side=0.1, g=G, drop_rows=()):
    """A04: Bricard's mechanism at rest in its initial configuration, gravity along -y.

    Five bars of mass ``mass``, length ``length`` and square section ``side`` x ``side``
    (Pi = m (L^2, a^2, a^2) / 12 about the centre, e_1 along the bar), six spatial revolute
    joints (5 equations each): 60 coordinates, 60 constraints of rank 59.  ``drop_rows`` removes
    joint equations by index into the joint rows (after the 30 direction rows): the non-redundant
    twin the reference integrates.  ``model.iftomm["p3"]`` = (body offset, body point) of the
    reported point P3 (the joint between bars 3 and 4, at (L, -L, L) at t = 0).
    """
    m, L, a = positive("mass", mass), positive("length", length), positive("side", side)
    s = NaturalSystem(dim=3, gravity=(0.0, -g, 0.0), name="iftomm_a04_bricard" + ("_twin" if drop_rows else ""))
    pts, axes = BRICARD_POINTS * L, BRICARD_AXES
    pi = (m * L**2 / 12, m * a**2 / 12, m * a**2 / 12)
    bodies, rots = [], []
    for k in range(5):
        e1 = (pts[k + 1] - pts[k]) / L
        e2 = axes[k]
        rot = np.column_stack([e1, e2, np.cross(e1, e2)])
        b = s.add_body(m, pi=pi, name=f"bar{k + 1}")
        s.set_pose(b, (pts[k] + pts[k + 1]) / 2, rot)
        bodies.append(b)
        rots.append(rot)
    start, end = (-L / 2, 0.0, 0.0), (L / 2, 0.0, 0.0)
    s.revolute(s.ground, pts[0], bodies[0], start, axis_i=axes[0], axis_j=rots[0].T @ axes[0])
    for k in range(1, 5):
        s.revolute(bodies[k - 1], end, bodies[k], start, axis_i=rots[k - 1].T @ axes[k], axis_j=rots[k].T @ axes[k])
    s.revolute(bodies[4], end, s.ground, pts[5], axis_i=rots[4].T @ axes[5], axis_j=axes[5])
    if drop_rows:
        keep = [i for i in range(len(s.scalars)) if i not in set(int(r) for r in drop_rows)]
        s.scalars = [s.scalars[i] for i in keep]
    model = s.build()
    model.params = dict(mass=m, length=L, side=a, g=g)
    model.iftomm = dict(p3=(bodies[2].offset, np.array(end)))
    return model


def bricard_point(model, q, v):
    """Position and velocity of P3 at each sample of q, v (..., 60): (..., 3) each."""
    off, x = model.iftomm["p3"]
    q, v = np.asarray(q), np.asarray(v)

    def at(z):
        return z[..., off:off + 3] + sum(x[j] * z[..., off + 3 * (j + 1):off + 3 * (j + 2)] for j in range(3))
    return at(q), at(v)


#: Andrews' squeezing mechanism (A03): the data of Hairer & Wanner, Solving ODEs II, sec. VII.7
#: (after Schiehlen 1990 and Giles 1978), the same in the Test Set for IVP Solvers (Mazzia and
#: Magherini, problem "andrews"): masses [kg], inertias about the centres [kg m^2], lengths and
#: offsets [m], the spring (c0 [N/m], rest length l0) and the motor torque mom [N m] on body 1.
ANDREWS_PARAMS = dict(
    m1=0.04325, m2=0.00365, m3=0.02373, m4=0.00706, m5=0.07050, m6=0.00706, m7=0.05498,
    xa=-0.06934, ya=-0.00227, xb=-0.03635, yb=0.03273, xc=0.014, yc=0.072, c0=4530.0,
    i1=2.194e-6, i2=4.410e-7, i3=5.255e-6, i4=5.667e-7, i5=1.169e-5, i6=5.667e-7, i7=1.912e-5,
    d=28e-3, da=115e-4, e=2e-2, ea=1421e-5, rr=7e-3, ra=92e-5, l0=7785e-5, ss=35e-3, sa=1874e-5,
    sb=1043e-5, sc=18e-3, sd=2e-2, ta=2308e-5, tb=916e-5, u=4e-2, ua=1228e-5, ub=449e-5, zf=2e-2,
    zt=4e-2, fa=1421e-5, mom=33e-3)
#: The consistent start at rest (Hairer & Wanner II, eq. VII.7.4; the Test Set to 30 digits): the
#: seven angles beta, Theta, gamma, Phi, delta, Omega, epsilon [rad].
ANDREWS_Q0 = np.array([-0.0617138900142764496358948458001, 0.0, 0.455279819163070380255912382449,
                       0.222668390165885884674473185609, 0.487364979543842550225598953530,
                       -0.222668390165885884674473185609, 1.23054744454982119249735015568])
ANDREWS_NAMES = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")


def andrews(**params):
    """A03: Andrews' squeezing mechanism, seven planar bodies in relative angle coordinates
    q = (beta, Theta, gamma, Phi, delta, Omega, epsilon): the mass matrix M(q), the six loop-closure
    equations g(q) = 0 (the points E of the three loops through A and B) and the generalized forces
    of Hairer & Wanner II sec. VII.7, compiled from SymPy (:class:`~pyint.models.SymbolicModel`).
    One degree of freedom, no gravity, driven by the constant torque mom on beta against the spring
    C-D.  The velocity terms of the forces are the Coriolis and centrifugal terms of M(q), here
    derived from M by Christoffel's symbols, f = -(dM/dt) v + (1/2) d(v^T M v)/dq (Hairer & Wanner
    print them written out; tests/test_iftomm.py checks both agree); the spring and the torque
    come from the potential V = c0 (l - l0)^2 / 2 - mom beta, so T + V is conserved (the
    benchmark's energy balance E - E0 = mom (beta - beta0)).  ``params`` override
    :data:`ANDREWS_PARAMS`.  Start: :data:`ANDREWS_Q0` at rest."""
    import sympy as sp
    from .symbolic import SymbolicModel

    unknown = set(params) - set(ANDREWS_PARAMS)
    if unknown:
        raise ValueError(f"andrews: unknown parameters {sorted(unknown)}; known: {sorted(ANDREWS_PARAMS)}")
    values = {**ANDREWS_PARAMS, **{k: positive(k, v) if k not in ("xa", "ya", "xb", "yb", "xc", "yc") else float(v)
                                   for k, v in params.items()}}
    P = {k: sp.Symbol(k) for k in ANDREWS_PARAMS}
    q = sp.symbols("beta Theta gamma Phi delta Omega epsilon")
    v = sp.symbols("beta_d Theta_d gamma_d Phi_d delta_d Omega_d epsilon_d")
    be, th, ga, ph, de, om, ep = q
    globals_ = dict(P)
    m1, m2, m3, m4, m5, m6, m7 = (globals_[f"m{k}"] for k in range(1, 8))
    i1, i2, i3, i4, i5, i6, i7 = (globals_[f"i{k}"] for k in range(1, 8))
    xa, ya, xb, yb, xc, yc = (globals_[k] for k in ("xa", "ya", "xb", "yb", "xc", "yc"))
    c0, l0, mom = globals_["c0"], globals_["l0"], globals_["mom"]
    d, da, e, ea, rr, ra, ss, sa, sb, sc, sd, ta, tb, u, ua, ub, zf, zt, fa = (
        globals_[k] for k in ("d", "da", "e", "ea", "rr", "ra", "ss", "sa", "sb", "sc", "sd", "ta", "tb", "u",
                              "ua", "ub", "zf", "zt", "fa"))
    cos, sin = sp.cos, sp.sin
    M = sp.zeros(7, 7)
    M[0, 0] = m1 * ra**2 + m2 * (rr**2 - 2 * da * rr * cos(th) + da**2) + i1 + i2
    M[1, 1] = m2 * da**2 + i2
    M[2, 2] = m3 * (sa**2 + sb**2) + i3
    M[3, 3] = m4 * (e - ea)**2 + i4
    M[4, 4] = m4 * (zt**2 + 2 * zt * (e - ea) * sin(ph) + (e - ea)**2) + m5 * (ta**2 + tb**2) + i4 + i5
    M[5, 5] = m6 * (zf - fa)**2 + i6
    M[6, 6] = m6 * ((zf - fa)**2 - 2 * u * (zf - fa) * sin(om) + u**2) + m7 * (ua**2 + ub**2) + i6 + i7
    M[0, 1] = M[1, 0] = m2 * (da**2 - da * rr * cos(th)) + i2
    M[3, 4] = M[4, 3] = m4 * ((e - ea)**2 + zt * (e - ea) * sin(ph)) + i4
    M[5, 6] = M[6, 5] = m6 * ((zf - fa)**2 - u * (zf - fa) * sin(om)) + i6
    vv = sp.Matrix(v)
    qdot_M = sum((M.diff(qk) * vk for qk, vk in zip(q, v)), sp.zeros(7, 7))        # dM/dt
    kinetic = (vv.T * M * vv)[0, 0] / 2
    coriolis = -qdot_M * vv + sp.Matrix([kinetic]).jacobian(q).T
    xd = sd * cos(ga) + sc * sin(ga) + xb                                          # spring end D
    yd = sd * sin(ga) - sc * cos(ga) + yb
    spring = sp.sqrt((xd - xc)**2 + (yd - yc)**2)
    potential = c0 * (spring - l0)**2 / 2 - mom * be
    hol = [rr * cos(be) - d * cos(be + th) - ss * sin(ga) - xb,
           rr * sin(be) - d * sin(be + th) + ss * cos(ga) - yb,
           rr * cos(be) - d * cos(be + th) - e * sin(ph + de) - zt * cos(de) - xa,
           rr * sin(be) - d * sin(be + th) + e * cos(ph + de) - zt * sin(de) - ya,
           rr * cos(be) - d * cos(be + th) - zf * cos(om + ep) - u * sin(ep) - xa,
           rr * sin(be) - d * sin(be + th) - zf * sin(om + ep) + u * cos(ep) - ya]
    model = SymbolicModel(list(q), list(v), mass=M, force=sp.simplify(coriolis), potential=potential, hol=hol,
                          params={P[k]: values[k] for k in ANDREWS_PARAMS}, name="iftomm_a03_andrews",
                          coord_names=ANDREWS_NAMES, coord_units=("rad",) * 7, conservative=True)
    return model


def andrews_point_f(model, q, v):
    """Position and velocity of F (the joint between the crank OF and the rod FE: r (cos beta, sin beta)
    about O, r = rr) at each sample of q, v (..., 7): (..., 2) each; the point the library reports."""
    r = model.params["rr"]
    q, v = np.asarray(q), np.asarray(v)
    b, bd = q[..., 0], v[..., 0]
    return (r * np.stack([np.cos(b), np.sin(b)], axis=-1),
            r * bd[..., None] * np.stack([-np.sin(b), np.cos(b)], axis=-1))


def flyball_governor(omega=2 * np.pi, stiffness=8e5, damping=4e4, rest_length=0.5, ball_mass=5.0, density=3000.0,
                     g=G, alpha=np.pi / 6, s0=0.5):
    """A05: the stiff flyball governor, spinning at ``omega`` about the vertical shaft at t = 0.

    Four bodies in natural coordinates, z upward, gravity along -z: the shaft (1 x 0.01 x 0.01 m) on
    a revolute joint about z at the origin; the slider (a 0.1 m cube) on a prismatic joint along the
    shaft, its centre at height ``s0``; two rods (1 x 0.01 x 0.01 m, each with a ``ball_mass`` point
    mass at its free end) hinged about the horizontal axis y to the shaft's top at x = +-0.05 m,
    ``alpha`` below the horizontal; the rods' midpoints tied to the slider's sides (x = +-0.05 m) by
    two spring-dampers (``stiffness`` [N/m], ``damping`` [N s/m], ``rest_length``: at rest at t = 0).
    Densities ``density`` [kg/m^3] (the library's; the layout is the library's figure as Exudyn's
    TestModels/stiffFlyballGovernor.py builds it).  48 coordinates, 44 constraints: 4 degrees of
    freedom (shaft angle, slider height, two rod angles).  ``model.initial_state()`` is the
    configuration at rest; :func:`flyball_state` the spinning start.  ``model.iftomm["slider"]``
    is the slider's offset (its centre r: the reported height s = r_z)."""
    k, c = positive("stiffness", stiffness), positive("damping", damping)
    rho, mb = positive("density", density), positive("ball_mass", ball_mass)
    s = NaturalSystem(dim=3, gravity=(0.0, 0.0, -g), name="iftomm_a05_flyball")
    a, L, cube = 0.01, 1.0, 0.1
    m_bar, m_slider = rho * L * a * a, rho * cube**3
    shaft = s.add_body(m_bar, pi=(m_bar * a**2 / 12, m_bar * a**2 / 12, m_bar * L**2 / 12), name="shaft")
    s.set_pose(shaft, (0.0, 0.0, L / 2), np.eye(3))
    slider = s.add_body(m_slider, pi=(m_slider * cube**2 / 12,) * 3, name="slider")
    s.set_pose(slider, (0.0, 0.0, s0), np.eye(3))
    # a rod: r at its hinge, e_1 along it, e_2 the hinge axis y; bar from 0 to L plus the ball at L
    com = (m_bar * L / 2 + mb * L) / (m_bar + mb)
    j = np.diag([m_bar * L**2 / 3 + mb * L**2, m_bar * a**2 / 12, m_bar * a**2 / 12])
    s.revolute(s.ground, (0.0, 0.0, 0.0), shaft, (0.0, 0.0, -L / 2), axis_i=(0, 0, 1), axis_j=(0, 0, 1))
    s.prismatic(shaft, (0.0, 0.0, 0.0), (0, 0, 1), slider, (0.0, 0.0, 0.0), (0, 0, 1), ui=(1, 0, 0), uj=(1, 0, 0))
    rods = []
    for side in (1.0, -1.0):
        rod = s.add_body(m_bar + mb, com=(com, 0.0, 0.0), second_moments=j, name="rod" + ("AC" if side > 0 else "BD"))
        e1 = np.array([side * np.cos(alpha), 0.0, -np.sin(alpha)])
        e2 = np.array([0.0, 1.0, 0.0])
        s.set_pose(rod, (side * 0.05, 0.0, L), np.column_stack([e1, e2, np.cross(e1, e2)]))
        s.revolute(shaft, (side * 0.05, 0.0, L / 2), rod, (0.0, 0.0, 0.0), axis_i=(0, 1, 0), axis_j=(0, 1, 0))
        s.spring(slider, (side * cube / 2, 0.0, 0.0), rod, (L / 2, 0.0, 0.0), k, rest_length, c)
        rods.append(rod)
    model = s.build()
    model.params = dict(omega=float(omega), stiffness=k, damping=c, rest_length=float(rest_length), ball_mass=mb,
                        density=rho, g=g, alpha=float(alpha), s0=float(s0))
    model.iftomm = dict(slider=slider.offset, bodies=[b.offset for b in (shaft, slider, *rods)])
    return model


def flyball_state(model, omega=None):
    """(q, v) of :func:`flyball_governor` in its initial configuration, every body turning at ``omega``
    (default: the model's) about the z axis: r' = w x r, e_j' = w x e_j."""
    q, _ = model.initial_state()
    w = np.array([0.0, 0.0, model.params["omega"] if omega is None else float(omega)])
    v = np.zeros_like(q)
    for off in model.iftomm["bodies"]:
        for j in range(4):                                    # r, e_1, e_2, e_3 alike: w x (.)
            v[off + 3 * j:off + 3 * j + 3] = np.cross(w, q[off + 3 * j:off + 3 * j + 3])
    return q, v


def flyball_point(model, q, v):
    """Position and velocity of the slider's centre (its height is the library's s) at each sample: (..., 3)."""
    off = model.iftomm["slider"]
    q, v = np.asarray(q), np.asarray(v)
    return q[..., off:off + 3], v[..., off:off + 3]


def flyball_reduced(params):
    """The reduced equations of :func:`flyball_governor` in its four degrees of freedom
    y = (phi, s, beta_1, beta_2, and their rates): shaft angle, slider height, the rods' angles below
    the horizontal.  Lagrange's equations from T(q, q') (every body's 1/2 m |v_c|^2 + 1/2 w^T I_c w,
    the same masses and second moments as the model) and V (gravity and the springs), M(q) q'' =
    -(dM/dt) q' + dT/dq - dV/dq + Q_c with the dampers' Q_c = -c (dl/dt) dl/dq, derived with SymPy
    and evaluated in NumPy.  ``params`` is the model's ``params``.  Returns (rhs(t, y), energy(y)):
    the right-hand side of the first-order system and T + V (which differs from the model's energy by
    the shaft's constant potential).  The study's reference (independent of the natural coordinates)."""
    import sympy as sp
    k, c, l0 = params["stiffness"], params["damping"], params["rest_length"]
    mb, rho, g = params["ball_mass"], params["density"], params["g"]
    a, L, cube = 0.01, 1.0, 0.1
    m_bar, m_slider = rho * L * a * a, rho * cube**3
    q = sp.symbols("phi s beta1 beta2")
    qd = sp.symbols("phi_d s_d beta1_d beta2_d")
    phi, s = q[0], q[1]
    vel = sp.Matrix(qd)

    def rz(x):
        return sp.Matrix([[sp.cos(x), -sp.sin(x), 0], [sp.sin(x), sp.cos(x), 0], [0, 0, 1]])
    kinetic = (m_bar * a**2 / 6 + m_slider * cube**2 / 6) * qd[0]**2 / 2 + m_slider * qd[1]**2 / 2   # about z; slider
    potential = m_slider * g * s
    damping = sp.zeros(4, 1)
    mr = m_bar + mb
    cvec = sp.Matrix([(m_bar * L / 2 + mb * L) / mr, 0, 0])
    jc = sp.diag(m_bar * L**2 / 3 + mb * L**2, m_bar * a**2 / 12, m_bar * a**2 / 12) - mr * cvec * cvec.T
    inertia = jc.trace() * sp.eye(3) - jc                                                  # about the centre of mass
    for side, beta in ((1, q[2]), (-1, q[3])):
        e1 = sp.Matrix([side * sp.cos(beta), 0, -sp.sin(beta)])
        e2 = sp.Matrix([0, 1, 0])
        rot = rz(phi) * sp.Matrix.hstack(e1, e2, e1.cross(e2))
        hinge = rz(phi) * sp.Matrix([side * 0.05, 0, L])
        rc = hinge + rot * cvec
        vc = rc.jacobian(q) * vel
        w = rot.T * sum((rot.diff(qk) * vk for qk, vk in zip(q, qd)), sp.zeros(3, 3))   # [w]_x in body axes
        wb = sp.Matrix([w[2, 1], w[0, 2], w[1, 0]])
        kinetic += mr * (vc.T * vc)[0, 0] / 2 + (wb.T * inertia * wb)[0, 0] / 2
        potential += mr * g * rc[2]
        d = hinge + rot * sp.Matrix([L / 2, 0, 0]) - rz(phi) * sp.Matrix([side * cube / 2, 0, s])
        length = sp.sqrt((d.T * d)[0, 0])
        potential += k * (length - l0)**2 / 2
        dl = sp.Matrix([length]).jacobian(q)
        damping += -c * (dl * vel)[0, 0] * dl.T
    mass = sp.hessian(kinetic, qd)
    mdot = sum((mass.diff(qk) * vk for qk, vk in zip(q, qd)), sp.zeros(4, 4))
    force = -mdot * vel + sp.Matrix([kinetic - potential]).jacobian(q).T + damping
    mass_f, force_f = sp.lambdify([q, qd], mass, "numpy"), sp.lambdify([q, qd], force, "numpy")
    energy_f = sp.lambdify([q, qd], kinetic + potential, "numpy")

    def rhs(t, y):
        acc = np.linalg.solve(np.asarray(mass_f(y[:4], y[4:]), dtype=float),
                              np.asarray(force_f(y[:4], y[4:]), dtype=float).ravel())
        return np.concatenate([y[4:], acc])
    return rhs, lambda y: float(energy_f(y[:4], y[4:]))
