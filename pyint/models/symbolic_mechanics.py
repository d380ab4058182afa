"""SymbolicModel from sympy.physics.mechanics (LagrangesMethod, KanesMethod, System): the
constructors :meth:`SymbolicModel.from_lagranges_method`, :meth:`~SymbolicModel.from_kanes_method`
and :meth:`~SymbolicModel.from_system` (a mixin of pyint/models/symbolic.py's class) and the checks
they make: speeds that are the coordinates' derivatives, loads and springs written as potentials
(verified on random states), velocity constraints independent of the configuration constraints,
specified inputs (Kane & Levinson 1985, ch. 6, for the equations).
"""
from __future__ import annotations

import numpy as np

from .symbolic_build import _sp

#: How to get velocities that are the coordinates' derivatives (the refusals quote it).
_QDOT_HOWTO = (
    "pyint integrates q' = v, so every velocity must be its coordinate's time derivative. Choose the "
    "generalized speeds u = q': in KanesMethod, kd_eqs=[q1.diff(t) - u1, q2.diff(t) - u2, ...] and the "
    "frames oriented by their angles (orient/orientnew) instead of angular velocities set in u; with joints, "
    "speeds whose kdes are q' - u (every joint's default). "
    "Then pass the KanesMethod or System to SymbolicModel.from_kanes_method / from_system, or give "
    "v=[q1.diff(t), ...] (or plain symbols standing for q')")
#: What undefined functions of t usually are.
_SPEEDS_HINT = (
    "If they are generalized speeds u(t) of KanesMethod or of a System's joints, the kinematic equations "
    "(KM.kindiffdict(), system.kdes) relate them to q': use SymbolicModel.from_kanes_method(KM) or "
    "from_system(system), which read them; if they are specified inputs (dynamicsymbols of t), write them as "
    "expressions of t, or give specified={input: expression} to from_kanes_method, from_system or "
    "from_lagranges_method")


def _mech_t():
    from sympy.physics.mechanics import dynamicsymbols
    return dynamicsymbols._t


def _random_values(sp, exprs, rng, fixed=None):
    """{symbol: value} for every free symbol of exprs (values in [0.6, 1.4]: away from zeros and poles of the
    usual trigonometric and length expressions), ``fixed`` overriding."""
    syms = set()
    for e in exprs:
        syms |= sp.sympify(e).free_symbols
    vals = {s_: float(rng.uniform(0.6, 1.4)) for s_ in sorted(syms, key=str)}
    vals.update(fixed or {})
    return vals


def _plain(sp, exprs, dyn):
    """exprs with the dynamicsymbols (and derivatives) of ``dyn`` replaced by plain Dummies (for numbers)."""
    rep = {d: sp.Dummy(str(d).replace("(t)", "").replace("Derivative", "d")) for d in dyn}
    ders = {d: r for d, r in rep.items() if isinstance(d, sp.Derivative)}
    rest = {d: r for d, r in rep.items() if not isinstance(d, sp.Derivative)}
    return [sp.sympify(e).xreplace(ders).xreplace(rest) for e in exprs]


def _speeds_are_qdot(sp, who, q, u, kdes):
    """{u_j: q_i'} when the kinematic differential equations say the speeds are the q' (in some order);
    else a ValueError quoting the equations solved for q' (q' = N(q) u + c) and how to choose u = q'."""
    t = _mech_t()
    qd = [x.diff(t) for x in q]
    K = sp.Matrix(kdes)
    if len(u) != len(q) or K.shape[0] != len(q):
        raise ValueError(f"{who}: {len(q)} coordinates, {len(u)} speeds and {K.shape[0]} kinematic differential "
                         "equations; pyint needs one speed u = q' per coordinate. " + _QDOT_HOWTO)
    Kqd, Ku = K.jacobian(qd), K.jacobian(u)
    c = K.xreplace(dict.fromkeys(qd, 0)).xreplace(dict.fromkeys(u, 0))
    if Kqd.has(*qd, *u) or Ku.has(*qd, *u):
        raise ValueError(f"{who}: the kinematic differential equations are not linear in q' and u: "
                         f"{', '.join(f'{x} = 0' for x in kdes)}")
    N = sp.simplify(-Kqd.LUsolve(Ku))
    c = sp.simplify(-Kqd.LUsolve(c))
    usub = {}
    ok = all(x == 0 for x in c)
    for i in range(len(q)):
        ones = [j for j in range(len(u)) if N[i, j] != 0]
        if len(ones) != 1 or N[i, ones[0]] != 1 or u[ones[0]] in usub:
            ok = False
            break
        usub[u[ones[0]]] = qd[i]
    if not ok:
        solved = "; ".join(f"{q[i].func.__name__}' = {sp.Add(*[N[i, j] * u[j] for j in range(len(u))], c[i])}"
                           for i in range(len(q)))
        raise ValueError(f"{who}: the speeds are not the coordinates' derivatives; the kinematic differential "
                         f"equations {', '.join(f'{x} = 0' for x in kdes)} say q' = N(q) u + c with N != I: "
                         f"{solved}. " + _QDOT_HOWTO)
    return usub


