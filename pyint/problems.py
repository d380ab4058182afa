"""Test problems in one place, each with the source of its reference values.

A :class:`Problem` is a model, an initial state, a time span, the coarsest
step of its convergence study, and a reference solution at ``n_samples``
equally spaced times (errors are maxima over them: an error at one time alone
can cross zero as h varies and fake a slope):
closed form where one exists, otherwise a tight reference computed by the
command named in ``source`` (cached per process).  Each problem carries its own
error function (:meth:`Problem.errors`): q, v, lam for a model on R^n; x, the log map of
R and V for rigid bodies on (R^3 x SO(3))^nb (:class:`LieProblem`).  The shared method
tests (tests/test_methods.py) run every registered method on every problem whose model
it accepts (:meth:`pyint.integrator.Integrator.accepts`: configuration space and
constraint kinds).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .models import (AnharmonicChain, ChaplyginSleigh, DrivenPendulum, PendulumChain, Skate, Snakeboard,
                     TwoLinkAngles, two_link_manipulator)
from .reference.ode import ode_reference


def _model_initial_state(model):
    return model.initial_state()


@dataclass
class Problem:
    name: str
    make_model: Callable
    t_end: float
    h0: float                     # coarsest step of the order study (2nd-order methods)
    make_state: Callable = _model_initial_state   # model -> (q0, v0)
    source: str = ""              # where the reference values come from (default: ODE_SOURCE)
    exact: Callable | None = None  # t -> (q, v, lam) closed form
    reference_at: Callable | None = None  # times -> (q, v, lam): a reference other than ode_reference on the model
    tags: frozenset = field(default_factory=frozenset)
    n_samples: int = 8            # reference times t_end * k / n_samples, k = 1..n_samples

    def __post_init__(self):
        falls_back = self.exact is None and self.reference_at is None and type(self).reference is Problem.reference
        if not self.source and falls_back:
            self.source = ODE_SOURCE     # what :attr:`reference` falls back to
        if not self.source:
            raise ValueError(f"problem {self.name!r}: say where its reference values come from (source)")

    @functools.cached_property
    def model(self):
        return self.make_model()

    @functools.cached_property
    def initial_state(self):
        return self.make_state(self.model)

    @property
    def kinds(self):
        k = set()
        if self.model.n_hol:
            k.add("holonomic")
        if self.model.n_nonhol:
            k.add("nonholonomic")
        return frozenset(k)

    #: names of the components of :meth:`errors`
    error_names = ("q", "v", "lam")

    def errors(self, result):
        """Errors of ``result`` (sampled at least at ``sample_times``) against :attr:`reference`,
        one per component of :attr:`error_names`: the maximum over the sample times of
        |q - q_ref|, |v - v_ref| and |lam - lam_ref| (lam: 0 without constraints)."""
        qr, vr, lr = self.reference
        return [np.max(np.abs(result.q[1:] - qr)), np.max(np.abs(result.v[1:] - vr)),
                np.max(np.abs(result.lam[1:] - lr), initial=0.0)]

    @property
    def sample_times(self):
        return self.t_end * np.arange(1, self.n_samples + 1) / self.n_samples

    @functools.cached_property
    def reference(self):
        """(q, v, lam) at ``sample_times``, each of shape (n_samples, dim)."""
        if self.exact is not None:
            out = [self.exact(t) for t in self.sample_times]
            return tuple(np.array([np.atleast_1d(o[k]) for o in out]) for k in range(3))
        if self.reference_at is not None:
            return self.reference_at(self.sample_times)
        return ode_reference(self.model, *self.initial_state, self.sample_times)


#: ``source`` of the problems whose reference is :func:`ode_reference` at its defaults.
ODE_SOURCE = "pyint.reference.ode.ode_reference: DOP853 on the index-1 form, rtol = 2.5e-14, atol = 1e-15"

PROBLEMS: dict[str, Problem] = {}


def add_problem(problem):
    PROBLEMS[problem.name] = problem
    return problem


add_problem(Problem("chain2", lambda: PendulumChain(2, mass=[1.0, 1.5], length=[1.0, 0.8]), t_end=1.0, h0=1 / 32,
                    make_state=lambda m: m.initial_state([np.pi / 3, np.pi / 2]), tags=frozenset({"conservative"})))


def _skate_exact(t):
    q, v, _, lam = Skate().exact(t)
    return q, v, np.atleast_1d(lam)


add_problem(Problem("skate", Skate, t_end=2.0, h0=1 / 16, exact=_skate_exact,
                    source="closed form (seed 004, example 1): theta = w t, x = g sin(a)/(2 w^2) sin^2(w t), ...",
                    tags=frozenset({"conservative", "closed_form"})))
add_problem(Problem("snakeboard", Snakeboard, t_end=0.5, h0=1 / 64))
add_problem(Problem("sleigh_qmass", ChaplyginSleigh, t_end=2.0, h0=1 / 16,
                    tags=frozenset({"configuration_dependent_mass"})))
add_problem(Problem("driven_pendulum", DrivenPendulum, t_end=1.0, h0=1 / 32, tags=frozenset({"rheonomic"})))


def manipulator_reference(times):
    """The seed-003 manipulator (two_link_manipulator(), from rest with both links
    horizontal) at ``times``: its independent-coordinate ODE (14) with the bars'
    width (TwoLinkAngles(width=0.1), the same mechanical system) by ode_reference,
    mapped to natural coordinates, with the natural-coordinate model's multipliers.
    A reference independent of the constrained formulation.  Returns (q, v, lam)."""
    angles, natural = TwoLinkAngles(width=0.1), two_link_manipulator()
    theta, omega, _ = ode_reference(angles, np.zeros(2), np.zeros(2), times)
    q, v = angles.to_natural(theta, omega)
    lam = np.array([natural.consistent_acceleration(t, qk, vk)[1] for t, qk, vk in zip(times, q, v)])
    return q, v, lam


add_problem(Problem(
    "manipulator", two_link_manipulator, t_end=1.0, h0=1 / 64, reference_at=manipulator_reference,
    source="seed 003 two-link manipulator in natural coordinates (seed 003 section 3); reference: the independent-"
           "coordinate ODE (14) with the bars' width, DOP853 rtol = 2.5e-14, mapped to natural coordinates",
    tags=frozenset({"conservative", "natural_coordinates"})))


def triple_pendulum_model():
    """The planar triple pendulum of seed 002 (section 3): m = l = g = 1."""
    return PendulumChain(3, mass=1.0, length=1.0, grav=1.0)


def triple_pendulum_state(model):
    """Seed 002's start q(0) = (0.5, -sqrt(.75), 0, -2 sqrt(.75), 0, -1 - 2 sqrt(.75)), p(0) = 0:
    links at 30, -30 and 0 degrees from the downward vertical, all of length 1."""
    return model.initial_state([np.pi / 6, -np.pi / 6, 0.0])


# tag "long_run": the motion keeps visiting the same region of phase space, so a long
# run at h0 tests energy boundedness (tests/test_methods.py).
add_problem(Problem("triple_pendulum", triple_pendulum_model, t_end=2.0, h0=1 / 32, make_state=triple_pendulum_state,
                    tags=frozenset({"conservative", "seed002", "long_run"})))
add_problem(Problem("anharmonic_chain2", AnharmonicChain.example, t_end=2.0, h0=1 / 32,
                    make_state=lambda m: m.initial_state([np.pi / 2, np.pi / 2]),
                    tags=frozenset({"conservative", "nonlinear_potential"})))


def stiff_fast_model():
    """The chain2 pendulum (masses 1, 1.5; lengths 1, 0.8; g = 9.81) with a stiff spring,
    k = 3e5 N/m, from its tip to the anchor (1.5, -0.6): spring frequency ~ 450 rad/s,
    accelerations ~ 2e4 against positions ~ 1.7."""
    return AnharmonicChain(2, mass=[1.0, 1.5], length=[1.0, 0.8], grav=9.81, k=3e5, kappa=0.0,
                           anchor=(1.5, -0.6))


# A stiff, fast mechanism (issue 14): generalized-alpha's simplified Newton, stopped on
# accelerations measured in position units, plateaued here at ~1e-8 relative.  h0 = t_end / 256
# (omega h0 ~ 0.035): second-order errors from ~3e-4 to ~1e-6 relative over the shared window,
# where the index-3 multipliers' round-off, eps |q| / (beta h^2), stays far below their
# truncation error (at h0 / 32 it bends generalized-alpha's lam slope to 1.87);
# tests/test_genalpha.py follows q and v down to ~2e-10.
add_problem(Problem("stiff_fast", stiff_fast_model, t_end=0.02, h0=0.02 / 256,
                    make_state=lambda m: m.initial_state([np.pi / 3, np.pi / 2]),
                    tags=frozenset({"conservative", "stiff"})))


def _skate_torsion_model():
    return Skate(torsion=0.5)


add_problem(Problem(
    "skate_torsion", _skate_torsion_model, t_end=3.0, h0=3 / 32,   # h0 divides the sample spacing t_end / 8
    make_state=lambda m: m.initial_state(omega=1.0),
    source=ODE_SOURCE + " (seed-004 skate plus a torsion spring k = 0.5 on the heading, so that theta is not "
           "linear in t and the multiplier is not degenerate; the plain skate has a closed form, "
           "tests/test_galerkin.py uses it)",
    tags=frozenset({"conservative"}),
))


# -- Lie-group problems: rigid bodies on (R^3 x SO(3))^nb (seed 001) -----------------
# A LieProblem is a Problem whose model is a RigidBodySystem (configuration space a Lie
# group), whose state is (q = RigidBodySystem.pack(x, R), V), whose reference (q, V, lam)
# at t_end (n_samples = 1) is the IDA solution of pyint.reference.lie.ida_reference
# (quaternions, dummy derivatives, rtol 1e-12) -- ``ode_reference`` is the quaternion
# DOP853 cross-check -- and whose error function measures x, R (log map) and V.

LIE_IDA_RTOL = 1e-12


@dataclass
class LieProblem(Problem):
    n_samples: int = 1            # the references are at t_end only
    error_names = ("x", "R", "V")

    def errors(self, result):
        """(x, R, V) errors at t_end, R through |log(R_ref^T R)| (pyint.models.so3.rotation_error),
        each the maximum over the bodies."""
        from .models.so3 import rotation_error
        system = self.model
        qr, vr, _ = self.reference
        xr, rr = system.unpack(qr)
        return [np.max(np.abs(result.x[-1] - xr)),
                max(rotation_error(rr[i], result.R[-1][i]) for i in range(system.nb)),
                np.max(np.abs(result.v[-1] - vr))]

    def _end_state(self, fun, **options):
        x0, r0 = self.model.unpack(self.initial_state[0])
        xs, rs, vs, lams, diag = fun(self.model, x0, r0, self.initial_state[1], [0.0, self.t_end], **options)
        self.__dict__.setdefault("diagnostics", {})[fun.__name__] = diag   # per reference
        return self.model.pack(xs[-1], rs[-1]), vs[-1], lams[-1]

    @functools.cached_property
    def reference(self):
        """(q, V, lam) at t_end (q = pack(x, R)) from IDA (pyint.reference.lie.ida_reference)."""
        from .reference.lie import ida_reference
        return self._end_state(ida_reference, rtol=LIE_IDA_RTOL)

    @functools.cached_property
    def ode_reference(self):
        """(q, V, lam) at t_end from the quaternion index-1 ODE by DOP853 (pyint.reference.lie.reference)."""
        from .reference.lie import reference
        return self._end_state(reference, rtol=2.5e-14, atol=1e-15)


def _manipulator():
    from .models.rigid_bodies import RigidBodySystem
    return RigidBodySystem.two_link_manipulator()


def _manipulator_state(system):
    x, rot, v = system.manipulator_initial_state()
    return system.pack(x, rot), v


def _hinged_pair():
    """Two bodies: body 1 hinged to the ground about the world z axis at its end,
    body 2 hinged to body 1 about body 1's x axis: both joint primitives."""
    from .models.rigid_bodies import Body, RigidBodySystem, revolute
    bodies = [Body(2.0, (0.02, 0.2, 0.21)), Body(1.0, [[0.05, 0.01, 0.0], [0.01, 0.04, 0.0], [0.0, 0.0, 0.02]])]
    joints = (revolute(0, (-0.5, 0.0, 0.0), (0.0, 0.0, 1.0), None, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
              + revolute(1, (0.0, 0.0, 0.3), (1.0, 0.0, 0.0), 0, (0.5, 0.0, 0.0), (1.0, 0.0, 0.0)))
    return RigidBodySystem(bodies, joints, gravity=(0.0, -9.81, 0.0), name="hinged_pair")


def _hinged_pair_state(system):
    """Body 1 along +x turning about z at 2 rad/s, body 2 below the hinge swinging about x at 5 rad/s."""
    from .models.so3 import cross
    w1, w2 = np.array([0.0, 0.0, 2.0]), np.array([5.0, 0.0, 2.0])
    x1 = np.array([0.5, 0.0, 0.0])
    hinge = x1 + np.array([0.5, 0.0, 0.0])
    x2 = hinge - np.array([0.0, 0.0, 0.3])
    v1 = cross(w1, x1)
    v2 = v1 + cross(w1, np.array([0.5, 0.0, 0.0])) - cross(w2, np.array([0.0, 0.0, 0.3]))
    rot = np.stack([np.eye(3), np.eye(3)])
    return system.pack(np.stack([x1, x2]), rot), np.concatenate([v1, w1, v2, w2])


def _heavy_top():
    from .models.rigid_bodies import RigidBodySystem
    return RigidBodySystem.heavy_top()


def _heavy_top_state(system):
    """Tilted by 0.3 rad about x, spinning at 20 rad/s about its axis."""
    from .models.so3 import expm
    rot = expm([0.3, 0.0, 0.0])[None]
    x = (rot[0] @ np.array([0.0, 0.0, 0.5]))[None]
    om = np.array([0.0, 0.0, 20.0])
    v = rot[0] @ np.cross(om, [0.0, 0.0, 0.5])
    return system.pack(x, rot), np.concatenate([v, om])


_LIE_SOURCE = ("pyint.reference.lie.ida_reference: SUNDIALS IDA on the dummy-derivative form of the quaternion "
               "model, rtol = atol = 1e-12 (cross-check: quaternion index-1 ODE by DOP853, rtol = 2.5e-14)")

add_problem(LieProblem(
    name="manipulator_short", make_model=_manipulator, make_state=_manipulator_state,
    t_end=0.1, h0=5e-4, source=_LIE_SOURCE + " (seed 001 manipulator, section 3 initial state)",
    tags=frozenset({"conservative"})))
add_problem(LieProblem(
    name="heavy_top", make_model=_heavy_top, make_state=_heavy_top_state,
    t_end=0.5, h0=2e-3, source=_LIE_SOURCE, tags=frozenset({"conservative"})))
add_problem(LieProblem(
    name="hinged_pair", make_model=_hinged_pair, make_state=_hinged_pair_state,
    t_end=0.5, h0=2e-3, source=_LIE_SOURCE + " (point + perpendicularity joints)",
    tags=frozenset({"conservative"})))


# -- redundant mechanisms (issue 26): every method runs them on an independent subset of their
# rows (fortran/core/reduced_model.f90); their references come from independent equations ----

def _kept_multipliers(model, times, q, v):
    """lam at (times, q, v) as the kernels give it for a redundant mechanism: the index-1
    solution on the rows they keep (the column-pivoted QR of C^T at the first state), zero on
    the dropped rows (pyint.models.subset)."""
    from .models.subset import independent_subset
    sub = independent_subset(model, times[0], q[0])
    lam = np.array([np.concatenate(sub.consistent_acceleration(t, qk, vk)[1:]) for t, qk, vk in zip(times, q, v)])
    return sub.full_multipliers(lam) if sub is not model else lam


#: the redundant parallelograms' start: cranks 0.6 rad from hanging straight down, at rest;
#: they swing between -pi/2 -+ 0.6 and never reach the singular horizontal position
PARALLELOGRAM_THETA0 = -np.pi / 2 + 0.6


def parallelogram_reference(model, times):
    """(q, v, lam) of a :func:`pyint.models.parallelogram` at ``times``: its 1-DOF crank-angle
    equation by DOP853 (rtol = atol = 1e-13) mapped through ``model.pose``, lam on the kept rows."""
    from scipy.integrate import solve_ivp
    sol = solve_ivp(lambda _, y: [y[1], model.theta_rhs(y[0])], (0.0, times[-1]), [PARALLELOGRAM_THETA0, 0.0],
                    t_eval=np.concatenate([[0.0], times]), method="DOP853", rtol=1e-13, atol=1e-13)
    q, v = (np.array(x) for x in zip(*(model.pose(th, om) for th, om in sol.y.T)))
    lam = _kept_multipliers(model, sol.t, q, v)
    return q[1:], v[1:], lam[1:]


def _parallelogram_problem(name, n_cranks, dim):
    from .models.natural_mechanisms import parallelogram
    return Problem(
        name, lambda: parallelogram(n_cranks, dim), t_end=1.0, h0=1 / 32,
        make_state=lambda m: m.pose(PARALLELOGRAM_THETA0, 0.0),
        reference_at=lambda times: parallelogram_reference(PROBLEMS[name].model, times),
        source="pyint.problems.parallelogram_reference: the crank angle's 1-DOF equation (all cranks parallel) "
               "by DOP853, rtol = 1e-13, mapped to natural coordinates",
        tags=frozenset({"conservative", "natural_coordinates", "redundant"}))


add_problem(_parallelogram_problem("parallelogram_planar", 3, 2))     # 1 redundant row
add_problem(_parallelogram_problem("parallelogram_spatial", 2, 3))    # the four-bar in space: 3


class TwoBladeSkate(Skate):
    """The skate with a second blade on the same axle (a sledge): the blades' no-side-slip
    constraints are the same row, one of them redundant.  Its motion is the skate's."""

    name = "two_blade_skate"
    fortran_name = None
    n_nonhol = 2

    def nh_A(self, t, q):
        return np.vstack([super().nh_A(t, q)] * 2)

    def nh_b(self, t, q):
        return np.zeros(2)

    def nh_vel_q(self, t, q, v):
        return np.vstack([super().nh_vel_q(t, q, v)] * 2)

    def nh_dt(self, t, q, v):
        return np.concatenate([np.atleast_1d(super().nh_dt(t, q, v))] * 2)

    def nh_gamma(self, t, q, v):
        return np.concatenate([np.atleast_1d(super().nh_gamma(t, q, v))] * 2)

    def nh_atl_q(self, t, q, lam):
        return super().nh_atl_q(t, q, np.array([lam[0] + lam[1]]))


def two_blade_reference(times):
    """(q, v, lam) of the two-blade skate (torsion 0.5, omega 1): the one-blade skate's
    ode_reference (the same motion), lam on the kept row."""
    model = PROBLEMS["two_blade_skate"].model
    q, v, _ = ode_reference(Skate(torsion=0.5), *model.initial_state(omega=1.0), times)
    return q, v, _kept_multipliers(model, times, q, v)


add_problem(Problem(
    "two_blade_skate", lambda: TwoBladeSkate(torsion=0.5), t_end=3.0, h0=3 / 32,
    make_state=lambda m: m.initial_state(omega=1.0), reference_at=two_blade_reference,
    source=ODE_SOURCE + " on the one-blade skate_torsion (the same motion; a redundant nonholonomic row)",
    tags=frozenset({"conservative", "redundant"})))
