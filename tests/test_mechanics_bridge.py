"""Models straight from sympy.physics.mechanics (SymbolicModel.from_kanes_method, from_system) and the
refusal of velocities that are not the coordinates' derivatives (issue 29).

SymPy's tutorial models (pyint/models/sympy_tutorials.py) go through the bridge and are checked against SymPy's
own equations of motion integrated by DOP853 at rtol 1e-12 (sympy_tutorials.sympy_reference): every method
that accepts the model converges at its order (pyint.convergence.measured_orders, the shared test's fit)
and keeps the constraint levels it claims.
"""
import functools

import numpy as np
import pytest
import sympy as sp
from scipy.optimize import fsolve
from sympy.physics.mechanics import (KanesMethod, LagrangesMethod, Lagrangian, Particle, PinJoint, Point,
                                     ReferenceFrame, RigidBody, System, dynamicsymbols)

import pyint.methods  # noqa: F401  registers every method
from pyint.convergence import measured_orders
from pyint.integrator import METHODS
from pyint.models import SymbolicModel
from pyint.problems import Problem
from pyint.models.sympy_tutorials import (RTOL, cartesian_pendulum, four_bar, rolling_disc_body_rates,
                                          rolling_disc_qdot, sympy_reference)
from mechanics_reference import UNCONSTRAINED_ORDER

pytestmark = pytest.mark.usefixtures("fresh_model_cache")
t = dynamicsymbols._t


# -- the silent trap: velocities that are not q' ------------------------------------------------

def test_rolling_disc_with_body_rates_is_refused_by_name():
    """The tutorial's disc (u = body angular rates): the constructor refuses v = u by name, the bridge quotes
    the kinematic equations solved for q' and says how to choose u = q' (issue 29: RK4 returned status ok
    with q(0.3) = (-0.35, -1.61, 0.17) against the truth (0.30, 0.13, -1.86))."""
    km, p = rolling_disc_body_rates()
    with pytest.raises(ValueError, match=r"v\[0\] = u1\(t\) is not q\[0\]' = q1'\(t\).*u = q'"):
        SymbolicModel(km.q, km.u, mass=km.mass_matrix, force=km.forcing, params=p)
    with pytest.raises(ValueError) as err:
        SymbolicModel.from_kanes_method(km, params=p)
    msg = str(err.value)
    assert "q1' = u3(t)/cos(q2(t))" in msg and "q3' = u2(t) - u3(t)*tan(q2(t))" in msg
    assert "kd_eqs=[q1.diff(t) - u1" in msg


def test_velocities_must_be_the_derivatives_of_their_coordinates():
    x, y = dynamicsymbols("x y")
    vx = sp.Symbol("vx")
    with pytest.raises(ValueError, match=r"v\[1\] = Derivative\(x\(t\), t\) is not q\[1\]' = y'\(t\)"):
        SymbolicModel([x, y], [x.diff(t), x.diff(t)], mass=sp.eye(2))
    with pytest.raises(ValueError, match=r"v\[0\] = Derivative\(x\(t\), t\) is not q\[0\]' = a'"):
        SymbolicModel([sp.Symbol("a")], [x.diff(t)], mass=[[1]])
    # plain velocity symbols with q'(t) in the expressions: the q' would silently be a constant
    with pytest.raises(ValueError, match=r"force contains Derivative\(x, t\).*q' = v"):
        SymbolicModel([x], [vx], mass=[[1]], force=[-x.diff(t)])


def test_lagrangian_written_in_joint_speeds_points_to_the_kdes():
    system, p = _pendulum_system()
    L = Lagrangian(system.frame, *system.bodies)
    lm = LagrangesMethod(L, system.q, frame=system.frame)
    with pytest.raises(ValueError, match=r"contain omega\(t\), neither coordinates.*system\.kdes.*from_system"):
        SymbolicModel.from_lagranges_method(lm, params=p)


# -- the tutorial models through the bridge --------------------------------------------------------

