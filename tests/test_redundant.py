"""Redundant constraints (issue 26): every method runs a mechanism whose constraint Jacobian has
constant rank below its row count on an independent subset of its rows
(fortran/core/reduced_model.f90), and the constraint forces C^T lam, unique although lam is not,
are those of a non-redundant twin of the same mechanism.  The orders, constraint levels and the
agreement with IDA of every method on these mechanisms are in the shared list
(tests/test_methods.py: problems parallelogram_planar, parallelogram_spatial, two_blade_skate)."""
import numpy as np
import pytest

import pyint.methods  # noqa: F401  (registers every method)
from pyint.integrator import METHODS
from pyint.models import Skate, parallelogram
from pyint.problems import PARALLELOGRAM_THETA0, PROBLEMS


def constraint_forces(model, r):
    """C^T lam at every sample of ``r``, C = [G; A] of ``model``."""
    out = []
    for t, q, lam in zip(r.t, r.q, r.lam):
        c = np.vstack([np.reshape(model.hol_jac(t, q), (model.n_hol, model.n)) if model.n_hol else np.zeros((0, model.n)),
                       np.reshape(model.nh_A(t, q), (model.n_nonhol, model.n)) if model.n_nonhol else np.zeros((0, model.n))])
        out.append(c.T @ lam)
    return np.array(out)


def _twin_cases():
    for dim, n_cranks in ((2, 3), (3, 2)):
        for name, cls in sorted(METHODS.items()):
            if cls.accepts(parallelogram(n_cranks, dim)):
                yield pytest.param(name, dim, n_cranks, id=f"{name}-{dim}d")


@pytest.mark.parametrize("name,dim,n_cranks", list(_twin_cases()))
def test_constraint_forces_equal_the_non_redundant_twins(name, dim, n_cranks):
    """The parallelogram with a third crank (plane: 1 redundant row) and the four-bar built in space
    from revolute joints (3 redundant rows) against twins without redundancy (a slot joint; the
    R-R-S-U four-bar): the same motion, and C^T lam equal to 1e-10 relative (measured <= 1.4e-15
    for every method but generalized-alpha).  Generalized-alpha's index-3 multipliers carry round-off
    amplified by 1 / (beta h^2) (Bottasso, Bauchau and Cardona, Multibody Syst. Dyn. 18 (2007) 121):
    a relative change of 1e-15 in q0 moves its forces by 9.9e-8 relative at h = 1e-3, the twin's by
    6.9e-8, so its bound is ten times its own sensitivity to such a change."""
    cls = METHODS[name]
    red, twin = parallelogram(n_cranks, dim), parallelogram(n_cranks, dim, twin=True)
    q0, v0 = red.pose(PARALLELOGRAM_THETA0, 0.0)
    a = cls().integrate(red, q0, v0, 0.25, 1e-3, every=25)
    b = cls().integrate(twin, q0, v0, 0.25, 1e-3, every=25)
    assert len(a.redundant) == (1 if dim == 2 else 3) and len(b.redundant) == 0
    assert np.all(a.lam[:, a.redundant] == 0)
    fa, fb = constraint_forces(red, a), constraint_forces(twin, b)
    scale = np.max(np.abs(fb))
    bound = 1e-10 * scale
    if name == "genalpha":
        c = cls().integrate(twin, q0 * (1 + 1e-15), v0, 0.25, 1e-3, every=25, project=True)
        bound = max(bound, 10 * np.max(np.abs(constraint_forces(twin, c) - fb)))
    assert np.max(np.abs(fa - fb)) <= bound, (np.max(np.abs(fa - fb)) / scale, bound / scale)
    assert np.max(np.abs(a.q - b.q)) <= 1e-9, np.max(np.abs(a.q - b.q))


@pytest.mark.parametrize("name", sorted(n for n, c in METHODS.items() if c.accepts(PROBLEMS["two_blade_skate"].model)))
def test_a_redundant_nonholonomic_row_gives_the_one_blade_skates_forces(name):
    """Two blades on one axle: their no-side-slip rows are the same; A^T lam is the one-blade
    skate's to 1e-10 relative (measured: bit for bit)."""
    red, one = PROBLEMS["two_blade_skate"].model, Skate(torsion=0.5)
    q0, v0 = one.initial_state(omega=1.0)
    a = METHODS[name]().integrate(red, q0, v0, 1.0, 1e-2, every=10)
    b = METHODS[name]().integrate(one, q0, v0, 1.0, 1e-2, every=10)
    assert list(a.redundant) == [1]
    fa, fb = constraint_forces(red, a), constraint_forces(one, b)
    assert np.max(np.abs(fa - fb)) <= 1e-10 * np.max(np.abs(fb))


