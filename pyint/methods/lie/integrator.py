"""The Lie-group methods: rigid bodies on (R^3 x SO(3))^nb (seed 001).

A :class:`~pyint.models.rigid_bodies.RigidBodySystem` is a model whose configuration space
is a Lie group: q = (x_i, R_i row-major) flattened (12 per body), v = V (6 per body, not
q').  Its hooks (``checked_initial_state``, ``start_violation``, ``trajectory_residuals``, ``result_views``,
``dataset_variables``) let the one :meth:`pyint.integrator.Integrator.integrate` and the one
:class:`~pyint.results.Result` serve it: ``result.x``, ``result.R``, ``result.V`` are views
of q and v, ``residual[:, 0:3]`` = |Phi|, |B V|, |B A + Bdot V|, ``extra["orthogonality"]``
= max_i |R_i^T R_i - I|_F per sample, ``extra["step_max"]`` the maxima the kernels track over
every step (eps_pos, eps_vel, eps_acc, orthogonality, energy_change).  The Lie methods are
:class:`LieIntegrator` subclasses registered in ``METHODS`` like every method; the shared
problem list ``pyint.problems.PROBLEMS`` pairs them with its Lie-group problems.
"""
from __future__ import annotations

import numpy as np

from ..._status import STATUS_ERRORS, STATUS_NEWTON_FAILED, STATUS_OK, STATUS_SINGULAR, STATUS_STEP_TOO_SMALL
from ...models._fortran_model import _never_called
from ..._dense import DENSE_LIE
from ..._docfrag import fragment
from ..._result_builder import _fail_time, decode
from ...integrator import Integrator
from ...options import TOLERANCES
from ...models.rigid_bodies import RigidBodySystem
from ...models.structured import SOLVER_NAMES, check_linear_solver

#: The model id of a rigid-body system in the driver's model block (fortran/core/lie_stepper.f90).
RIGID_MODEL_ID = -1
#: The residuals the driver keeps per sample and step of a rigid-body system (fortran/core/lie_stepper.f90).
LIE_RESIDUALS = ("eps_pos", "eps_vel", "eps_acc", "orthogonality")
#: The maxima the kernels track over every step (not only the output samples): the residuals, then
#: max |E - E0|.
STEP_MAX_KEYS = LIE_RESIDUALS + ("energy_change",)
#: The names of the Lie steppers' stats array (the driver returns the per-step maxima STEP_MAX_KEYS apart).
STATS = ("newton_iterations", "jacobian_factorizations", "max_newton_iterations", "linear_solver")

#: linear_solver of every Lie method (their Parameters, pyint/_docfrag.py)
fragment("lie_linear_solver", r"""
linear_solver : {"auto", "dense", "banded", "sparse"}, default "auto"
    The solver of Newton's linear systems: "dense" (LAPACK LU of the whole matrix) or the
    structured matrix of the joints' and bodies' blocks (fortran/core/lie_stepper.f90), solved
    by "banded" (band LU after reverse Cuthill-McKee) or "sparse" (SuiteSparse KLU); "auto":
    dense up to 60 unknowns, else the structured matrix with the solver its pattern suggests
    (as generalized-alpha's).  The choice made is in ``Result.stats["linear_solver"]``.
""")


