"""Constrained symplectic methods on the canonical (q, p) form (seed 002 and beyond).
Fortran kernel: fortran/symplectic.f90 (canonical field: fortran/core/hamiltonian.f90,
coefficients: fortran/core/tableaux.f90).

With p = M(q) v the model's equations of motion M a = f - G^T lam become

    qdot = M^{-1} p,   pdot = f(t, q, v) + (M v)_q v - G^T lam,   g(t, q) = 0

(pyint's f holds the Coriolis/centrifugal terms of a configuration-dependent
M), the canonical system of H = 1/2 p^T M^{-1} p + V(q) when the model is
Lagrangian with potential V (f = -grad V for a constant M).

* :class:`SymplecticComposition` -- the seed's three-step composition
  (seed 002 section 1): half kick p - h/2 G(q_k)^T Lam_k, one step of the
  s-stage Gauss-Legendre method on the unconstrained system (s = 1: implicit
  midpoint, s = 2: the paper's 4th-order tableau), half kick
  -h/2 G(q_{k+1})^T Lam_{k+1}.  Lam_k makes g(q_{k+1}) = 0 (one Newton system
  per step, through the Gauss stages), Lam_{k+1} makes G M^{-1} p_{k+1} = 0
  (linear).  Order 2 whatever s.
* :class:`Rattle` -- the same composition with the Stormer-Verlet middle step:
  exactly RATTLE, the baseline of the family.
* :class:`LobattoIIIAB` -- the s-stage Lobatto IIIA-IIIB pair with the
  constraint force inside the stages (Jay 1996): keeps both constraint levels
  and symplecticity at order 2s - 2 (s = 2 is RATTLE, s = 3 order 4).

All keep g = 0 and G v + g_t = 0 to round-off at every step and are
symplectic on the constraint manifold for conservative, scleronomic models.
For forces depending on v or t, or for rheonomic constraints, the same
discretization is applied (same order, no symplecticity).  ``a`` and ``lam``
of the Result are the consistent acceleration and multipliers of the state
(q, v) at each sample (index-1 KKT solve), so they converge at the order of
q and v; ``Result.extra["p"]`` holds the momenta.
"""
from __future__ import annotations

from .. import _fortran
from .. import _validate as V
from ..models._fortran_model import model_query
from ..integrator import Integrator, register
from ..options import Options, method_id, stat_names
from .._docfrag import fragment, with_fragments

#: tol and maxit of every method below (their Parameters, pyint/_docfrag.py)
fragment("sym_newton_options", r"""
tol : float, default 1e-10
    Newton's tolerance, in the one termination rule of every implicit kernel: stop when
    :math:`\frac{\theta}{1 - \theta} \lvert\Delta\rvert \le \mathrm{tol}/10` (:math:`\theta` the
    contraction rate, :math:`\Delta` the increment; stage positions, momenta and impulses, each
    against 1 + its size), or at the
    round-off floor (Hairer, Wanner, Solving ODEs II, IV.8).
maxit : int, default 20
    Newton iterations per step (beyond: NewtonConvergenceError).
""")

#: Largest number of stages of the tableaux (fortran/core/tableaux.f90: TAB_MAX_STAGES).
MAX_STAGES = 10

_OPTIONS = Options("symplectic")
_TABLEAUX = _OPTIONS.choices("tableau")


def tableau(kind, s):
    """Coefficients (a, ahat, b, c) of the s-stage "gauss" (Gauss-Legendre,
    ahat = a) or "lobatto" (Lobatto IIIA a, IIIB ahat) tableau, or of the
    "explicit_midpoint" rule (s = 2), computed and checked in Fortran
    (fortran/core/tableaux.f90)."""
    if kind not in _TABLEAUX:
        raise ValueError(f"tableau kind must be one of {sorted(_TABLEAUX)}, got {kind!r}")
    s = V.as_int(s, "stages", minimum=1 if kind == "gauss" else 2)
    if s > MAX_STAGES or kind == "explicit_midpoint" and s != 2:
        raise ValueError(f"stages must be <= {MAX_STAGES} (2 for the explicit midpoint rule), got {s}")
    a, ahat, b, c, info = _fortran.prk_tableau(_TABLEAUX[kind], s)
    if info != 0:
        raise RuntimeError(f"the {kind} tableau with {s} stages failed its identity checks (info={info})")
    return a, ahat, b, c


