"""Multistep block methods (seed 003 §2) on the index-1 form (7); Fortran kernel
fortran/block.f90, coefficients from :mod:`pyint.methods.block_coefficients`.

One step of the method is one block of length h with r nodes t + c_k h
(c_r = 1); the r node values are advanced together by eq. (9),

    Y_{i+1} = h (A (x) I) Ydot_{i+1} + (U (x) I) Y_i,

with y = (q, qdot) and the stage derivatives (qdot_k, qddot_k, lam_k) from
Newton on the index-1 system at the r new nodes.  Samples are the block ends
t0 + k h.  The first block is started by classical RK4 with
``start_substeps`` steps per node interval (keeps the order, see the kernel).

Registered presets (the shared test list measures each one's order):

=====================  ==========================================  =====
name                   scheme                                      order
=====================  ==========================================  =====
``block_uniform_rk``   uniform nodes, RK-stable (printed in seed)  4
``block_uniform_eq8``  uniform nodes, eq. (8)                      5
``block_chebyshev``    Chebyshev nodes, eq. (8) (printed)          5
``block_legendre``     Gauss-Legendre nodes, eq. (8) (printed)     5
=====================  ==========================================  =====

:class:`BlockMethod` takes any :class:`~pyint.methods.block_coefficients.BlockScheme`.
The acceleration-level constraints are equations of every block, so they hold
to the Newton tolerance (round-off) at every sample; positions and velocities
drift, as for every index-1 integration.

Variable block lengths (``rtol``; docs/adaptive_steps.md section 3): the local error
estimate is Milne's device on the degree-p extrapolation of the last two blocks' nodes
(eq. (15), p = the scheme's degree), the max over the nodes for q and qdot alike; after a
change of block length the previous block's nodes are re-interpolated (degree 2r - 1, the
order is kept); the first two blocks are RK4 (the history the estimate needs).  The error is
controlled per unit step by default (the estimate is that of the solution the method
advances: the global error is then proportional to rtol, as generalized-alpha's);
``per_unit_step=False`` controls it per step (global error ~ rtol^(p/(p+1)), fewer steps in
a burst).  ``Result.extra["error_estimate_q"]``, ``["error_estimate_v"]``: the estimate of
every accepted block (zero at t0).  Samples (or ``t_eval``) as for every variable-step run;
the fixed-step samples stay the block ends.
"""
from __future__ import annotations

import numpy as np

from .. import _validate as V
from .block_coefficients import PRESETS, BlockScheme, scheme as make_scheme
from .._docfrag import with_fragments
from ..integrator import Integrator, register
from ..options import Options, method_id, real_stats, stat_names

_OPTIONS = Options("block")


