"""Base class of every integrator, and the method registry that feeds the tests.

Adding a method (the checklist):

1. ``fortran/<method>.f90``: the kernel, generic over ``class(model_t)``; the
   whole time loop lives there.  ``fortran/api/api_<method>.f90``: one thin
   f2py routine taking the model argument block (see ``_fortran_model.py``).
2. ``pyint/<method>.py``: a subclass of :class:`Integrator` that declares the
   class attributes below, validates its options in ``__init__`` and
   implements ``_run`` (one call into Fortran, returning the raw arrays).
3. Decorate it with :func:`register`: it joins ``METHODS`` and with it the
   shared tests (convergence order, agreement with the IDA reference, the
   invariants it claims).
"""
from __future__ import annotations

import time

import numpy as np

from . import _control
from . import _validate as V
from ._status import STATUS_ERRORS, STATUS_INTERRUPTED, STATUS_NAMES, STATUS_OK, STATUS_TEXT
from .errors import Interrupted, LapackError
from .results import Result, trajectory_residuals

#: name -> Integrator subclass; every registered method is in the shared test list.
METHODS: dict[str, type] = {}


def register(cls):
    METHODS[cls.name] = cls
    return cls


class Integrator:
    """An integrator for M(q) a = f - G^T lam_h - A^T lam_n with constraints.

    Class attributes a subclass declares:

    ``name``         registry name (also the ``method`` coordinate in datasets)
    ``order``        claimed convergence order in q and v (``lambda_order``: in lam, if claimed)
    ``order_source`` where the claimed orders come from: the seed paper and its section or
                     equation, or the classical result (measured by pyint.convergence)
    ``supports``     subset of {"holonomic", "nonholonomic"}
    ``spaces``       the configuration spaces of the models it integrates (``model.configuration_space``:
                     "R^n", or "(R^3 x SO(3))^nb" for rigid bodies on a Lie group)
    ``step_max_stats`` the kernel's stats that are maxima over every step, under the names every
                     Result uses (``eps_pos``, ``eps_vel``, ``eps_acc``, ``energy_change``):
                     {"eps_vel": "max_constraint_residual"}; see :meth:`pyint.results.Result.step_max`
    ``backends``     the ``backend`` values it takes (a method whose whole loop runs in Fortran on a
                     Fortran-only configuration space, e.g. the Lie-group methods: "auto", "fortran")
    ``keeps``        constraint levels kept to round-off, per kind of constraint:
                     {"holonomic": {"position", ...}, "nonholonomic": {"velocity"}}
    ``invariants``   other claims the tests check, e.g. {"energy_bounded", "symplectic"}
    """

    name = "integrator"
    order = 1
    order_source = ""
    supports: frozenset = frozenset()
    backends: tuple = ("auto", "fortran", "callback")
    spaces: tuple = ("R^n",)
    step_max_stats: dict = {}
    keeps: dict = {}
    invariants: frozenset = frozenset()

    def params(self):
        """Method parameters (scalars) for results and provenance."""
        return {}

    def _run(self, model, t0, h, nsteps, every, q0, v0, backend):  # pragma: no cover - abstract
        """Call the Fortran kernel; return dict with t, q, v, a, lam (time-major), istat, stats,
        and optionally extra (name -> time-major array, e.g. momenta p) for ``Result.extra``."""
        raise NotImplementedError

    @classmethod
    def accepts(cls, model):
        """True when this method integrates ``model``: its configuration space and its kinds of
        constraints (what :meth:`check_model` checks)."""
        try:
            cls.check_model(cls.__new__(cls), model)
        except (TypeError, ValueError):
            return False
        return True

    def check_model(self, model):
        space = getattr(model, "configuration_space", "R^n")
        if space not in self.spaces:
            raise TypeError(f"{self.name} integrates models whose configuration space is "
                            f"{' or '.join(self.spaces)}; model {getattr(model, 'name', type(model).__name__)!r} "
                            f"lives on {space} (methods for it: "
                            f"{sorted(k for k, c in METHODS.items() if space in c.spaces)})")
        n = getattr(model, "n", None)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"model {getattr(model, 'name', type(model).__name__)!r} has n = {n!r} coordinates; "
                             "an integrator needs at least 1")
        if n > V.C_INT_MAX:
            raise ValueError(f"model {model.name!r} has n = {n} coordinates, above the kernels' limit 2**31 - 1")
        if model.n_hol and "holonomic" not in self.supports:
            raise ValueError(f"{self.name} does not handle holonomic constraints (model {model.name!r} has {model.n_hol})")
        if model.n_nonhol and "nonholonomic" not in self.supports:
            raise ValueError(f"{self.name} does not handle nonholonomic constraints (model {model.name!r} has {model.n_nonhol})")

    def integrate(self, model, q0, v0, t_end, h, t0=0.0, every=1, backend="auto", project=False,
                  raise_on_failure=True):
        """Integrate from (t0, q0, v0) to t_end with step h; keep every `every`-th step.

        project: project an inconsistent initial state onto the constraints
        instead of raising.  backend: "auto" (built-in Fortran model when the
        model has one), "fortran", or "callback" (model evaluated in Python).
        On failure (Newton, singular matrix, NaN) raises an IntegrationError
        whose ``result`` holds the trajectory computed so far, or returns that
        result with ``status`` set when raise_on_failure is False.  Always
        raised, with ``result`` attached where the exception allows it: the
        exception of a model item (a wrong shape: ValueError; NaN or Inf:
        NonFiniteError), Ctrl-C (:class:`~pyint.errors.Interrupted`, a
        KeyboardInterrupt) and a LAPACK argument error (LapackError).
        The last sample is always the final state, also when ``every`` does
        not divide the number of steps.
        """
        self.check_model(model)
        if backend not in self.backends:
            raise ValueError(f"{self.name}: backend must be one of {list(self.backends)}, got {backend!r}")
        h = V.as_real(h, "h", positive=True)
        t0 = V.as_real(t0, "t0")
        t_end = V.as_real(t_end, "t_end")
        every = V.as_every(every)
        nsteps = V.step_count(t0, t_end, h)
        q0, v0 = checked_initial_state(model, t0, q0, v0, project)

        cpu = time.process_time()
        with _control.kernel_run() as run:
            raw = self._run(model, t0, h, nsteps, every, q0, v0, backend)
        cpu = time.process_time() - cpu
        return self._make_result(model, raw, t0, h, cpu, backend, raise_on_failure, run)

    def _make_result(self, model, raw, t0, h, cpu, backend="auto", raise_on_failure=True, run=None):
        """The Result of one trajectory from the raw kernel output (see ``_run``);
        raises the IntegrationError of a failed run when raise_on_failure (and
        always what ``run``, the kernel call's :class:`_control.KernelRun`, recorded)."""
        status, steps_done, nsamples = (int(x) for x in raw["istat"])
        if run is not None and run.aborted:
            # samples written while a model item was failing (NaN-filled) are not results
            good = np.all(np.isfinite(raw["q"][:nsamples]), axis=1) & np.all(np.isfinite(raw["v"][:nsamples]), axis=1)
            nsamples = int(np.argmin(good)) if not good.all() else nsamples
        sl = slice(0, nsamples)
        t, q, v, a, lam = (raw[k][sl] for k in ("t", "q", "v", "a", "lam"))
        # after a model item raised, residuals where it raises again are NaN
        res, energy, extra = model_residuals(model, t, q, v, a, backend, keep_going=run is not None and run.aborted)
        extra.update({k: x[sl] for k, x in raw.get("extra", {}).items()})   # method-specific arrays (time-major)
        step_max = dict(raw.get("step_max", {}))       # maxima over every step, as the kernel tracked them
        step_max.update({key: float(raw["stats"][stat]) for key, stat in self.step_max_stats.items()
                         if stat in raw["stats"]})
        if step_max:
            extra["step_max"] = step_max
        result = Result(
            method=self.name, model=model, t=t, q=q, v=v, a=a, lam=lam, residual=res,
            energy=energy if model.has_energy else None, stats=raw["stats"],
            params=self.params(), h=h, status=STATUS_NAMES.get(status, f"status{status}"),
            cpu_time=cpu, extra=extra)
        return report_failure(result, status, steps_done, t0, h, raise_on_failure, run)