def _pendulum_system(torque=False):
    """A rigid pendulum on a PinJoint (u = q'), gravity as a load, optionally a specified torque T(t)."""
    q, u, T = dynamicsymbols("theta omega T")
    m, l, g = sp.symbols("m l g")
    ground = RigidBody("ground")
    system = System.from_newtonian(ground)
    bob = Particle("bob", mass=m)
    rod = RigidBody("rod", mass=sp.S.Zero)
    rod.central_inertia = 0 * rod.frame.x.outer(rod.frame.x)
    system.add_joints(PinJoint("pin", ground, rod, coordinates=q, speeds=u, joint_axis=ground.z,
                               child_point=-l * rod.x))
    bob.point = rod.masscenter
    system.add_bodies(bob)
    system.add_loads((rod.masscenter, -m * g * ground.y))
    if torque:
        system.add_loads((rod.frame, T * ground.z))
    return system, {m: 2.0, l: 0.5, g: 9.81}


@functools.lru_cache(maxsize=None)
def _bridged(name):
    """(model, SymPy object, params, q0, v0, t_end, h0) of a tutorial model through the bridge."""
    if name == "rolling_disc":
        km, p = rolling_disc_qdot()
        model = SymbolicModel.from_kanes_method(km, params=p, name="rolling_disc")
        q0, v0 = np.array([0.0, 0.3, 0.0]), np.array([1.0, 0.5, -8.0])   # yaw, lean, spin and their rates
        truth, _ = rolling_disc_body_rates()   # checked against the tutorial's own body-rate equations
        u0 = np.array([v0[1], np.sin(q0[1]) * v0[0] + v0[2], np.cos(q0[1]) * v0[0]])
        return model, truth, p, q0, v0, u0, 1.0
    if name == "four_bar":
        system, p = four_bar()
        model = SymbolicModel.from_system(system, params=p, name="four_bar")
        q1 = -0.5  # crank angle; the coupler and rocker angles close the loop; released from rest
        q0 = np.array([q1, *fsolve(lambda x: model.hol(0.0, np.array([q1, *x])), [1.5, 1.5], xtol=1e-13)])
        v0 = np.zeros(3)
        system.form_eoms()
        return model, system, p, q0, v0, v0, 1.0
    km, p = cartesian_pendulum()     # q = (q2, q1) = (y, x): KanesMethod's q_ind then q_dep
    model = SymbolicModel.from_kanes_method(km, params=p, name="cartesian_pendulum")
    th, w = 0.8, 1.0
    q0, v0 = np.array([np.sin(th), np.cos(th)]), w * np.array([np.cos(th), -np.sin(th)])
    return model, km, p, q0, v0, v0, 1.0


@functools.lru_cache(maxsize=None)
def _problem(name):
    model, eom, p, q0, v0, u0, t_end = _bridged(name)
    m = model.n_hol + model.n_nonhol

    def reference_at(times):
        qr, qdr = sympy_reference(eom, p, q0, u0, times)
        return qr, qdr, np.full((len(times), m), np.nan)    # SymPy's reduced equations give no multipliers
    return Problem(name, lambda: model, t_end=t_end, h0=t_end / 32, make_state=lambda _: (q0, v0),
                   reference_at=reference_at, source=f"SymPy's mass_matrix_full, forcing_full by DOP853, rtol {RTOL}")


def test_bridge_reads_structure_names_and_gravity():
    disc, four, cart = (_bridged(k)[0] for k in ("rolling_disc", "four_bar", "cartesian_pendulum"))
    assert (disc.n, disc.n_hol, disc.n_nonhol, disc.coord_names) == (3, 0, 0, ("q1", "q2", "q3"))
    # the System's loop closure is g; its velocity constraints are their derivatives: not A v + b again
    assert (four.n, four.n_hol, four.n_nonhol, four.coord_names) == (3, 2, 0, ("q1", "q2", "q3"))
    # KanesMethod's velocity constraint is the derivative of its configuration constraint: dropped
    assert (cart.n, cart.n_hol, cart.n_nonhol, cart.coord_names) == (2, 1, 0, ("q2", "q1"))
    # gravity loads became potentials: all three conservative, V = m g r cos(lean) for the disc
    assert disc.conservative and four.conservative and cart.conservative
    q, v = np.array([0.1, 0.4, 0.2]), np.zeros(3)
    assert abs(disc.energy(0.0, q, v) - 1.0 * 9.81 * 0.5 * np.cos(0.4)) <= 1e-14
    assert set(four.params) == {"l1", "l2", "l3", "l4", "rho", "g"}


