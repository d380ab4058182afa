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

import functools
import warnings

import numpy as np

from .. import _fortran
from .. import _validate as V
from .._docfrag import fragment, with_fragments
from .._result_builder import decode, kernel_stats
from ..integrator import Integrator, register
from ..options import Options, method_id, stat_names
from ..models.structured import LINEAR_SOLVERS, SOLVER_NAMES, check_linear_solver


#: The order of the constants alpha_parameters (fortran/api/api_run.f90) returns.
ALPHA_PARAMETER_NAMES = ("alpha_m", "alpha_f", "alpha", "beta", "gamma")


def alpha_parameters(rho_inf):
    """alpha_m, alpha_f, alpha, beta, gamma from rho_inf (seed 000 = Chung-Hulbert).

    alpha_m = (2 rho - 1)/(rho + 1), alpha_f = rho/(rho + 1), alpha = alpha_m - alpha_f,
    beta = (1 - alpha)^2 / 4, gamma = 1/2 - alpha: derived in Fortran (alpha_params of
    fortran/core/alpha.f90, the function the genalpha and lie_genalpha kernels use), once per
    rho_inf (a run's metadata makes no call of its own).
    """
    return dict(_alpha_parameters(V.as_real(rho_inf, "rho_inf", lo=0.0, hi=1.0)))


@functools.lru_cache(maxsize=64)
def _alpha_parameters(rho):
    return tuple(decode(ALPHA_PARAMETER_NAMES, _fortran.alpha_parameters(rho), reals=ALPHA_PARAMETER_NAMES).items())


# The seed's printed values for rho_inf = 3/7, asserted where the parameters are built.
_P = alpha_parameters(3 / 7)
assert np.allclose([_P["alpha_m"], _P["alpha_f"], _P["alpha"], _P["beta"], _P["gamma"]],
                   [-0.1, 0.3, -0.4, 0.49, 0.9], rtol=0, atol=1e-15), _P
del _P

_OPTIONS = Options("genalpha")
_MASS_MODES = _OPTIONS.choices("mass_update")
_FORMULATIONS = _OPTIONS.choices("formulation")
_START_MODES = _OPTIONS.choices("start")


# the options GeneralizedAlpha and AlphaRattle share, documented once (pyint/_docfrag.py)
fragment("alpha_options", r"""
rho_inf : float, default 0.9
    The spectral radius at infinity in [0, 1]: the numerical dissipation of the high
    frequencies (1: none; 0: annihilated in one step).  The parameters :math:`\alpha_m`,
    :math:`\alpha_f`, :math:`\beta`, :math:`\gamma` follow from it (Chung, Hulbert 1993; :func:`~pyint.methods.genalpha.alpha_parameters`).
formulation : {"arnold_bruls", "paper"}, default "arnold_bruls"
    "arnold_bruls" solves :math:`M(q_{n+1})\, w_{n+1} = F_{n+1}` for the physical
    acceleration :math:`w` and carries the alpha recursion on accelerations (Arnold, Bruls
    2007); "paper" is seed 000's
    :math:`M_{n+1} a_{n+1} + \frac{\alpha_m}{1 - \alpha_m} M_n a_n = \ldots`.  The same
    method for a constant mass matrix; for :math:`M(q)` the paper's form is first order unless
    :math:`\rho_\infty = 1`.
mass_update : {"exact", "predictor"}, default "exact"
    "exact": :math:`M(q_{n+1})` with the exact derivative :math:`(M a)_q` in Newton's matrix;
    "predictor": the paper's :math:`M(q_n + h v_n)`, no :math:`(M a)_q` needed.
start : {"consistent", "paper"}, default "consistent"
    The start of the algorithmic acceleration: "consistent" :math:`a_0 = \ddot q(0)` (required
    by variable steps); "paper" :math:`M a_0 = (1 - \alpha) F_0 + \alpha F_1`.
tol : float, default 1e-10
    Newton's tolerance, in the one termination rule of every implicit kernel: stop when
    :math:`\frac{\theta}{1 - \theta} \lvert\Delta\rvert \le \mathrm{tol}/10` (:math:`\theta`
    the contraction rate, :math:`\Delta` the increment; accelerations against
    :math:`1 + \lvert a\rvert`, multipliers against :math:`1 + \lvert\lambda\rvert`, max norms),
    or at the round-off floor
    (Hairer, Wanner, Solving ODEs II, IV.8).
maxit : int, default 25
    Newton iterations per step (beyond: NewtonConvergenceError, or a rejected step with
    variable steps).
""")


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
        # the options are documented in the docstrings of GeneralizedAlpha and AlphaRattle
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
        if isinstance(jacobian_reuse, str) and jacobian_reuse == "across_h":
            # what "across_h" asked for is the default now (True); the old value keeps working for one release
            warnings.warn("jacobian_reuse='across_h' is the default now: pass True (or 'per_h' for a fresh "
                          "matrix at every new h); 'across_h' will be refused in the next release",
                          DeprecationWarning, stacklevel=2)
            jacobian_reuse = True
        if not (isinstance(jacobian_reuse, (bool, np.bool_)) or jacobian_reuse == "per_h"):
            raise TypeError(f"jacobian_reuse must be True, False or 'per_h', got {jacobian_reuse!r}")
        self.linear_solver = linear_solver
        self.jacobian_reuse = jacobian_reuse if jacobian_reuse == "per_h" else bool(jacobian_reuse)

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
            jacobian_reuse=2 if self.jacobian_reuse == "per_h" else int(self.jacobian_reuse),
            rho_inf=self.rho_inf, tol=self.tol)

    def decode_stats(self, istat, stats):
        out = kernel_stats(self.STATS, istat, stats)
        out["linear_solver"] = SOLVER_NAMES.get(out["linear_solver"], "none")
        return out