def canonical_field(model, t, q, p, backend="auto"):
    """(v, psi, phi_q, phi_p, psi_q, psi_p) of the canonical field at (t, q, p), from Fortran.

    v = M^{-1} p and psi = f + (M v)_q v; for a conservative model v = H_p, psi = -H_q.
    """
    n = model.n
    q = V.as_vector(q, n, "q")
    p = V.as_vector(p, n, "p")
    return tuple(model_query(model, "canonical_field", [t, q, p], [(n,), (n,)] + 4 * [(n, n)], backend=backend))


class _SymplecticFamily(Integrator):
    supports = frozenset({"holonomic"})
    keeps = {"holonomic": frozenset({"position", "velocity"})}
    invariants = frozenset({"symplectic", "energy_bounded"})
    ADAPTIVE_REFUSAL = ("a symplectic method keeps its bounded energy error and symplecticity only at a fixed "
                        "step: variable steps destroy what it preserves")
    _scheme = "composition"
    _tableau = "gauss"
    KERNEL = method_id("symplectic")   # fortran/symplectic.f90
    STATS = stat_names("symplectic")

    def __init__(self, stages, tol=1e-10, maxit=20):
        tableau(self._tableau, stages)   # validates the stage count
        self.stages = int(stages)
        self.tol = V.as_real(tol, "tol", positive=True)
        self.maxit = V.as_int(maxit, "maxit", minimum=1)

    def params(self):
        return {"scheme": self._scheme, "tableau": self._tableau, "stages": self.stages,
                "tol": self.tol, "maxit": self.maxit}

    def kernel_options(self, model):
        return _OPTIONS.pack(scheme=self._scheme, tableau=self._tableau, stages=self.stages, maxit=self.maxit,
                             tol=self.tol)

    def kernel_aux(self, model):
        return {"p": model.n}


@register
@with_fragments
class SymplecticComposition(_SymplecticFamily):
    r"""Seed 002's symplectic composition: kick, s-stage Gauss-Legendre step, kick.  Order 2.

    A symmetric (Strang) composition of the constrained half kicks with the Gauss-Legendre
    middle step (Hairer, Lubich, Wanner, GNI II.5): symplectic, both the position and the
    velocity constraint kept to round-off, the energy error bounded.  Fixed steps only.

    Stiff dampers: the composition is of order 2 whatever s, and a stiff dissipative mode makes
    its error constant large (IFToMM A05 at h = 1e-3, s = 2: benchmark error 0.40, 0.10 at
    h = 5e-4: status ok, the truncation error of a step too large for the dampers;
    docs/iftomm.md).

    Parameters
    ----------
    stages : int, default 2
        s of the Gauss-Legendre middle step (1 = implicit midpoint, 2 = the paper's 4th-order
        tableau; at most 10).
    %(sym_newton_options)s

    Examples
    --------
    %(pendulum_start: SymplecticComposition)s
    >>> res = SymplecticComposition(stages=2).integrate(model, q0, v0, t_end=1.0, h=1e-2)
    >>> res.status, res.eps_pos < 1e-12, bool(res.energy_drift < 1e-3)
    ('ok', True, True)
    """

    name = "symplectic_gl"
    order = 2
    lambda_order = 2
    order_source = ("order 2: symmetric (Strang) composition of the constrained half kicks with the "
                    "Gauss-Legendre step, seed 002; Hairer, Lubich, Wanner, Geometric Numerical "
                    "Integration, 2nd ed., II.5")

    def __init__(self, stages=2, tol=1e-10, maxit=20):
        super().__init__(stages, tol, maxit)


