"""Galerkin-Lobatto variational integrator (seed 004): coefficients, dual form,
Newton Jacobian, orders, multiplier, symmetry, constraint, energy, snakeboard, bad input.

Models: the seed-004 skate and snakeboard are the built-in pyint.models.Skate
(with a torsion spring on the heading: Skate(torsion=0.5)) and
pyint.models.SnakeboardCoupled; two small test models live here: a skate in polar coordinates (q-dependent mass
matrix, velocity-dependent forces) and an unconstrained pendulum.
"""
import numpy as np
import pytest

from pyint.models._fortran_model import model_args, model_query
from pyint.convergence import fit_order
from pyint.errors import IntegrationError, StepTooLargeError
from pyint.methods.galerkin import VARIANTS, GalerkinLobatto, galerkin_order, lobatto_rule
from pyint._driver import _option_arrays, call_run, driver_buffers
from pyint.integrator import METHODS
from pyint.models import BUILTIN_MODELS, Model, PendulumChain, Skate, SnakeboardCoupled
from pyint.models.base import fd_jacobian
from pyint.reference.ode import ode_reference


class PolarSkate(Model):
    """Knife edge on a horizontal plane, contact point in polar coordinates (r, phi), heading theta,
    central spring k: M = diag(m, m r^2, J) depends on q and f has Coriolis terms."""

    name = "polar_skate"
    n, n_nonhol = 3, 1
    constant_mass = False
    conservative = True
    m, J, k = 1.0, 0.5, 2.0

    def mass(self, q):
        return np.diag([self.m, self.m * q[0] ** 2, self.J])

    def mass_dq(self, q, a):
        d = np.zeros((3, 3))
        d[1, 0] = 2 * self.m * q[0] * a[1]
        return d

    def force(self, t, q, v):
        r, rd, phd = q[0], v[0], v[1]
        return np.array([self.m * r * phd ** 2 - self.k * r, -2 * self.m * r * rd * phd, 0.0])

    def force_jac(self, t, q, v):
        r, rd, phd = q[0], v[0], v[1]
        fq, fv = np.zeros((3, 3)), np.zeros((3, 3))
        fq[0, 0], fq[1, 0] = self.m * phd ** 2 - self.k, -2 * self.m * rd * phd
        fv[0, 1], fv[1, 0], fv[1, 1] = 2 * self.m * r * phd, -2 * self.m * r * phd, -2 * self.m * r * rd
        return fq, fv

    def nh_A(self, t, q):
        return np.array([[np.sin(q[2] - q[1]), -q[0] * np.cos(q[2] - q[1]), 0.0]])

    def nh_vel_q(self, t, q, v):
        c, s = np.cos(q[2] - q[1]), np.sin(q[2] - q[1])
        return np.array([[-v[1] * c, -v[0] * c - q[0] * v[1] * s, v[0] * c + q[0] * v[1] * s]])

    def nh_dt(self, t, q, v):
        return np.zeros(1)

    def nh_atl_q(self, t, q, lam):
        c, s = np.cos(q[2] - q[1]), np.sin(q[2] - q[1])
        return lam[0] * np.array([[0.0, -c, c], [-c, -q[0] * s, q[0] * s], [0.0, 0.0, 0.0]])

    def energy(self, t, q, v):
        return 0.5 * self.m * (v[0] ** 2 + q[0] ** 2 * v[1] ** 2) + 0.5 * self.J * v[2] ** 2 + 0.5 * self.k * q[0] ** 2

    def initial_state(self, u=0.8, omega=0.7):
        q = np.array([1.0, 0.0, np.pi / 3])
        return q, np.array([u * np.cos(q[2] - q[1]), u * np.sin(q[2] - q[1]) / q[0], omega])


class Pendulum(Model):
    """Unconstrained mathematical pendulum (g / l = 1)."""

    name = "pendulum"
    n = 1
    conservative = True

    def mass(self, q):
        return np.eye(1)

    def force(self, t, q, v):
        return -np.sin(q)

    def force_jac(self, t, q, v):
        return -np.cos(q).reshape(1, 1), np.zeros((1, 1))

    def energy(self, t, q, v):
        return 0.5 * v[0] ** 2 - np.cos(q[0])


SKATE = Skate()
SNAKEBOARD = SnakeboardCoupled()


def slope(hs, errs):
    return fit_order(hs, errs)


