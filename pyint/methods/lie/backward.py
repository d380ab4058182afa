"""Backward differences + Crouch-Grossman on rigid bodies (seed 001), Fortran
stepper fortran/lie_backward.f90.

Four forms of the Lie-group DAE  qdot = (v, R hat(Omega)),  M Vdot + B^T lam = Q,
each closed by a different constraint level and discretized by eqs. (7)-(10):
x^{k+1} = x^k + h v^{k+1}, R^{k+1} = R^k expm(h Omega^{k+1}), Vdot^{k+1} = (V^{k+1} - V^k)/h,
equations of motion and constraints at t_{k+1}, Newton on the whole step.

=============  =========================================  ==========================
method         constraint imposed at t_{k+1}              kept to round-off
=============  =========================================  ==========================
``lie_dae3``   Phi(q) = 0 (index 3)                       position
``lie_dae2``   B(q) V = 0 (index 2)                       velocity
``lie_dae1``   B(q) Vdot + Bdot V = 0 (index 1)           acceleration
``lie_daes``   eq. (6): Phi = 0, B V = 0, B Vdot + Bdot V = 0 with the
               extra multipliers mu, omega                position, velocity, acceleration
=============  =========================================  ==========================

All are first order.  DAES: the driving velocity V' (which moves q) solves the
index-3 step; V = V' + B^T mu and Vdot = (V' - V'_hist)/h + B^T omega are its
projections onto B V = 0 and B Vdot + Bdot V = 0 at q^{k+1} (the rows of
eq. (10); see fortran/lie_backward.f90 for the reading of the printed
equations).  ``history="printed"`` (default) differences V' as eq. (10)
prints it: q and V' are then exactly DAE3's.  ``history="projected"`` starts
each step from the projected V instead; this is consistent only with
M-orthogonal projections (V = V' + M^-1 B^T mu, ...), which it uses, and its
reported multiplier is lam - omega (the index-1 multiplier at q^{k+1}, V^{k+1}).
Feeding back the printed Euclidean projection does not converge (O(1) error).
"""
from __future__ import annotations

from ... import _validate as V
from ...integrator import register
from .integrator import LieIntegrator
from ...options import Options, method_id
from ..._docfrag import fragment, with_fragments
from ...models.structured import LINEAR_SOLVERS

#: the paragraph that opens the three one-level forms' docstrings (arg: the level kept)
fragment("lie_backward_intro", r"""
Backward differences on the Lie group :math:`(\mathbb{R}^3 \times SO(3))^n` of rigid bodies with the
Crouch-Grossman update :math:`R \leftarrow R \exp(h \tilde\Omega)` (seed 001 eqs. (6)-(10)): first order, R
orthogonal to round-off, ${arg}.  Fixed steps only.
""")
#: tol and maxit of every method below (their Parameters, pyint/_docfrag.py)
fragment("lie_backward_options", r"""
tol : float, default 1e-10
    Newton's tolerance, in the one termination rule of every implicit kernel: stop when
    :math:`\theta/(1 - \theta)` times the increment (:math:`\lvert\Delta V\rvert` against
    :math:`1 + \lvert V\rvert`, :math:`h \lvert\Delta\lambda\rvert` against :math:`1 + \lvert M V\rvert`,
    max norms) is :math:`\le \mathrm{tol}/10` (:math:`\theta` the contraction rate), or at the
    round-off floor.
maxit : int, default 20
    Newton iterations per step.
""")

_OPTIONS = Options("lie_backward")

_HISTORY = {"printed": 0, "projected": 1}


class _LieBackward(LieIntegrator):
    order = 1
    order_source = "first order: backward differences with the Crouch-Grossman update, seed 001 eqs. (6)-(10)"
    _form = "dae3"
    KERNEL = method_id("lie_backward")   # fortran/lie_backward.f90

    def __init__(self, tol=1e-10, maxit=20, linear_solver="auto"):
        # the options are documented in the docstrings of the public subclasses
        self.tol = V.as_real(tol, "tol", positive=True)
        self.maxit = V.as_int(maxit, "maxit", minimum=1)
        self._set_linear_solver(linear_solver)

    def params(self):
        return {"form": self.name, "tol": self.tol, "maxit": self.maxit, **self._solver_params()}

    def _history_mode(self):
        return 0

    def kernel_options(self, model):
        return _OPTIONS.pack(form=self._form, history=self._history_mode(), maxit=self.maxit,
                             linear_solver=LINEAR_SOLVERS[self.linear_solver], tol=self.tol)


