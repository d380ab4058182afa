"""Mechanisms of seed 003 built in natural coordinates (:mod:`pyint.models.natural`): the planar
two-link manipulator of the paper's section 3 and the parallelogram family of redundant loops.
"""
from __future__ import annotations

import numpy as np

from .natural import NaturalSystem


def two_link_manipulator(L1=0.5, L2=1.0, a=0.1, m1=10.0, m2=20.0, g=9.81):
    r"""The planar two-link manipulator of seed 003 (Fig. 2, eqs. (10)-(13)).

    Uniform bars of width :math:`a`; :math:`r` at each centre of mass, :math:`e_1` along the bar, :math:`e_2`
    across it; :math:`\Pi_1 = m L^2 / 12`, :math:`\Pi_2 = m a^2 / 12`; revolute joints :math:`O_1` at the
    origin (point :math:`(-L_1/2, 0)` of bar 1) and :math:`O_2` (point :math:`(L_1/2, 0)` of bar 1 =
    point :math:`(-L_2/2, 0)` of bar 2); gravity :math:`-g` along :math:`y`.  Both bars start horizontal
    at rest: :math:`q_0 = (0.25, 0, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1)` (seed 003 section 3).

    Parameters
    ----------
    L1, L2 : float, default 0.5, 1.0
        The bar lengths [m].
    a : float, default 0.1
        The bars' width [m].
    m1, m2 : float, default 10.0, 20.0
        The bar masses [kg].
    g : float, default 9.81
        The gravitational acceleration [m/s^2].

    Returns
    -------
    NaturalModel
        12 natural coordinates, 10 holonomic constraints.

    Examples
    --------
    >>> from pyint import BlockMethod, two_link_manipulator
    >>> model = two_link_manipulator()
    >>> q0, v0 = model.initial_state()
    >>> res = BlockMethod("uniform_rk").integrate(model, q0, v0, t_end=0.5, h=1e-2)
    >>> model.n, model.n_hol, res.status
    (12, 10, 'ok')
    """
    s = NaturalSystem(dim=2, gravity=(0.0, -g), name="two_link_manipulator")
    b1 = s.add_body(m1, pi=(m1 * L1**2 / 12, m1 * a**2 / 12), name="link1")
    b2 = s.add_body(m2, pi=(m2 * L2**2 / 12, m2 * a**2 / 12), name="link2")
    s.revolute(s.ground, (0.0, 0.0), b1, (-L1 / 2, 0.0))
    s.revolute(b1, (L1 / 2, 0.0), b2, (-L2 / 2, 0.0))
    s.set_pose(b1, (L1 / 2, 0.0), 0.0)
    s.set_pose(b2, (L1 + L2 / 2, 0.0), 0.0)
    m = s.build()
    m.params = dict(L1=L1, L2=L2, a=a, m1=m1, m2=m2, g=g)
    return m


