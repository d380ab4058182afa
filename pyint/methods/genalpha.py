"""Generalized-alpha and alpha-RATTLE (seed 000), Fortran kernel fortran/genalpha.f90.

Both methods share the Newmark update and the alpha-weighted equation of
motion; they differ in how the constraint force enters:

* :class:`GeneralizedAlpha` puts G^T lam and A^T lam into F (seed 000 §2) and
  solves the position-level holonomic constraint (index 3, scaled by
  1/(beta h^2)) and the velocity-level nonholonomic constraint (index 2,
  scaled by 1/h) at t_{n+1}: both are kept to round-off.
* :class:`AlphaRattle` (seed 000 §3, nonholonomic only) leaves the
  multipliers out of the alpha-weighted equation and adds the RATTLE-like
  correction R_{1/2} = -M^{-1}(q_n + h/2 v_n) A^T(q_n + h/2 v_n) lam_{n+1} to
  the position (h^2/2 R) and velocity (h R) updates.  A v = 0 is then imposed
  at t_{n+1} as well.

Parameters from the spectral radius at infinity rho_inf in [0, 1]
(:func:`alpha_parameters`).
"""
from __future__ import annotations

import numpy as np

from .. import _fortran
from .. import _validate as V
from ..integrator import Integrator, decode, kernel_stats, register
from ..options import Options, method_id, stat_names
from ..models.structured import LINEAR_SOLVERS, SOLVER_NAMES, check_linear_solver


#: The order of the constants alpha_parameters (fortran/api/api_run.f90) returns.
ALPHA_PARAMETER_NAMES = ("alpha_m", "alpha_f", "alpha", "beta", "gamma")


def alpha_parameters(rho_inf):
    """alpha_m, alpha_f, alpha, beta, gamma from rho_inf (seed 000 = Chung-Hulbert).

    alpha_m = (2 rho - 1)/(rho + 1), alpha_f = rho/(rho + 1), alpha = alpha_m - alpha_f,
    beta = (1 - alpha)^2 / 4, gamma = 1/2 - alpha: derived once, in Fortran (alpha_params of
    fortran/core/alpha.f90, the function the genalpha and lie_genalpha kernels use).
    """
    rho = V.as_real(rho_inf, "rho_inf", lo=0.0, hi=1.0)
    return decode(ALPHA_PARAMETER_NAMES, _fortran.alpha_parameters(rho), reals=ALPHA_PARAMETER_NAMES)


# The seed's printed values for rho_inf = 3/7, asserted where the parameters are built.
_P = alpha_parameters(3 / 7)
assert np.allclose([_P["alpha_m"], _P["alpha_f"], _P["alpha"], _P["beta"], _P["gamma"]],
                   [-0.1, 0.3, -0.4, 0.49, 0.9], rtol=0, atol=1e-15), _P
del _P

_OPTIONS = Options("genalpha")
_MASS_MODES = _OPTIONS.choices("mass_update")
_FORMULATIONS = _OPTIONS.choices("formulation")
_START_MODES = _OPTIONS.choices("start")