def _load_potential(sp, frame, origin, point, force, in_qd, q, qd, rng=None):
    """The potential V(q) of a constant force on ``point`` (a gravity load), or None.

    The force must have constant components in ``frame`` (no dynamicsymbol); V = -F . r, r the point's
    position from ``origin`` (System.fixed_point) or, without one, from a point of the point's position tree.
    Accepted only when dV/dt + F . v_P = 0 at three random states (v_P: the point's velocity, u = q'):
    then -V_q are exactly the load's generalized forces (the check rejects an origin that moves, such as
    a contact point, along F)."""
    from sympy.physics.mechanics import find_dynamicsymbols
    if force == 0:
        return None
    comps = force.to_matrix(frame)
    if find_dynamicsymbols(comps):
        return None
    try:
        vP = in_qd(point.vel(frame).dot(force))
    except ValueError:
        return None
    if origin is not None:
        cands = [origin]
    else:   # the points of the position tree, nearest first
        seen, cands, todo = {point}, [], [point]
        while todo:
            p = todo.pop(0)
            for o in p._pos_dict:
                if o not in seen:
                    seen.add(o)
                    cands.append(o)
                    todo.append(o)
    t = _mech_t()
    rng = rng or np.random.default_rng(12345)
    for o in cands:
        try:
            V = in_qd(-force.dot(point.pos_from(o)))
        except ValueError:
            continue
        if find_dynamicsymbols(sp.Matrix([V])) - set(q):
            continue
        dV = V.diff(t)   # the total derivative: q are functions of t
        resid, scale = _plain(sp, [dV + vP, vP], set(qd) | set(q))
        good = True
        for _ in range(3):
            vals = _random_values(sp, [resid, scale], rng)
            r_, s_ = float(resid.evalf(subs=vals)), float(scale.evalf(subs=vals))
            if abs(r_) > 1e-10 * max(1.0, abs(s_)):
                good = False
                break
        if good:
            return V
    return None


def _spring_potential(sp, frame, act, in_qd, q, rng=None):
    """k (L - L0)^2 / 2 of a sympy.physics.mechanics.LinearSpring (L: its pathway's length), or None for
    another actuator; accepted when its rate is minus the power of the spring's loads at three random states
    (as :func:`_load_potential`)."""
    from sympy.physics.mechanics import LinearSpring, Point, find_dynamicsymbols
    if not isinstance(act, LinearSpring):
        return None
    try:
        V = in_qd(act.stiffness * (act.pathway.length - act.equilibrium_length) ** 2 / 2)
        power = in_qd(sum(ld[1].dot(ld[0].vel(frame)) for ld in act.to_loads() if isinstance(ld[0], Point)))
    except ValueError:
        return None
    if find_dynamicsymbols(sp.Matrix([V])) - set(q):
        return None
    t = _mech_t()
    qd = [x.diff(t) for x in q]
    resid, scale = _plain(sp, [V.diff(t) + power, power], set(qd) | set(q))
    rng = rng or np.random.default_rng(54321)
    for _ in range(3):
        vals = _random_values(sp, [resid, scale], rng)
        if abs(float(resid.evalf(subs=vals))) > 1e-10 * max(1.0, abs(float(scale.evalf(subs=vals)))):
            return None
    return V


