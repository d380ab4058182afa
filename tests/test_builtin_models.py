"""Per-model checks of the built-in models: closed forms, printed matrices, invariants, bad input.

(tests/test_models.py checks every built-in model generically: Fortran == NumPy,
analytic derivatives == finite differences.)
"""
import numpy as np
import pytest

from pyint import _fortran
from pyint.models._fortran_model import fortran_eval, model_args
from pyint.models import (BUILTIN_MODELS, ChaplyginSleigh, DrivenPendulum, Skate, Snakeboard,
                          SnakeboardCoupled)
from pyint.models.base import fd_derivative

from conftest import builtin_examples


def eom_residual(model, t, q, v, a, lam):
    """M a - f + C^T lam for lam = (lam_h, lam_n) stacked."""
    c = np.vstack([model.hol_jac(t, q).reshape(model.n_hol, model.n),
                   model.nh_A(t, q).reshape(model.n_nonhol, model.n)])
    return model.mass(q) @ a - model.force(t, q, v) + c.T @ lam


def energy_rate(model, t, q, v, a):
    """d/dt energy along (q, v, a) by a central difference."""
    return fd_derivative(lambda s: model.energy(s, q + (s - t) * v, v + (s - t) * a), t)


# -- every model ---------------------------------------------------------------------

@pytest.mark.parametrize("model", builtin_examples(), ids=lambda m: m.name)
def test_energy_fortran_equals_numpy(model, rng):
    """energy of the Fortran twin == NumPy, also for the non-conservative models (mechanical energy)."""
    for _ in range(3):
        t, q, v = 0.1 + rng.random(), rng.normal(size=model.n), rng.normal(size=model.n)
        e = model.energy(t, q, v)
        if np.isnan(e):
            continue
        assert abs(fortran_eval(model, "energy", t, q, v) - e) <= 1e-13 * max(1.0, abs(e))


@pytest.mark.parametrize("m", builtin_examples(), ids=lambda m: m.name)
def test_describe_and_coordinates(m):
    d = m.describe()
    assert d["n"] == m.n and d["n_hol"] == m.n_hol and d["n_nonhol"] == m.n_nonhol
    assert len(m.names()) == m.n and len(m.units()) == m.n
    assert m.fortran_name in BUILTIN_MODELS