@register
@with_fragments
class GeneralizedAlpha(_AlphaFamily):
    r"""Generalized-alpha for holonomic and nonholonomic constrained systems (seed 000 section 2).

    The constraint forces :math:`G^\mathsf{T}\lambda` and :math:`A^\mathsf{T}\lambda` enter the
    alpha-weighted equation of motion; the position-level holonomic constraint (index 3, scaled by
    :math:`1/(\beta h^2)`) and the velocity-level nonholonomic constraint (index 2, scaled by
    :math:`1/h`) are solved at :math:`t_{n+1}`, so both hold to round-off at every step.  Second
    order in :math:`q`, :math:`v` and :math:`\lambda` (Arnold, Bruls 2007).  With variable
    steps (``integrate(..., rtol=...)``) it runs the stabilized index-2 variant with the local error
    estimate of the adaptive-steps page, section 1.

    Parameters
    ----------
    %(alpha_options)s
    linear_solver : {"auto", "dense", "banded", "sparse"}, default "auto"
        The solver of Newton's linear systems: "auto" (SuiteSparse KLU when built in, banded for
        a band at least 16 wide on both sides, dense LU for large matrices with over 30 %
        nonzeros; without KLU banded or dense by flop count), "dense" (LAPACK LU), "banded"
        (LAPACK's band LU, after reverse Cuthill-McKee, in plain loops) or "sparse" (KLU).  The
        choice made is in ``Result.stats["linear_solver"]``.
    jacobian_reuse : {True, False, "per_h"}, default True
        True: simplified Newton, the factorization kept across iterations and steps while the
        contraction rate stays below 0.1; a new :math:`h` refactors at a fixed step, and with
        variable steps while the ratio of the old and new :math:`1/(\beta h^2)` stays in
        :math:`[0.6, 1/0.6]` (IDA's test) the factorization is kept across changes of :math:`h`
        too; "per_h": the same, but a fresh factorization at every new :math:`h` (variable
        steps: one per step); False: a new matrix every iteration (Newton's method).
    stabilized : {None, True, False}, default None
        True: the stabilized index-2 variant (:math:`q_{n+1}` gains
        :math:`\beta h^2 G(q_n)^\mathsf{T} \mu`, :math:`G v + g_t = 0` is solved with
        :math:`g = 0`: both levels at round-off).  None: index 3 at a fixed step, the
        stabilized variant with variable steps (index 3 collapses under step control); False
        with rtol on a model with holonomic constraints: a ValueError.

    See Also
    --------
    AlphaRattle : the RATTLE-like variant for nonholonomic systems (seed 000 section 3).
    LieGeneralizedAlpha : generalized-alpha for rigid bodies on a Lie group.

    Examples
    --------
    %(pendulum_start: GeneralizedAlpha)s
    >>> res = GeneralizedAlpha(rho_inf=0.9).integrate(model, q0, v0, t_end=1.0, h=1e-3)
    >>> res.status, res.eps_pos < 1e-12
    ('ok', True)
    """

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
@with_fragments
class AlphaRattle(_AlphaFamily):
    r"""alpha-RATTLE for nonholonomic systems (seed 000 section 3).

    The multipliers stay out of the alpha-weighted equation of motion; a RATTLE-like correction
    :math:`R_{1/2} = -M^{-1} A^\mathsf{T} \lambda_{n+1}`, evaluated at :math:`q_n + h/2\, v_n`,
    enters the position (:math:`h^2/2\, R`) and velocity (:math:`h R`) updates, and
    :math:`A v + b = 0` is imposed at :math:`t_{n+1}`: the velocity level holds to round-off.  With variable steps (``integrate(..., rtol=...)``) its local error estimate is
    generalized-alpha's for the free acceleration plus the midpoint rule's for :math:`R_{1/2}` (the
    adaptive-steps page, section 1.8).

    Parameters
    ----------
    %(alpha_options)s
    linear_solver : {"auto", "dense", "banded", "sparse"}, default "auto"
        Accepted for a common interface with :class:`GeneralizedAlpha`; alpha-RATTLE's Newton
        matrix is always dense (LAPACK LU).
    jacobian_reuse : {True, False, "per_h"}, default True
        As for :class:`GeneralizedAlpha`: simplified Newton with a kept factorization, with
        variable steps also across changes of h (True), a fresh one at every new h ("per_h"),
        or a new matrix every iteration (False).
    stabilized : None, default None
        An option of :class:`GeneralizedAlpha` only (alpha-RATTLE has no holonomic
        constraints): True is a ValueError.

    Examples
    --------
    >>> from pyint import AlphaRattle, ChaplyginSleigh
    >>> model = ChaplyginSleigh()
    >>> q0, v0 = model.initial_state()
    >>> res = AlphaRattle(rho_inf=0.5).integrate(model, q0, v0, t_end=1.0, h=1e-3)
    >>> res.status, res.eps_vel < 1e-12
    ('ok', True)
    """

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