@register
@with_fragments
class LieDAE3(_LieBackward):
    r"""Index-3 form: :math:`\Phi(q^{k+1}) = 0` (seed 001).

    %(lie_backward_intro: the position constraint held to round-off)s

    Parameters
    ----------
    %(lie_backward_options)s
    %(lie_linear_solver)s

    Examples
    --------
    %(manipulator_start: LieDAE3)s
    >>> res = LieDAE3().integrate(model, (x0, R0), v0, t_end=0.1, h=1e-3)
    >>> res.status, res.eps_pos < 1e-12
    ('ok', True)
    """

    name = "lie_dae3"
    keeps = {"holonomic": frozenset({"position"})}
    _form = "dae3"


@register
@with_fragments
class LieDAE2(_LieBackward):
    r"""Index-2 form: :math:`B(q^{k+1})\, V^{k+1} = 0` (seed 001).

    %(lie_backward_intro: the velocity constraint held to round-off)s

    Parameters
    ----------
    %(lie_backward_options)s
    %(lie_linear_solver)s

    Examples
    --------
    %(manipulator_start: LieDAE2)s
    >>> res = LieDAE2().integrate(model, (x0, R0), v0, t_end=0.1, h=1e-3)
    >>> res.status, res.eps_vel < 1e-12
    ('ok', True)
    """

    name = "lie_dae2"
    keeps = {"holonomic": frozenset({"velocity"})}
    _form = "dae2"


@register
@with_fragments
class LieDAE1(_LieBackward):
    r"""Index-1 form: :math:`B(q^{k+1})\, (V^{k+1} - V^k)/h + \dot B\, V^{k+1} = 0` (seed 001).

    %(lie_backward_intro: the acceleration-level constraint held)s

    Parameters
    ----------
    %(lie_backward_options)s
    %(lie_linear_solver)s

    Examples
    --------
    %(manipulator_start: LieDAE1)s
    >>> res = LieDAE1().integrate(model, (x0, R0), v0, t_end=0.1, h=1e-3)
    >>> res.status, res.eps_acc < 1e-6
    ('ok', True)
    """

    name = "lie_dae1"
    keeps = {"holonomic": frozenset({"acceleration"})}
    _form = "dae1"


@register
@with_fragments
class LieDAES(_LieBackward):
    r"""The stabilized form (seed 001, equation (6)): all three constraint levels at every step.

    Backward differences on the Lie group :math:`(\mathbb{R}^3 \times SO(3))^n` with the
    Crouch-Grossman update (seed 001 eqs. (6)-(10)): first order; position, velocity and acceleration constraints
    held to round-off at every step.  Fixed steps only.

    Parameters
    ----------
    %(lie_backward_options)s
    %(lie_linear_solver)s
    history : {"printed", "projected"}, default "printed"
        "printed": seed 001's eq. (10), the backward difference of the driving velocity V';
        "projected": each step starts from the M-orthogonally projected V.

    Examples
    --------
    %(manipulator_start: LieDAES)s
    >>> res = LieDAES(history="printed").integrate(model, (x0, R0), v0, t_end=0.1, h=1e-3)
    >>> res.status, res.eps_pos < 1e-12 and res.eps_vel < 1e-12
    ('ok', True)
    """

    name = "lie_daes"
    keeps = {"holonomic": frozenset({"position", "velocity", "acceleration"})}
    _form = "daes"

    def __init__(self, tol=1e-10, maxit=20, history="printed", linear_solver="auto"):
        super().__init__(tol=tol, maxit=maxit, linear_solver=linear_solver)
        if history not in _HISTORY:
            raise ValueError(f"history must be one of {sorted(_HISTORY)}, got {history!r}")
        self.history = history

    def params(self):
        return {**super().params(), "history": self.history}

    def _history_mode(self):
        return _HISTORY[self.history]

    def _naux(self, system):
        return system.nv + 2 * system.m

    def _extra(self, system, raw):
        nv, m = system.nv, system.m
        aux = raw["aux"]
        return {"V_drive": aux[:, :nv], "mu": aux[:, nv:nv + m], "omega": aux[:, nv + m:nv + 2 * m]}