def _check_symmetric(sp, M, dyn, rng=None):
    rng = rng or np.random.default_rng(7)
    n = M.shape[0]
    (Mp,) = _plain(sp, [M], set(dyn))
    vals = _random_values(sp, [Mp], rng)
    Mn = np.array(Mp.evalf(subs=vals).tolist(), dtype=float)
    # Kane's generalized inertia matrix is symmetric when every speed is independent (as formed here)
    if np.max(np.abs(Mn - Mn.T)) > 1e-10 * max(1.0, np.max(np.abs(Mn))):  # pragma: no cover
        raise ValueError(f"Kane's mass matrix is not symmetric (n = {n}): is every speed independent?")


def _independent_of_hol(sp, A, g, q, rng=None):
    """Rows of A not in the span of G = g_q and of the rows kept before (at a random state): the velocity
    constraints that are not the derivatives of the configuration constraints."""
    rng = rng or np.random.default_rng(11)
    G = sp.Matrix(g).jacobian(q) if g else sp.zeros(0, len(q))
    Gp, Ap = _plain(sp, [G, A], set(q))
    vals = _random_values(sp, [Gp, Ap], rng)
    rows = [np.array(Gp.evalf(subs=vals).tolist(), dtype=float).reshape(G.shape)] if G.shape[0] else []
    An = np.array(Ap.evalf(subs=vals).tolist(), dtype=float).reshape(A.shape)
    def rank(a):
        return np.linalg.matrix_rank(a, tol=1e-9 * max(1.0, np.max(np.abs(a), initial=0.0))) if a.size else 0
    keep = []
    base = np.vstack(rows) if rows else np.zeros((0, len(q)))
    for i in range(A.shape[0]):
        trial = np.vstack([base, An[i:i + 1]])
        if rank(trial) > rank(base):
            keep.append(i)
            base = trial
    return keep


def _specified(sp, who, exprs, q, qd, specified):
    """exprs with the specified inputs (dynamicsymbols of t other than q, q') replaced by their values;
    (exprs, number of inputs)."""
    from sympy.core.function import AppliedUndef
    t = _mech_t()
    known = set(q)
    found = set()
    for e in exprs:
        for x in sp.sympify(e).atoms(AppliedUndef):
            if x not in known and x.args == (t,):
                found.add(x)
    specified = dict(specified or {})
    bad = [k for k in specified if k not in found]
    if bad:
        raise ValueError(f"{who}: specified names {', '.join(map(str, bad))}, which the equations do not contain "
                         f"(their inputs: {', '.join(sorted(map(str, found))) or 'none'})")
    left = sorted(str(x) for x in found if x not in specified)
    if left:
        raise ValueError(f"{who}: specified inputs without a value: {', '.join(left)}; give "
                         "specified={input: expression of t and parameters (or a parameter Symbol)}")
    if not specified:
        return exprs, 0
    ders = {}
    for e in exprs:
        for d in sp.sympify(e).atoms(sp.Derivative):
            if d.expr in specified:
                ders[d] = sp.sympify(specified[d.expr]).diff(*d.variable_count)
    out = [sp.sympify(e).xreplace(ders).xreplace({k: sp.sympify(x) for k, x in specified.items()}) for e in exprs]
    return out, len(specified)


