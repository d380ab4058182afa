"""The Lie-group methods: rigid bodies on (R^3 x SO(3))^nb (seed 001).

A :class:`~pyint.models.rigid_bodies.RigidBodySystem` is a model whose configuration space
is a Lie group: q = (x_i, R_i row-major) flattened (12 per body), v = V (6 per body, not
q').  Its hooks (``checked_initial_state``, ``trajectory_residuals``, ``result_views``,
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

from ...models._fortran_model import _never_called
from ...integrator import Integrator, decode, replace_samples
from ...models.rigid_bodies import RigidBodySystem, interpolated_states

#: The model id of a rigid-body system in the driver's model block (fortran/core/lie_stepper.f90).
RIGID_MODEL_ID = -1
#: The residuals the driver keeps per sample and step of a rigid-body system (fortran/core/lie_stepper.f90).
LIE_RESIDUALS = ("eps_pos", "eps_vel", "eps_acc", "orthogonality")
#: The maxima the kernels track over every step (not only the output samples): the residuals, then
#: max |E - E0|.
STEP_MAX_KEYS = LIE_RESIDUALS + ("energy_change",)
#: The names of the Lie steppers' stats array (the driver returns the per-step maxima STEP_MAX_KEYS apart).
STATS = ("newton_iterations", "jacobian_factorizations", "max_newton_iterations")


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

    def check_model(self, model):
        if not isinstance(model, RigidBodySystem):
            raise TypeError(f"{self.name} integrates rigid-body systems on (R^3 x SO(3))^n "
                            f"(pyint.models.rigid_bodies.RigidBodySystem), got {type(model).__name__}")

    def _extra(self, system, raw):
        return {}

    def kernel_model(self, model, backend):
        """The driver's model block of a rigid-body system (RIGID_MODEL_ID) and its sizes
        (nq = 12 nb, nv = 6 nb, nl = m): what the one ``integrate`` / ``integrate_batch`` of
        :class:`pyint.integrator.Integrator` pass to the driver."""
        ipar, rpar = model.fortran_params()
        args = dict(model_id=RIGID_MODEL_ID, ipar=np.ascontiguousarray(ipar, dtype=np.int32),
                    rpar=np.ascontiguousarray(rpar, dtype=np.float64), usercb=_never_called, mh=model.m, mn=0,
                    mflags=np.zeros(3, np.int32))
        return args, 12 * model.nb, model.nv, model.m

    def kernel_aux(self, model):
        n = self._naux(model)
        return {"aux": n} if n else {}

    def _driver_raw(self, model, buf, nl, istat, aux_parts=None):
        """Time-major views of the driver's outputs (one trajectory), the method's extra arrays
        (its auxiliary vector whole: ``aux``)."""
        raw = dict(t=buf["tout"], q=buf["qout"].T, v=buf["vout"].T, a=buf["aout"].T, lam=buf["lout"][:nl].T,
                   aux=buf["auxout"].T, istat=np.asarray(istat), residual=buf["resout"].T, energy=buf["eout"],
                   step_max=decode(STEP_MAX_KEYS, buf["stepmax"], reals=STEP_MAX_KEYS),
                   stats=self.decode_stats(istat, buf["stats"]))
        raw["extra"] = self._extra(model, raw)
        return raw

    def outputs_at(self, result, t_eval, backend):
        """Outputs at t_eval on the group: interpolated in the algebra and re-imposed
        (:func:`pyint.models.rigid_bodies.interpolated_states`, docs/adaptive_steps.md section 8)."""
        q, v, a, lam = interpolated_states(result.model, result.t, result.q, result.v, result.a, t_eval)
        return replace_samples(result, t_eval, q, v, a, lam, backend)

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
