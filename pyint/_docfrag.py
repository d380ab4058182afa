"""Docstring fragments: a numpydoc parameter block written once and shared by the functions and
sibling classes that take the same parameters (``integrate`` and ``integrate_batch``, ...).

``fragment(name, text)`` records a block (written flush left); a docstring names it on a line of
its own, ``%(name)s``, at the indentation the block takes there; ``@with_fragments`` fills it in
when the function or class is defined, so ``help()``, the API pages and numpydoc see the whole text.
A block may leave one word to its user, ``${arg}`` (the class a doctest imports, ...): the
docstring then names it ``%(name: word)s``.
"""
from __future__ import annotations

import string
import textwrap

FRAGMENTS: dict[str, str] = {}


def fragment(name, text):
    """Record the docstring block ``text`` under ``name`` (its common indentation removed)."""
    FRAGMENTS[name] = textwrap.dedent(text).strip("\n")


def with_fragments(obj):
    """``obj`` with each line ``%(name)s`` (or ``%(name: arg)s``) of its docstring replaced by the
    fragment (``${arg}`` filled in), indented as that line (a decorator of functions and classes);
    an unknown name is a KeyError, a fragment's ``${arg}`` left without one too."""
    lines = []
    for line in (obj.__doc__ or "").splitlines():
        text = line.strip()
        if text.startswith("%(") and text.endswith(")s"):
            indent = line[:len(line) - len(line.lstrip())]
            name, _, arg = text[2:-2].partition(": ")
            block = string.Template(FRAGMENTS[name]).substitute({"arg": arg} if arg else {})
            lines += [indent + part if part else "" for part in block.splitlines()]
        else:
            lines.append(line)
    obj.__doc__ = "\n".join(lines)
    return obj


# -- the start of the doctests on a double pendulum (arg: what they import besides PendulumChain) --------
fragment("pendulum_start", """
>>> import numpy as np
>>> from pyint import ${arg}, PendulumChain
>>> model = PendulumChain(n_links=2)
>>> q0, v0 = model.initial_state([np.pi / 3, np.pi / 2])
""")
# -- the start of the doctests on seed 001's two-link manipulator of rigid bodies (arg: the method) ------
fragment("manipulator_start", """
>>> from pyint import ${arg}
>>> from pyint.models.rigid_bodies import RigidBodySystem
>>> model = RigidBodySystem.two_link_manipulator()        # seed 001, section 3
>>> x0, R0, v0 = model.manipulator_initial_state()
""")

# -- the parameters of a run (Integrator.integrate, Integrator.integrate_batch) ------------------------
fragment("time_grid", """
t_end : float
    The final time.
h : float, optional
    The fixed step (give either ``h`` or ``rtol``, never both).  The last step ends
    exactly at t_end.
t0 : float, default 0.0
    The initial time.
every : int, default 1
    Keep every ``every``-th step as a sample (the last sample is always the final
    state, also when ``every`` does not divide the number of steps).
""")
fragment("start_failure_steps", """
project : bool, default False
    Project an inconsistent initial state onto the constraints (M-orthogonal)
    instead of raising a ValueError.
raise_on_failure : bool, default True
    On a failure (Newton, a singular matrix, NaN) raise an
    :class:`~pyint.errors.IntegrationError` whose ``result`` holds the steps
    computed so far; False: return that result with ``status`` set instead.
rtol : float, optional
    Variable steps (keyword only): the relative tolerance of the one step controller
    (docs: adaptive steps), for a method with a local error estimate
    (generalized-alpha, alpha-RATTLE, lie_genalpha_s2, rk4_index1, the block
    methods; the others raise a ValueError naming why).  The RMS norm of the
    estimate is scaled by ``atol + rtol |y|``; PI control; a step is rejected on the
    error test or a Newton failure.
atol : float, optional
    The absolute tolerance (default: rtol).
h0 : float, optional
    The first step (default: Hairer, Norsett and Wanner's starting step, Solving ODEs I,
    II.4).
h_min, h_max : float, optional
    Bounds of the step (default 1e-12 (t_end - t0) and t_end - t0); the run stops with
    an IntegrationError below h_min.
t_eval : array_like, optional
    Output times of a variable-step run: cubic Hermite interpolation over the
    accepted step, then re-imposed onto the constraints (:math:`q` onto :math:`g = 0`,
    :math:`v` onto the velocity constraints, M-orthogonal; :math:`a` and the multipliers
    from the index-1 system).  Default:
    the samples are the accepted steps.
max_steps : int, default 100000
    The step attempts a variable-step run may take (beyond: an IntegrationError).
per_unit_step : bool, optional
    What the error of a variable-step run is controlled per: None (the method's
    default: the alpha family per equal share of the steps, RK4 per step, the block
    methods per unit step), True (per unit step) or False (per step).
""")