def run_raw(model, s, t0, h, q, p, lam, nsteps=1, variant="reduced"):
    """The Fortran stepper through the driver directly (any sign of h), started from (q, P, lam)
    (lam_0 is a real option of the stepper); returns q, P, lam after nsteps."""
    args = model_args(model)
    n, nl = model.n, model.n_nonhol
    v = np.linalg.solve(model.mass(q), p)
    iopt, ropt = _option_arrays(((s, VARIANTS[variant], 20), (1e-12, *lam)))
    buf = driver_buffers(n, n, nl, nsteps, 1, nstats=len(GalerkinLobatto.STATS), naux=n)
    istat, _, _ = call_run(GalerkinLobatto.KERNEL, args, n, iopt, ropt, t0, h, nsteps, 1, q, v, buf)
    assert istat[0] == 0, istat
    return buf["qout"][:, -1], buf["auxout"][:n, -1], buf["lout"][:nl, -1]


def start(model, q0, v0):
    return q0, model.mass(q0) @ v0, model.consistent_acceleration(0.0, q0, v0)[2]


# -- coefficients ------------------------------------------------------------------

@pytest.mark.parametrize("s", range(1, 9))
def test_lobatto_rule_matches_legendre_and_is_symmetric(s):
    d, b, D = lobatto_rule(s)
    leg = np.polynomial.legendre
    x = np.sort(leg.legroots(leg.legder([0] * s + [1]))) if s > 1 else np.zeros(0)
    assert np.max(np.abs(d[1:-1] - (x + 1) / 2), initial=0.0) <= 1e-14
    assert d[0] == 0.0 and d[-1] == 1.0
    w = 1.0 / (s * (s + 1) * leg.legval(2 * d - 1, [0] * s + [1]) ** 2)
    assert np.max(np.abs(b - w)) <= 1e-14
    # D[v, j] = l_j'(d_v) from NumPy's polynomial fit of each Lagrange basis function
    for j in range(s + 1):
        lj = np.polynomial.Polynomial.fit(d, np.eye(s + 1)[j], s, domain=[0, 1], window=[0, 1])
        assert np.max(np.abs(D[:, j] - lj.deriv()(d))) <= 1e-10 * max(1.0, np.max(np.abs(D)))
    # exact symmetry, imposed where the rule is built
    assert np.max(np.abs(d + d[::-1] - 1)) <= 1e-16
    assert np.array_equal(b, b[::-1])
    assert np.array_equal(D, -D[::-1, ::-1])


def test_lobatto_rule_rejects_bad_degree():
    for bad in (0, 9, -1):
        with pytest.raises(ValueError, match="s must"):
            lobatto_rule(bad)
    with pytest.raises(TypeError, match="s must be an integer"):
        lobatto_rule(2.5)


# -- the dual-variable form ------------------------------------------------------

def dual(model, t, q, p):
    n = model.n
    v, hq, *blocks = model_query(model, "dual", [t, q, p], [(n,), (n,)] + 4 * [(n, n)])
    return v, hq, blocks


@pytest.mark.parametrize("model", [SKATE, SNAKEBOARD, PolarSkate(), Skate(torsion=0.5)],
                         ids=["skate", "snakeboard", "polar_skate(M(q))", "skate_torsion"])
def test_dual_form_is_the_hamiltonian_gradient(model, rng):
    """H_p, H_q are the gradients of H(q, p) = energy(q, M(q)^-1 p); the four Jacobian
    blocks are the derivatives of (H_p, H_q) (central differences of the Fortran values)."""
    for _ in range(3):
        q = rng.normal(size=model.n)
        if isinstance(model, PolarSkate):
            q[0] = 1.0 + 0.3 * rng.random()
        p = rng.normal(size=model.n)
        v, hq, (hpq, hpp, hqq, hqp) = dual(model, 0.3, q, p)

        def ham(q_, p_):
            return model.energy(0.3, q_, np.linalg.solve(model.mass(q_), p_))

        assert np.allclose(v, np.linalg.solve(model.mass(q), p), rtol=0, atol=1e-13)
        for exact, fd in ((v, fd_jacobian(lambda x: ham(q, x), p)[0]), (hq, fd_jacobian(lambda x: ham(x, p), q)[0])):
            assert np.allclose(exact, fd, rtol=0, atol=1e-8 * max(1.0, np.max(np.abs(fd))))
        for blk, fd in ((hpq, fd_jacobian(lambda x: dual(model, 0.3, x, p)[0], q)),
                        (hpp, fd_jacobian(lambda x: dual(model, 0.3, q, x)[0], p)),
                        (hqq, fd_jacobian(lambda x: dual(model, 0.3, x, p)[1], q)),
                        (hqp, fd_jacobian(lambda x: dual(model, 0.3, q, x)[1], p))):
            assert np.allclose(blk, fd, rtol=0, atol=1e-7 * max(1.0, np.max(np.abs(fd))))


