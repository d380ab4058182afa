"""Test problems in one place, each with the source of its reference values.

A :class:`Problem` is a model, an initial state, a time span, the coarsest
step of its convergence study, and a reference solution at the final time:
closed form where one exists, otherwise a tight reference computed by the
command named in ``source`` (cached per process).  The shared method tests
(tests/test_methods.py) run every registered method on every problem whose
constraint kinds it supports.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .models import PendulumChain


@dataclass
class Problem:
    name: str
    make_model: Callable
    make_state: Callable          # model -> (q0, v0)
    t_end: float
    h0: float                     # coarsest step of the order study (2nd-order methods)
    source: str                   # where the reference values come from
    exact: Callable | None = None  # t -> (q, v, lam) closed form
    tags: frozenset = field(default_factory=frozenset)

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

    @functools.cached_property
    def reference(self):
        """(q, v, lam) at t_end."""
        if self.exact is not None:
            return self.exact(self.t_end)
        return ode_reference(self.model, *self.initial_state, self.t_end)


def ode_reference(model, q0, v0, t_end, rtol=1e-13, atol=1e-13):
    """Tight reference at t_end: SciPy DOP853 on the index-1 ODE form
    (a from the KKT system at every right-hand side).  The index-1 form drifts
    off the constraints only at the tolerance level over these short spans."""
    from scipy.integrate import solve_ivp

    n = model.n

    def rhs(t, y):
        a, _, _ = model.consistent_acceleration(t, y[:n], y[n:])
        return np.concatenate([y[n:], a])

    sol = solve_ivp(rhs, (0.0, t_end), np.concatenate([q0, v0]), method="DOP853", rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"reference integration failed: {sol.message}")
    q, v = sol.y[:n, -1], sol.y[n:, -1]
    _, lh, ln = model.consistent_acceleration(t_end, q, v)
    return q, v, np.concatenate([lh, ln])


PROBLEMS: dict[str, Problem] = {}


def add_problem(problem):
    PROBLEMS[problem.name] = problem
    return problem


add_problem(Problem(
    name="chain2",
    make_model=lambda: PendulumChain(2, mass=[1.0, 1.5], length=[1.0, 0.8]),
    make_state=lambda m: m.initial_state([np.pi / 3, np.pi / 2]),
    t_end=1.0,
    h0=1 / 32,
    source="pyint.problems.ode_reference: DOP853 on the index-1 form, rtol = atol = 1e-13",
    tags=frozenset({"conservative"}),
))


# -- Lie-group problems: rigid bodies on (R^3 x SO(3))^nb (seed 001) -----------------
# Kept apart from PROBLEMS (vector models): the Lie-group methods (supports =
# {"lie_group"}) run on these, in the Lie-group section of tests/test_methods.py.
# A LieProblem is a Problem whose model is a RigidBodySystem, whose state is
# (q = RigidBodySystem.pack(x, R), V) and whose reference (q, V, lam) at t_end is
# the quaternion DOP853 solution of pyint.lie_reference.

@dataclass
class LieProblem(Problem):
    @property
    def kinds(self):
        return frozenset({"lie_group"})

    @functools.cached_property
    def reference(self):
        """(q, V, lam) at t_end (q = pack(x, R))."""
        from .lie_reference import reference

        x0, r0 = self.model.unpack(self.initial_state[0])
        xs, rs, vs, lams, _ = reference(self.model, x0, r0, self.initial_state[1], [0.0, self.t_end])
        return self.model.pack(xs[-1], rs[-1]), vs[-1], lams[-1]


LIE_PROBLEMS: dict[str, LieProblem] = {}


def add_lie_problem(problem):
    LIE_PROBLEMS[problem.name] = problem
    return problem


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
    from .so3 import cross
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
    from .so3 import expm
    rot = expm([0.3, 0.0, 0.0])[None]
    x = (rot[0] @ np.array([0.0, 0.0, 0.5]))[None]
    om = np.array([0.0, 0.0, 20.0])
    v = rot[0] @ np.cross(om, [0.0, 0.0, 0.5])
    return system.pack(x, rot), np.concatenate([v, om])


_LIE_SOURCE = "pyint.lie_reference.reference: quaternion ODE, index-1, SciPy DOP853 at rtol = atol = 1e-13"

add_lie_problem(LieProblem(
    name="manipulator_short", make_model=_manipulator, make_state=_manipulator_state,
    t_end=0.1, h0=5e-4, source=_LIE_SOURCE + " (seed 001 manipulator, SPEC initial state)",
    tags=frozenset({"conservative"})))
add_lie_problem(LieProblem(
    name="heavy_top", make_model=_heavy_top, make_state=_heavy_top_state,
    t_end=0.5, h0=2e-3, source=_LIE_SOURCE, tags=frozenset({"conservative"})))
add_lie_problem(LieProblem(
    name="hinged_pair", make_model=_hinged_pair, make_state=_hinged_pair_state,
    t_end=0.5, h0=2e-3, source=_LIE_SOURCE + " (point + perpendicularity joints)",
    tags=frozenset({"conservative"})))