class _AlphaFamily(Integrator):
    order = 2
    order_source = ("second order in q and v with gamma = 1/2 - alpha_m + alpha_f (Chung, Hulbert 1993, "
                    "J. Appl. Mech. 60); on constrained systems, lam included: Arnold, Bruls 2007, "
                    "Multibody Syst. Dyn. 18; seed 000 sections 2-3")
    _variant = "genalpha"
    KERNEL = method_id("genalpha")   # fortran/genalpha.f90
    #: The names of the stepper's stats array (fortran/genalpha.f90: alpha_stepper_t).
    STATS = stat_names("genalpha")
    #: The stepper's start checks the rank of the constraints (fortran/core/driver.f90: consistent_start).
    START_CHECKS_RANK = True

    def __init__(self, rho_inf=0.9, formulation="arnold_bruls", mass_update="exact", start="consistent",
                 tol=1e-10, maxit=25, linear_solver="auto", jacobian_reuse=True, stabilized=None):
        """rho_inf: spectral radius at infinity in [0, 1] (1: no numerical dissipation).
        formulation: "arnold_bruls" (default) solves M(q_{n+1}) w_{n+1} = F_{n+1} for the
        physical acceleration w and carries the alpha recursion on accelerations;
        "paper" is seed 000's M_{n+1} a_{n+1} + am/(1-am) M_n a_n = ... .  The two are
        the same method for a constant mass matrix; for M(q) the paper's form is first
        order unless rho_inf = 1 (measured: tests/test_genalpha.py).
        mass_update: "exact" (M(q_{n+1}) with the exact (M a)_q) or "predictor"
        (the paper's M(q_n + h v_n), no (M a)_q needed).
        start: "consistent" (a_0 = qddot(0)) or "paper" (M a_0 = (1 - alpha) F_0 + alpha F_1).
        tol: Newton's tolerance, in the rule of every implicit kernel (fortran/core/newton_control.f90):
        stop when theta/(1 - theta) |increment| <= tol / 10, accelerations against 1 + |a|,
        multipliers against 1 + |lam| (max norms), or at the round-off floor;
        maxit: iterations per step.
        linear_solver: "auto" (SuiteSparse KLU when built in, dense LU for large
        matrices with over 30 % nonzeros; without KLU banded or dense by flop
        count), "dense" (LAPACK LU), "banded" (LAPACK band LU after reverse
        Cuthill-McKee) or "sparse" (KLU).  alpha-RATTLE is always dense.  The
        choice made is in ``Result.stats["linear_solver"]``.
        jacobian_reuse: simplified Newton, keeping the factorization across
        iterations and steps while the contraction rate stays below 0.1 (False:
        Newton's method, a new matrix every iteration); with variable steps a new h
        refactors.  "across_h" (variable steps, opt-in): the factorization is also kept
        across changes of h while the ratio of the old and new 1 / (beta h^2) stays in
        [0.6, 1/0.6] (IDA's cj-ratio test; fortran/core/newton_control.f90): 4-6 iterations per
        step instead of 2, faster only where a factorization costs several iterations
        (measured 6-17 % per step on chains of 8 to 128 links, 5-10 % slower below 24
        unknowns: docs/adaptive_steps.md 1.7); the Newton tolerance is the same.
        stabilized (generalized-alpha only): the stabilized index-2 variant (q_{n+1} gains
        beta h^2 G(q_n)^T mu, G v + g_t = 0 is solved with g = 0: both levels at round-off; its
        Newton matrix dense for linear_solver "dense" and for "auto" up to 60 unknowns, else
        structured through auxiliary unknowns z = G(q_n)^T mu, docs/adaptive_steps.md 6.1); None (default): index 3 at a fixed step h, the stabilized variant with
        variable steps (rtol: index 3 collapses under step control, docs/adaptive_steps.md 1.6);
        False with rtol on a model with holonomic constraints: a ValueError.
        """
        if stabilized not in (None, True, False):
            raise TypeError(f"stabilized must be None, True or False, got {stabilized!r}")
        if stabilized and self._variant != "genalpha":
            raise ValueError(f"{self.name}: stabilized is an option of generalized-alpha (genalpha)")
        self.stabilized = stabilized
        self.rho_inf = V.as_real(rho_inf, "rho_inf", lo=0.0, hi=1.0)
        if mass_update not in _MASS_MODES:
            raise ValueError(f"mass_update must be one of {sorted(_MASS_MODES)}, got {mass_update!r}")
        if start not in _START_MODES:
            raise ValueError(f"start must be one of {sorted(_START_MODES)}, got {start!r}")
        if formulation not in _FORMULATIONS:
            raise ValueError(f"formulation must be one of {sorted(_FORMULATIONS)}, got {formulation!r}")
        self.formulation = formulation
        self.mass_update = mass_update
        self.start = start
        self.tol = V.as_real(tol, "tol", positive=True)
        self.maxit = V.as_int(maxit, "maxit", minimum=1)
        check_linear_solver(linear_solver)
        if not (isinstance(jacobian_reuse, (bool, np.bool_)) or jacobian_reuse == "across_h"):
            raise TypeError(f"jacobian_reuse must be True, False or 'across_h', got {jacobian_reuse!r}")
        self.linear_solver = linear_solver
        self.jacobian_reuse = jacobian_reuse if jacobian_reuse == "across_h" else bool(jacobian_reuse)

    def adaptive_refusal(self, model):
        if self.start != "consistent":
            return "variable steps start from the consistent acceleration (start='consistent')"
        if self.formulation == "paper" and self.rho_inf != 1 and not model.constant_mass:
            # measured (sleigh_qmass, rho_inf 0.9): error 26x rtol at 1e-5, 41x at 1e-7
            return ("the paper's form is first order for a mass matrix M(q) unless rho_inf = 1: the second-order "
                    "error estimate does not bound its error; use formulation='arnold_bruls' (the default)")
        return None

    def params(self):
        p = {"rho_inf": self.rho_inf, "formulation": self.formulation, "mass_update": self.mass_update, "start": self.start,
             "tol": self.tol, "maxit": self.maxit, "linear_solver": self.linear_solver,
             "jacobian_reuse": self.jacobian_reuse}
        if self.stabilized is not None:     # only when chosen (the datasets of default runs stay as they were)
            p["stabilized"] = self.stabilized
        p.update(alpha_parameters(self.rho_inf))
        return p

    def kernel_options(self, model, variant=None):
        return _OPTIONS.pack(
            variant=variant or ("stab2" if self.stabilized else self._variant), formulation=self.formulation,
            mass_update=self.mass_update, start=self.start, maxit=self.maxit,
            linear_solver=LINEAR_SOLVERS[self.linear_solver],
            jacobian_reuse=2 if self.jacobian_reuse == "across_h" else int(self.jacobian_reuse),
            rho_inf=self.rho_inf, tol=self.tol)

    def decode_stats(self, istat, stats):
        out = kernel_stats(self.STATS, istat, stats)
        out["linear_solver"] = SOLVER_NAMES.get(out["linear_solver"], "none")
        return out