# -- the Newton matrix -------------------------------------------------------------

@pytest.mark.parametrize("model", [Skate(torsion=0.5), PolarSkate(), SNAKEBOARD, Pendulum()],
                         ids=["skate_torsion", "polar_skate(M(q))", "snakeboard", "pendulum(unconstrained)"])
@pytest.mark.parametrize("s", [1, 2, 3, 5])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_newton_jacobian_matches_finite_differences(model, s, variant, rng):
    if isinstance(model, PolarSkate) or isinstance(model, Pendulum):
        q0, v0 = model.initial_state() if isinstance(model, PolarSkate) else (np.array([1.0]), np.array([0.3]))
    elif model is SNAKEBOARD:
        q0, v0 = model.initial_state("general")
    else:
        q0, v0 = model.initial_state()
    q0, p0, l0 = start(model, q0, v0)
    n, c, h = model.n, model.n_nonhol, 0.2
    nl0 = s + 1 if variant == "reduced" else s           # reduced: lam_0 is an unknown too
    nx = 2 * (s + 1) * n + nl0 * c
    # an iterate near the solution, perturbed so that every block is exercised
    x = np.concatenate([np.concatenate([q0 + (j / s) * h * v0 for j in range(1, s + 1)]),
                        np.tile(p0, s + 2), np.tile(l0, nl0)]) + 0.05 * rng.normal(size=nx)

    def system(xx):
        return model_query(model, "galerkin_system", [0.1, h, q0, p0, l0[:c], xx], [(nx,), (nx, nx)],
                           [s, VARIANTS[variant]])

    e, jac = system(x)
    assert e.shape == (nx,)
    fd = fd_jacobian(lambda xx: system(xx)[0], x)
    assert np.max(np.abs(jac - fd)) <= 1e-7 * max(1.0, np.max(np.abs(fd))), np.max(np.abs(jac - fd))


# -- orders ------------------------------------------------------------------------

def test_orders_on_the_skate_closed_form():
    """Seed 004, Fig. 1: order s + 1 for odd s, s for even s (+- 0.2) for s = 1..6 over
    eta = 1/2 .. 1/16 to T = 2; s = 7, 8 reach round-off by eta = 1/8, so one halving."""
    q0, v0 = SKATE.initial_state()
    qe, ve, _, _ = SKATE.exact(2.0)
    for s in range(1, 9):
        hs = [1 / 2, 1 / 4, 1 / 8, 1 / 16] if s <= 6 else [1 / 2, 1 / 4]
        errs = []
        for h in hs:
            r = GalerkinLobatto(s=s).integrate(SKATE, q0, v0, 2.0, h)
            errs.append([np.max(np.abs(r.q[-1] - qe)), np.max(np.abs(r.extra["p"][-1] - SKATE.mass(qe) @ ve))])
        errs = np.array(errs)
        for j in range(2):
            assert abs(slope(hs, errs[:, j]) - galerkin_order(s)) <= 0.2, (s, j, errs[:, j])


def test_unconstrained_it_is_lobatto_iiia_iiib_of_order_2s():
    m = Pendulum()
    q0, v0 = np.array([1.0]), np.array([0.0])
    qr, vr, _ = ode_reference(m, q0, v0, 2.0)
    hs = [1 / 2, 1 / 4, 1 / 8, 1 / 16]
    for s in (1, 2, 3):
        e = [np.max(np.abs(GalerkinLobatto(s=s).integrate(m, q0, v0, 2.0, h).q[-1] - qr)) for h in hs]
        assert abs(slope(hs, e) - 2 * s) <= 0.2, (s, e)


def test_q_dependent_mass_matrix_orders():
    """Polar-coordinate skate: M(q), Coriolis forces, (M a)_q: same orders as with constant M."""
    m = PolarSkate()
    q0, v0 = m.initial_state()
    qr, vr, lr = ode_reference(m, q0, v0, 2.0)
    hs = [1 / 4, 1 / 8, 1 / 16, 1 / 32]
    for s in (1, 2, 3, 4):
        rs = [GalerkinLobatto(s=s).integrate(m, q0, v0, 2.0, h) for h in hs]
        assert abs(slope(hs, [np.max(np.abs(r.q[-1] - qr)) for r in rs]) - galerkin_order(s)) <= 0.2
        assert abs(slope(hs, [np.max(np.abs(r.v[-1] - vr)) for r in rs]) - galerkin_order(s)) <= 0.2
        assert max(r.eps_vel for r in rs) <= 1e-14


