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

import os
import time

import numpy as np

from .. import _control, _fortran
from .. import _validate as V
from ..models._fortran_model import model_args
from ..integrator import (Integrator, decode, kernel_stats, n_samples, output_buffers, raise_recorded, raw_result,
                          register)
from ..models.structured import LINEAR_SOLVERS, SOLVER_NAMES, check_linear_solver, consistent_acceleration


#: The order of the constants fortran/api/api_genalpha.f90's alpha_parameters returns.
ALPHA_PARAMETER_NAMES = ("alpha_m", "alpha_f", "alpha", "beta", "gamma")


def alpha_parameters(rho_inf):
    """alpha_m, alpha_f, alpha, beta, gamma from rho_inf (seed 000 = Chung-Hulbert).

    alpha_m = (2 rho - 1)/(rho + 1), alpha_f = rho/(rho + 1), alpha = alpha_m - alpha_f,
    beta = (1 - alpha)^2 / 4, gamma = 1/2 - alpha: derived once, in Fortran (alpha_params of
    fortran/genalpha.f90, the function the genalpha and lie_genalpha kernels use).
    """
    rho = V.as_real(rho_inf, "rho_inf", lo=0.0, hi=1.0)
    return decode(ALPHA_PARAMETER_NAMES, _fortran.alpha_parameters(rho), reals=ALPHA_PARAMETER_NAMES)


# The seed's printed values for rho_inf = 3/7, asserted where the parameters are built.
_P = alpha_parameters(3 / 7)
assert np.allclose([_P["alpha_m"], _P["alpha_f"], _P["alpha"], _P["beta"], _P["gamma"]],
                   [-0.1, 0.3, -0.4, 0.49, 0.9], rtol=0, atol=1e-15), _P
del _P

_MASS_MODES = {"exact": 0, "predictor": 1}
_FORMULATIONS = {"paper": 0, "arnold_bruls": 1}
_START_MODES = {"consistent": 0, "paper": 1}


#: The names of alpha_run's and alpha_batch's stats array, in its order (fortran/api/api_genalpha.f90).
STATS = ("newton_iterations", "jacobian_factorizations", "max_newton_iterations", "startup_iterations",
         "jacobian_reuses", "linear_solver", "band_lower", "band_upper")


def _stats(istat, st):
    """The statistics dict of one trajectory from the kernel's istat and stats arrays."""
    out = kernel_stats(STATS, istat, st)
    out["linear_solver"] = SOLVER_NAMES.get(out["linear_solver"], "none")
    return out