def from_lagranges_method(cls, lm, params=None, name="lagranges_method", coord_names=None,
                          coord_units=None, conservative=None, specified=None):
    r"""The model of a ``sympy.physics.mechanics.LagrangesMethod``.

    :math:`M` = the dynamic mass matrix, :math:`f` = the forcing (Coriolis, potential and
    ``forcelist`` terms), :math:`g` = its ``hol_coneqs``, :math:`(A, b)` from its
    ``nonhol_coneqs`` (linear in the :math:`\dot q`), energy = the Jacobi integral
    :math:`\dot q^\mathsf{T} L_{\dot q} - L`.  Multipliers follow pyint's convention
    (:math:`M a = f - G^\mathsf{T}\lambda_h - A^\mathsf{T}\lambda_n`).  Conservative by default
    when there is no ``forcelist``, nothing depends on :math:`t` explicitly and :math:`b = 0`.
    ``specified``: {dynamicsymbol T(t): expression of t and parameters} for
    specified inputs, as in :meth:`from_kanes_method`.  A Lagrangian (or a
    load's point velocity) written in generalized speeds u(t) of joints is
    refused, naming them and pointing to ``system.kdes`` and :meth:`from_system`.
    """
    sp = _sp()
    from sympy.physics.mechanics import LagrangesMethod, dynamicsymbols
    if not isinstance(lm, LagrangesMethod):
        raise TypeError(f"from_lagranges_method needs a sympy.physics.mechanics.LagrangesMethod, got {type(lm)}")
    t = dynamicsymbols._t
    qs, qds = list(lm.q), list(lm._qdots)
    # a Lagrangian of bodies whose velocities are written in joint speeds u(t) holds u, not q': its
    # equations would treat u as given functions (and the loads' partial velocities w.r.t. q' as 0)
    from sympy.core.function import AppliedUndef
    from sympy.physics.mechanics import Point, find_dynamicsymbols
    given = set(specified or {})
    speeds = {x for x in sp.sympify(lm._L).atoms(AppliedUndef)
              if x not in qs and x not in given and x.args == (t,)}
    for load in lm.forcelist or []:
        if isinstance(load[0], Point) and lm.inertial is not None:
            vel = load[0].vel(lm.inertial).to_matrix(lm.inertial)
            speeds |= {x for x in find_dynamicsymbols(vel) if x not in qs and x not in qds and x not in given}
    if speeds:
        names = ", ".join(sorted(str(x) for x in speeds))
        raise ValueError(f"from_lagranges_method: the Lagrangian or the loads' velocities contain {names}, "
                         "neither coordinates nor their derivatives: generalized speeds u of joints or of "
                         "KanesMethod-style kinematics. Their kinematic equations (system.kdes) relate them "
                         "to q': build the model with SymbolicModel.from_system(system) (or "
                         "from_kanes_method), which reads them, or substitute u in terms of q' before "
                         "forming the Lagrangian (L.xreplace(solve(system.kdes, system.u)))")
    if lm.eom is None:
        lm.form_lagranges_equations()
    n = len(qs)
    hol = list(lm._hol_coneqs)
    nonhol = list(lm.coneqs)[len(hol):]
    nh = None
    if nonhol:
        cons = sp.Matrix(nonhol)
        A = cons.jacobian(qds)
        if A.has(*qds):
            raise ValueError("nonhol_coneqs must be linear in the velocities (A(t, q) q' + b(t, q) = 0)")
        b = cons.subs(dict.fromkeys(qds, 0))
        nh = (A, b)
    L = lm._L[0, 0]
    energy = (sp.Matrix([L]).jacobian(qds) * sp.Matrix(qds))[0, 0] - L
    # specified inputs (dynamicsymbols of t only) -> their expressions, as in from_kanes_method
    exprs = [lm._m_d[:, :n], sp.Matrix(lm._f_d), sp.Matrix([energy, L, *hol])] + (list(nh) if nh else [])
    exprs, n_inputs = _specified(sp, "from_lagranges_method", exprs, qs, qds, specified)
    M, f, rest = exprs[:3]
    energy, L, hol = rest[0], rest[1], list(rest[2:])
    if nh:
        nh = (exprs[3], exprs[4])
    if conservative is None:  # explicit time dependence: t left once q(t), q'(t) are symbols
        plain = {x: sp.Dummy() for x in qds + qs}
        explicit = any(t in sp.sympify(e).xreplace(plain).free_symbols for e in [L, *hol])
        conservative = not lm.forcelist and not explicit and not n_inputs and \
            (nh is None or all(sp.simplify(x) == 0 for x in nh[1]))
    return cls(qs, qds, t=t, mass=M, force=list(f), hol=hol or None, nonhol=nh,
               params=params, name=name, coord_names=coord_names, coord_units=coord_units,
               energy=energy, conservative=conservative)