def parallelogram(n_cranks=3, dim=2, L=1.0, m_crank=1.0, m_coupler=2.0, g=9.81, twin=False):
    r"""A redundant mechanism: ``n_cranks`` parallel cranks of length :math:`L`, hinged to the ground at
    :math:`x = 0, L, 2L, \ldots`, under one rigid coupler of length (``n_cranks`` - 1) :math:`L`, gravity
    :math:`-g` along :math:`y`.

    Plane (``dim=2``): n_cranks = 3 is the classical over-constrained parallelogram (Grübler
    count 0, mobility 1: one redundant row).  Space (``dim=3``): the same loop built from
    revolute joints about z, as planar loops are modelled in 3-D (n_cranks = 2: the spatial
    four-bar, Grübler count -2, mobility 1: three redundant rows).  Uniform cranks
    (:math:`\Pi_1 = m L^2 / 12` along the bar, :math:`\Pi_2 = \Pi_3 = 10^{-4}\, \Pi_1`); the coupler only
    translates.

    ``twin=True``: the same motion without redundant constraints (the reference of the
    redundant one's constraint forces): in the plane the last crank's tip slides on the
    coupler's line (one equation instead of a revolute's two); in space (n_cranks = 2) the
    R-R-S-U four-bar: the cranks' hinges, a spherical joint on crank 0's tip, a universal
    joint (crank 1's z, the coupler's y) on crank 1's.

    The model's ``pose(theta, omega)`` gives (q, v) with every crank at angle :math:`\theta` from
    :math:`x` and angular rate :math:`\omega`, and ``theta_rhs(theta)`` the right-hand side of the
    reduced equation

    .. math::

        (n I_\text{hinge} + m_k L^2)\, \ddot\theta = -(n m_c / 2 + m_k)\, g L \cos\theta,
        \qquad I_\text{hinge} = m_c L^2 / 3 + \Pi_2.

    Horizontal cranks (:math:`\theta = 0, \pi`) are singular positions (the loop's mobility jumps).

    Returns
    -------
    NaturalModel
        The mechanism, with ``pose`` and ``theta_rhs``.

    Examples
    --------
    >>> import numpy as np
    >>> from pyint import GeneralizedAlpha
    >>> from pyint.models import parallelogram
    >>> model = parallelogram(n_cranks=3)
    >>> q0, v0 = model.pose(np.pi / 3, 0.0)
    >>> res = GeneralizedAlpha().integrate(model, q0, v0, t_end=0.5, h=1e-3)
    >>> res.status, len(res.redundant)                # one redundant row, dropped at the start
    ('ok', 1)
    """
    if dim not in (2, 3) or n_cranks < 2 or (twin and dim == 3 and n_cranks != 2):
        raise ValueError("parallelogram: dim 2 or 3, n_cranks >= 2 (a spatial twin: n_cranks = 2)")
    pi1 = m_crank * L**2 / 12
    w = (n_cranks - 1) * L
    grav = (0.0, -g) if dim == 2 else (0.0, -g, 0.0)
    s = NaturalSystem(dim=dim, gravity=grav, name=f"parallelogram{n_cranks}_{dim}d" + ("_twin" if twin else ""))
    small = 1e-4 * pi1
    cranks = [s.add_body(m_crank, pi=(pi1, small) if dim == 2 else (pi1, small, small), name=f"crank{i}")
              for i in range(n_cranks)]
    kpi = m_coupler * w**2 / 12
    k = s.add_body(m_coupler, pi=(kpi, small) if dim == 2 else (kpi, small, small), name="coupler")

    def pt(*x):
        return tuple(x) + ((0.0,) if dim == 3 else ())

    z = (0.0, 0.0, 1.0)
    axes = {} if dim == 2 else dict(axis_i=z, axis_j=z)
    for i, c in enumerate(cranks):
        s.revolute(s.ground, pt(i * L, 0.0), c, pt(-L / 2, 0.0), **axes)
        tip, end = pt(i * L - w / 2, 0.0), pt(L / 2, 0.0)
        if twin and dim == 2 and i == n_cranks - 1:
            s.perpendicular_offset(k, (0.0, 1.0), tip, c, end)
        elif twin and dim == 3 and i == 0:
            s.spherical(k, tip, c, end)
        elif twin and dim == 3:
            s.universal(c, end, z, k, tip, (0.0, 1.0, 0.0))
        else:
            s.revolute(k, tip, c, end, **axes)

    def rotation(th):
        c_, s_ = np.cos(th), np.sin(th)
        return th if dim == 2 else np.array([[c_, -s_, 0.0], [s_, c_, 0.0], [0.0, 0.0, 1.0]])

    def q_at(th):
        for i, c in enumerate(cranks):
            s.set_pose(c, pt(i * L + L / 2 * np.cos(th), L / 2 * np.sin(th)), rotation(th))
        s.set_pose(k, pt(w / 2 + L * np.cos(th), L * np.sin(th)), rotation(0.0))
        return np.concatenate([s._pose[b.index] for b in s.bodies])

    inertia = n_cranks * (m_crank * L**2 / 3 + small) + m_coupler * L**2
    torque = (n_cranks * m_crank / 2 + m_coupler) * g * L

    # q(theta) = c0 + cos(theta) c1 + sin(theta) c2 (every coordinate is): its pieces, exactly
    qa, qb, qc = q_at(0.0), q_at(np.pi / 2), q_at(np.pi)
    c0, c1, c2 = (qa + qc) / 2, (qa - qc) / 2, qb - (qa + qc) / 2
    q_at(np.pi / 3)                    # initial_state(): cranks at 60 degrees, at rest
    model = s.build()

    def pose(theta, omega=0.0):
        """(q, v): every crank at angle theta from x, turning at omega."""
        q = c0 + np.cos(theta) * c1 + np.sin(theta) * c2
        return q, omega * (-np.sin(theta) * c1 + np.cos(theta) * c2)

    model.pose = pose
    model.theta_rhs = lambda theta: -torque / inertia * np.cos(theta)
    model.params = dict(n_cranks=n_cranks, dim=dim, L=L, m_crank=m_crank, m_coupler=m_coupler, g=g, twin=twin)
    return model