class _AlphaFamily(Integrator):
    order = 2
    order_source = ("second order in q and v with gamma = 1/2 - alpha_m + alpha_f (Chung, Hulbert 1993, "
                    "J. Appl. Mech. 60); on constrained systems, lam included: Arnold, Bruls 2007, "
                    "Multibody Syst. Dyn. 18; seed 000 sections 2-3")
    _variant = 0

    def __init__(self, rho_inf=0.9, formulation="arnold_bruls", mass_update="exact", start="consistent",
                 tol=1e-10, maxit=25, linear_solver="auto", jacobian_reuse=True):
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
        Newton's method, a new matrix every iteration).
        """
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
        if not isinstance(jacobian_reuse, (bool, np.bool_)):
            raise TypeError(f"jacobian_reuse must be True or False, got {jacobian_reuse!r}")
        self.linear_solver = linear_solver
        self.jacobian_reuse = bool(jacobian_reuse)

    def params(self):
        p = {"rho_inf": self.rho_inf, "formulation": self.formulation, "mass_update": self.mass_update, "start": self.start,
             "tol": self.tol, "maxit": self.maxit, "linear_solver": self.linear_solver,
             "jacobian_reuse": self.jacobian_reuse}
        p.update(alpha_parameters(self.rho_inf))
        return p

    def _run(self, model, t0, h, nsteps, every, q0, v0, backend):
        args = model_args(model, backend)
        a0, lh, ln = consistent_acceleration(model, t0, q0, v0, backend)
        lam0 = np.concatenate([lh, ln])
        nl = lam0.size
        buf = output_buffers(model.n, nl, nsteps, every)
        istat, stats = _fortran.alpha_run(
            args["model_id"], args["ipar"], args["rpar"], args["usercb"], args["mh"], args["mn"],
            args["mflags"], self._variant, _FORMULATIONS[self.formulation], self.rho_inf,
            _MASS_MODES[self.mass_update],
            _START_MODES[self.start], self.tol, self.maxit, t0, h, nsteps, every,
            q0, v0, np.ascontiguousarray(a0, dtype=float),
            np.ascontiguousarray(lam0 if nl else np.zeros(1), dtype=float),
            buf["tout"], buf["qout"], buf["vout"], buf["aout"], buf["lout"],
            solver=LINEAR_SOLVERS[self.linear_solver], reuse=int(self.jacobian_reuse))
        return raw_result(buf, nl, istat, _stats(istat, stats))

    def integrate_batch(self, models, q0s, v0s, t_end, h, t0=0.0, every=1, threads=None, project=False,
                        raise_on_failure=True):
        """Integrate many trajectories of one built-in model in one Fortran call.

        models: one model (every trajectory uses it) or a sequence of models of
        the same built-in kind and sizes that differ only in their real
        parameters (masses, lengths, ...: a parameter sweep).  q0s, v0s:
        arrays (nb, n), one initial state per trajectory (or (n,) when a list
        of models is given: the same start for all).  threads: OpenMP threads
        across trajectories (default: every CPU).  Returns a list of Result,
        one per trajectory, identical to what :meth:`integrate` returns for it
        (cpu_time is the batch's CPU time divided by nb).  A model without a
        Fortran twin cannot run in threads (its items are Python calls): its
        trajectories run one after another through :meth:`integrate`.
        """
        models, q0s, v0s = _batch_inputs(models, q0s, v0s)
        nb = len(models)
        if threads is None:
            threads = os.cpu_count() or 1
        threads = V.as_int(threads, "threads", minimum=1)
        first = models[0]
        if first.fortran_name is None:
            return [self.integrate(m, q, v, t_end, h, t0=t0, every=every, project=project,
                                   raise_on_failure=raise_on_failure) for m, q, v in zip(models, q0s, v0s)]
        for m in models:
            self.check_model(m)
        h = V.as_real(h, "h", positive=True)
        t0 = V.as_real(t0, "t0")
        t_end = V.as_real(t_end, "t_end")
        every = V.as_every(every)
        nsteps = V.step_count(t0, t_end, h)
        args = [model_args(m, "fortran") for m in models]
        for m, a in zip(models, args):
            if (type(m) is not type(first) or m.n != first.n or m.n_hol != first.n_hol
                    or m.n_nonhol != first.n_nonhol or not np.array_equal(a["ipar"], args[0]["ipar"])
                    or a["rpar"].size != args[0]["rpar"].size):
                raise ValueError(f"integrate_batch needs models of one kind and size; {m.name!r} differs "
                                 f"from {first.name!r}")
        n, nl = first.n, max(first.n_hol + first.n_nonhol, 1)
        a0s = np.zeros((n, nb), order="F")
        lam0s = np.zeros((nl, nb), order="F")
        q0f = np.zeros((n, nb), order="F")
        v0f = np.zeros((n, nb), order="F")
        for k, m in enumerate(models):
            q0 = V.as_vector(q0s[k], n, f"q0s[{k}]")
            v0 = V.as_vector(v0s[k], n, f"v0s[{k}]")
            q0, v0 = V.consistent_initial_state(m, t0, q0, v0, project=project)
            a0, lh, ln = consistent_acceleration(m, t0, q0, v0, "fortran")
            q0f[:, k], v0f[:, k], a0s[:, k] = q0, v0, a0
            lam0s[:lh.size + ln.size, k] = np.concatenate([lh, ln])
        rpar = np.asfortranarray(np.stack([a["rpar"] for a in args], axis=1))
        nout = n_samples(nsteps, every)
        V.check_output_size(nout, nb * (1 + 3 * n + nl), nsteps, every)
        tout = np.zeros((nout, nb), order="F")
        qout, vout, aout = (np.zeros((n, nout, nb), order="F") for _ in range(3))
        lout = np.zeros((nl, nout, nb), order="F")
        a = args[0]
        cpu = time.process_time()
        with _control.kernel_run() as run:
            istat, stats = _fortran.alpha_batch(
                a["model_id"], a["ipar"], rpar, a["mh"], a["mn"], a["mflags"], self._variant,
                _FORMULATIONS[self.formulation], self.rho_inf,
                _MASS_MODES[self.mass_update], _START_MODES[self.start], self.tol, self.maxit, t0, h, nsteps, every,
                LINEAR_SOLVERS[self.linear_solver], int(self.jacobian_reuse), threads, q0f, v0f, a0s, lam0s,
                tout, qout, vout, aout, lout)
        cpu = (time.process_time() - cpu) / nb
        results = []
        nlam = first.n_hol + first.n_nonhol
        stopped = run.interrupted or run.lapack is not None   # raised below with every result
        for k, m in enumerate(models):
            st = _stats(istat[:, k], stats[:, k])
            st.update(batch_size=nb, threads=threads)
            raw = dict(t=tout[:, k], q=qout[:, :, k].T, v=vout[:, :, k].T, a=aout[:, :, k].T,
                       lam=lout[:nlam, :, k].T, istat=istat[:, k], stats=st)
            results.append(self._make_result(m, raw, t0, h, cpu, "fortran", raise_on_failure and not stopped))
        if stopped:
            raise_recorded(run, results, int(istat[0, 0]), int(istat[1, 0]), t0, h)
        return results


def _batch_inputs(models, q0s, v0s):
    """(list of models, q0s, v0s) with one model and one row per trajectory."""
    single = not isinstance(models, (list, tuple))
    if not single and not models:
        raise ValueError("integrate_batch needs at least one model")
    q0s = np.asarray(q0s, dtype=float)
    v0s = np.asarray(v0s, dtype=float)
    if q0s.ndim not in (1, 2) or v0s.ndim not in (1, 2):
        raise ValueError(f"q0s and v0s must have shape (nb, n) or (n,), got {q0s.shape} and {v0s.shape}")
    if q0s.ndim == 2 and q0s.shape[0] == 0:
        raise ValueError("integrate_batch needs at least one trajectory")
    if not single:
        nb = len(models)
    else:
        nb = q0s.shape[0] if q0s.ndim == 2 else v0s.shape[0] if v0s.ndim == 2 else 1
        models = [models] * nb
    q0s = np.broadcast_to(q0s, (nb, q0s.shape[-1])) if q0s.ndim == 1 else q0s
    v0s = np.broadcast_to(v0s, (nb, v0s.shape[-1])) if v0s.ndim == 1 else v0s
    if q0s.shape[0] != nb or v0s.shape[0] != nb:
        raise ValueError(f"q0s and v0s must have one row per trajectory ({nb}), got {q0s.shape} and {v0s.shape}")
    return list(models), q0s, v0s


@register
class GeneralizedAlpha(_AlphaFamily):
    """Generalized-alpha for holonomic (index 3) and nonholonomic (index 2) systems."""

    name = "genalpha"
    lambda_order = 2
    supports = frozenset({"holonomic", "nonholonomic"})
    keeps = {"holonomic": frozenset({"position"}), "nonholonomic": frozenset({"velocity"})}
    _variant = 0


@register
class AlphaRattle(_AlphaFamily):
    """alpha-RATTLE for nonholonomic systems (seed 000 §3)."""

    name = "alpha_rattle"
    supports = frozenset({"nonholonomic"})
    keeps = {"nonholonomic": frozenset({"velocity"})}
    _variant = 1
