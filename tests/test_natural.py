"""Natural coordinates (seed 003 §1): the builder, the joints, the manipulator, the Fortran twin."""
import numpy as np
import pytest

from pyint.models._fortran_model import fortran_eval
from pyint.methods.block import BlockMethod
from pyint.models import NaturalSystem, TwoLinkAngles, two_link_manipulator
from pyint.models.iftomm import bricard, flyball_governor
from pyint.models.base import CALLBACK_REQUESTS

X, Y, Z = np.eye(3)


def _dof(model, q):
    g = model.hol_jac(0.0, q)
    return model.n - np.linalg.matrix_rank(g, tol=1e-10)


def test_manipulator_is_the_papers():
    """Eqs. (10)-(13): M = diag(m E, Pi_1 E, Pi_2 E) per bar, q0 consistent, 10 constraints, 2 DOF."""
    m = two_link_manipulator()
    q0, v0 = m.initial_state()
    assert np.array_equal(q0, [0.25, 0, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1])
    assert np.allclose(np.diag(m.mass(q0)), np.repeat([10, 10 * 0.25 / 12, 10 * 0.01 / 12,
                                                         20, 20 * 1.0 / 12, 20 * 0.01 / 12], 2))
    assert np.count_nonzero(m.mass(q0) - np.diag(np.diag(m.mass(q0)))) == 0
    assert m.n_hol == 10 and np.max(np.abs(m.hol(0, q0))) == 0 and _dof(m, q0) == 2
    # (13): r1 - L1/2 e1 = 0 and r2 - L2/2 e1' - r1 - L1/2 e1 = 0 at random q
    q = np.random.default_rng(1).normal(size=12)
    r1, e11, r2, e21 = q[0:2], q[2:4], q[6:8], q[8:10]
    joints = np.concatenate([r1 - 0.25 * e11, r2 - 0.5 * e21 - r1 - 0.25 * e11])
    assert np.allclose(np.sort(np.abs(m.hol(0, q)[6:])), np.sort(np.abs(joints)), atol=1e-15)
    # potential (11) r2^(1) m1 g + r2^(2) m2 g
    assert m.energy(0, q, np.zeros(12)) == pytest.approx(9.81 * (10 * q[1] + 20 * q[7]), rel=1e-14)


def test_manipulator_equals_independent_coordinates():
    """At random angles and rates the direction-vector model's accelerations and energy
    are those of eq. (14) (with the bars' width), mapped to natural coordinates."""
    nat, ang = two_link_manipulator(), TwoLinkAngles(width=0.1)
    rng = np.random.default_rng(7)
    for _ in range(5):
        th, w = rng.normal(size=2), 3 * rng.normal(size=2)
        q, v = ang.to_natural(th, w)
        assert np.max(np.abs(nat.hol(0, q))) <= 1e-15 and np.max(np.abs(nat.hol_vel(0, q, v))) <= 1e-14
        a = nat.consistent_acceleration(0, q, v)[0]
        thdd = np.linalg.solve(ang.mass(th), ang.force(0, th, w))
        eps = 1e-5       # d/dt of the mapped velocity along the motion (central difference)
        vp = ang.to_natural(th + eps * w, w + eps * thdd)[1]
        vm = ang.to_natural(th - eps * w, w - eps * thdd)[1]
        assert np.max(np.abs((vp - vm) / (2 * eps) - a)) <= 1e-7 * max(1, np.max(np.abs(a)))
        assert nat.energy(0, q, v) == pytest.approx(ang.energy(0, th, w), rel=1e-13, abs=1e-12)


@pytest.mark.parametrize("build", [two_link_manipulator, flyball_governor, bricard],
                         ids=["manipulator", "flyball_3d_springs", "bricard_3d"])
def test_fortran_twin_of_the_manipulator(build):
    """The Fortran model's items against the NumPy twin's, planar and spatial (the Fortran side writes
    the components out for d = 2 and 3: hol_gamma, evaluated without the vectors' constants, and
    energy, through the block-diagonal M a, check both)."""
    m = build()
    rng = np.random.default_rng(3)
    cb = m.fortran_callback()
    codes = {v: k for k, v in CALLBACK_REQUESTS.items()}
    for _ in range(3):
        t, q, v, w = 0.3, rng.normal(size=m.n), rng.normal(size=m.n), rng.normal(size=m.n)
        for req in ("mass", "force", "force_q", "force_v", "hol", "hol_jac", "hol_t", "hol_vel_q",
                    "hol_gamma", "hol_gtl_q", "energy"):
            f = np.ravel(fortran_eval(m, req, t, q, v, w))  # the callback writes rows (C order)
            p = np.zeros(max(f.size, 1))
            cb(codes[req], t, q, v, w, p)
            assert np.max(np.abs(f - p[:f.size])) <= 1e-12 * max(1, np.max(np.abs(p))), req


