"""The Lie-group integrator family: rigid bodies on (R^3 x SO(3))^nb.

The configuration (x_i, R_i) of a :class:`~pyint.models.rigid_bodies.RigidBodySystem`
is not a vector with additive updates, so these methods do not consume
vector :class:`~pyint.models.Model` objects: :class:`LieIntegrator` is an
:class:`~pyint.integrator.Integrator` whose ``integrate`` takes a rigid-body
system and returns a :class:`LieResult`.  They are registered in
``pyint.integrator.METHODS`` like every method, with ``supports =
{"lie_group"}``, so the vector problem list never pairs with them; their
shared tests run on ``pyint.problems.LIE_PROBLEMS`` (tests/test_methods.py,
Lie-group section).

A LieResult is a :class:`~pyint.results.Result` with
``q`` = (x_i, R_i row-major) flattened (12 per body), ``v`` = V (6 per body),
``a`` = the method's acceleration, ``lam`` the multipliers, and
``residual[:, 0:3]`` = |Phi|, |B V|, |B A + Bdot V| (max norms; the
nonholonomic columns are zero).  ``extra`` holds x (nt, nb, 3), R
(nt, nb, 3, 3), the orthogonality error max_i |R_i^T R_i - I|_F per sample
and the method's auxiliary arrays.
"""
from __future__ import annotations

import os
import time

import numpy as np

from ... import _control, _fortran
from ... import _validate as V
from ..._status import STATUS_NAMES
from ...models._fortran_model import _never_called
from ...integrator import (_OUT, Integrator, _option_arrays, decode, driver_buffers, kernel_stats, n_samples,
                           raise_recorded, report_failure)
from ...models.rigid_bodies import RigidBodySystem
from ...results import CONSTRAINT_LEVELS, Result

#: Tolerance for "R is a rotation" on input.
ROTATION_TOL = 1e-10

#: The model id of a rigid-body system in the driver's model block (fortran/core/lie_stepper.f90).
RIGID_MODEL_ID = -1
#: The residuals the driver keeps per sample and step of a rigid-body system (fortran/core/lie_stepper.f90).
LIE_RESIDUALS = ("eps_pos", "eps_vel", "eps_acc", "orthogonality")
#: The maxima the kernels track over every step (not only the output samples): the residuals, then
#: max |E - E0|.
STEP_MAX_KEYS = LIE_RESIDUALS + ("energy_change",)
#: The names of the Lie steppers' stats array (the driver returns the per-step maxima STEP_MAX_KEYS apart;
#: fortran/api/api_lie_backward.f90, not yet a stepper, appends them to these counts).
STATS = ("newton_iterations", "jacobian_factorizations", "max_newton_iterations")


def lie_residuals(system, x, rot, v, a):
    """Per-sample |Phi|, |B V|, |B A + Bdot V|, max_i |R_i^T R_i - I|_F and energy (Fortran).

    x (nt, nb, 3), rot (nt, nb, 3, 3), v and a (nt, 6 nb).  Returns (res (nt, 4), energy (nt,)).
    """
    ipar, rpar = system.fortran_params()
    nt = len(x)
    res = np.zeros((4, nt), order="F")
    energy = np.zeros(nt)
    if nt:
        ierr = _fortran.rigid_residuals(
            ipar, rpar, np.asfortranarray(np.transpose(x, (2, 1, 0))),
            np.asfortranarray(np.transpose(rot, (2, 3, 1, 0))),
            np.asfortranarray(np.asarray(v, dtype=float).T), np.asfortranarray(np.asarray(a, dtype=float).T),
            res, energy)
        if ierr != 0:
            raise RuntimeError(f"rigid_residuals failed (ierr={ierr})")
    return res.T.copy(), energy