def from_kanes_method(cls, km, params=None, specified=None, name="kanes_method", coord_names=None,
                      coord_units=None):
    r"""The model of a ``sympy.physics.mechanics.KanesMethod``, if its speeds are the :math:`\dot q`.

    pyint integrates :math:`M(q)\, \ddot q = f(t, q, \dot q) - G^\mathsf{T}\lambda_h - A^\mathsf{T}\lambda_n`:
    its velocities are the
    coordinates' derivatives. The kinematic differential equations (``kd_eqs``) are read and
    solved for :math:`\dot q`; when they say :math:`u = \dot q` (up to the order of the speeds, possibly
    after a linear solve), Kane's equations of the system with every speed independent are formed
    again (Kane & Levinson, *Dynamics: Theory and Applications*, 1985, ch. 6: :math:`F_r + F_r^* = 0`
    with the partial velocities of all :math:`u`) from the KanesMethod's bodies and loads, and :math:`u`
    is replaced by :math:`\dot q`. With the constraints removed from Kane's equations, their forces are
    pyint's multipliers: :math:`M` = the generalized inertia matrix (symmetric), :math:`f` = Kane's forcing.

    What is read:

    * configuration constraints (``configuration_constraints``) become :math:`g(t, q) = 0`;
    * velocity constraints (``velocity_constraints``) become :math:`A v + b = 0`, except those that are
      the time derivatives of the configuration constraints (tested numerically at a random
      state: their rows lie in the span of :math:`G`), which :math:`g` already imposes;
    * loads become forces, except a **constant force on a point** (the same vector in the
      inertial frame at every state, such as gravity ``m*g*N.z`` on a mass centre): it becomes the
      potential :math:`V = -F \cdot r_P`, :math:`r_P` the point's position from a point of its position
      tree, accepted when :math:`\dot V = -F \cdot v_P` at three random states (so :math:`V`'s forces are
      exactly the load's generalized forces), and the energy :math:`T + V` is then monitored;
    * specified inputs, dynamicsymbols of t that are neither q nor u, take their values from
      ``specified``.

    The model is conservative when every load became a potential, nothing depends on t
    explicitly and :math:`b = 0`.

    Parameters
    ----------
    km : sympy.physics.mechanics.KanesMethod
        With ``kanes_equations(bodies, loads)`` called (or bodies and forcelist given to it).
    params : dict, optional
        {Symbol or name: value} of every other symbol (runtime inputs, see :meth:`with_params`).
    specified : dict, optional
        {dynamicsymbol T(t): expression of t and parameters (or a parameter Symbol)}.
    name, coord_names, coord_units : optional
        As for the constructor; coordinate names default to the dynamicsymbols' names.

    Returns
    -------
    SymbolicModel

    Raises
    ------
    ValueError
        When the kinematic differential equations are not :math:`u = \dot q` (:math:`\dot q = N(q)\, u + c`
        with :math:`N` not a permutation or :math:`c \ne 0`): the message quotes them and says how to
        choose :math:`u = \dot q`; when a
        specified input has no value; when auxiliary speeds are present.
    TypeError
        When ``km`` is not a KanesMethod.

    Examples
    --------
    >>> import sympy as sp
    >>> from sympy.physics.mechanics import (KanesMethod, Particle, Point, ReferenceFrame,
    ...                                      dynamicsymbols)
    >>> q, u = dynamicsymbols("q u")
    >>> m, k = sp.symbols("m k")
    >>> N = ReferenceFrame("N"); O = Point("O"); O.set_vel(N, 0)
    >>> P = O.locatenew("P", q * N.x); P.set_vel(N, u * N.x)
    >>> km = KanesMethod(N, [q], [u], kd_eqs=[q.diff() - u])
    >>> _ = km.kanes_equations([Particle("p", P, m)], [(P, -k * q * N.x)])
    >>> model = SymbolicModel.from_kanes_method(km, params={"m": 1.0, "k": 4.0})
    >>> model.coord_names, model.n
    (('q',), 1)
    """
    from sympy.physics.mechanics import KanesMethod
    if not isinstance(km, KanesMethod):
        raise TypeError(f"from_kanes_method needs a sympy.physics.mechanics.KanesMethod, got {type(km)}")
    if km._uaux:
        raise ValueError("from_kanes_method: the KanesMethod has auxiliary speeds (u_auxiliary); pyint's "
                         "multipliers are the constraint forces: build it without them")
    if not km._bodylist:
        raise ValueError("from_kanes_method: the KanesMethod has no bodies; call "
                         "KM.kanes_equations(bodies, loads) first")
    q, u = list(km.q), list(km.u)
    qd = [x.diff(_mech_t()) for x in q]
    if not km._k_kqdot_implicit:
        raise ValueError("from_kanes_method: the KanesMethod has no kinematic differential equations")
    kdes = list(km._k_kqdot_implicit * _sp().Matrix(qd) + km._k_ku_implicit * _sp().Matrix(u)
                + km._f_k_implicit)
    vel = list(km._k_nh * _sp().Matrix(u) + km._f_nh) if km._k_nh else []
    return _from_mechanics(cls, "from_kanes_method", km._inertial, None, q, u, kdes, list(km._f_h), vel, True,
                           km._bodylist, list(km._forcelist or []), params, specified, name, coord_names,
                           coord_units)