def _spatial(joint):
    """Ground + one bar (r at its centre, e_1 along it) at rest in the identity pose, joined by `joint`."""
    s = NaturalSystem(dim=3, gravity=(0, 0, -9.81))
    b = s.add_body(2.0, pi=(1 / 6, 1e-3, 1e-3))
    s.set_pose(b, (0.5, 0, 0), np.eye(3))
    joint(s, s.ground, b)
    return s.build()


@pytest.mark.parametrize("name,joint,dof", [
    ("spherical", lambda s, g, b: s.spherical(g, (0, 0, 0), b, (-0.5, 0, 0)), 3),
    ("revolute", lambda s, g, b: s.revolute(g, (0, 0, 0), b, (-0.5, 0, 0), axis_i=Y, axis_j=Y), 1),
    ("universal", lambda s, g, b: s.universal(g, (0, 0, 0), Y, b, (-0.5, 0, 0), Z), 2),
    ("cylindrical", lambda s, g, b: s.cylindrical(g, (0, 0, 0), X, b, (0, 0, 0), X), 2),
    ("prismatic", lambda s, g, b: s.prismatic(g, (0, 0, 0), X, b, (0, 0, 0), X, ui=Y, uj=Y), 1),
    ("distance", lambda s, g, b: s.distance(g, (0, 0, 1), b, (-0.5, 0, 0), 1.0), 5),
    ("perpendicular_offset", lambda s, g, b: s.perpendicular_offset(g, Z, (0, 0, 0), b, (0, 0, 0)), 5),
    ("perpendicular", lambda s, g, b: s.perpendicular(g, Z, b, X), 5),
    ("parallel", lambda s, g, b: s.parallel(g, X, b, X), 4),
])
def test_spatial_joints_leave_their_degrees_of_freedom(name, joint, dof):
    m = _spatial(joint)
    q0, _ = m.initial_state()
    assert np.max(np.abs(m.hol(0, q0))) <= 1e-15, name
    assert _dof(m, q0) == dof, name


@pytest.mark.parametrize("joint,dof", [
    (lambda s, g, b: s.revolute(g, (0, 0), b, (-0.5, 0)), 1),
    (lambda s, g, b: s.prismatic(g, (0, 0), (1, 0), b, (0, 0), (1, 0)), 1),
    (lambda s, g, b: s.distance(g, (0, 1), b, (-0.5, 0), 1.0), 2),
])
def test_planar_joints_leave_their_degrees_of_freedom(joint, dof):
    s = NaturalSystem(dim=2, gravity=(0, -9.81))
    b = s.add_body(1.0, pi=(1 / 12, 1e-3))
    s.set_pose(b, (0.5, 0), 0.0)
    joint(s, s.ground, b)
    m = s.build()
    q0, _ = m.initial_state()
    assert np.max(np.abs(m.hol(0, q0))) <= 1e-15 and _dof(m, q0) == dof


def test_spatial_revolute_pendulum_matches_its_one_dof_equation():
    """A bar hinged about the horizontal y axis: phi'' = m g d cos(phi) / I with
    I = Pi_1 + Pi_3 + m d^2; the natural-coordinate model reproduces it and the
    hinge keeps the bar in the x-z plane."""
    from scipy.integrate import solve_ivp
    m = _spatial(lambda s, g, b: s.revolute(g, (0, 0, 0), b, (-0.5, 0, 0), axis_i=Y, axis_j=Y))
    q0, v0 = m.initial_state()
    r = BlockMethod("legendre").integrate(m, q0, v0, 1.0, 0.005)
    mass, d, inertia = 2.0, 0.5, 1 / 6 + 1e-3 + 2.0 * 0.25
    sol = solve_ivp(lambda t, y: [y[1], mass * 9.81 * d * np.cos(y[0]) / inertia], (0, 1), [0, 0],
                    rtol=1e-12, atol=1e-12)
    phi = sol.y[0, -1]
    assert np.max(np.abs(r.q[-1, :3] - d * np.array([np.cos(phi), 0, -np.sin(phi)]))) <= 1e-7
    # r_y, e1_y, e2 = (0, 1, 0), e3_y: the motion stays in the x-z plane
    assert np.max(np.abs(r.q[:, [1, 4, 6, 7, 8, 10]] - [0, 0, 0, 1, 0, 0])) <= 1e-8
    assert np.max(np.abs(r.energy - r.energy[0])) <= 1e-7
    assert np.max(m.direction_error(r.q)) <= 1e-8