def test_the_dataset_names_the_dropped_rows():
    model = parallelogram(3, 2)
    q0, v0 = model.pose(PARALLELOGRAM_THETA0, 0.0)
    r = METHODS["rattle"]().integrate(model, q0, v0, 0.01, 1e-3)
    ds = r.to_xarray()
    assert ds.attrs["redundant_constraints"] == 1
    assert ds.attrs["redundant_rows"] == ",".join(f"hol{i + 1}" for i in r.redundant)
    assert "redundant_constraints" not in METHODS["rattle"]().integrate(
        parallelogram(3, 2, twin=True), q0, v0, 0.01, 1e-3).to_xarray().attrs


def test_the_reference_layer_runs_a_redundant_mechanism():
    """pyint.reference (IDA) on the independent rows: the crank angle's own equation's solution
    to IDA's tolerance, the dropped rows' multipliers zero and reported."""
    from pyint import reference
    from pyint.problems import parallelogram_reference
    model = parallelogram(2, 3)
    times = np.linspace(0.0, 1.0, 5)
    r = reference.solve(model, times, *model.pose(PARALLELOGRAM_THETA0, 0.0), rtol=1e-11, cache_dir=False)
    q_ref = parallelogram_reference(model, times[1:])[0]
    assert len(r.redundant) == 3 and np.all(r.lam[:, r.redundant] == 0)
    assert np.max(np.abs(r.q[1:] - q_ref)) <= 1e-8       # measured 3e-10 (rtol 1e-11)
    assert np.max(r.residual[:, 0]) <= 1e-12


def test_inconsistent_constraints_are_refused_naming_the_rows():
    """Crank 0 hinged to the ground twice, the second hinge 1 mm off the first: the rows are
    dependent (the same Jacobian) but no configuration satisfies both; projecting the start names
    the rows left unsatisfied instead of running."""
    model = parallelogram(3, 2)
    s = model.system
    s.revolute(s.ground, (1e-3, 0.0), s.bodies[0], (-0.5, 0.0))
    bad = s.build()
    q0, v0 = model.pose(PARALLELOGRAM_THETA0, 0.0)
    with pytest.raises(ValueError, match=r"inconsistent holonomic constraints.*g\[\d+\] = "):
        METHODS["rattle"]().integrate(bad, q0, v0, 0.01, 1e-3, project=True)


@pytest.mark.parametrize("name", ["genalpha", "rk4_index1", "rattle"])
def test_a_start_at_the_singular_position_is_refused(name):
    """Horizontal cranks: the parallelogram's rank drops there (the loop's mobility jumps), it is
    not a redundancy; the start says so instead of running on rows that stop holding."""
    model = parallelogram(3, 2)
    q0, v0 = model.pose(0.0, 1.0)
    with pytest.raises(ValueError, match="singular position"):
        METHODS[name]().integrate(model, q0, v0, 0.01, 1e-3)


def _adaptive_cases():
    for pname in ("parallelogram_planar", "parallelogram_spatial", "two_blade_skate"):
        for name, cls in sorted(METHODS.items()):
            if cls.accepts(PROBLEMS[pname].model) and cls().adaptive_refusal(PROBLEMS[pname].model) is None:
                yield pytest.param(name, pname, id=f"{name}-{pname}")


