"""Test problems in one place, each with the source of its reference values.

A :class:`Problem` is a model, an initial state, a time span, the coarsest
step of its convergence study, and a reference solution at ``n_samples``
equally spaced times (errors are maxima over them: an error at one time alone
can cross zero as h varies and fake a slope):
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
    n_samples: int = 8            # reference times t_end * k / n_samples, k = 1..n_samples

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

    @property
    def sample_times(self):
        return self.t_end * np.arange(1, self.n_samples + 1) / self.n_samples

    @functools.cached_property
    def reference(self):
        """(q, v, lam) at ``sample_times``, each of shape (n_samples, dim)."""
        if self.exact is not None:
            out = [self.exact(t) for t in self.sample_times]
            return tuple(np.array([np.atleast_1d(o[k]) for o in out]) for k in range(3))
        return ode_reference(self.model, *self.initial_state, self.sample_times)


def ode_reference(model, q0, v0, times, rtol=2.5e-14, atol=1e-15):
    """Tight reference at ``times``: SciPy DOP853 on the index-1 ODE form
    (a from the KKT system at every right-hand side).  The index-1 form drifts
    off the constraints only at the tolerance level over these short spans.
    rtol = 2.5e-14 (SciPy's smallest is 100 eps) gives errors ~3e-14, about 5x
    below rtol = atol = 1e-13: room for the order-4 and -5 methods' errors.
    Returns (q, v, lam), each (len(times), dim)."""
    from scipy.integrate import solve_ivp

    n = model.n
    times = np.atleast_1d(np.asarray(times, dtype=float))

    def rhs(t, y):
        a, _, _ = model.consistent_acceleration(t, y[:n], y[n:])
        return np.concatenate([y[n:], a])

    sol = solve_ivp(rhs, (0.0, times[-1]), np.concatenate([q0, v0]), method="DOP853", rtol=rtol, atol=atol,
                    t_eval=times)
    if not sol.success:
        raise RuntimeError(f"reference integration failed: {sol.message}")
    q, v = sol.y[:n].T, sol.y[n:].T
    lam = []
    for t, qk, vk in zip(times, q, v):
        _, lh, ln = model.consistent_acceleration(t, qk, vk)
        lam.append(np.concatenate([lh, ln]))
    return q, v, np.array(lam)


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
    source="pyint.problems.ode_reference: DOP853 on the index-1 form, rtol = 2.5e-14, atol = 1e-15",
    tags=frozenset({"conservative"}),
))


def _skate_exact(t):
    from .models import Skate
    q, v, _, lam = Skate().exact(t)
    return q, v, np.atleast_1d(lam)


add_problem(Problem(
    name="skate",
    make_model=lambda: __import__("pyint.models", fromlist=["Skate"]).Skate(),
    make_state=lambda m: m.initial_state(),
    t_end=2.0,
    h0=1 / 16,
    source="closed form (SPEC, seed 004): theta = w t, x = g sin(a)/(2 w^2) sin^2(w t), ...",
    exact=_skate_exact,
    tags=frozenset({"conservative", "closed_form"}),
))

add_problem(Problem(
    name="snakeboard",
    make_model=lambda: __import__("pyint.models", fromlist=["Snakeboard"]).Snakeboard(),
    make_state=lambda m: m.initial_state(),
    t_end=0.5,
    h0=1 / 64,
    source="pyint.problems.ode_reference: DOP853 on the index-1 form, rtol = 2.5e-14, atol = 1e-15",
))

add_problem(Problem(
    name="sleigh_qmass",
    make_model=lambda: __import__("pyint.models", fromlist=["ChaplyginSleigh"]).ChaplyginSleigh(),
    make_state=lambda m: m.initial_state(),
    t_end=2.0,
    h0=1 / 16,
    source="pyint.problems.ode_reference: DOP853 on the index-1 form, rtol = 2.5e-14, atol = 1e-15",
    tags=frozenset({"configuration_dependent_mass"}),
))

add_problem(Problem(
    name="driven_pendulum",
    make_model=lambda: __import__("pyint.models", fromlist=["DrivenPendulum"]).DrivenPendulum(),
    make_state=lambda m: m.initial_state(),
    t_end=1.0,
    h0=1 / 32,
    source="pyint.problems.ode_reference: DOP853 on the index-1 form, rtol = 2.5e-14, atol = 1e-15",
    tags=frozenset({"rheonomic"}),
))


def _manipulator_exact(t):
    """The seed-003 manipulator at time t from its independent-coordinate ODE
    (eq. (14) with the bars' width, DOP853 at rtol 2.5e-14), mapped to natural
    coordinates: a reference independent of the constrained formulation."""
    from scipy.integrate import solve_ivp

    from .models import TwoLinkAngles, two_link_manipulator

    ang, nat = TwoLinkAngles(width=0.1), two_link_manipulator()
    y = np.zeros(4)
    if t > 0:
        sol = solve_ivp(lambda s, x: np.concatenate([x[2:], np.linalg.solve(ang.mass(x[:2]), ang.force(s, x[:2], x[2:]))]),
                        (0.0, t), y, method="DOP853", rtol=2.5e-14, atol=1e-15)
        if not sol.success:
            raise RuntimeError(f"reference integration failed: {sol.message}")
        y = sol.y[:, -1]
    q, v = ang.to_natural(y[:2], y[2:])
    _, lam, _ = nat.consistent_acceleration(t, q, v)
    return q, v, lam


add_problem(Problem(
    name="manipulator",
    make_model=lambda: __import__("pyint.models", fromlist=["two_link_manipulator"]).two_link_manipulator(),
    make_state=lambda m: m.initial_state(),
    t_end=1.0,
    h0=1 / 64,
    source="seed 003 two-link manipulator in natural coordinates (SPEC); reference: the independent-"
           "coordinate ODE (14) with the bars' width, DOP853 rtol = 2.5e-14, mapped to natural coordinates",
    exact=_manipulator_exact,
    tags=frozenset({"conservative", "natural_coordinates"}),
))

add_problem(Problem(
    name="manipulator_angles",
    make_model=lambda: __import__("pyint.models", fromlist=["TwoLinkAngles"]).TwoLinkAngles(width=0.1),
    make_state=lambda m: (np.zeros(2), np.zeros(2)),
    t_end=1.0,
    h0=1 / 64,
    source="pyint.problems.ode_reference: DOP853 on the ODE (14) (unconstrained, M(theta)), rtol = 2.5e-14, "
           "atol = 1e-15",
    tags=frozenset({"conservative", "configuration_dependent_mass", "unconstrained"}),
))