def as_configuration(system, q0):
    """(x (nb, 3), R (nb, 3, 3)) from a tuple (x, R) or the flat q (12 per body); checked."""
    nb = system.nb
    if isinstance(q0, tuple) and len(q0) == 2:
        x = V.as_vector(np.ravel(np.asarray(q0[0], dtype=float)), 3 * nb, "x0").reshape(nb, 3)
        rot = np.asarray(q0[1])
        if rot.shape not in ((nb, 3, 3),) + (((3, 3),) if nb == 1 else ()):
            raise ValueError(f"R0 must have shape ({nb}, 3, 3), got {rot.shape}")
        rot = V.as_vector(rot.ravel(), 9 * nb, "R0").reshape(nb, 3, 3)
    else:
        x, rot = system.unpack(V.as_vector(q0, 12 * nb, "q0"))
    for i in range(nb):
        err = np.linalg.norm(rot[i].T @ rot[i] - np.eye(3))
        if err > ROTATION_TOL or np.linalg.det(rot[i]) <= 0:
            raise ValueError(f"R0 of body {i} is not a rotation matrix: |R^T R - I|_F = {err:.3e}, "
                             f"det = {np.linalg.det(rot[i]):.6g}")
    return x, rot


def consistent_rigid_state(system, x, rot, v, project=False, tol=V.CONSISTENCY_TOL, maxit=50):
    """Check (or with project=True enforce) Phi = 0 and B V = 0; raise ValueError naming the level.

    The projections are M-orthogonal: Gauss-Newton steps
    q <- q o exp(-M^-1 B^T (B M^-1 B^T)^-1 Phi) and V <- V - M^-1 B^T (B M^-1 B^T)^-1 B V.
    """
    if system.m == 0:
        return x, rot, v
    minv = np.linalg.inv(system.mass_matrix())

    def correction(r, resid):
        bm = system.bmat(r)
        mbt = minv @ bm.T
        return mbt @ np.linalg.solve(bm @ mbt, resid)

    bm = system.bmat(rot)
    s = np.linalg.svd(bm, compute_uv=False)
    if s[-1] <= 1e-12 * max(1.0, s[0]) or bm.shape[0] > bm.shape[1]:
        raise ValueError(f"the constraint Jacobian B is singular at the initial configuration "
                         f"(smallest singular value {s[-1]:.3e}): redundant or degenerate joints")
    scale_q = max(1.0, float(np.max(np.abs(x))))
    err = float(np.max(np.abs(system.phi(x, rot))))
    if err > tol * scale_q:
        if not project:
            raise ValueError(f"the initial configuration violates the joints: max|Phi| = {err:.3e} "
                             f"> {tol * scale_q:.1e}; pass project=True to project it onto Phi = 0")
        for _ in range(maxit):
            phi = system.phi(x, rot)
            if np.max(np.abs(phi)) <= 1e-14 * scale_q:
                break
            x, rot = system.advance(x, rot, -correction(rot, phi))
        else:
            raise ValueError(f"could not project the initial configuration onto Phi = 0 "
                             f"(|Phi| = {np.max(np.abs(system.phi(x, rot))):.3e})")
    scale_v = max(1.0, float(np.max(np.abs(v))))
    err = float(np.max(np.abs(system.bmat(rot) @ v)))
    if err > tol * scale_v:
        if not project:
            raise ValueError(f"the initial velocity violates the joints: max|B V| = {err:.3e} "
                             f"> {tol * scale_v:.1e}; pass project=True to project it onto B V = 0")
        v = v - correction(rot, system.bmat(rot) @ v)
    return x, rot, v