def _bridge_pairs():
    """(model, method) pairs where the method accepts the model's kinds (a small stand-in model of each
    kind asks Integrator.accepts at collection, without building the tutorial models)."""
    x, y, vx, vy = sp.symbols("x y vx vy")
    kinds = {"unconstrained": SymbolicModel([x], [vx], mass=[[1]]),
             "holonomic": SymbolicModel([x, y], [vx, vy], mass=sp.eye(2), hol=x**2 + y**2 - 1)}
    for name, kind in (("rolling_disc", "unconstrained"), ("four_bar", "holonomic"),
                       ("cartesian_pendulum", "holonomic")):
        for mname in sorted(METHODS):
            if METHODS[mname].accepts(kinds[kind]):
                yield name, mname


@pytest.mark.parametrize("name,method", list(_bridge_pairs()))
def test_tutorial_models_converge_at_the_claimed_order(name, method):
    """Every method that accepts the model: the q and v slopes against SymPy + DOP853 within 0.2 of the
    order (the claimed one; on the unconstrained disc UNCONSTRAINED_ORDER), and the constraint levels the
    method claims at round-off (as tests/test_methods.py). Measured (q, v): rolling disc 1.97-2.07 (order
    2), 3.98-4.00 (4), 4.97-5.01 (5), galerkin_s3 5.96, galerkin_s4 7.96 / 7.87; four-bar 2.00, 3.89-4.04,
    4.90-5.04; Cartesian pendulum 2.00-2.04, 3.98-4.05, 4.96-4.98."""
    problem = _problem(name)
    model = problem.model
    cls = METHODS[method]
    assert cls.accepts(model)
    order = UNCONSTRAINED_ORDER.get(method, cls.order) if model.n_hol + model.n_nonhol == 0 else cls.order
    slopes, errs = measured_orders(cls(), problem)
    assert abs(slopes[0] - order) <= 0.2 and abs(slopes[1] - order) <= 0.2, (slopes, errs)
    q0, v0 = problem.initial_state
    r = cls().integrate(model, q0, v0, problem.t_end, problem.h0)
    assert r.status == "ok"
    scale = max(1.0, np.max(np.abs(r.q)), np.max(np.abs(r.v)))
    levels = {"position": r.residual[:, 0], "velocity": r.residual[:, 1], "acceleration": r.residual[:, 2]}
    if model.n_hol:
        for level in cls.keeps.get("holonomic", ()):
            assert np.max(levels[level]) <= 1e-13 * scale, (level, np.max(levels[level]))


def test_rolling_disc_reformulated_matches_the_tutorial_to_1e8():
    """The disc with u = q' against the tutorial's body-rate equations (SymPy + DOP853) at t = 0.3:
    RK4 on the index-1 form at h = 1e-3 (measured 3.0e-11 in q, 2.5e-10 in q')."""
    model, eom, p, q0, v0, u0, _ = _bridged("rolling_disc")
    r = METHODS["rk4_index1"]().integrate(model, q0, v0, 0.3, 1e-3)
    qr, qdr = sympy_reference(eom, p, q0, u0, np.array([0.3]))
    assert r.status == "ok"
    assert np.max(np.abs(r.q[-1] - qr[0])) <= 1e-8 and np.max(np.abs(r.v[-1] - qdr[0])) <= 1e-8


#: Relative energy drift of Lobatto IIIA-IIIB (order 4) at h0 over t_end, measured 4.9e-7 (disc), 2.6e-6
#: (four-bar), 1.8e-7 (Cartesian pendulum); bounds 10x.
ENERGY_DRIFT_BOUND = {"rolling_disc": 5e-6, "four_bar": 2.6e-5, "cartesian_pendulum": 2e-6}


@pytest.mark.parametrize("name", ["rolling_disc", "four_bar", "cartesian_pendulum"])
def test_energy_of_the_bridged_models_is_monitored(name):
    """Gravity became a potential, so the energy T + V is the model's and is conserved: Lobatto IIIA-IIIB's
    drift is small and falls like h^4 (measured 16.0-16.1x per halving; bound 8x, one order less)."""
    problem = _problem(name)
    q0, v0 = problem.initial_state
    drifts = []
    for h in (problem.h0, problem.h0 / 2):
        r = METHODS["lobatto_iiiab"]().integrate(problem.model, q0, v0, problem.t_end, h)
        drifts.append(np.max(np.abs(r.energy - r.energy[0])) / abs(r.energy[0]))
    assert drifts[0] <= ENERGY_DRIFT_BOUND[name], drifts
    assert drifts[1] <= drifts[0] / 8.0, drifts