@pytest.mark.parametrize("cls, kw", [
    (Snakeboard, {"mass": -1.0}), (Snakeboard, {"k_wheel": -0.1}), (Snakeboard, {"thrust": np.nan}),
    (SnakeboardCoupled, {"wheel_distance": 0.0}), (SnakeboardCoupled, {"inertia": np.inf}),
    (ChaplyginSleigh, {"inertia": 0.0}), (ChaplyginSleigh, {"damping": -1.0}),
    (Skate, {"mass": 0.0}), (Skate, {"slope": np.nan}), (Skate, {"torsion": -0.5}),
    (DrivenPendulum, {"length": -1.0}), (DrivenPendulum, {"freq": -2.0}), (DrivenPendulum, {"amp_x": np.inf}),
])
def test_bad_parameters_raise(cls, kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        cls(**kw)


def test_non_numeric_parameter_is_type_error():
    with pytest.raises(TypeError, match="mass"):
        Skate(mass="heavy")


@pytest.mark.parametrize("name, nr", [("snakeboard", 8), ("snakeboard_coupled", 5),
                                      ("chaplygin_sleigh", 5), ("skate", 5), ("driven_pendulum", 6)])
def test_fortran_constructor_rejects_bad_rpar(name, nr):
    ipar = np.zeros(1, dtype=np.int32)
    *_, ierr = _fortran.model_lookup(name, ipar, np.ones(nr))
    assert ierr == 0
    *_, ierr = _fortran.model_lookup(name, ipar, np.ones(nr + 1))
    assert ierr == 1
    bad = np.ones(nr); bad[0] = -1.0   # every model's first parameter is a mass
    *_, ierr = _fortran.model_lookup(name, ipar, bad)
    assert ierr == 1


# -- snakeboard (seed 000) -------------------------------------------------------------

def _wheel_check(model, wheels, rng):
    """A v == lateral velocity of each wheel contact point (geometry, by finite differences).

    wheels: (d, beta(q)) pairs: the wheel at (x, y) + d (cos theta, sin theta) heading theta + beta.
    """
    for _ in range(3):
        q, v = rng.normal(size=model.n), rng.normal(size=model.n)
        av = model.nh_A(0.0, q) @ v
        for k, (d, beta) in enumerate(wheels):
            pos = lambda s: q[:2] + s * v[:2] + d * np.array([np.cos(q[2] + s * v[2]), np.sin(q[2] + s * v[2])])
            vel = fd_derivative(pos, 0.0)
            h = q[2] + beta(q)
            assert abs(av[k] - (-np.sin(h) * vel[0] + np.cos(h) * vel[1])) < 1e-8


def test_snakeboard_mass_matrix_is_the_printed_one():
    sb = Snakeboard()
    m, J, Jr, Jw = 6.0, 0.016, 0.072, 0.0013
    printed = np.array([[m, 0, 0, 0, 0, 0],
                        [0, m, 0, 0, 0, 0],
                        [0, 0, J + Jr + 2 * Jw, Jr, Jw, Jw],
                        [0, 0, Jr, Jr, 0, 0],
                        [0, 0, Jw, 0, Jw, 0],
                        [0, 0, Jw, 0, 0, Jw]])
    assert np.array_equal(sb.mass(np.zeros(6)), printed)
    assert np.array_equal(fortran_eval(sb, "mass", 0.0, np.ones(6), np.zeros(6)), printed)


def test_snakeboard_kinetic_energy_and_forces(rng):
    sb = Snakeboard()
    q, v = rng.normal(size=6), rng.normal(size=6)
    x, y, th, psi, pb, pf = v
    t_formula = (0.5 * sb.m * (x**2 + y**2) + 0.5 * sb.J * th**2 + 0.5 * sb.Jr * (th + psi)**2
                 + 0.5 * sb.Jw * ((th + pb)**2 + (th + pf)**2))
    assert abs(0.5 * v @ sb.mass(q) @ v - t_formula) < 1e-14
    f = sb.force(0.0, q, v)
    assert np.allclose(f, [20 * np.cos(q[2]), 20 * np.sin(q[2]), 0, -q[3], -0.1 * q[4], -0.1 * q[5]], atol=1e-15)


def test_snakeboard_constraints_are_wheel_no_slip(rng):
    sb = Snakeboard()
    _wheel_check(sb, [(-sb.L, lambda q: q[4]), (sb.L, lambda q: q[5])], rng)


def test_snakeboard_initial_state_and_energy_balance():
    """Paper start is consistent; d(energy)/dt equals the thrust power (springs inside energy)."""
    sb = Snakeboard()
    q, v = sb.initial_state()
    assert np.array_equal(q, [0, 0, 0, 0.2, 0, np.pi / 3]) and not v.any()
    rng = np.random.default_rng(5)
    for _ in range(3):
        q = rng.normal(size=6)
        v = rng.normal(size=6)
        # project v onto A v = 0
        a_ = sb.nh_A(0.0, q)
        v -= a_.T @ np.linalg.solve(a_ @ a_.T, a_ @ v)
        acc, _, lam = sb.consistent_acceleration(0.0, q, v)
        assert np.max(np.abs(sb.nh_A(0.0, q) @ v)) < 1e-14
        assert abs(energy_rate(sb, 0.0, q, v, acc) - sb.thrust_power(q, v)) < 1e-7 * (1 + abs(sb.thrust_power(q, v)))


# -- snakeboard with coupled axles (seed 004) ---------------------------------------------

def _coupling():
    """P: q5 = (x, y, theta, psi, phi) -> q6 = (x, y, theta, psi, phi_b = -phi, phi_f = phi)."""
    p = np.zeros((6, 5))
    p[:4, :4] = np.eye(4)
    p[4, 4], p[5, 4] = -1.0, 1.0
    return p


def test_coupled_snakeboard_is_the_seed000_board_with_coupled_axles(rng):
    """M_c = P^T M_6 P and A_c(q) = A_6(P q) P: the derivation in the docstring, checked."""
    sc, sb, p = SnakeboardCoupled(), Snakeboard(thrust=0.0, k_rotor=0.0, k_wheel=0.0), _coupling()
    assert np.allclose(sc.mass(np.zeros(5)), p.T @ sb.mass(np.zeros(6)) @ p, rtol=0, atol=1e-15)
    for _ in range(3):
        q, v = rng.normal(size=5), rng.normal(size=5)
        assert np.allclose(sc.nh_A(0.0, q), sb.nh_A(0.0, p @ q) @ p, rtol=0, atol=1e-15)
        assert abs(sc.energy(0.0, q, v) - sb.energy(0.0, p @ q, p @ v)) < 1e-14
    _wheel_check(sc, [(-sc.L, lambda q: -q[4]), (sc.L, lambda q: q[4])], rng)


@pytest.mark.parametrize("kind", ["straight", "locked", "general"])
def test_coupled_initial_states_are_consistent(kind):
    sc = SnakeboardCoupled()
    q, v = sc.initial_state(kind)
    assert np.max(np.abs(sc.nh_A(0.0, q) @ v)) < 1e-15
    assert abs(v[0] * np.cos(q[2]) + v[1] * np.sin(q[2]) - 1.0) < 1e-15   # forward speed 1
    if kind == "straight":
        assert q[4] == 0.0 and v[2] == 0.0
    if kind == "locked":
        assert v[4] == 0.0 and q[4] == np.pi / 8
    if kind == "general":
        assert v[4] != 0.0 and v[3] != 0.0


def test_coupled_initial_state_bad_input():
    sc = SnakeboardCoupled()
    with pytest.raises(ValueError, match="kind"):
        sc.initial_state("circle")
    with pytest.raises(TypeError, match="phi_dot"):
        sc.initial_state("locked", phi_dot=1.0)
    with pytest.raises(ValueError, match="perpendicular"):
        sc.initial_state("locked", phi=np.pi / 2)
    with pytest.raises(ValueError, match="speed"):
        sc.initial_state("straight", speed=np.nan)


@pytest.mark.parametrize("phi", [np.pi / 8, np.pi / 16, np.pi / 32])
def test_locked_steering_circle_radius(phi):
    """From the model's own accelerations: curvature radius of the centre's path = l cot(phi)."""
    sc = SnakeboardCoupled()
    q, v = sc.initial_state("locked", phi=phi, speed=1.3, psi_dot=0.7)
    a, _, lam = sc.consistent_acceleration(0.0, q, v)
    speed = np.hypot(v[0], v[1])
    radius = speed**3 / abs(v[0] * a[1] - v[1] * a[0])
    assert abs(radius - 0.2 / np.tan(phi)) < 1e-12 * radius
    assert abs(radius - sc.circle_radius(phi)) < 1e-12 * radius
    assert abs(a[2]) < 1e-12 and abs(a[3]) < 1e-12 and abs(a[4]) < 1e-12   # theta', psi', phi' stay
    assert abs(lam[0] - lam[1]) < 1e-9 * abs(lam[0])


@pytest.mark.parametrize("phi", [np.pi / 8, np.pi / 32, -0.4])
def test_locked_steering_exact_motion(phi):
    """The exact circle satisfies A v = 0 and M a = f - A^T lam with its lam, at several t;
    its q, v, a are mutual derivatives; consistent_acceleration returns the same a and lam."""
    sc = SnakeboardCoupled()
    kw = dict(phi=phi, speed=0.8, theta=0.4, psi_dot=-1.1)
    q0, v0 = sc.initial_state("locked", **kw)
    q, v, _, _ = sc.locked_steering(0.0, **kw)
    assert np.allclose(q, q0, atol=1e-15) and np.allclose(v, v0, atol=1e-15)
    for t in (0.3, 1.7, 5.0, 12.5):
        q, v, a, lam = sc.locked_steering(t, **kw)
        assert np.max(np.abs(sc.nh_A(t, q) @ v)) < 1e-14
        assert np.max(np.abs(eom_residual(sc, t, q, v, a, lam))) < 1e-12 * max(1.0, np.max(np.abs(lam)))
        a2, _, lam2 = sc.consistent_acceleration(t, q, v)
        assert np.allclose(a2, a, rtol=0, atol=1e-12) and np.allclose(lam2, lam, rtol=1e-10)
        assert np.allclose(fd_derivative(lambda s: sc.locked_steering(s, **kw)[0], t), v, atol=1e-8)
        assert np.allclose(fd_derivative(lambda s: sc.locked_steering(s, **kw)[1], t), a, atol=1e-8)
        assert abs(sc.energy(t, q, v) - sc.energy(0.0, q0, v0)) < 1e-14


def test_straight_run_is_the_phi_zero_locked_motion():
    sc = SnakeboardCoupled()
    q0, v0 = sc.initial_state("straight", speed=2.0, theta=0.5)
    q, v, a, lam = sc.locked_steering(3.0, phi=0.0, speed=2.0, theta=0.5)
    assert np.allclose(q[:2], 3.0 * v0[:2], atol=1e-14) and not a.any() and not lam.any()
    a2, _, lam2 = sc.consistent_acceleration(0.0, q0, v0)
    assert np.max(np.abs(a2)) < 1e-14 and np.max(np.abs(lam2)) < 1e-12


def test_coupled_general_state_free_motion_and_rank_drop():
    """phi'' = 0 and theta'' + psi'' = 0 in free motion; at the listed times A loses rank."""
    sc = SnakeboardCoupled()
    q, v = sc.initial_state("general")
    a, _, _ = sc.consistent_acceleration(0.0, q, v)
    assert abs(a[4]) < 1e-12 and abs(a[2] + a[3]) < 1e-12
    times = sc.rank_drop_times(q, v, 100.0)
    assert np.allclose(times[:2], [(np.pi / 2 - np.pi / 8) / 0.1, (3 * np.pi / 2 - np.pi / 8) / 0.1])
    assert len(times) == 3 and times[-1] <= 100.0
    for t in times:
        qt = q.copy(); qt[4] = q[4] + v[4] * t
        assert np.linalg.matrix_rank(sc.nh_A(t, qt), tol=1e-9) == 1
    qt = q.copy(); qt[4] = q[4] + v[4] * 0.5 * times[0]
    assert np.linalg.matrix_rank(sc.nh_A(0.0, qt), tol=1e-9) == 2


# -- skate (seed 004) -------------------------------------------------------------------

@pytest.mark.parametrize("omega", [1.0, 2.5])
def test_skate_closed_form(omega):
    """The closed form satisfies A v = 0, M a = f - A^T lam with lam = +2 m g sin(alpha) sin(omega t)."""
    sk = Skate()
    q0, v0 = sk.initial_state(omega)
    assert np.array_equal(q0, sk.exact(0.0, omega)[0]) and np.allclose(v0, sk.exact(0.0, omega)[1], atol=0)
    e0 = sk.energy(0.0, q0, v0)
    for t in (0.0, 0.4, 1.3, 2.9, 7.0, 31.0):
        q, v, a, lam = sk.exact(t, omega)
        assert abs(sk.nh_vel(t, q, v)[0]) < 1e-14
        assert np.max(np.abs(eom_residual(sk, t, q, v, a, lam))) < 1e-13
        assert abs(lam[0] - 2 * 10 * np.sin(np.pi / 12) * np.sin(omega * t)) < 1e-13
        a2, _, lam2 = sk.consistent_acceleration(t, q, v)
        assert np.allclose(a2, a, rtol=0, atol=1e-13) and np.allclose(lam2, lam, rtol=0, atol=1e-13)
        assert np.allclose(fd_derivative(lambda s: sk.exact(s, omega)[0], t), v, atol=1e-8)
        assert np.allclose(fd_derivative(lambda s: sk.exact(s, omega)[1], t), a, atol=1e-8)
        assert abs(sk.energy(t, q, v) - e0) < 1e-12


def test_skate_torsion_spring_is_a_parameter_of_both_twins():
    """Skate(torsion=k): f_3 = -k theta, energy + k theta^2 / 2, named skate_torsion; the closed form
    is the k = 0 one; the Fortran constructor rejects k < 0."""
    q, v = np.array([0.1, -0.2, 0.7]), np.array([0.3, 0.4, -0.5])
    plain, spring = Skate(), Skate(torsion=0.5)
    assert (plain.name, spring.name) == ("skate", "skate_torsion") and spring.describe()["torsion"] == 0.5
    assert spring.force(0.0, q, v)[2] == -0.5 * 0.7 and plain.force(0.0, q, v)[2] == 0.0
    # energies ~0.1: a few round-offs of the terms (~1e-17), bound 1e-15
    assert abs(spring.energy(0.0, q, v) - plain.energy(0.0, q, v) - 0.5 * 0.5 * 0.7**2) <= 1e-15
    assert abs(fortran_eval(spring, "energy", 0.0, q, v) - spring.energy(0.0, q, v)) <= 1e-15
    with pytest.raises(ValueError, match="torsion = 0"):
        spring.exact(1.0)
    *_, ierr = _fortran.model_lookup("skate", np.zeros(1, dtype=np.int32), np.array([1.0, 1.0, 10.0, 0.2, -0.5]))
    assert ierr == 1


def test_skate_exact_needs_omega():
    with pytest.raises(ValueError, match="omega"):
        Skate().exact(1.0, omega=0.0)


# -- Chaplygin sleigh (M depends on q) -------------------------------------------------

def test_sleigh_mass_matrix_depends_on_q_and_is_nonsingular(rng):
    sl = ChaplyginSleigh()
    assert not sl.constant_mass
    for th in rng.uniform(-np.pi, np.pi, size=5):
        q = np.array([0.3, -0.2, th])
        m = sl.mass(q)
        assert abs(np.linalg.det(m) - sl.m**2 * sl.J) < 1e-12
        b = np.array([[1, 0, -sl.a * np.sin(th)], [0, 1, sl.a * np.cos(th)], [0, 0, 1]])
        assert np.allclose(m, b.T @ np.diag([sl.m, sl.m, sl.J]) @ b, rtol=0, atol=1e-15)
    assert np.max(np.abs(sl.mass([0, 0, 0.0]) - sl.mass([0, 0, 1.0]))) > 0.1
    _, fv = sl.force_jac(0.0, np.array([0.1, 0.2, 0.3]), np.array([0.5, -0.4, 1.2]))
    assert np.max(np.abs(fv)) > 0.1
    assert np.max(np.abs(sl.mass_dq(np.array([0.1, 0.2, 0.3]), np.ones(3)))) > 0.1


@pytest.mark.parametrize("offset", [0.3, -0.25])
def test_sleigh_reduces_to_the_textbook_equations(offset, rng):
    """k = c = 0: u' = a w^2, (J + m a^2) w' = -m a u w from the model's own accelerations."""
    sl = ChaplyginSleigh(mass=1.7, inertia=0.09, offset=offset, stiffness=0.0, damping=0.0)
    assert sl.conservative
    for _ in range(4):
        u, w, th = rng.normal(), rng.normal(), rng.uniform(-3, 3)
        q, v = sl.initial_state(speed=u, omega=w, theta=th, x=rng.normal(), y=rng.normal())
        acc, _, lam = sl.consistent_acceleration(0.0, q, v)
        e = np.array([np.cos(th), np.sin(th)])
        udot = acc[:2] @ e                       # d/dt (v . e) = a . e + v . e' and v . e' = 0
        assert abs(udot - offset * w**2) < 1e-12 * (1 + w**2)
        assert abs((sl.J + sl.m * offset**2) * acc[2] + sl.m * offset * u * w) < 1e-12 * (1 + abs(u * w))
        assert abs(energy_rate(sl, 0.0, q, v, acc)) < 1e-8


def test_sleigh_energy_balance_with_spring_and_damper(rng):
    """d(T + V)/dt = -c theta'^2 on consistent states (spring inside the energy, damper dissipates)."""
    sl = ChaplyginSleigh()
    assert not sl.conservative
    for _ in range(4):
        q, v = sl.initial_state(speed=rng.normal(), omega=rng.normal(), theta=rng.uniform(-3, 3),
                                x=rng.normal(), y=rng.normal())
        acc, _, _ = sl.consistent_acceleration(0.0, q, v)
        assert abs(sl.nh_vel(0.0, q, v)[0]) < 1e-15
        assert abs(energy_rate(sl, 0.0, q, v, acc) + sl.c * v[2]**2) < 1e-8


# -- pendulum on a moving support (rheonomic) ---------------------------------------------

def test_driven_pendulum_hanging_closed_form():
    """amp_x = 0: hanging straight below the shaken support is exact, lam = m (g + y'') / l."""
    dp = DrivenPendulum(amp_x=0.0, amp_y=0.2, freq=7.0, length=0.8, mass=1.5)
    for t in (0.0, 0.1, 0.77, 2.3):
        q, v, a, lam = dp.hanging_exact(t)
        assert abs(dp.hol(t, q)[0]) < 1e-15 and abs(dp.hol_vel(t, q, v)[0]) < 1e-15
        assert abs(dp.hol_acc(t, q, v, a)[0]) < 1e-13
        assert np.max(np.abs(eom_residual(dp, t, q, v, a, lam))) < 1e-13
        a2, lam2, _ = dp.consistent_acceleration(t, q, v)
        assert np.allclose(a2, a, rtol=0, atol=1e-12) and np.allclose(lam2, lam, rtol=1e-12)
    with pytest.raises(ValueError, match="amp_x"):
        DrivenPendulum().hanging_exact(0.0)


def test_driven_pendulum_time_terms_and_power(rng):
    """initial_state is consistent at any t0; the drive power is d(energy)/dt; the time terms are nonzero."""
    dp = DrivenPendulum()
    for _ in range(4):
        t0 = rng.uniform(0, 5)
        q, v = dp.initial_state(angle=rng.uniform(-2, 2), omega=rng.normal(), t0=t0)
        assert abs(dp.hol(t0, q)[0]) < 1e-15 and abs(dp.hol_vel(t0, q, v)[0]) < 1e-14
        acc, lam, _ = dp.consistent_acceleration(t0, q, v)
        assert abs(dp.hol_acc(t0, q, v, acc)[0]) < 1e-12
        assert abs(energy_rate(dp, t0, q, v, acc) - dp.drive_power(t0, q, lam)) < 1e-7 * (1 + abs(lam[0]))
    t = 0.3
    q, v = dp.initial_state(angle=-0.5, t0=t)
    assert np.max(np.abs(dp.hol_jac_t(t, q))) > 0.1 and abs(dp.hol_tt(t, q)[0]) > 0.01
    assert abs(fortran_eval(dp, "hol_t", t, q, v)[0]) > 0.1


def test_models_reach_fortran_with_their_sizes():
    for m in builtin_examples():
        args = model_args(m, "fortran")
        assert args["model_id"] > 0 and args["mh"] == m.n_hol and args["mn"] == m.n_nonhol
