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

import os
import time

import numpy as np

from ... import _control, _fortran
from ... import _validate as V
from ...models._fortran_model import _never_called
from ...integrator import _OUT, _OUT_BATCH, FIXED_STEP, Integrator, _option_arrays, decode, driver_buffers, raise_recorded
from ...models.rigid_bodies import RigidBodySystem

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
        (nq = 12 nb, nv = 6 nb, nl = m): what :meth:`pyint.integrator.Integrator.integrate`'s
        variable-step run passes to the driver."""
        ipar, rpar = model.fortran_params()
        args = dict(model_id=RIGID_MODEL_ID, ipar=np.ascontiguousarray(ipar, dtype=np.int32),
                    rpar=np.ascontiguousarray(rpar, dtype=np.float64), usercb=_never_called, mh=model.m, mn=0,
                    mflags=np.zeros(3, np.int32))
        return args, 12 * model.nb, model.nv, model.m

    def kernel_aux(self, model):
        n = self._naux(model)
        return {"aux": n} if n else {}

    def _driver_raw(self, model, buf, nl, istat):
        raw = self._raw(buf, nl, istat)
        raw["extra"] = self._extra(model, raw)
        return raw

    def _integrate_adaptive(self, model, q0, v0, t_end, t0, backend, project, raise_on_failure, rtol, atol, h0,
                            h_min, h_max, t_eval, max_steps, per_unit_step, every):
        if t_eval is not None and self.adaptive_refusal(model) is None:
            raise ValueError(f"{self.name}: t_eval is not available on a Lie group (the interpolation and "
                             "re-imposition at t_eval are written for q in R^n); the samples are the accepted steps")
        return super()._integrate_adaptive(model, q0, v0, t_end, t0, backend, project, raise_on_failure, rtol, atol,
                                           h0, h_min, h_max, t_eval, max_steps, per_unit_step, every)

    def integrate_batch(self, models, q0s, v0s, t_end, h, t0=0.0, every=1, threads=None, project=False,
                        raise_on_failure=True):
        """Many trajectories of rigid-body systems of one layout (the same bodies and joints,
        real parameters free) in one driver call, OpenMP threads across trajectories (see
        :meth:`pyint.integrator.Integrator.integrate_batch`).  q0s: one configuration per
        trajectory ((x0, R0) or the flat q), v0s (nb, 6 nb)."""
        single = not isinstance(models, (list, tuple))
        if single:
            nb = len(v0s) if np.ndim(v0s) == 2 else len(q0s)
            models = [models] * nb
        if not models:
            raise ValueError("integrate_batch needs at least one model")
        nb = len(models)
        if len(q0s) != nb or len(v0s) != nb:
            raise ValueError(f"q0s and v0s must have one entry per trajectory ({nb}), got {len(q0s)} and {len(v0s)}")
        threads = V.as_int(os.cpu_count() or 1 if threads is None else threads, "threads", minimum=1)
        for m in models:
            self.check_model(m)
        h, t0, every, nsteps = V.time_grid(h, t0, t_end, every)
        first = models[0]
        pars = [m.fortran_params() for m in models]
        for m, (ip, rp) in zip(models, pars):
            if (m.nb != first.nb or m.m != first.m or not np.array_equal(ip, pars[0][0])
                    or np.size(rp) != np.size(pars[0][1])):
                raise ValueError(f"integrate_batch needs rigid-body systems of one layout; {m.name!r} differs "
                                 f"from {first.name!r}")
        nq, nv, m = 12 * first.nb, first.nv, first.m
        q0f = np.zeros((nq, nb), order="F")
        v0f = np.zeros((nv, nb), order="F")
        for k, sysk in enumerate(models):
            q0f[:, k], v0f[:, k] = sysk.checked_initial_state(t0, q0s[k], v0s[k], project=project)
        rpar = np.asfortranarray(np.stack([np.asarray(rp, dtype=float) for _, rp in pars], axis=1))
        iopt, ropt = _option_arrays(self.kernel_options(first))
        ropt = np.asfortranarray(np.repeat(ropt[:, None], nb, axis=1))   # the real options per trajectory
        buf = driver_buffers(nq, nv, m, nsteps, every, nstats=len(self.STATS), naux=self._naux(first),
                             nres=len(LIE_RESIDUALS), nb=nb)
        cpu = time.process_time()
        with _control.kernel_run() as run:
            istat = _fortran.run_batch(self.KERNEL, RIGID_MODEL_ID, np.ascontiguousarray(pars[0][0], dtype=np.int32),
                                       rpar, nv, m, 0, np.zeros(3, np.int32), iopt, ropt, t0, h, nsteps, every,
                                       threads, q0f, v0f, *(buf[k] for k in _OUT_BATCH), FIXED_STEP,
                                       buf["hout"], buf["counts"])
        cpu = (time.process_time() - cpu) / nb
        results = []
        stopped = run.interrupted or run.lapack is not None
        for k, sysk in enumerate(models):
            raw = self._raw({key: x[..., k] for key, x in buf.items()}, m, istat[:, k])
            raw["stats"].update(batch_size=nb, threads=threads)
            raw["extra"] = self._extra(sysk, raw)
            results.append(self._make_result(sysk, raw, t0, h, cpu, "fortran", raise_on_failure and not stopped))
        if stopped:
            raise_recorded(run, results, int(istat[0, 0]), int(istat[1, 0]), t0, h)
        return results

    #: The length of the stepper's auxiliary vector per sample (system -> int).
    def _naux(self, system):
        return 0

    def _run(self, model, t0, h, nsteps, every, q0, v0, backend):
        """One trajectory: the driver with the method's stepper (``KERNEL``); q = (x_i, R_i
        row-major) per body."""
        raw = self._driver_run(model, t0, h, nsteps, every, q0, v0)
        raw["extra"] = self._extra(model, raw)
        return raw

    def _driver_run(self, system, t0, h, nsteps, every, q0, v0):
        """One call of the driver (f2py run) with the method's stepper (``KERNEL``)."""
        ipar, rpar = system.fortran_params()
        ipar = np.ascontiguousarray(ipar, dtype=np.int32)
        rpar = np.ascontiguousarray(rpar, dtype=np.float64)
        iopt, ropt = _option_arrays(self.kernel_options(system))
        nq, nv, m = 12 * system.nb, system.nv, system.m
        buf = driver_buffers(nq, nv, m, nsteps, every, nstats=len(self.STATS), naux=self._naux(system),
                             nres=len(LIE_RESIDUALS))
        istat = _fortran.run(self.KERNEL, RIGID_MODEL_ID, ipar, rpar, _never_called, nv, m, 0, np.zeros(3, np.int32),
                             iopt, ropt, t0, h, nsteps, every, np.ascontiguousarray(q0, dtype=float),
                             np.ascontiguousarray(v0, dtype=float),
                             *(buf[k] for k in _OUT))
        return self._raw(buf, m, istat)

    def _raw(self, buf, m, istat):
        """Time-major views of the driver's outputs (one trajectory)."""
        return dict(t=buf["tout"], q=buf["qout"].T, v=buf["vout"].T, a=buf["aout"].T, lam=buf["lout"][:m].T,
                    aux=buf["auxout"].T, istat=np.asarray(istat), residual=buf["resout"].T, energy=buf["eout"],
                    step_max=decode(STEP_MAX_KEYS, buf["stepmax"], reals=STEP_MAX_KEYS),
                    stats=self.decode_stats(istat, buf["stats"]))