def test_parameters_by_name_or_symbol_and_bare_hol():
    x, y, vx, vy = sp.symbols("x y vx vy")
    m, g, l = sp.symbols("m g l")
    a = SymbolicModel([x, y], [vx, vy], mass=sp.diag(m, m), potential=m * g * y, hol=(x**2 + y**2 - l**2) / 2,
                      params={"m": 1.0, g: 9.81, "l": 1.0})
    assert a.n_hol == 1 and a.params == {"g": 9.81, "l": 1.0, "m": 1.0}
    b, c = a.with_params({g: 1.62}), a.with_params(g=1.62)
    assert b.params == c.params == {"g": 1.62, "l": 1.0, "m": 1.0}
    assert b.energy(0.0, np.array([0.0, -1.0]), np.zeros(2)) == -1.62
    with pytest.raises(ValueError, match="names 'k', which is no symbol of the model"):
        SymbolicModel([x], [vx], mass=[[m]], params={"m": 1.0, "k": 2.0})
    with pytest.raises(ValueError, match="given twice"):
        SymbolicModel([x], [vx], mass=[[m]], params={"m": 1.0, m: 2.0})


def test_specified_inputs_become_functions_of_t():
    system, p = _pendulum_system(torque=True)
    T = dynamicsymbols("T")
    with pytest.raises(ValueError, match=r"specified inputs without a value: T\(t\).*specified="):
        SymbolicModel.from_system(system, params=p)
    A = sp.Symbol("A")
    model = SymbolicModel.from_system(system, params={**p, A: 0.3}, specified={T: A * sp.sin(2 * t)})
    assert model.coord_names == ("theta",) and not model.conservative
    # f = T(t) - m g l cos(theta) (theta from the horizontal): the torque's generalized force and gravity's
    for tt, th in ((0.0, 0.3), (0.4, -1.1)):
        want = 0.3 * np.sin(2 * tt) - 2.0 * 9.81 * 0.5 * np.cos(th)
        assert abs(model.force(tt, np.array([th]), np.array([0.7]))[0] - want) <= 1e-13
    with pytest.raises(ValueError, match="which the equations do not contain"):
        SymbolicModel.from_system(system, params=p, specified={T: 0, dynamicsymbols("Q"): 1})


# -- the gallery pages (examples/plot_10_*, plot_11_*) ---------------------------------------------

def _run_example(name):
    import runpy
    from pathlib import Path

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    try:
        return runpy.run_path(str(Path(__file__).resolve().parents[1] / "examples" / name), run_name="__main__")
    finally:
        plt.close("all")


def test_gallery_four_bar_agrees_with_sympy():
    """The page's runs against SymPy + DOP853 over 3 s at h = 1e-3: measured max |q - SymPy| 6.4e-5
    (generalized-alpha), 2.1e-8 (RK4 index-1); bounds 10x."""
    ns = _run_example("plot_10_four_bar_from_sympy.py")
    assert ns["model"].conservative and ns["model"].n_hol == 2
    assert ns["errors"]["generalized-α"] <= 6.4e-4 and ns["errors"]["RK4 index-1"] <= 2.1e-7
    assert ns["runs"]["generalized-α"].eps_pos <= 1e-13


def test_gallery_rolling_disc_refuses_the_tutorial_and_agrees_with_it():
    """The page: the tutorial's body-rate disc refused (its refusal printed), the u = q' disc against the
    tutorial's equations over 3 s at h = 2e-3: measured 5.8e-9 (RK4 index-1), 2.9e-9 (Lobatto IIIA-IIIB);
    bounds 10x."""
    ns = _run_example("plot_11_rolling_disc_from_sympy.py")
    assert "q1' = u3(t)/cos(q2(t))" in str(ns["refusal"])
    assert ns["errors"]["RK4 index-1"] <= 5.8e-8 and ns["errors"]["Lobatto IIIA-IIIB"] <= 2.9e-8