def from_system(cls, system, params=None, specified=None, name="system", coord_names=None, coord_units=None):
    r"""The model of a ``sympy.physics.mechanics.System`` (bodies, joints, loads, actuators).

    As :meth:`from_kanes_method`, from the system's ``q``, ``u``, ``kdes`` (the joints' and
    the user's), ``holonomic_constraints`` (:math:`g`), ``nonholonomic_constraints`` (:math:`A v + b`),
    bodies, loads and the actuators' loads (a LinearSpring becomes the potential
    :math:`k\,(L - L_0)^2 / 2`); whatever ``eom_method`` the system would use (Kane or Lagrange), Kane's
    equations of the unconstrained system give :math:`M` and :math:`f`. The joints' default
    speeds are :math:`u = \dot q` (PinJoint, PrismaticJoint, CylindricalJoint, PlanarJoint, SphericalJoint
    in SymPy 1.14); speeds given other kinematic equations (body rates) are refused.
    A constant force on a point becomes a potential with the system's ``fixed_point`` as the
    origin (see :meth:`from_kanes_method`).

    Parameters
    ----------
    system : sympy.physics.mechanics.System
    params, specified, name, coord_names, coord_units : optional
        As for :meth:`from_kanes_method`.

    Returns
    -------
    SymbolicModel

    Raises
    ------
    ValueError
        When the kdes are not :math:`u = \dot q` (quoted, with how to choose :math:`u = \dot q`), a specified input has
        no value, or the system has no bodies.
    TypeError
        When ``system`` is not a System.

    Examples
    --------
    A rod on a pin, gravity as a load (it becomes the potential m g (l/2) sin(theta)):

    >>> import sympy as sp
    >>> from sympy.physics.mechanics import PinJoint, RigidBody, System, dynamicsymbols
    >>> m, l, g = sp.symbols("m l g")
    >>> theta, omega = dynamicsymbols("theta omega")
    >>> ground, rod = RigidBody("ground"), RigidBody("rod", mass=m)
    >>> rod.central_inertia = (m * l**2 / 12) * rod.z.outer(rod.z)
    >>> system = System.from_newtonian(ground)
    >>> system.add_joints(PinJoint("pin", ground, rod, coordinates=theta, speeds=omega,
    ...                            joint_axis=ground.z, child_point=-l / 2 * rod.x))
    >>> system.add_loads((rod.masscenter, -m * g * ground.y))
    >>> model = SymbolicModel.from_system(system, params={"m": 1.0, "l": 1.0, "g": 9.81})
    >>> model.coord_names, model.conservative
    (('theta',), True)
    """
    from sympy.physics.mechanics import System
    if not isinstance(system, System):
        raise TypeError(f"from_system needs a sympy.physics.mechanics.System, got {type(system)}")
    if not system.bodies:
        raise ValueError("from_system: the system has no bodies")
    return _from_mechanics(cls, "from_system", system.frame, system.fixed_point, list(system.q), list(system.u),
                           list(system.kdes), list(system.holonomic_constraints),
                           list(system.nonholonomic_constraints), False, list(system.bodies),
                           list(system.loads), params, specified, name, coord_names, coord_units,
                           actuators=list(system.actuators))


