"""SymPy's own tutorial models (sympy.physics.mechanics), written as their tutorials write them (needs
SymPy; not imported by ``pyint.models``): tests/test_mechanics_bridge.py builds pyint models from them
(SymbolicModel.from_kanes_method, from_system) and checks them against SymPy's own equations of
motion integrated by DOP853; bench/run.py (section symbolic) times the four-bar's compilation.

* rolling_disc_body_rates: the rolling disc with Kane's generalized speeds u = body angular rates
  (SymPy docs, "A rolling disc", KanesMethod); q' = N(q) u with N != I;
* rolling_disc_qdot: the same disc with u = q' (kd_eqs = [q1' - u1, ...], R's angular velocity left
  to the frames' orientations);
* four_bar: the four-bar linkage from PinJoints and a System with a loop-closure
  constraint (SymPy docs, "Four bar linkage", joints and System);
* cartesian_pendulum: the non-minimal-coordinates pendulum (SymPy docs, "Nonminimal Coordinates
  Pendulum", KanesMethod with a configuration and a velocity constraint).
Each returns (object, dict of parameter values, (q0, u0) consistent initial values).

:func:`sympy_reference` integrates SymPy's own equations of such an object by DOP853: the reference
of tests/test_mechanics_bridge.py and of the gallery's examples plot_10 and plot_11.
"""
import numpy as np
import sympy as sp
from sympy.physics.mechanics import (KanesMethod, Particle, PinJoint, Point, ReferenceFrame, RigidBody, System,
                                     dot, dynamicsymbols, inertia)

t = dynamicsymbols._t


def _rolling_disc(body_rates):
    q1, q2, q3, u1, u2, u3 = dynamicsymbols("q1 q2 q3 u1 u2 u3")
    r, m, g = sp.symbols("r m g")
    N = ReferenceFrame("N")
    Y = N.orientnew("Y", "Axis", [q1, N.z])
    L = Y.orientnew("L", "Axis", [q2, Y.x])
    R = L.orientnew("R", "Axis", [q3, L.y])
    w_R_N_qd = R.ang_vel_in(N)
    if body_rates:
        R.set_ang_vel(N, u1 * L.x + u2 * L.y + u3 * L.z)
        kd = [dot(R.ang_vel_in(N) - w_R_N_qd, uv) for uv in L]
    else:
        kd = [q1.diff(t) - u1, q2.diff(t) - u2, q3.diff(t) - u3]
    C = Point("C")
    C.set_vel(N, 0)
    Dmc = C.locatenew("Dmc", r * L.z)
    Dmc.v2pt_theory(C, N, R)
    I = inertia(L, m / 4 * r**2, m / 2 * r**2, m / 4 * r**2)
    disc = RigidBody("disc", Dmc, R, m, (I, Dmc))
    km = KanesMethod(N, q_ind=[q1, q2, q3], u_ind=[u1, u2, u3], kd_eqs=kd)
    km.kanes_equations([disc], [(Dmc, -m * g * Y.z)])
    return km, {m: 1.0, g: 9.81, r: 0.5}


def rolling_disc_body_rates():
    """The tutorial's disc: u are the angular rates of R in L's axes."""
    return _rolling_disc(True)


def rolling_disc_qdot():
    """The same disc with u = q' (yaw, lean, spin rates)."""
    return _rolling_disc(False)


def four_bar():
    """SymPy's four-bar linkage tutorial (System, PinJoints, loop closure as holonomic constraints):
    link 1 is the ground, links 2-4 turn about pins; gravity (-g N.y) on the moving links is added."""
    q1, q2, q3, u1, u2, u3 = dynamicsymbols("q1:4 u1:4")
    l1, l2, l3, l4, rho, g = sp.symbols("l1:5 rho g")
    N = ReferenceFrame("N")
    link1 = RigidBody("Link1", frame=N)
    links = [link1]
    for name, l in (("Link2", l2), ("Link3", l3), ("Link4", l4)):
        link = RigidBody(name, mass=rho * l)
        link.central_inertia = inertia(link.frame, 0, 0, rho * l**3 / 12)
        links.append(link)
    _, link2, link3, link4 = links
    joint1 = PinJoint("J1", link1, link2, coordinates=q1, speeds=u1, parent_point=l1 / 2 * link1.x,
                      child_point=-l2 / 2 * link2.x, joint_axis=link1.z)
    joint2 = PinJoint("J2", link2, link3, coordinates=q2, speeds=u2, parent_point=l2 / 2 * link2.x,
                      child_point=-l3 / 2 * link3.x, joint_axis=link2.z)
    joint3 = PinJoint("J3", link3, link4, coordinates=q3, speeds=u3, parent_point=l3 / 2 * link3.x,
                      child_point=-l4 / 2 * link4.x, joint_axis=link3.z)
    loop = link4.masscenter.pos_from(link1.masscenter) + l1 / 2 * link1.x + l4 / 2 * link4.x
    system = System.from_newtonian(link1)
    system.add_joints(joint1, joint2, joint3)
    system.add_holonomic_constraints(loop.dot(link1.x), loop.dot(link1.y))
    system.add_loads(*[(link.masscenter, -link.mass * g * N.y) for link in (link2, link3, link4)])
    system.q_ind, system.q_dep = [q1], [q2, q3]
    system.u_ind, system.u_dep = [u1], [u2, u3]
    return system, {l1: 2.0, l2: 0.8, l3: 2.0, l4: 1.0, rho: 1.0, g: 9.81}