def checked_initial_state(model, t0, q0, v0, project=False):
    """(q0, v0) as float vectors on the model's constraints, checked or projected (``project``).
    A model whose configuration space is not R^n supplies its own ``checked_initial_state``."""
    hook = getattr(model, "checked_initial_state", None)
    if hook is not None:
        return hook(t0, q0, v0, project=project)
    q0 = V.as_vector(q0, model.n, "q0")
    v0 = V.as_vector(v0, model.n, "v0")
    return V.consistent_initial_state(model, t0, q0, v0, project=project)


def model_residuals(model, t, q, v, a, backend="auto", keep_going=False):
    """(residual (nt, 5), energy (nt,), extra) of the samples: :func:`pyint.results.trajectory_residuals`,
    or the model's own ``trajectory_residuals`` (a configuration space that is not R^n), whose
    ``extra`` holds what else it measures per sample (rigid bodies: orthogonality)."""
    hook = getattr(model, "trajectory_residuals", None)
    if hook is not None:
        return hook(t, q, v, a, backend, keep_going)
    res, energy = trajectory_residuals(model, t, q, v, a, backend, keep_going=keep_going)
    return res, energy, {}


def report_failure(result, status, steps_done, t0, h, raise_on_failure=True, run=None):
    """Attach the failure message of a kernel status to ``result`` (which holds the
    steps computed before it) and raise its IntegrationError, or return it.
    What ``run`` (the kernel call's :class:`_control.KernelRun`) recorded is always
    raised: a model item's exception (again, with ``result`` attached where it can
    be), a LAPACK argument error, Ctrl-C."""
    if run is not None:
        raise_recorded(run, result, status, steps_done, t0, h)
    if status != STATUS_OK:
        t_fail = t0 + (steps_done + 1) * h
        result.message = (f"{result.method}: {STATUS_TEXT.get(status, 'failure')} at step {steps_done + 1} "
                          f"(t = {t_fail:.6g}); returning the {steps_done} steps computed before it")
        if raise_on_failure:
            raise STATUS_ERRORS.get(status, RuntimeError)(result.message, result=result,
                                                           step=steps_done + 1, time=t_fail)
    return result


