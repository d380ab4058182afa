"""Lie-group generalized-alpha on rigid bodies (Arnold, Brüls, Cardona 2015),
Fortran kernel fortran/lie_genalpha.f90 -- second order, beyond seed 001.

q_{n+1} = q_n o exp(h V_n + h^2 (1/2 - beta) a_n + h^2 beta a_{n+1}),
V_{n+1} = V_n + h (1 - gamma) a_n + h gamma a_{n+1},
(1 - alpha_m) a_{n+1} + alpha_m a_n = (1 - alpha_f) Vdot_{n+1} + alpha_f Vdot_n,
M Vdot_{n+1} + B^T lam_{n+1} = Q(V_{n+1}),  Phi(q_{n+1}) = 0.

* ``lie_genalpha``: index 3 (position level kept).
* ``lie_genalpha_s2``: stabilized index 2: the increment gets an extra
  beta h^2 B(q_n)^T mu and B(q_{n+1}) V_{n+1} = 0 is imposed as well
  (position and velocity levels kept).

Variable steps (``rtol``): ``lie_genalpha_s2`` only, with the shift of a_n for a changed step and
the local error estimate of docs/adaptive_steps.md section 8 (the vector one plus the bracket
term -h^3/12 [V, Vdot] of the exponential update); ``lie_genalpha`` (index 3) refuses rtol.

alpha_m, alpha_f, beta, gamma from rho_inf as in :func:`pyint.methods.genalpha.alpha_parameters`
(Chung-Hulbert).  The acceleration reported (``a``) is Vdot; the
algorithmic acceleration a is in ``extra["a_alg"]``.
"""
from __future__ import annotations

from ... import _validate as V
from ..genalpha import alpha_parameters
from ...integrator import register
from .integrator import LieIntegrator
from ...options import Options, method_id
from ..._docfrag import fragment, with_fragments
from ...models.structured import LINEAR_SOLVERS

#: rho_inf of both methods below (their Parameters, pyint/_docfrag.py)
fragment("lie_alpha_rho_inf", """
rho_inf : float, default 0.9
    The spectral radius at infinity in [0, 1] (1: no numerical dissipation; Chung,
    Hulbert 1993).
""")

_OPTIONS = Options("lie_genalpha")


class _LieAlpha(LieIntegrator):
    order = 2
    order_source = ("second order in x, R, V and lam: Arnold, Bruls, Cardona 2015, Numer. Math. 129 "
                    "(Lie-group generalized-alpha for constrained systems)")
    _variant = "index3"
    KERNEL = method_id("lie_genalpha")   # fortran/lie_genalpha.f90

    def __init__(self, rho_inf=0.9, tol=1e-10, maxit=20, linear_solver="auto"):
        # the options are documented in the docstrings of the public subclasses
        self.rho_inf = V.as_real(rho_inf, "rho_inf", lo=0.0, hi=1.0)
        self.tol = V.as_real(tol, "tol", positive=True)
        self.maxit = V.as_int(maxit, "maxit", minimum=1)
        self._set_linear_solver(linear_solver)

    def params(self):
        return {"rho_inf": self.rho_inf, "tol": self.tol, "maxit": self.maxit, **self._solver_params(),
                **alpha_parameters(self.rho_inf)}

    def kernel_options(self, model):
        return _OPTIONS.pack(variant=self._variant, maxit=self.maxit, linear_solver=LINEAR_SOLVERS[self.linear_solver],
                             rho_inf=self.rho_inf, tol=self.tol)

    def _naux(self, system):
        return system.nv + system.m

    def adaptive_refusal(self, model):
        """Variable steps (rtol): the stabilized index-2 variant (fortran/lie_genalpha.f90,
        docs/adaptive_steps.md section 8); index 3 is refused."""
        if self._variant == "stab2":
            return None
        return ("index 3 collapses under step control (the velocity defect B V = O(h^2) is corrected within one "
                "step of the new h: docs/adaptive_steps.md 1.6); lie_genalpha_s2, the stabilized index-2 "
                "variant, runs with rtol")

    def _extra(self, system, raw):
        nv, m = system.nv, system.m
        out = {"a_alg": raw["aux"][:, :nv]}
        if self._variant == "stab2":
            out["mu"] = raw["aux"][:, nv:nv + m]
        return out


