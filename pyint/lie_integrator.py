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

from .integrator import Integrator, decode, kernel_stats, n_samples
from . import _validate as V
from .models.rigid_bodies import RigidBodySystem

#: The maxima the kernels track over every step (not only the output samples).
STEP_MAX_KEYS = ("eps_pos", "eps_vel", "eps_acc", "orthogonality", "energy_change")
#: The names of the Lie kernels' stats array (fortran/api/api_lie_backward.f90, api_lie_genalpha.f90):
#: these counts, then the per-step maxima STEP_MAX_KEYS.
STATS = ("newton_iterations", "jacobian_factorizations", "max_newton_iterations")


def lie_output_buffers(nb, m, nsteps, every, naux):
    """Fortran-ordered output arrays for n_samples(nsteps, every) samples."""
    nout = n_samples(nsteps, every)
    nv = 6 * nb
    V.check_output_size(nout, 1 + 12 * nb + 2 * nv + max(m, 1) + naux, nsteps, every)
    f = dict(order="F")
    return dict(tout=np.zeros(nout), xout=np.zeros((3, nb, nout), **f),
                rout=np.zeros((3, 3, nb, nout), **f), vout=np.zeros((nv, nout), **f),
                aout=np.zeros((nv, nout), **f), lout=np.zeros((max(m, 1), nout), **f),
                auxout=np.zeros((naux, nout), **f))


def lie_raw_result(buf, m, istat, stats):
    """Time-major views of the output buffers."""
    return dict(t=buf["tout"], x=np.transpose(buf["xout"], (2, 1, 0)),
                R=np.transpose(buf["rout"], (3, 2, 0, 1)), v=buf["vout"].T, a=buf["aout"].T,
                lam=buf["lout"][:m].T, aux=buf["auxout"].T, istat=np.asarray(istat),
                step_max=decode(STEP_MAX_KEYS, stats[len(STATS):], reals=STEP_MAX_KEYS),
                stats=kernel_stats(STATS, istat, stats[:len(STATS)]))


class LieIntegrator(Integrator):
    """Base of the Lie-group family.  A subclass declares name, order, keeps
    ({"holonomic": levels}), implements ``_lie_run(system, t0, h, nsteps, every, x0, R0, V0)``
    (one Fortran call through :meth:`_call_kernel`) and ``_extra(system, raw)`` naming its
    auxiliary arrays."""

    supports = frozenset({"holonomic"})
    backends = ("auto", "fortran")
    spaces = (RigidBodySystem.configuration_space,)
    invariants = frozenset({"orthogonality"})

    def check_model(self, model):
        if not isinstance(model, RigidBodySystem):
            raise TypeError(f"{self.name} integrates rigid-body systems on (R^3 x SO(3))^n "
                            f"(pyint.models.rigid_bodies.RigidBodySystem), got {type(model).__name__}")

    def _extra(self, system, raw):
        return {}

    def _run(self, model, t0, h, nsteps, every, q0, v0, backend):
        x0, r0 = model.unpack(q0)
        raw = self._lie_run(model, t0, h, nsteps, every, x0, r0, v0)
        nt = len(raw["t"])
        raw["q"] = np.concatenate([raw["x"], raw["R"].reshape(nt, model.nb, 9)], axis=2).reshape(nt, 12 * model.nb)
        raw["extra"] = self._extra(model, raw)
        return raw

    @staticmethod
    def _call_kernel(kernel, options, naux, system, t0, h, nsteps, every, x0, r0, v0):
        """One call of a Lie-group f2py driver: kernel(ipar, rpar, *options, t0, h, nsteps,
        every, x0, r0, v0, outputs...); returns :func:`lie_raw_result`."""
        ipar, rpar = system.fortran_params()
        buf = lie_output_buffers(system.nb, system.m, nsteps, every, naux)
        istat, stats = kernel(
            ipar, rpar, *options, t0, h, nsteps, every,
            np.asfortranarray(np.asarray(x0, dtype=float).T),
            np.asfortranarray(np.transpose(np.asarray(r0, dtype=float), (1, 2, 0))),
            np.ascontiguousarray(v0, dtype=float), buf["tout"], buf["xout"], buf["rout"],
            buf["vout"], buf["aout"], buf["lout"], buf["auxout"])
        return lie_raw_result(buf, system.m, istat, stats)