def test_lagranges_method_with_a_specified_input():
    """A pendulum in its angle with a specified torque T(t) in the forcelist: named when missing, an
    explicit function of t when given; f = T(t) - m g l sin(theta)."""
    th, T = dynamicsymbols("theta T")
    m, l, g, A = sp.symbols("m l g A")
    N = ReferenceFrame("N")
    B = N.orientnew("B", "Axis", [th, N.z])
    O = Point("O")
    O.set_vel(N, 0)
    P = O.locatenew("P", -l * B.y)
    P.v2pt_theory(O, N, B)
    L = Lagrangian(N, Particle("p", P, m)) - m * g * P.pos_from(O).dot(N.y)
    lm = LagrangesMethod(L, [th], forcelist=[(B, T * N.z)], frame=N)
    with pytest.raises(ValueError, match=r"specified inputs without a value: T\(t\); give specified="):
        SymbolicModel.from_lagranges_method(lm, params={m: 1.0, l: 1.0, g: 9.81})
    model = SymbolicModel.from_lagranges_method(lm, params={m: 2.0, l: 0.5, g: 9.81, A: 0.3},
                                                specified={T: A * sp.cos(t)})
    assert not model.conservative and model.coord_names == ("theta",)
    want = 0.3 * np.cos(0.7) - 2.0 * 9.81 * 0.5 * np.sin(0.4)
    assert abs(model.force(0.7, np.array([0.4]), np.array([1.0]))[0] - want) <= 1e-13


def test_kanes_method_knife_edge_equals_the_builtin_skate():
    """A velocity constraint that is not the derivative of a configuration constraint becomes A v + b: the
    knife edge on an incline (KanesMethod with a dependent speed) is pyint's Skate (seed 004). Same
    trajectory as the built-in twin (its A row is the negative of this one: lam changes sign); measured
    bit-identical q and -lam, bounds 1e-12 and 1e-10 (roundoff of a few operations, lam ~ 5)."""
    from pyint.models import Skate
    x, y, th, u1, u2, u3 = dynamicsymbols("x y theta u1 u2 u3")
    m, J, g, alpha = sp.symbols("m J g alpha")
    N = ReferenceFrame("N")                    # x down the slope
    B = N.orientnew("B", "Axis", [th, N.z])    # the blade along B.x
    O = Point("O")
    O.set_vel(N, 0)
    P = O.locatenew("P", x * N.x + y * N.y)
    P.set_vel(N, u1 * N.x + u2 * N.y)
    B.set_ang_vel(N, u3 * N.z)
    body = RigidBody("skate", P, B, m, (J * B.z.outer(B.z), P))
    km = KanesMethod(N, q_ind=[x, y, th], u_ind=[u1, u3], u_dependent=[u2],
                     kd_eqs=[x.diff(t) - u1, y.diff(t) - u2, th.diff(t) - u3],
                     velocity_constraints=[P.vel(N).dot(B.y)])
    km.kanes_equations([body], [(P, m * g * sp.sin(alpha) * N.x)])
    model = SymbolicModel.from_kanes_method(km, params={m: 1.0, J: 1.0, g: 10.0, alpha: np.pi / 12})
    ref = Skate()
    assert (model.n, model.n_hol, model.n_nonhol, model.coord_names) == (3, 0, 1, ("x", "y", "theta"))
    assert model.conservative
    q0, v0 = np.zeros(3), np.array([0.0, 0.0, 2.0])
    for name in ("genalpha", "galerkin_s2", "rk4_index1"):
        a = METHODS[name]().integrate(model, q0, v0, 1.0, 0.01)
        b = METHODS[name]().integrate(ref, q0, v0, 1.0, 0.01)
        assert a.status == "ok"
        assert np.max(np.abs(a.q - b.q)) <= 1e-12 and np.max(np.abs(a.lam + b.lam)) <= 1e-10, name


def test_redundant_configuration_constraints_keep_a_true_velocity_constraint():
    """The span test of the velocity constraints against G uses ranks: with a configuration constraint
    given twice (G rank-deficient), a velocity constraint outside G's span is still kept, and one inside
    it dropped."""
    from pyint.models.symbolic_mechanics import _independent_of_hol
    a, b_, c = sp.symbols("a b c")
    g = [a - b_, 2 * a - 2 * b_]                       # the same constraint twice: rank 1
    A = sp.Matrix([[1, -1, 0], [0, 0, 1], [3, -3, 0]])  # row 0 and 2 in G's span, row 1 not
    assert _independent_of_hol(sp, A, g, [a, b_, c]) == [1]