@register
@with_fragments
class LieGeneralizedAlpha(_LieAlpha):
    r"""Lie-group generalized-alpha, index 3 (Arnold, Bruls, Cardona 2015; seed 001's system).

    Generalized-alpha on :math:`(\mathbb{R}^3 \times SO(3))^n` with the update
    :math:`R \leftarrow R \exp(h \tilde\Omega)`: second order in :math:`x`, :math:`R`, :math:`V` and
    :math:`\lambda`; the position constraint held to round-off, :math:`R` orthogonal to round-off.
    Fixed steps only (index 3 collapses under step control: use
    :class:`LieGeneralizedAlphaStab2` with ``rtol``).

    Parameters
    ----------
    %(lie_alpha_rho_inf)s
    tol : float, default 1e-10
        Newton's tolerance, in the one termination rule of every implicit kernel: stop when
        :math:`\theta/(1 - \theta)` times :math:`h \lvert\Delta\dot V\rvert` against :math:`1 + \lvert V\rvert`,
        :math:`h \lvert\Delta\lambda\rvert` against :math:`1 + \lvert M V\rvert` is :math:`\le \mathrm{tol}/10`
        (:math:`\theta` the contraction rate), or at the round-off floor.
    maxit : int, default 20
        Newton iterations per step.
    %(lie_linear_solver)s

    Examples
    --------
    %(manipulator_start: LieGeneralizedAlpha)s
    >>> res = LieGeneralizedAlpha(rho_inf=0.9).integrate(model, (x0, R0), v0, t_end=0.1, h=1e-3)
    >>> res.status, res.eps_pos < 1e-12
    ('ok', True)
    """

    name = "lie_genalpha"
    keeps = {"holonomic": frozenset({"position"})}
    _variant = "index3"


@register
@with_fragments
class LieGeneralizedAlphaStab2(_LieAlpha):
    r"""Lie-group generalized-alpha, stabilized index 2 (Arnold, Bruls, Cardona 2015).

    As :class:`LieGeneralizedAlpha`, with the velocity constraint solved too and the position
    constraint kept by an extra multiplier mu (Gear-Gupta-Leimkuhler stabilization): position
    and velocity levels at round-off.  The one Lie-group method with variable steps
    (``integrate(..., rtol=...)``, the adaptive-steps page, section 8).

    Parameters
    ----------
    %(lie_alpha_rho_inf)s
    tol : float, default 1e-10
        Newton's tolerance, in the one termination rule of every implicit kernel: stop when
        :math:`\theta/(1 - \theta)` times :math:`h \lvert\Delta\dot V\rvert` against :math:`1 + \lvert V\rvert`,
        :math:`h \lvert\Delta\lambda\rvert` against :math:`1 + \lvert M V\rvert` (and
        :math:`\beta h^2 \lvert\Delta\mu\rvert` against :math:`1 + \lvert x\rvert`) is :math:`\le \mathrm{tol}/10`
        (:math:`\theta` the contraction rate), or at the round-off floor.
    maxit : int, default 20
        Newton iterations per step.
    %(lie_linear_solver)s

    Examples
    --------
    %(manipulator_start: LieGeneralizedAlphaStab2)s
    >>> res = LieGeneralizedAlphaStab2().integrate(model, (x0, R0), v0, t_end=0.1, h=1e-3)
    >>> res.status, res.eps_pos < 1e-12 and res.eps_vel < 1e-12
    ('ok', True)
    """

    name = "lie_genalpha_s2"
    keeps = {"holonomic": frozenset({"position", "velocity"})}
    _variant = "stab2"