@pytest.mark.parametrize("name,pname", list(_adaptive_cases()))
def test_variable_steps_on_a_redundant_mechanism(name, pname):
    """Every method with steps control, rtol 1e-6, outputs at the problem's sample times
    (re-imposed on the kept rows): within 100 rtol of the reference (the shared problems' K are
    <= 43, tests/test_adaptive.py), every row's position residual at round-off."""
    prob = PROBLEMS[pname]
    q0, v0 = prob.initial_state
    r = METHODS[name]().integrate(prob.model, q0, v0, prob.t_end, rtol=1e-6, t_eval=prob.sample_times)
    qr, vr, _ = prob.reference
    assert r.status == "ok" and len(r.redundant) >= 1
    assert np.max(np.abs(r.q - qr)) <= 100 * 1e-6 * max(1.0, np.max(np.abs(qr)))
    if prob.model.n_hol:
        assert np.max(r.residual[:, 0]) <= 1e-12 * (1 + np.max(np.abs(qr)))


# -- singular positions (issue 26): the IFToMM A02 N-four-bar crosses them whenever its cranks are
# horizontal (mobility 1 -> N + 1).  A method either stays on the parallelogram branch or stops with
# a SingularPositionError naming t: never status "ok" off the branch.

def n_four_bar(n):
    """A02 (N four-bars in series: N + 1 cranks and N couplers, L = 1 m, m = 1 kg each, gravity 9.81) in
    natural coordinates, with pose(theta, omega) and the crank angle's equation theta_rhs."""
    from pyint.models import NaturalSystem
    s = NaturalSystem(dim=2, gravity=(0.0, -9.81), name=f"n_four_bar{n}")
    pi1 = 1.0 / 12
    cranks = [s.add_body(1.0, pi=(pi1, 1e-4 * pi1), name=f"crank{i}") for i in range(n + 1)]
    couplers = [s.add_body(1.0, pi=(pi1, 1e-4 * pi1), name=f"coupler{i}") for i in range(n)]
    for i, c in enumerate(cranks):
        s.revolute(s.ground, (float(i), 0.0), c, (-0.5, 0.0))
    for i, k in enumerate(couplers):
        s.revolute(cranks[i], (0.5, 0.0), k, (-0.5, 0.0))
        s.revolute(cranks[i + 1], (0.5, 0.0), k, (0.5, 0.0))

    def q_at(th):
        for i, c in enumerate(cranks):
            s.set_pose(c, (i + 0.5 * np.cos(th), 0.5 * np.sin(th)), th)
        for i, k in enumerate(couplers):
            s.set_pose(k, (i + 0.5 + np.cos(th), np.sin(th)), 0.0)
        return np.concatenate([s._pose[b.index] for b in s.bodies])

    qa, qb, qc = q_at(0.0), q_at(np.pi / 2), q_at(np.pi)
    c0, c1, c2 = (qa + qc) / 2, (qa - qc) / 2, qb - (qa + qc) / 2
    model = s.build()
    model.pose = lambda th, om: (c0 + np.cos(th) * c1 + np.sin(th) * c2, om * (-np.sin(th) * c1 + np.cos(th) * c2))
    inertia = (n + 1) * (1 / 3 + 1e-4 * pi1) + n
    model.theta_rhs = lambda th: -((n + 1) / 2 + n) * 9.81 / inertia * np.cos(th)
    return model


@pytest.fixture(scope="module")
def a02():
    """N = 2 from cranks vertical, B0x' = 1 m/s, 4 s (7 crossings of a singular position); the reference
    q from the crank angle's equation (DOP853, 1e-13) every 0.01 s."""
    from scipy.integrate import solve_ivp
    model = n_four_bar(2)
    t = np.linspace(0.0, 4.0, 401)
    sol = solve_ivp(lambda _, y: [y[1], model.theta_rhs(y[0])], (0.0, 4.0), [np.pi / 2, -1.0], t_eval=t,
                    method="DOP853", rtol=1e-13, atol=1e-13)
    # the crossings: the cranks horizontal, sin(theta) = 0 (t = 0.714, 1.228, 2.656, 3.170)
    fine = solve_ivp(lambda _, y: [y[1], model.theta_rhs(y[0])], (0.0, 4.0), [np.pi / 2, -1.0], dense_output=True,
                     method="DOP853", rtol=1e-13, atol=1e-13).sol
    tf = np.linspace(0.0, 4.0, 40001)
    s = np.sin(fine(tf)[0])
    crossings = tf[np.nonzero(np.diff(np.sign(s)))[0]]
    return model, t, np.array([model.pose(th, om)[0] for th, om in sol.y.T]), crossings