def cartesian_pendulum():
    """The non-minimal-coordinates pendulum: q1 = x, q2 = y of a particle on a massless rod of length L."""
    q1, q2 = dynamicsymbols("q1:3")
    u1, u2 = dynamicsymbols("u1:3")
    L, m, g = sp.symbols("L m g")
    N = ReferenceFrame("N")
    pN = Point("N*")
    pN.set_vel(N, 0)
    P = pN.locatenew("P1", q1 * N.x + q2 * N.y)
    P.set_vel(N, P.pos_from(pN).dt(N))
    pP = Particle("pP", P, m)
    kde = [q1.diff(t) - u1, q2.diff(t) - u2]
    f_c = sp.Matrix([P.pos_from(pN).magnitude() - L])
    f_v = sp.Matrix([P.vel(N).express(N).dot(P.pos_from(pN).normalize())]).subs({q1.diff(t): u1, q2.diff(t): u2})
    km = KanesMethod(N, q_ind=[q2], u_ind=[u2], q_dependent=[q1], u_dependent=[u1],
                     configuration_constraints=f_c, velocity_constraints=f_v, kd_eqs=kde)
    km.kanes_equations([pP], [(P, m * g * N.x)])
    return km, {L: 1.0, m: 1.0, g: 9.81}


#: Tolerances of :func:`sympy_reference` (DOP853).
RTOL, ATOL = 1e-12, 1e-14


def sympy_reference(eom, params, q0, u0, times):
    """(q, q') at ``times`` (after 0, increasing; each of shape (len(times), n)) from SymPy's equations of
    ``eom`` (a KanesMethod after kanes_equations, or a System after form_eoms), parameters {Symbol: value},
    x(0) = (q0, u0), integrated by SciPy's DOP853 at :data:`RTOL`, :data:`ATOL`.

    x = (q, u); SymPy's mass_matrix_full(x) x' = forcing_full(x) holds the kinematic differential
    equations, the dynamic equations of the independent speeds and the derivatives of the velocity
    constraints (Kane & Levinson 1985, ch. 6), so its solution also gives q'."""
    from scipy.integrate import solve_ivp
    q, u = list(eom.q), list(eom.u)
    n = len(q)
    qs, us = sp.symbols(f"_q0:{n}"), sp.symbols(f"_u0:{len(u)}")
    rep = dict(zip(u, us))
    rep.update(dict(zip(q, qs)))
    mm = sp.lambdify([t, qs, us], eom.mass_matrix_full.xreplace(params).xreplace(rep), modules="numpy", cse=True)
    ff = sp.lambdify([t, qs, us], eom.forcing_full.xreplace(params).xreplace(rep), modules="numpy", cse=True)

    def rhs(tt, x):
        a = np.array(mm(tt, x[:n], x[n:]), dtype=float)
        b = np.array(ff(tt, x[:n], x[n:]), dtype=float).ravel()
        return np.linalg.solve(a, b)

    sol = solve_ivp(rhs, (0.0, float(times[-1])), np.concatenate([q0, u0]), method="DOP853", rtol=RTOL,
                    atol=ATOL, t_eval=np.concatenate([[0.0], times]))
    if not sol.success:
        raise RuntimeError(f"sympy_reference: DOP853 failed: {sol.message}")
    xs = sol.y.T[1:]
    qd = np.array([rhs(tt, x)[:n] for tt, x in zip(times, xs)])
    return xs[:, :n], qd