def raise_recorded(run, result, status, steps_done, t0, h):
    """Raise what the kernel call ``run`` recorded, with ``result`` (or the list of a
    batch's results) attached; return when it recorded nothing."""
    first = result[0] if isinstance(result, list) else result
    t_fail = t0 + (steps_done + 1) * h
    where = f"at step {steps_done + 1} (t = {t_fail:.6g}); returning the {steps_done} steps computed before it"
    if run.error is not None and not isinstance(run.error, KeyboardInterrupt):
        err = run.error
        first.status = "aborted"
        first.message = f"{first.method}: the model raised {type(err).__name__}: {err} ({where})"
        for name, value in (("result", result), ("step", steps_done + 1), ("time", t_fail)):
            if getattr(err, name, None) is None:
                try:
                    setattr(err, name, value)
                except (AttributeError, TypeError):   # an exception type without a __dict__
                    pass
        raise err
    if run.lapack is not None:
        routine, arg = run.lapack
        first.status = "lapack_error"
        first.message = (f"{first.method}: LAPACK routine {routine} rejected its argument {arg} {where} "
                         f"(a bug in pyint: please report it)")
        raise LapackError(first.message, result=result, step=steps_done + 1, time=t_fail,
                          routine=routine, argument=arg)
    if run.interrupted or status == STATUS_INTERRUPTED or isinstance(run.error, KeyboardInterrupt):
        first.status = "interrupted"
        first.message = f"{first.method}: interrupted (Ctrl-C) {where}"
        raise Interrupted(first.message, result=result, step=steps_done + 1, time=t_fail)


def n_samples(nsteps, every):
    """Output samples of nsteps steps kept every `every`: t0, every `every`-th step,
    and the final state when `every` does not divide nsteps."""
    return nsteps // every + 1 + (nsteps % every != 0)


def output_buffers(n, nl, nsteps, every):
    """Fortran-ordered output arrays for :func:`n_samples` samples (refused above
    :data:`pyint._validate.MAX_OUTPUT_BYTES`, see :func:`~pyint._validate.check_output_size`)."""
    nout = n_samples(nsteps, every)
    V.check_output_size(nout, 1 + 3 * n + max(nl, 1), nsteps, every)
    return dict(tout=np.zeros(nout), qout=np.zeros((n, nout), order="F"),
                vout=np.zeros((n, nout), order="F"), aout=np.zeros((n, nout), order="F"),
                lout=np.zeros((max(nl, 1), nout), order="F"))


def decode(names, values, reals=()):
    """name -> value of a kernel's positional output array: ``names[k]`` names ``values[k]``,
    in the order the kernel's f2py routine documents (each method module keeps that order in a
    module-level tuple next to its call).  Names in ``reals`` are floats, the others counts."""
    if len(values) != len(names):
        raise ValueError(f"a kernel returned {len(values)} values for the {len(names)} names {names}")
    return {name: float(x) if name in reals else int(x) for name, x in zip(names, values)}


def kernel_stats(names, istat, stats, reals=()):
    """``Result.stats`` of one run: "steps" (istat = [status, steps done, samples]), the kernel's
    stats array decoded by :func:`decode`, and "failed_steps" (1 if the run stopped early)."""
    return {"steps": int(istat[1]), **decode(names, stats, reals), "failed_steps": int(istat[0] != 0)}


def raw_result(buf, nl, istat, stats):
    """Time-major views of the output buffers."""
    return dict(t=buf["tout"], q=buf["qout"].T, v=buf["vout"].T, a=buf["aout"].T,
                lam=buf["lout"][:nl].T, istat=np.asarray(istat), stats=stats)