#: What each vector method does on A02 at h = 1e-3 (measured, 4 s: max error of q over the run): those that
#: keep the position constraints pass (generalized-alpha 7.1e-5, RATTLE and symplectic_gl 2.7e-5); the
#: index-1 forms pass too, a step flagged near a crossing taken again on the constraints (the driver's
#: pass_singular, fortran/core/index1.f90 pass_begin): rk4_index1 1.3e-8, baumgarte_rk4 3.6e-9,
#: block_chebyshev 1.3e-11, block_legendre 2.9e-10, block_uniform_eq8 7.3e-10, block_uniform_rk 2.5e-9
#: (with projection="steps": 2.5e-10, 8.0e-9); Lobatto IIIA-IIIB passes all four crossings (2.3e-11): its
#: reduced stage system goes on with its own sparse Jacobian (fortran/symplectic.f90 red_step) where the kept
#: K stops contracting, instead of the dense stage system whose kept matrix turned singular at the second
#: crossing (t = 1.228).
A02_PASS = {"genalpha": {}, "rattle": {}, "symplectic_gl": {}, "rk4_index1": {}, "baumgarte_rk4": {},
            "block_chebyshev": {}, "block_legendre": {}, "block_uniform_eq8": {}, "block_uniform_rk": {},
            "lobatto_iiiab": {}}


@pytest.mark.parametrize("name", sorted(n for n, c in METHODS.items() if "R^n" in c.spaces
                                        and "holonomic" in c.supports))
def test_a02_singular_positions_pass_or_stop_by_name(name, a02):
    from pyint.errors import IntegrationError
    model, t, q_ref, crossings = a02
    q0, v0 = model.pose(np.pi / 2, -1.0)
    method = METHODS[name](**A02_PASS.get(name, {}))
    try:
        r = method.integrate(model, q0, v0, 4.0, 1e-3, every=10)
    except IntegrationError as e:
        assert name not in A02_PASS, str(e)
        assert e.result.status == "singular_position", e.result.status
        # at a crossing (the index-1 forms stop 0.02 before the first, t = 0.714, where sigma_min of
        # C / sigma_max falls below 1e-3)
        assert np.min(np.abs(crossings - e.time)) <= 0.05, e.time
        assert "singular position" in str(e)
        assert np.max(np.abs(e.result.q - q_ref[:len(e.result.t)])) <= 1e-9   # right until there
        return
    assert name in A02_PASS and r.status == "ok"
    assert np.max(np.abs(r.q - q_ref)) <= 1e-3, np.max(np.abs(r.q - q_ref))   # measured <= 7.1e-5 (14x)


def test_a02_projection_steps_still_passes(a02):
    """projection="steps" (every step projected) passes as before: rk4_index1 2.5e-10, baumgarte_rk4
    8.0e-9 (bound >= 100x)."""
    model, t, q_ref, _ = a02
    q0, v0 = model.pose(np.pi / 2, -1.0)
    for name in ("rk4_index1", "baumgarte_rk4"):
        r = METHODS[name](projection="steps").integrate(model, q0, v0, 4.0, 1e-3, every=10)
        assert r.status == "ok" and np.max(np.abs(r.q - q_ref)) <= 1e-6


def test_a_constraint_whose_jacobian_vanishes_is_named():
    """g = x y: a point sliding along the x axis through the origin, where G = (y, x) vanishes (the two
    branches y = 0 and x = 0 cross).  The index-1 form stops there by name instead of returning status
    ok with an error of 1.4e-3 (issue 26): it takes the flagged steps again on the constraints (the
    driver's pass_singular) and passes on its branch, as generalized-alpha does."""
    from pyint.models import SymbolicModel
    import sympy as sp
    x, y, vx, vy = sp.symbols("x y vx vy")
    model = SymbolicModel([x, y], [vx, vy], mass=sp.eye(2), hol=[x * y], name="cross")
    q0, v0 = np.array([-0.5, 0.0]), np.array([1.0, 0.0])
    for name in ("genalpha", "rk4_index1", "baumgarte_rk4", "block_legendre"):
        r = METHODS[name]().integrate(model, q0, v0, 1.0, 1e-3)
        assert r.status == "ok" and np.max(np.abs(r.q[-1] - [0.5, 0.0])) <= 1e-12   # measured <= 8.9e-16