@register
class GeneralizedAlpha(_AlphaFamily):
    """Generalized-alpha for holonomic (index 3, or stabilized index 2) and nonholonomic (index 2)
    systems; with variable steps (``integrate(..., rtol=...)``) the stabilized index-2 variant with the
    local error estimate of docs/adaptive_steps.md section 1 (fortran/genalpha.f90)."""

    name = "genalpha"
    lambda_order = 2
    supports = frozenset({"holonomic", "nonholonomic"})
    keeps = {"holonomic": frozenset({"position"}), "nonholonomic": frozenset({"velocity"})}
    _variant = "genalpha"
    ADAPTIVE_REFUSAL = None

    def adaptive_refusal(self, model):
        why = super().adaptive_refusal(model)
        if why is None and model.n_hol and self.stabilized is False:
            why = ("index-3 generalized-alpha collapses under step control (docs/adaptive_steps.md 1.6): "
                   "use stabilized=None or True (the stabilized index-2 variant)")
        return why

    def adaptive_options(self, model, iopt, ropt):
        return self.kernel_options(model, variant="stab2" if model.n_hol else self._variant)


@register
class AlphaRattle(_AlphaFamily):
    """alpha-RATTLE for nonholonomic systems (seed 000 §3); with variable steps
    (``integrate(..., rtol=...)``) its local error estimate is generalized-alpha's for the free
    acceleration plus the midpoint rule's for the constraint correction R_1/2
    (docs/adaptive_steps.md section 1.8; the algorithmic acceleration a then starts from
    M^-1 f(0), which a approximates, instead of qddot(0))."""

    name = "alpha_rattle"
    supports = frozenset({"nonholonomic"})
    keeps = {"nonholonomic": frozenset({"velocity"})}
    _variant = "rattle"
    ADAPTIVE_REFUSAL = None

    def _driver_raw(self, model, buf, nl, istat, aux_parts=None):
        raw = super()._driver_raw(model, buf, nl, istat, aux_parts)
        # a is the algorithmic acceleration of the unconstrained alpha-weighted equation (it
        # approximates M^-1 f; the constraint force enters through R_1/2 only), so A a + gamma_n
        # measures nothing: not applicable (NaN), as for Galerkin (issue 30: ~4.4 on the skate and
        # 0.7 on the sleigh at h = 1e-2 and 1e-3 alike, where generalized-alpha's converges as h)
        if model.n_nonhol:
            raw["residual"][:, 4] = np.nan
            raw["step_max"]["eps_acc"] = np.nan
        return raw