def _double_pendulum_kane(permuted):
    """A double pendulum of point masses in absolute angles; permuted: u1 = q2', u2 = q1'."""
    q1, q2, u1, u2 = dynamicsymbols("q1 q2 u1 u2")
    m, l, g = sp.symbols("m l g")
    N = ReferenceFrame("N")
    A, B = N.orientnew("A", "Axis", [q1, N.z]), N.orientnew("B", "Axis", [q2, N.z])
    O = Point("O")
    O.set_vel(N, 0)
    P1 = O.locatenew("P1", -l * A.y)
    P2 = P1.locatenew("P2", -l * B.y)
    P1.v2pt_theory(O, N, A)
    P2.v2pt_theory(P1, N, B)
    kd = [q1.diff(t) - u2, q2.diff(t) - u1] if permuted else [q1.diff(t) - u1, q2.diff(t) - u2]
    km = KanesMethod(N, q_ind=[q1, q2], u_ind=[u1, u2], kd_eqs=kd)
    km.kanes_equations([Particle("p1", P1, m), Particle("p2", P2, m)], [(P1, -m * g * N.y), (P2, -m * g * N.y)])
    return km, {m: 1.0, l: 0.7, g: 9.81}


def test_speeds_that_are_the_q_derivatives_in_another_order():
    """kdes u1 = q2', u2 = q1' (a permutation: N is not I but u is q' reordered) give the same model as
    u = q': every item equal at random states (to roundoff)."""
    km, p = _double_pendulum_kane(False)
    a = SymbolicModel.from_kanes_method(km, params=p)
    km, p = _double_pendulum_kane(True)
    b = SymbolicModel.from_kanes_method(km, params=p)
    assert b.coord_names == ("q1", "q2") and a.conservative and b.conservative
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, v = rng.uniform(-1, 1, (2, 2))
        assert np.max(np.abs(a.mass(q) - b.mass(q))) <= 1e-14
        assert np.max(np.abs(a.force(0.0, q, v) - b.force(0.0, q, v))) <= 1e-13
        assert abs(a.energy(0.0, q, v) - b.energy(0.0, q, v)) <= 1e-13


def test_linear_spring_and_gravity_become_a_potential():
    """A pendulum bob on a spring to a wall point (sympy LinearSpring on a LinearPathway) and a damper
    (LinearDamper): the spring and gravity become the potential, the damper stays a force; without the
    damper the model is conservative and its energy is T + m g y + k (L - L0)^2 / 2."""
    from sympy.physics.mechanics import LinearDamper, LinearPathway, LinearSpring
    system, p = _pendulum_system()
    k, L0, c = sp.symbols("k L0 c")
    wall = system.fixed_point.locatenew("W", 1.0 * system.frame.x)
    wall.set_vel(system.frame, 0)
    bob = system.bodies[-1].masscenter
    system.add_actuators(LinearSpring(k, LinearPathway(wall, bob), L0))
    params = {**p, k: 30.0, L0: 0.4}
    model = SymbolicModel.from_system(system, params=params)
    assert model.conservative
    th = 0.6
    x, y = 0.5 * np.cos(th), 0.5 * np.sin(th)
    L = np.hypot(x - 1.0, y)
    assert abs(model.energy(0.0, np.array([th]), np.zeros(1)) - (2.0 * 9.81 * y + 15.0 * (L - 0.4)**2)) <= 1e-13
    r = METHODS["lobatto_iiiab"]().integrate(model, np.array([th]), np.zeros(1), 1.0, 1e-2)
    assert r.status == "ok" and r.energy_drift <= 1e-6      # measured 6.6e-8
    system.add_actuators(LinearDamper(c, LinearPathway(wall, bob)))
    damped = SymbolicModel.from_system(system, params={**params, c: 0.5})
    assert not damped.conservative


def test_kanes_constrained_mass_matrix_passed_by_hand_points_to_the_bridge():
    """The Cartesian pendulum's KM.mass_matrix (its last row: the velocity constraint's derivative) passed to
    the constructor with v = q': refused as not symmetric, pointing to from_kanes_method."""
    km, p = cartesian_pendulum()
    qd = [x.diff(t) for x in km.q]
    rep = dict(zip(km.u, qd))
    with pytest.raises(ValueError, match="not symmetric.*from_kanes_method"):
        SymbolicModel(km.q, qd, mass=km.mass_matrix.xreplace(rep), force=km.forcing.xreplace(rep), params=p)