def _from_mechanics(cls, who, frame, origin, q, u, kdes, hol, vel, vel_has_hol, bodies, loads, params,
                    specified, name, coord_names, coord_units, actuators=()):
    """The model of a sympy.physics.mechanics description (from_kanes_method, from_system)."""
    sp = _sp()
    from sympy.physics.mechanics import KanesMethod, Point
    t = _mech_t()
    qd = [x.diff(t) for x in q]
    usub = _speeds_are_qdot(sp, who, q, u, kdes)         # {u_j: q_i'} or a ValueError quoting the kdes
    u_of_q = [next(uj for uj, d in usub.items() if d == qd[i]) for i in range(len(q))]
    udsub = {uj.diff(t): d.diff(t) for uj, d in usub.items()}

    def in_qd(e):   # u -> q', u' -> q''
        return sp.sympify(e).xreplace(udsub).xreplace(usub)

    # loads: a constant force on a point becomes a potential, the rest stays a force
    V, forces = sp.S.Zero, []
    for load in loads:
        loc, vec = load[0], load[1]
        pot = _load_potential(sp, frame, origin, loc, vec, in_qd, q, qd) if isinstance(loc, Point) else None
        if pot is None:
            forces.append((loc, vec))
        else:
            V += pot
    for act in actuators:   # a linear spring's potential, the other actuators' loads
        pot = _spring_potential(sp, frame, act, in_qd, q)
        if pot is None:
            forces.extend((ld[0], ld[1]) for ld in act.to_loads())
        else:
            V += pot
    # Kane's equations with every speed independent and u ordered as q (Kane & Levinson 1985, ch. 6)
    kane = KanesMethod(frame, q_ind=q, u_ind=u_of_q, kd_eqs=[qd[i] - u_of_q[i] for i in range(len(q))])
    kane.kanes_equations(list(bodies), forces or None)
    M, f = in_qd(kane.mass_matrix), in_qd(kane.forcing)
    # M_rs = sum m v_r . v_s + w_r . I . w_s is symmetric; SymPy's entries need not be identical
    # expressions: the mean of M and M^T, after a numerical check that they agree
    _check_symmetric(sp, M, q + qd)
    M = (M + M.T) / 2
    g = [in_qd(x) for x in hol]
    A = b = None
    vel = [in_qd(x) for x in vel]
    if vel:
        cons = sp.Matrix(vel)
        A_ = cons.jacobian(qd)
        if A_.has(*qd):
            raise ValueError(f"{who}: the velocity constraints are not linear in the speeds")
        b_ = cons.xreplace(dict.fromkeys(qd, 0))
        keep = _independent_of_hol(sp, A_, g, q) if vel_has_hol else list(range(A_.shape[0]))
        if keep:
            A, b = A_.extract(keep, list(range(len(q)))), b_.extract(keep, [0])
    exprs = [M, f, sp.Matrix(g or [0]), sp.Matrix([V])] + ([A, b] if A is not None else [])
    exprs, n_inputs = _specified(sp, who, exprs, q, qd, specified)
    M, f, gm, Vm = exprs[:4]
    if A is not None:
        A, b = exprs[4], exprs[5]
    plain = {x: sp.Dummy() for x in qd + q}
    explicit = any(t in sp.sympify(e).xreplace(plain).free_symbols for e in exprs)
    conservative = not forces and not n_inputs and not explicit and \
        (b is None or all(sp.simplify(x) == 0 for x in b))
    return cls(q, qd, t=t, mass=M, force=f, potential=Vm[0] if V != 0 else None,
               hol=list(gm) if g else None, nonhol=(A, b) if A is not None else None, params=params,
               name=name, coord_names=coord_names, coord_units=coord_units, conservative=conservative)