# -- the multiplier --------------------------------------------------------------------

def test_multiplier_orders_reduced_variant():
    """Variant "reduced" on the skate with a torsion spring: lam_s is reported for every s and
    converges with order 1, 1, 2, 3 for s = 1..4 (the registered classes' lambda_order)."""
    m = Skate(torsion=0.5)
    q0, v0 = m.initial_state()
    _, _, lr = ode_reference(m, q0, v0, 2.0)
    hs = [1 / 8, 1 / 16, 1 / 32, 1 / 64]
    for s in (1, 2, 3, 4):
        rs = [GalerkinLobatto(s=s, variant="reduced").integrate(m, q0, v0, 2.0, h) for h in hs]
        errs = np.array([abs(r.lam[-1, 0] - lr[0]) for r in rs]).ravel()
        assert abs(slope(hs, errs) - METHODS[f"galerkin_s{s}"].lambda_order) <= 0.2, (s, errs)
        assert rs[0].params["variant"] == "reduced"


def test_multiplier_orders_and_even_s_not_reported_spec_variant():
    """Variant "spec" on the skate with a torsion spring: lam_s converges with order 2 for s = 1 and 3;
    for s = 2 the nodal value does not converge (error ~ |lam|), and Result.lam is NaN for even s."""
    m = Skate(torsion=0.5)
    q0, v0 = m.initial_state()
    _, _, lr = ode_reference(m, q0, v0, 2.0)
    hs = [1 / 8, 1 / 16, 1 / 32, 1 / 64]
    errs = {}
    for s in (1, 2, 3):
        rs = [GalerkinLobatto(s=s, variant="spec").integrate(m, q0, v0, 2.0, h) for h in hs]
        errs[s] = np.array([abs(r.extra["lam_nodal"][-1, 0] - lr[0]) for r in rs])
        if s % 2:
            assert np.array_equal(rs[-1].lam, rs[-1].extra["lam_nodal"])
        else:
            assert np.all(np.isnan(rs[-1].lam)) and np.all(np.isfinite(rs[-1].extra["lam_nodal"]))
    assert abs(slope(hs, errs[1]) - 2) <= 0.2, errs[1]
    assert abs(slope(hs, errs[3]) - 2) <= 0.2, errs[3]
    assert errs[2][-1] >= 0.5 * errs[2][0] and errs[2][-1] > 0.1 * abs(lr[0]), errs[2]
    assert GalerkinLobatto(s=1, variant="spec").lambda_order == 2
    assert GalerkinLobatto(s=2, variant="spec").lambda_order is None


# -- structure ----------------------------------------------------------------------