@with_fragments
class BlockMethod(Integrator):
    r"""Multistep block method on the index-1 form (seed 003 section 2).

    One step is one block of length h with r nodes; the r node values advance together by
    seed 003's eq. (9), the stage derivatives from Newton on the index-1 system at the new
    nodes.  The acceleration-level constraints hold to the Newton tolerance at every sample;
    positions and velocities drift.  Variable block lengths (``rtol``): the kernel's estimate
    (15), per unit step.  The registered presets (``block_uniform_rk`` order 4,
    ``block_uniform_eq8``, ``block_chebyshev``, ``block_legendre`` order 5) are in
    :data:`pyint.METHODS`.

    Parameters
    ----------
    scheme : str or BlockScheme
        A preset name ("uniform_rk", "uniform_eq8", "chebyshev", "legendre") or a
        :class:`~pyint.methods.block_coefficients.BlockScheme` (nodes and matrices A, U).
        Required (a preset's registered class sets it).
    tol : float, default 1e-12
        Newton's tolerance, in the one termination rule of every implicit kernel: stop when
        :math:`\frac{\theta}{1 - \theta}\, h \max\lvert\Delta a\rvert / (1 + \max\lvert z\rvert) \le \mathrm{tol}/10`
        (:math:`\theta` the contraction rate; the nodes' accelerations in velocity units), or at the
        round-off floor.
    maxit : int, default 12
        Newton iterations per block.
    theta_refresh : float, default 0.005
        Refresh the Newton matrix after a block whose contraction rate exceeded it (in [0, 1]).
    start_substeps : int, default 4
        Classical RK4 steps per node interval in the first block (keeps the order).

    Examples
    --------
    %(pendulum_start: BlockMethod)s
    >>> res = BlockMethod("legendre").integrate(model, q0, v0, t_end=1.0, h=1e-2)
    >>> res.status, res.eps_acc < 1e-9
    ('ok', True)
    """

    name = "block"
    supports = frozenset({"holonomic", "nonholonomic"})
    keeps = {"holonomic": frozenset({"acceleration"}), "nonholonomic": frozenset({"acceleration"})}
    KERNEL = method_id("block")   # fortran/block.f90
    #: The names of the stepper's stats array (fortran/block.f90: block_stepper_t).
    STATS = stat_names("block")
    STATS_REALS = real_stats("block")
    #: Variable steps: the estimate (15) of the kernel, per unit step (module docstring).
    ADAPTIVE_REFUSAL = None
    ADAPTIVE_PER_UNIT_STEP = True
    ACCELERATION_IS_QDDOT = True     # a at a block end: the index-1 acceleration there
    OUTPUT_QUINTIC = True            # order 4-5: outputs at t_eval by quintic Hermite in (q, v, a)
    _preset = None

    def __init__(self, scheme=None, tol=1e-12, maxit=12, theta_refresh=0.005, start_substeps=4):
        scheme = self._preset if scheme is None else scheme
        if scheme is None:
            raise ValueError(f"choose a block scheme: one of {sorted(PRESETS)} or a BlockScheme")
        if isinstance(scheme, str):
            scheme = make_scheme(scheme)
        if not isinstance(scheme, BlockScheme):
            raise TypeError(f"scheme must be a preset name or a BlockScheme, got {scheme!r}")
        self.scheme = scheme
        self.order = scheme.order
        self.lambda_order = scheme.order
        self.tol = V.as_real(tol, "tol", positive=True)
        self.maxit = V.as_int(maxit, "maxit", minimum=1)
        self.theta_refresh = V.as_real(theta_refresh, "theta_refresh", lo=0.0, hi=1.0)
        self.start_substeps = V.as_int(start_substeps, "start_substeps", minimum=1)

    def params(self):
        s = self.scheme
        return {"scheme": s.name, "nodes": s.c.tolist(), "A": s.A.tolist(), "U": s.U.tolist(),
                "degree": s.degree, "rk_stable": s.rk_stable, "tol": self.tol, "maxit": self.maxit,
                "theta_refresh": self.theta_refresh, "start_substeps": self.start_substeps}

    def _tableau(self):
        """c, A, U, the predictor weights, Re/Im mu, T, T^-1 (the order block_init reads them)."""
        s = self.scheme
        mu, tm, tinv = s.diagonalization()
        mats = [s.A, s.U, s.extrapolation(), s.extrapolation(2)]
        return np.concatenate([s.c] + [np.ravel(m, order="F") for m in mats] + [mu.real, mu.imag]
                              + [np.ravel(m, order="F") for m in (tm.real, tm.imag, tinv.real, tinv.imag)])

    def kernel_options(self, model):
        return _OPTIONS.pack(stages=self.scheme.r, maxit=self.maxit, start_substeps=self.start_substeps,
                             tol=self.tol, theta_refresh=self.theta_refresh, tableau=self._tableau())

    def adaptive_options(self, model, iopt, ropt):
        """The fixed-step options, the degree p, and the error constants E (eq. (14)) after the tableau."""
        return _OPTIONS.pack(adaptive=True, stages=self.scheme.r, maxit=self.maxit,
                             start_substeps=self.start_substeps, tol=self.tol, theta_refresh=self.theta_refresh,
                             degree=self.scheme.degree,
                             tableau=[*self._tableau(), *self.scheme.error_constants()])

    def adaptive_aux(self, model):
        return {"error_estimate_q": model.n, "error_estimate_v": model.n}


def _preset_class(preset, doc):
    cls = type(f"Block_{preset}", (BlockMethod,), {
        "name": f"block_{preset}", "order": PRESETS[preset].order, "lambda_order": PRESETS[preset].order,
        "order_source": f"seed 003 section 2: {PRESETS[preset].description}; order = degree of exactness "
                        "(pyint.methods.block_coefficients.BlockScheme.order)",
        "_preset": preset, "__doc__": doc, "__module__": __name__})
    return register(cls)


BlockUniformRK = _preset_class("uniform_rk", "Block method, uniform nodes, RK-stable order-4 scheme (printed in seed 003).")
BlockUniformEq8 = _preset_class("uniform_eq8", "Block method, uniform nodes, eq. (8): order 5, not A-stable.")
BlockChebyshev = _preset_class("chebyshev", "Block method, Chebyshev nodes, eq. (8): order 5.")
BlockLegendre = _preset_class("legendre", "Block method, Gauss-Legendre nodes, eq. (8): order 5.")