@register
@with_fragments
class Rattle(_SymplecticFamily):
    r"""RATTLE: the composition with the Stormer-Verlet middle step.  Order 2.

    Andersen 1983; Leimkuhler, Skeel 1994; Hairer, Lubich, Wanner, GNI VII.1.4: symplectic,
    both constraint levels kept to round-off.  Fixed steps only.

    Stiff dampers: a dissipative mode with :math:`h \lvert\lambda\rvert > 2` is damped by the implicit
    midpoint rule's :math:`R(z) = (1 + z/2)/(1 - z/2)`, so it flips sign every step instead of decaying;
    the run stays of order 2, with an error constant that grows with :math:`h \lvert\lambda\rvert`
    (IFToMM A05, :math:`h C/m = 8` at :math:`h` = 1e-3:
    benchmark error 0.107, 0.027 at h = 5e-4, within 1e-3 from h = 1e-4; docs/iftomm.md).

    Parameters
    ----------
    %(sym_newton_options)s

    Examples
    --------
    %(pendulum_start: Rattle)s
    >>> res = Rattle().integrate(model, q0, v0, t_end=1.0, h=1e-2)
    >>> res.status, res.eps_vel < 1e-12
    ('ok', True)
    """

    name = "rattle"
    order = 2
    lambda_order = 2
    order_source = ("RATTLE, order 2 (Andersen 1983, J. Comput. Phys. 52; Leimkuhler, Skeel 1994; "
                    "Hairer, Lubich, Wanner, Geometric Numerical Integration, 2nd ed., VII.1.4)")
    _tableau = "lobatto"

    def __init__(self, tol=1e-10, maxit=20):
        super().__init__(2, tol, maxit)

    def params(self):
        p = super().params()
        p["inner"] = "stormer_verlet"
        return p


@register
@with_fragments
class LobattoIIIAB(_SymplecticFamily):
    r"""Lobatto IIIA-IIIB with :math:`s` stages and constrained stages: order :math:`2s - 2`.

    Jay 1996; Hairer, Lubich, Wanner, GNI VII.1: symplectic, order :math:`2s - 2` in :math:`q`,
    :math:`p` and :math:`\lambda`,
    both constraint levels kept to round-off.  Fixed steps only.

    Parameters
    ----------
    stages : int, default 3
        :math:`s \ge 2` (2 = RATTLE, 3 = order 4; at most 10).
    %(sym_newton_options)s

    Examples
    --------
    %(pendulum_start: LobattoIIIAB)s
    >>> res = LobattoIIIAB(stages=3).integrate(model, q0, v0, t_end=1.0, h=1e-2)
    >>> res.status, res.eps_pos < 1e-12
    ('ok', True)
    """

    name = "lobatto_iiiab"
    order = 4
    lambda_order = 4
    order_source = ("Lobatto IIIA-IIIB with s stages: order 2s - 2 in q, p and lam (Jay 1996, SIAM J. "
                    "Numer. Anal. 33; Hairer, Lubich, Wanner, Geometric Numerical Integration, 2nd ed., VII.1)")
    _scheme = "lobatto"
    _tableau = "lobatto"

    def __init__(self, stages=3, tol=1e-10, maxit=20):
        super().__init__(stages, tol, maxit)
        self.order = 2 * self.stages - 2
        self.lambda_order = self.order


@with_fragments
class ExplicitMidpointComposition(_SymplecticFamily):
    r"""Seed 002's composition with the explicit midpoint rule as middle step (not symplectic).

    Keeps both constraint levels, order 2, but NOT symplectic (seed 002 section 1 makes the
    composition symplectic only with a symplectic middle step).  Not registered: it is the
    negative control of the symplecticity tests.

    Parameters
    ----------
    %(sym_newton_options)s

    Examples
    --------
    %(pendulum_start: ExplicitMidpointComposition)s
    >>> res = ExplicitMidpointComposition().integrate(model, q0, v0, t_end=1.0, h=1e-2)
    >>> res.status
    'ok'
    """

    name = "composition_explicit_midpoint"
    order = 2
    order_source = ("order 2: symmetric (Strang) composition around the explicit midpoint rule, seed 002's "
                    "composition; Hairer, Lubich, Wanner, Geometric Numerical Integration, 2nd ed., II.5")
    invariants = frozenset()
    _tableau = "explicit_midpoint"

    def __init__(self, tol=1e-10, maxit=20):
        super().__init__(2, tol, maxit)