def test_spring_damper_energy():
    """A bar on a spherical joint with a spring to the ground: energy conserved without
    damping, decreasing with it."""
    def build(c):
        s = NaturalSystem(dim=3, gravity=(0, 0, -9.81))
        b = s.add_body(1.0, pi=(1 / 12, 1e-3, 1e-3))
        s.set_pose(b, (0.5, 0, 0), np.eye(3))
        s.spherical(s.ground, (0, 0, 0), b, (-0.5, 0, 0))
        s.spring(s.ground, (0.5, 0.5, 0.5), b, (0.5, 0, 0), stiffness=40.0, rest_length=0.2, damping=c)
        return s.build()

    drift = {}
    for c in (0.0, 0.5):
        m = build(c)
        assert m.conservative == (c == 0)
        q0, v0 = m.initial_state()
        r = BlockMethod("legendre").integrate(m, q0, v0, 1.0, 0.005)
        drift[c] = r.energy - r.energy[0]
        if c:
            assert np.all(np.diff(r.energy) <= 1e-9)          # the damper only dissipates
    assert drift[0.5][-1] < -1e-2
    assert np.max(np.abs(drift[0.0])) <= 1e-4 * abs(drift[0.5][-1])


def test_direction_error():
    m = two_link_manipulator()
    q0, _ = m.initial_state()
    assert m.direction_error(q0) == 0
    q = q0.copy()
    q[2] *= 1.001                   # |e1| of bar 1 stretched: |e1^T e1 - 1| = 0.002001
    q[11] += 1e-4                   # e2 of bar 2 stretched: |e2|^2 - 1 = 2e-4, smaller
    assert m.direction_error(q) == pytest.approx(1.001**2 - 1, rel=1e-12)
    assert m.direction_error(np.stack([q0, q])).tolist() == [0, pytest.approx(1.001**2 - 1, rel=1e-12)]


def test_bad_input_names_the_problem():
    s = NaturalSystem(dim=2)
    with pytest.raises(ValueError, match="dim"):
        NaturalSystem(dim=4)
    with pytest.raises(ValueError, match="mass"):
        s.add_body(0.0, pi=(1, 1))
    with pytest.raises(ValueError, match="pi"):
        s.add_body(1.0, pi=(1, 1, 1))
    with pytest.raises(ValueError, match="positive definite"):
        s.add_body(1.0, pi=(1, 0))
    with pytest.raises(ValueError, match="exactly one"):
        s.add_body(1.0)
    b = s.add_body(1.0, pi=(0.1, 0.01))
    with pytest.raises(ValueError, match="spatial"):
        s.spherical(s.ground, (0, 0), b, (0, 0))
    with pytest.raises(ValueError, match="length"):
        s.distance(s.ground, (0, 0), b, (0, 0), -1.0)
    with pytest.raises(ValueError, match="stiffness"):
        s.spring(s.ground, (0, 0), b, (0, 0), stiffness=-1.0)
    with pytest.raises(ValueError, match="finite vector of length 2"):
        s.coincident(s.ground, (0, 0, 0), b, (0, 0))
    other = NaturalSystem(dim=2).add_body(1.0, pi=(0.1, 0.01))
    with pytest.raises(ValueError, match="does not belong"):
        s.coincident(s.ground, (0, 0), other, (0, 0))
    with pytest.raises(ValueError, match="ground has no coordinates"):
        s.set_pose(s.ground, (0, 0), 0.0)
    with pytest.raises(ValueError, match="set_pose"):
        s.build().initial_state()
    s3 = NaturalSystem(dim=3)
    b3 = s3.add_body(1.0, pi=(0.1, 0.1, 0.1))
    with pytest.raises(ValueError, match="orthogonal"):
        s3.set_pose(b3, (0, 0, 0), 2 * np.eye(3))
    with pytest.raises(ValueError, match="axis_i and axis_j"):
        s3.revolute(s3.ground, (0, 0, 0), b3, (0, 0, 0))
    with pytest.raises(ValueError, match="no bodies"):
        NaturalSystem(dim=3).build()