class LieIntegrator(Integrator):
    """Base of the Lie-group family.  A subclass declares name, order, keeps
    ({"holonomic": levels}), ``KERNEL`` (its stepper of the driver, on fortran/core/lie_stepper.f90),
    ``kernel_options``, ``_naux`` and ``_extra(system, raw)`` naming its auxiliary arrays."""

    ADAPTIVE_REFUSAL = ("it has no local error estimate (docs/adaptive_steps.md section 8: of the Lie-group "
                        "steppers only the stabilized generalized-alpha, lie_genalpha_s2, has one)")
    NRES = len(LIE_RESIDUALS)
    supports = frozenset({"holonomic"})
    backends = ("auto", "fortran")
    spaces = (RigidBodySystem.configuration_space,)
    invariants = frozenset({"orthogonality"})
    STATS = STATS
    #: Outputs at t_eval on the group, inside the run's one call: interpolated in the algebra and
    #: re-imposed on the run's kept joint rows (fortran/core/dense_output.f90: lie_dense_outputs,
    #: docs/adaptive_steps.md section 8.4).
    DENSE_MODE = DENSE_LIE

    def check_model(self, model):
        if not isinstance(model, RigidBodySystem):
            raise TypeError(f"{self.name} integrates rigid-body systems on (R^3 x SO(3))^n "
                            f"(pyint.models.rigid_bodies.RigidBodySystem), got {type(model).__name__}")

    def _extra(self, system, raw):
        return {}

    def _set_linear_solver(self, linear_solver):
        check_linear_solver(linear_solver)
        self.linear_solver = linear_solver

    def _solver_params(self):
        """linear_solver among the params when chosen (the datasets of default runs stay as they were)."""
        return {} if self.linear_solver == "auto" else {"linear_solver": self.linear_solver}

    def decode_stats(self, istat, stats):
        out = super().decode_stats(istat, stats)
        out["linear_solver"] = SOLVER_NAMES.get(out["linear_solver"], "none")
        return out

    def kernel_model(self, model, backend):
        """The driver's model block of a rigid-body system (RIGID_MODEL_ID) and its sizes
        (nq = 12 nb, nv = 6 nb, nl = m): what the one ``integrate`` / ``integrate_batch`` of
        :class:`pyint.integrator.Integrator` pass to the driver."""
        ipar, rpar = model.fortran_params()
        args = dict(model_id=RIGID_MODEL_ID, ipar=np.ascontiguousarray(ipar, dtype=np.int32),
                    rpar=np.ascontiguousarray(rpar, dtype=np.float64), usercb=_never_called, mh=model.m, mn=0,
                    mflags=np.zeros(3, np.int32))
        return args, 12 * model.nb, model.nv, model.m

    def _make_result(self, model, raw, t0, h, cpu, backend="auto", raise_on_failure=True, run=None):
        """:meth:`pyint.integrator.Integrator._make_result`, with a Newton failure, a singular matrix
        or (variable steps) a step that fell below h_min near a singular configuration of the joints
        said to be one (:func:`singular_note`)."""
        result = super()._make_result(model, raw, t0, h, cpu, backend, False, run)
        status, steps_done = int(raw["istat"][0]), int(raw["istat"][1])
        if status in (STATUS_NEWTON_FAILED, STATUS_SINGULAR, STATUS_STEP_TOO_SMALL) and len(result.t):
            # the failed step's end; of a variable-step run: the last accepted step's span further
            t_fail = _fail_time(t0, h, steps_done) + (float(h[steps_done - 1]) if np.ndim(h) and steps_done else 0.0)
            result.message += singular_note(model, result, t_fail)
        if raise_on_failure and status != STATUS_OK:
            t_fail = _fail_time(t0, h, steps_done)
            raise STATUS_ERRORS.get(status, RuntimeError)(result.message, result=result, step=steps_done + 1,
                                                           time=t_fail)
        return result

    def kernel_aux(self, model):
        n = self._naux(model)
        return {"aux": n} if n else {}

    def _driver_raw(self, model, buf, nl, istat, aux_parts=None):
        """Time-major views of the driver's outputs (one trajectory), the method's extra arrays
        (its auxiliary vector whole: ``aux``)."""
        raw = dict(t=buf["tout"], q=buf["qout"].T, v=buf["vout"].T, a=buf["aout"].T, lam=buf["lout"][:nl].T,
                   aux=buf["auxout"].T, istat=np.asarray(istat), residual=buf["resout"].T, energy=buf["eout"],
                   step_max=decode(STEP_MAX_KEYS, buf["stepmax"], reals=STEP_MAX_KEYS),
                   stats=self.decode_stats(istat, buf["stats"]),
                   redundant=np.flatnonzero(buf["red"][:nl]))    # joint rows dropped as redundant
        raw["extra"] = self._extra(model, raw)
        return raw

    def _batch_inputs(self, models, q0s, v0s):
        """q0s: one configuration per trajectory ((x0, R0) or the flat q), v0s (nb, 6 nb);
        one model (every trajectory) or one per trajectory (rigid-body systems of one layout)."""
        single = not isinstance(models, (list, tuple))
        if single:
            nb = len(v0s) if np.ndim(v0s) == 2 else len(q0s)
            models = [models] * nb
        if not models:
            raise ValueError("integrate_batch needs at least one model")
        nb = len(models)
        if len(q0s) != nb or len(v0s) != nb:
            raise ValueError(f"q0s and v0s must have one entry per trajectory ({nb}), got {len(q0s)} and {len(v0s)}")
        return list(models), q0s, v0s

    def _batch_runs_in_threads(self, model):
        return True     # a rigid-body system's items are Fortran (fortran/core/rigid_body.f90)

    #: The length of the stepper's auxiliary vector per sample (system -> int).
    def _naux(self, system):
        return 0


#: singular_note's threshold on sigma_min / sigma_max of the kept rows of B: the four-bar's crossing
#: of its singular position at h = 1e-3 brings it to 2e-4 ... 1e-3 (tests/test_lie_redundant.py); a
#: regular configuration of it stays above 0.03 outside |theta| < 0.1.  The Lie steppers' Newton
#: tests the same (seam/seam.toml: lie_near_singular).
NEAR_SINGULAR = TOLERANCES["lie_near_singular"]


def singular_note(system, result, t_fail):
    """A sentence for the message of a step that failed (Newton, a singular matrix, h_min) near a singular
    configuration of the joints, "" elsewhere: sigma_min / sigma_max of B's kept rows (every row but
    ``result.redundant``) along the last sample's motion q o exp(tau V), tau from 0 to the failed
    step's end, below :data:`NEAR_SINGULAR`.  There the rank of B drops (the mechanism's mobility
    jumps), the Newton matrix of a step near it is ill conditioned, and its iteration stalls."""
    keep = np.setdiff1d(np.arange(system.m), result.redundant)
    if not len(keep):
        return ""
    x, rot = system.unpack(result.q[-1])
    vel = result.v[-1]
    best, at = np.inf, result.t[-1]
    for tau in np.linspace(0.0, max(t_fail - result.t[-1], 0.0), 41):
        _, r = system.advance(x, rot, tau * vel)
        sv = np.linalg.svd(system.bmat(r)[keep], compute_uv=False)
        if sv[-1] / sv[0] < best:
            best, at = sv[-1] / sv[0], result.t[-1] + tau
    if not best < NEAR_SINGULAR:
        return ""
    return (f"; the step is near a singular configuration of the joints: the smallest singular value of the "
            f"{len(keep)} independent rows of B falls to {best:.1e} of the largest near t = {at:.6g} (B of rank "
            f"{len(keep)} loses rank at the singular position, where the mechanism's mobility jumps), and the "
            "Newton matrix of a step that ends near it is ill conditioned; steps that end farther from it (another "
            "fixed h) may pass it")
