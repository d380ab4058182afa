"""Mechanisms of the IFToMM / A Coruña multibody benchmark library, built with :class:`NaturalSystem`.

The library (M. Gonzalez, D. Dopico, U. Lugris, J. Cuadrado, "A benchmarking system for MBS
simulation software: problem standardization and performance measurement", Multibody System
Dynamics 16 (2006) 179-190; problem pages http://lim.ii.udc.es/mbsbenchmark/dist/A0k/, now
https://www.iftomm-multibody.org/benchmark/) poses its problems as mechanisms, not as equations:
each function below assembles one in natural coordinates (seed 003, :mod:`pyint.models.natural`),
so its whole time loop runs in Fortran (``natural_system``), and says which point the benchmark
reports.  The study ``iftomm_benchmarks`` (studies/iftomm_benchmarks.py) runs them and holds the
benchmarks' specifications.

* :func:`n_four_bar` -- A02, N four-bar windows: 2N + 1 uniform bars (1 m, 1 kg), N + 1 cranks
  pinned to the ground at x = 0, 1, ..., N and N couplers on their tips; cranks vertical at t = 0,
  B0 (the tip of the first crank) moving at 1 m/s along +x; gravity 9.81 along -y.  One degree of
  freedom, N + 1 whenever the cranks are horizontal (a singular configuration).
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
            s.set_pose(c, (k - 0.5, L), 0.0)
            couplers.append(c)
        b = s.add_body(m, pi=pi, name=f"crank{k}")
        s.set_pose(b, (float(k), L / 2), np.pi / 2)
        s.revolute(s.ground, (float(k), 0.0), b, bottom)
        if k:
            s.revolute(cranks[-1], top, c, bottom)
            s.revolute(b, top, c, top)
        cranks.append(b)
    model = s.build()
    model.params = dict(n=n, mass=m, length=L, g=g)
    model.iftomm = dict(cranks=[b.offset for b in cranks], couplers=[c.offset for c in couplers])
    return model


def n_four_bar_state(model, theta, omega):
    """(q, v) of :func:`n_four_bar` with every crank at angle ``theta`` from the upward vertical
    (clockwise positive: B0 = L (sin theta, cos theta)) turning at ``omega``; the couplers
    translate.  Exact on the constraint manifold: the reduced solution's full state."""
    L = model.params["length"]
    q = np.zeros(model.n)
    v = np.zeros(model.n)
    st, ct = np.sin(theta), np.cos(theta)
    e1, de1 = np.array([st, ct]), omega * np.array([ct, -st])
    e2, de2 = np.array([-ct, st]), omega * np.array([st, ct])
    for k, off in enumerate(model.iftomm["cranks"]):
        q[off:off + 6] = np.concatenate([(k + L / 2 * st, L / 2 * ct), e1, e2])
        v[off:off + 6] = np.concatenate([L / 2 * de1, de1, de2])
    for k, off in enumerate(model.iftomm["couplers"], start=1):
        q[off:off + 6] = np.concatenate([(k - 0.5 + L * st, L * ct), (1.0, 0.0), (0.0, 1.0)])
        v[off:off + 2] = L * de1
    return q, v


def n_four_bar_reduced(n, mass=1.0, length=1.0, g=G):
    """(J, K) of the reduced equation J theta'' = K g sin(theta) of :func:`n_four_bar` (all cranks
    parallel at theta from the upward vertical): J = (n + 1) m L^2 / 3 + n m L^2 (cranks about
    their pivots, couplers translating with the crank tips), K = (n + 1) m L / 2 + n m L."""
    return (n + 1) * mass * length**2 / 3 + n * mass * length**2, (n + 1) * mass * length / 2 + n * mass * length


def n_four_bar_point(model, q, v):
    """Position and velocity of B0 (the tip of crank 0) at each sample of q, v (..., n): (..., 2) each."""
    L = model.params["length"]
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