@pytest.mark.parametrize("s", range(1, 9))
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_symmetric_step(s, variant):
    """A step with h followed by one with -h returns to (q0, P0) within 1e-13; "spec" carries lam
    as part of the state: it returns to lam_0 within 1e-11 |lam| (for "reduced" lam_0 is an
    unknown of the step, not an input, and the map is (q, P) -> (q, P))."""
    for model, (q0, v0) in ((SKATE, SKATE.initial_state()), (SNAKEBOARD, SNAKEBOARD.initial_state("general"))):
        q0, p0, l0 = start(model, q0, v0)
        for h in (0.5, 1 / 8):
            q1, p1, l1 = run_raw(model, s, 0.0, h, q0, p0, l0, variant=variant)
            q2, p2, l2 = run_raw(model, s, h, -h, q1, p1, l1, variant=variant)
            assert np.max(np.abs(q1 - q0)) > 1e-2      # it did move
            assert np.max(np.abs(q2 - q0)) <= 1e-13 and np.max(np.abs(p2 - p0)) <= 1e-13, (model.name, h)
            if variant == "spec":
                assert np.max(np.abs(l2 - l0)) <= 1e-11 * max(1.0, np.max(np.abs(l0)))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_constraint_every_step_and_energy_bounded_without_drift(variant):
    """Skate, s = 3, eta = 1/8 (seed 004 Fig. 2) to T = 200: A H_p(q, P) at round-off at every step
    (relative to the size of the state: theta = t grows), the energy error oscillates with a
    bounded amplitude: the last quarter's is no larger than the first quarter's."""
    q0, v0 = SKATE.initial_state()
    r = GalerkinLobatto(s=3, variant=variant).integrate(SKATE, q0, v0, 200.0, 1 / 8)
    scale = max(1.0, np.max(np.abs(r.q)), np.max(np.abs(r.v)))
    assert r.stats["max_constraint_residual"] <= 1e-15 * scale
    assert np.max(r.residual[:, 3]) <= 1e-15 * scale
    de = np.abs(r.energy - r.energy[0])
    first, last = de[r.t <= 50].max(), de[r.t >= 150].max()
    assert 1e-7 < first < 1e-4
    assert last <= 1.01 * first, (first, last)
    # the state error grows at most linearly (no exponential error growth)
    qe = np.array([SKATE.exact(t)[0] for t in r.t[::400]])
    err = np.max(np.abs(r.q[::400] - qe), axis=1)
    assert err[-1] <= 1e-2 and err[-1] <= 3 * err[len(err) // 2]


@pytest.mark.parametrize("phi", [np.pi / 8, np.pi / 16, np.pi / 32])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_locked_steering_snakeboard_on_its_circle(phi, variant):
    """Locked steering: the board's centre runs on the circle of radius l cot(phi) through the
    origin; s = 4, eta = 1/16 to T = 4 agrees with the exact motion to O(eta^4) (a halving
    divides the error by ~16).  (Over longer runs "spec" leaves the circle through a spurious
    direction reversal: see test_locked_steering_long_time.)"""
    q0, v0 = SNAKEBOARD.initial_state("locked", phi=phi)
    R = SNAKEBOARD.circle_radius(phi)
    errs = []
    for h in (1 / 8, 1 / 16):
        r = GalerkinLobatto(s=4, variant=variant).integrate(SNAKEBOARD, q0, v0, 4.0, h)
        qe = np.array([SNAKEBOARD.locked_steering(t, phi=phi)[0] for t in r.t])
        errs.append(np.max(np.abs(r.q - qe)))
        assert np.max(np.abs(np.hypot(r.q[:, 0], r.q[:, 1] - R) - R)) <= 2 * errs[-1] + 1e-14
        assert np.max(np.abs(r.q[:, 4] - phi)) <= 1e-14          # phi stays locked
        assert r.eps_vel <= 1e-14
    assert errs[1] <= 1e-5 and 12 <= errs[0] / errs[1] <= 20, errs


def _forward_speed(r):
    return r.v[:, 0] * np.cos(r.q[:, 2]) + r.v[:, 1] * np.sin(r.q[:, 2])


@pytest.mark.parametrize("s,h,T,circle_tol", [(4, 1 / 16, 400.0, 1e-7), (1, 1 / 2, 2000.0, 0.25)])
def test_locked_steering_long_time(s, h, T, circle_tol):
    """phi = pi/8 (the fastest-growing case of "spec"): "reduced" keeps the board on a circle of
    radius l cot(phi) (deviation 4.0e-8 for s = 4, h = 1/16; 0.197 = O(h^2) for s = 1, h = 1/2, the
    same at T = 40 and 2000) with the exact constant speed and energy to round-off; "spec" reverses
    the direction of motion (s = 4: first at t = 11.3) and loses the circle, or (s = 1) turns into a
    growing step-to-step oscillation that the driver stops (StepTooLargeError at t = 2.5)."""
    phi = np.pi / 8
    q0, v0 = SNAKEBOARD.initial_state("locked", phi=phi)
    R = SNAKEBOARD.circle_radius(phi)
    r = GalerkinLobatto(s=s, variant="reduced").integrate(SNAKEBOARD, q0, v0, T, h, every=8)
    dev = np.abs(np.hypot(r.q[:, 0], r.q[:, 1] - R) - R)
    assert np.max(dev) <= circle_tol
    assert np.max(dev[r.t >= 0.75 * T]) <= 1.01 * np.max(dev[r.t <= 0.25 * T]) + 1e-12   # no drift
    assert np.max(np.abs(_forward_speed(r) - 1.0)) <= 1e-10
    assert np.max(np.abs(r.energy / r.energy[0] - 1)) <= 1e-10
    assert r.eps_vel <= 1e-14        # absolute, although theta grows to ~T tan(phi) / l
    t_short = 30.0 if s == 4 else 10.0
    if s == 4:
        r = GalerkinLobatto(s=s, variant="spec").integrate(SNAKEBOARD, q0, v0, t_short, h)
        assert np.min(_forward_speed(r)) < -0.5                 # the spurious reversal
    else:
        # s = 1, h = 1/2: the reversal grows as a step-to-step oscillation, which the driver's guard
        # stops by name (measured: at the step ending at t = 2.5, where the board reversed, status ok, before)
        with pytest.raises(StepTooLargeError) as info:
            GalerkinLobatto(s=s, variant="spec").integrate(SNAKEBOARD, q0, v0, t_short, h)
        assert info.value.time <= 2.5


# -- paths and bad input ----------------------------------------------------------------

def test_output_every_and_result_fields():
    q0, v0 = SKATE.initial_state()
    r1 = GalerkinLobatto(s=2).integrate(SKATE, q0, v0, 2.0, 1 / 8)
    r4 = GalerkinLobatto(s=2).integrate(SKATE, q0, v0, 2.0, 1 / 8, every=4)
    assert len(r1.t) == 17 and len(r4.t) == 5
    assert np.array_equal(r4.q, r1.q[::4]) and np.array_equal(r4.extra["p"], r1.extra["p"][::4])
    assert np.all(np.isnan(r1.a))
    assert np.allclose(r1.v, r1.extra["p"] @ np.linalg.inv(SKATE.mass(q0)).T, rtol=0, atol=1e-15)
    assert r1.method == "galerkin_s2" and r1.params["s"] == 2 and r1.stats["steps"] == 16
    ds = r1.to_xarray()
    assert ds.attrs["method"] == "galerkin_s2"


@pytest.mark.parametrize("torsion", [0.0, 0.5])
def test_builtin_skate_matches_twin_and_never_calls_python(torsion):
    """The Fortran twin of Skate (torsion spring included) against its NumPy model (callback path)."""
    builtin = BUILTIN_MODELS["skate"](torsion=torsion)
    q0, v0 = builtin.initial_state()
    a = GalerkinLobatto(s=3).integrate(builtin, q0, v0, 2.0, 1 / 8, backend="fortran")
    b = GalerkinLobatto(s=3).integrate(builtin, q0, v0, 2.0, 1 / 8, backend="callback")
    assert np.max(np.abs(a.q - b.q)) <= 1e-13 and np.max(np.abs(a.lam - b.lam)) <= 1e-11
    calls = []
    args = model_args(builtin, "fortran")
    iopt, ropt = _option_arrays(GalerkinLobatto(s=3)._ropt_start(builtin, 0.0, q0, v0))
    buf = driver_buffers(3, 3, 1, 50, 50, nstats=len(GalerkinLobatto.STATS), naux=3)
    args = dict(args, usercb=lambda req, t, q, v, w, o: calls.append(req))
    istat, _, _ = call_run(GalerkinLobatto.KERNEL, args, 3, iopt, ropt, 0.0, 1 / 8, 50, 50, q0, v0, buf)
    assert istat[0] == 0 and calls == []


def test_bad_input():
    q0, v0 = SKATE.initial_state()
    for bad in (0, 9):
        with pytest.raises(ValueError, match="s must be"):
            GalerkinLobatto(s=bad)
    with pytest.raises(TypeError, match="s must be an integer"):
        GalerkinLobatto(s=2.0)
    with pytest.raises(ValueError, match="tol must be > 0"):
        GalerkinLobatto(tol=0.0)
    with pytest.raises(ValueError, match="h must be > 0"):
        GalerkinLobatto().integrate(SKATE, q0, v0, 1.0, -0.1)
    with pytest.raises(ValueError, match="q0 contains NaN"):
        GalerkinLobatto().integrate(SKATE, [np.nan, 0, 0], v0, 1.0, 0.1)
    with pytest.raises(ValueError, match="violates the constraints"):
        GalerkinLobatto().integrate(SKATE, q0, [0.0, 1.0, 0.0], 1.0, 0.1)
    with pytest.raises(ValueError, match="does not handle holonomic"):
        GalerkinLobatto().integrate(PendulumChain(2), *PendulumChain(2).initial_state(), 1.0, 0.1)
    # a Newton failure is an IntegrationError carrying the partial result
    with pytest.raises(IntegrationError) as exc:
        GalerkinLobatto(s=2, maxit=1).integrate(PolarSkate(), *PolarSkate().initial_state(), 1.0, 0.25)
    assert exc.value.step == 1 and len(exc.value.result.t) == 1