class LieResult(Result):
    """A :class:`~pyint.results.Result` on (R^3 x SO(3))^nb (see the module docstring).

    The run metrics (eps_pos, eps_vel, eps_acc, energy_drift, orthogonality)
    are maxima over every step, tracked in Fortran (``extra["step_max"]``),
    not only over the output samples: a transient between samples counts."""

    @property
    def x(self):
        return self.extra["x"]

    @property
    def R(self):
        return self.extra["R"]

    @property
    def energy_drift(self):
        drift = super().energy_drift
        if len(self.energy):
            drift = max(drift, self._step_max("energy_change") / max(abs(self.energy[0]), np.finfo(float).tiny))
        return drift

    @property
    def orthogonality(self):
        """max over the run of max_i |R_i^T R_i - I|_F."""
        return max(float(np.max(self.extra["orthogonality"], initial=0.0)), self._step_max("orthogonality"))

    def summary(self):
        return super().summary() + f", orth={self.orthogonality:.2e}"

    def to_xarray(self):
        """Dataset with dimensions time, body, axis, row/col (of R), velocity_component,
        multiplier, constraint_level."""
        import json

        import xarray as xr

        system = self.model
        nb = system.nb
        comps = ["vx", "vy", "vz", "Omega_x", "Omega_y", "Omega_z"]
        nt = len(self.t)
        ds = xr.Dataset(coords={
            "time": ("time", self.t, {"units": "s", "long_name": "time"}),
            "body": ("body", np.arange(1, nb + 1), {"long_name": "body number"}),
            "axis": ("axis", ["x", "y", "z"], {"long_name": "world axis"}),
            "row": ("row", [1, 2, 3], {"long_name": "row of the rotation matrix"}),
            "col": ("col", [1, 2, 3], {"long_name": "column of the rotation matrix"}),
            "velocity_component": ("velocity_component", comps,
                                   {"long_name": "body velocity component (v world, Omega body)"}),
            "multiplier": ("multiplier", [f"hol{i}" for i in range(self.lam.shape[1])],
                           {"long_name": "Lagrange multiplier"}),
            "constraint_level": ("constraint_level", list(CONSTRAINT_LEVELS),
                                 {"long_name": "constraint level"}),
        })
        ds["x"] = (("time", "body", "axis"), self.x, {"long_name": "centre of mass", "units": "m"})
        ds["R"] = (("time", "body", "row", "col"), self.R,
                   {"long_name": "rotation matrix (body to world)", "units": "1"})
        ds["V"] = (("time", "body", "velocity_component"), self.v.reshape(nt, nb, 6),
                   {"long_name": "body velocity (v, Omega)", "units": "m/s, rad/s"})
        ds["A"] = (("time", "body", "velocity_component"), self.a.reshape(nt, nb, 6),
                   {"long_name": "acceleration variable of the method", "units": "m/s^2, rad/s^2"})
        ds["lam"] = (("time", "multiplier"), self.lam, {"long_name": "Lagrange multipliers", "units": "N"})
        ds["residual"] = (("time", "constraint_level"), self.level_residuals,
                          {"long_name": "constraint residual |Phi|, |B V|, |B A + Bdot V| (max norm)",
                           "units": "m, m/s, m/s^2"})
        ds["orthogonality"] = ("time", self.extra["orthogonality"],
                               {"long_name": "max_i |R_i^T R_i - I|_F", "units": "1"})
        ds["energy"] = ("time", self.energy, {"long_name": "total energy", "units": "J"})
        scalars = {
            "eps_pos": (self.eps_pos, "max |Phi| over the run", "m"),
            "eps_vel": (self.eps_vel, "max |B V| over the run", "m/s"),
            "eps_acc": (self.eps_acc, "max |B A + Bdot V| over the run", "m/s^2"),
            "energy_drift": (self.energy_drift, "max |H - H0| / |H0|", "1"),
            "orthogonality_max": (self.orthogonality, "max |R^T R - I|_F over the run", "1"),
            "cpu_time": (self.cpu_time, "CPU time of the integration", "s"),
        }
        for key, (val, long, unit) in scalars.items():
            ds[key] = ((), val, {"long_name": long, "units": unit})
        for key, val in self.stats.items():
            ds[key] = ((), val, {"long_name": key.replace("_", " "), "units": "1"})
        ds.attrs.update({
            "method": self.method, "model": system.name, "h": self.h, "status": self.status,
            "message": self.message,
            "method_params": json.dumps(self.params, sort_keys=True, default=str),
            "model_params": json.dumps(system.describe(), sort_keys=True, default=str),
        })
        return ds


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
    ({"holonomic": levels}), and implements ``_run(system, t0, h, nsteps,
    every, x0, R0, V0)`` (one Fortran call through :meth:`_call_kernel`),
    and ``_extra(system, raw)`` naming its auxiliary arrays."""

    supports = frozenset({"lie_group"})
    invariants = frozenset({"orthogonality"})
    STATS = STATS

    def check_model(self, model):
        if not isinstance(model, RigidBodySystem):
            raise TypeError(f"{self.name} integrates rigid-body systems on (R^3 x SO(3))^n "
                            f"(pyint.models.rigid_bodies.RigidBodySystem), got {type(model).__name__}")

    def _extra(self, system, raw):
        return {}

    def integrate(self, model, q0, v0, t_end, h, t0=0.0, every=1, backend="auto", project=False,
                  raise_on_failure=True):
        """Integrate the rigid-body system ``model`` from (t0, q0, v0) to t_end with step h.

        q0: (x0, R0) with x0 (nb, 3) and R0 (nb, 3, 3), or the flat q of
        :meth:`RigidBodySystem.pack`; v0: V (6 per body).  backend: only
        "auto"/"fortran" (the whole loop always runs in Fortran).  Otherwise as
        :meth:`pyint.integrator.Integrator.integrate`.
        """
        self.check_model(model)
        if backend not in ("auto", "fortran"):
            raise ValueError(f"{self.name}: backend must be 'auto' or 'fortran' (rigid-body "
                             f"systems always run in Fortran), got {backend!r}")
        h, t0, every, nsteps = V.time_grid(h, t0, t_end, every)
        x0, r0, v0 = self._lie_initial_state(model, q0, v0, project, "v0")

        cpu = time.process_time()
        with _control.kernel_run() as run:
            raw = self._run(model, t0, h, nsteps, every, x0, r0, v0)
        cpu = time.process_time() - cpu
        return self._make_lie_result(model, raw, t0, h, cpu, raise_on_failure, run)

    @staticmethod
    def _lie_initial_state(model, q0, v0, project, vname):
        x0, r0 = as_configuration(model, q0)
        v0 = V.as_vector(v0, model.nv, vname)
        return consistent_rigid_state(model, x0, r0, v0, project=project)

    def _make_lie_result(self, model, raw, t0, h, cpu, raise_on_failure=True, run=None):
        """The LieResult of one trajectory from the raw kernel output (see ``_run``)."""
        status, steps_done, nsamples = (int(k) for k in raw["istat"])
        sl = slice(0, nsamples)
        t, v, a, lam = (raw[k][sl] for k in ("t", "v", "a", "lam"))
        if "q" in raw:    # a stepper of the driver: q = (x_i, R_i row-major), residuals per sample
            q = raw["q"][sl]
            qb = q.reshape(len(t), model.nb, 12)
            x, rot = qb[:, :, :3].copy(), qb[:, :, 3:].reshape(len(t), model.nb, 3, 3).copy()
            res, energy = raw["residual"][sl], raw["energy"][sl]
        else:
            x, rot = raw["x"][sl], raw["R"][sl]
            res, energy = lie_residuals(model, x, rot, v, a)
            q = np.concatenate([x, rot.reshape(len(t), model.nb, 9)], axis=2).reshape(len(t), 12 * model.nb)
        residual = np.zeros((len(t), 5))
        residual[:, :3] = res[:, :3]
        extra = {"x": x, "R": rot, "orthogonality": res[:, 3], "step_max": raw["step_max"]}
        extra.update({k: arr[sl] for k, arr in self._extra(model, raw).items()})
        result = LieResult(
            method=self.name, model=model, t=t, q=q, v=v, a=a, lam=lam, residual=residual,
            energy=energy, stats=raw["stats"], params=self.params(), h=h,
            status=STATUS_NAMES.get(status, f"status{status}"), cpu_time=cpu, extra=extra)
        return report_failure(result, status, steps_done, t0, h, raise_on_failure, run)

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
        if self.KERNEL is None:
            return [self.integrate(m, q, v, t_end, h, t0=t0, every=every, project=project,
                                   raise_on_failure=raise_on_failure) for m, q, v in zip(models, q0s, v0s)]
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
            x0, r0, v0 = self._lie_initial_state(sysk, q0s[k], v0s[k], project, f"v0s[{k}]")
            q0f[:, k], v0f[:, k] = sysk.pack(x0, r0), v0
        rpar = np.asfortranarray(np.stack([np.asarray(rp, dtype=float) for _, rp in pars], axis=1))
        iopt, ropt = _option_arrays(self.kernel_options(first))
        ropt = np.asfortranarray(np.repeat(ropt[:, None], nb, axis=1))   # the real options per trajectory
        buf = driver_buffers(nq, nv, m, nsteps, every, nstats=len(self.STATS), naux=self._naux(first),
                             nres=len(LIE_RESIDUALS), nb=nb)
        cpu = time.process_time()
        with _control.kernel_run() as run:
            istat = _fortran.run_batch(self.KERNEL, RIGID_MODEL_ID, np.ascontiguousarray(pars[0][0], dtype=np.int32),
                                       rpar, nv, m, 0, np.zeros(3, np.int32), iopt, ropt, t0, h, nsteps, every,
                                       threads, q0f, v0f, *(buf[k] for k in _OUT))
        cpu = (time.process_time() - cpu) / nb
        results = []
        stopped = run.interrupted or run.lapack is not None
        for k, sysk in enumerate(models):
            raw = self._raw({key: x[..., k] for key, x in buf.items()}, m, istat[:, k])
            raw["stats"].update(batch_size=nb, threads=threads)
            results.append(self._make_lie_result(sysk, raw, t0, h, cpu, raise_on_failure and not stopped))
        if stopped:
            raise_recorded(run, results, int(istat[0, 0]), int(istat[1, 0]), t0, h)
        return results

    #: The length of the stepper's auxiliary vector per sample (system -> int).
    def _naux(self, system):
        return 0

    def _run(self, system, t0, h, nsteps, every, x0, r0, v0):
        """One call of the driver (f2py run) with the method's stepper (``KERNEL``)."""
        ipar, rpar = system.fortran_params()
        ipar = np.ascontiguousarray(ipar, dtype=np.int32)
        rpar = np.ascontiguousarray(rpar, dtype=np.float64)
        iopt, ropt = _option_arrays(self.kernel_options(system))
        nq, nv, m = 12 * system.nb, system.nv, system.m
        buf = driver_buffers(nq, nv, m, nsteps, every, nstats=len(self.STATS), naux=self._naux(system),
                             nres=len(LIE_RESIDUALS))
        istat = _fortran.run(self.KERNEL, RIGID_MODEL_ID, ipar, rpar, _never_called, nv, m, 0, np.zeros(3, np.int32),
                             iopt, ropt, t0, h, nsteps, every, system.pack(x0, r0), np.ascontiguousarray(v0, dtype=float),
                             *(buf[k] for k in _OUT))
        return self._raw(buf, m, istat)

    def _raw(self, buf, m, istat):
        """Time-major views of the driver's outputs (one trajectory)."""
        return dict(t=buf["tout"], q=buf["qout"].T, v=buf["vout"].T, a=buf["aout"].T, lam=buf["lout"][:m].T,
                    aux=buf["auxout"].T, istat=np.asarray(istat), residual=buf["resout"].T, energy=buf["eout"],
                    step_max=decode(STEP_MAX_KEYS, buf["stepmax"], reals=STEP_MAX_KEYS),
                    stats=self.decode_stats(istat, buf["stats"]))

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
