"""The result builder: a :class:`~pyint.results.Result` from the driver's outputs of one
trajectory, and a failed run's message and exception (the status codes of seam/seam.toml).

Every method's runs end here (pyint/_driver.py calls :func:`make_result`); a configuration space
other than R^n adds its own columns through the model's hooks (``sample_residuals``,
``trajectory_residuals``).
"""
from __future__ import annotations

import numpy as np

from . import _validate as V
from ._status import STATUS_ERRORS, STATUS_INTERRUPTED, STATUS_NAMES, STATUS_NEWTON_FAILED, STATUS_NONFINITE, \
    STATUS_OK, STATUS_RANK_DEFICIENT, STATUS_STEP_TOO_LARGE, STATUS_TEXT, STATUS_LEFT_MANIFOLD, \
    STATUS_LEFT_BRANCH, STATUS_SINGULAR_POSITION
from .errors import Interrupted, LapackError
from .models.base import nonfinite_item
from .results import Result, trajectory_residuals


def make_result(method, model, raw, t0, h, cpu, backend="auto", raise_on_failure=True, run=None):
    """The Result of one trajectory of ``method`` from the driver's outputs (``raw``: time-major
    t, q, v, a, lam, residual, energy, istat, stats, step_max, extra, redundant, q0); raises the
    IntegrationError of a failed run when raise_on_failure (and always what ``run``, the kernel
    call's :class:`_control.KernelRun`, recorded)."""
    status, steps_done, nsamples = (int(x) for x in raw["istat"])
    if status == STATUS_RANK_DEFICIENT:   # bad input, found by the kernel's start: as check_rank says it
        mass = V.singular_mass(model, t0, raw.get("q0"))   # unless M is at fault, not the constraints
        if mass is not None:
            raise mass
        raise ValueError(f"the constraint Jacobian [G; A] is singular at t={t0} and its rank is higher at nearby "
                         "configurations: a start at a singular position (where the mechanism's mobility "
                         "jumps), not redundant constraints, or degenerate constraints with no independent "
                         f"subset of its {model.n_hol + model.n_nonhol} rows; start away from the singular "
                         "position (fortran/core/reduced_model.f90: drop_redundant_rows)")
    if run is not None and run.aborted:
        # samples written while a model item was failing (NaN-filled) are not results
        good = np.all(np.isfinite(raw["q"][:nsamples]), axis=1) & np.all(np.isfinite(raw["v"][:nsamples]), axis=1)
        nsamples = int(np.argmin(good)) if not good.all() else nsamples
    sl = slice(0, nsamples)
    t, q, v, a, lam = (raw[k][sl] for k in ("t", "q", "v", "a", "lam"))
    if "residual" in raw:   # from the driver, at every sample
        res, energy = raw["residual"][sl], raw["energy"][sl]
        hook = getattr(model, "sample_residuals", None)     # a configuration space's own columns
        res, extra = hook(res) if hook is not None else (res, {})
    else:
        # after a model item raised, residuals where it raises again are NaN
        res, energy, extra = model_residuals(model, t, q, v, a, backend,
                                             keep_going=run is not None and run.aborted)
    extra.update({k: x[sl] for k, x in raw.get("extra", {}).items()})   # method-specific arrays (time-major)
    step_max = dict(raw.get("step_max", {}))       # maxima over every step, as the kernel tracked them
    if step_max:
        extra["step_max"] = step_max
    result = Result(
        method=method.name, model=model, t=t, q=q, v=v, a=a, lam=lam, residual=res,
        energy=energy if model.has_energy else None, stats=raw["stats"],
        params=method.params(), h=h, status=STATUS_NAMES.get(status, f"status{status}"),
        cpu_time=cpu, extra=extra, redundant=raw.get("redundant", np.zeros(0, dtype=int)))
    return report_failure(result, status, steps_done, t0, h, raise_on_failure, run)



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
        t_fail = _fail_time(t0, h, steps_done)
        result.message = (f"{result.method}: {STATUS_TEXT.get(status, 'failure')} at step {steps_done + 1} "
                          f"(t = {t_fail:.6g}); returning {_returned(result, steps_done, h)}"
                          + _failure_cause(result, status, h))
        if raise_on_failure:
            raise STATUS_ERRORS.get(status, RuntimeError)(result.message, result=result,
                                                           step=steps_done + 1, time=t_fail)
    return result


def _failure_cause(result, status, h):
    """What to add to the message of a failed run: the cause where it can be found, the next step.

    A non-finite state: the first model item that is non-finite at the last good state, at the
    failed step's start, middle or end (a compiled item is checked by no callback; the state only
    shows it a step later); none: the step itself overflowed.  Newton's failure at a fixed h, and
    a step-to-step oscillation (the driver's guard): a smaller h, or variable steps where the
    method has them, is the cure."""
    fixed = np.ndim(h) == 0

    def or_variable_steps():
        from ._registry import METHODS
        adaptive = getattr(METHODS.get(result.method), "ADAPTIVE_REFUSAL", "") is None
        return ", or with variable steps (rtol=... instead of h)" if adaptive else ""

    if status == STATUS_NONFINITE and len(result.t):
        t, q, v, a = result.t[-1], result.q[-1], result.v[-1], result.a[-1]
        for tt in ((t, t + h / 2, t + h) if fixed else (t,)):
            try:
                err = nonfinite_item(result.model, float(tt), q, v, a)
            except Exception:  # noqa: BLE001 - a model item that fails here, or a configuration space
                return ""      # other than R^n (Lie groups): nothing more to say than the status
            if err is not None:
                return f": {err}"
        return (": every model item is finite at the last state, so the step itself overflowed"
                + (f"; retry with a smaller h (this run: h = {h:g})" if fixed else ""))
    if status == STATUS_STEP_TOO_LARGE:
        return f"; retry with a smaller h (this run: h = {h:g})" + or_variable_steps()
    if status == STATUS_LEFT_MANIFOLD:
        last = float(result.residual[-1, 1]) if len(result.t) else float("nan")
        return (f": the residual reached {result.eps_vel:.3g} (at the last sample: {last:.3g}); keep the run "
                f"on the constraints with projection=\"steps\" where the method has it, or retry with a smaller h "
                f"(this run: h = {h:g})")
    if status == STATUS_LEFT_BRANCH:
        return (_rank_at(result) + f"; retry with a smaller h (this run: h = {h:g}), or with genalpha or "
                f"rattle, which pass such positions on their branch (docs/guide/redundant.md)")
    if status == STATUS_SINGULAR_POSITION:
        return _rank_at(result)
    if status == STATUS_NEWTON_FAILED and fixed:
        return (f"; at h = {h:g} the step may be too large for Newton's method to converge from its "
                f"predictor: retry with a smaller h (e.g. h = {h / 4:g})" + or_variable_steps())
    return ""


def _rank_at(result):
    """Where a vector method's run stopped next to a singular position: the constraint Jacobian C = [G; A]
    at the last state, its singular values' ratio and its rank at the driver's near-singular threshold
    (sigma_min / sigma_max 1e-2, fortran/core/reduced_model.f90: near_singular_position); "" where the
    model has no such Jacobian to say it with (a model item that fails; the Lie methods say it their
    way, pyint/methods/lie/integrator.py)."""
    model = result.model
    try:
        t, q = float(result.t[-1]), np.asarray(result.q[-1])
        sv = np.linalg.svd(V.constraint_matrix(model, t, q), compute_uv=False)
    except Exception:  # noqa: BLE001 - the message stays without it
        return ""
    if not len(sv) or not sv[0] > 0:
        return ""
    rank = int(np.sum(sv > 1e-2 * sv[0]))
    return (f": at the last state returned (t = {t:.6g}) sigma_min / sigma_max of the constraint Jacobian is "
            f"{sv[-1] / sv[0]:.2g}, rank {rank} of its {len(sv)} rows at 1e-2 of sigma_max")


def _fail_time(t0, h, steps_done):
    """The time a run stopped at: the end of the failed step of a fixed-step run (h a float), the
    end of the last accepted step of a variable-step one (h the array of accepted steps)."""
    if np.ndim(h) == 0:
        return t0 + (steps_done + 1) * h
    return t0 + float(np.sum(h[:steps_done]))


def _returned(result, steps_done, h):
    """What a stopped run's result holds, for its message: the steps computed, or with variable steps
    and t_eval, where every step did not fit in memory, the samples the driver kept of them."""
    if np.ndim(h) == 0 or len(result.t) > steps_done:
        return f"the {steps_done} steps computed before it"
    return (f"{len(result.t)} samples of the {steps_done} steps computed before it (every step did not fit in "
            "memory: with t_eval the run keeps those its outputs need, and the last)")


def raise_recorded(run, result, status, steps_done, t0, h):
    """Raise what the kernel call ``run`` recorded, with ``result`` (or the list of a
    batch's results) attached; return when it recorded nothing."""
    first = result[0] if isinstance(result, list) else result
    t_fail = _fail_time(t0, h, steps_done)
    where = f"at step {steps_done + 1} (t = {t_fail:.6g}); returning {_returned(first, steps_done, h)}"
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



def vector_step_max(stepmax):
    """The per-step maxima of a vector-state run (the driver's stepmax) by name."""
    sm = [float(x) for x in stepmax]
    return {"eps_pos": sm[0], "eps_vel": max(sm[1], sm[3]), "eps_acc": max(sm[2], sm[4]), "energy_change": sm[5]}


def driver_raw(buf, nl, istat, stats, step_max_keys=None, aux_parts=None):
    """Time-major views of the driver's outputs (one trajectory); the per-step maxima by name:
    ``step_max_keys`` names stepmax in its order (default: a vector state's, :func:`vector_step_max`);
    the stepper's auxiliary vector split by ``aux_parts`` ({name: length}) into ``extra``."""
    sm = buf["stepmax"]
    raw = dict(t=buf["tout"], q=buf["qout"].T, v=buf["vout"].T, a=buf["aout"].T, lam=buf["lout"][:nl].T,
               istat=np.asarray(istat), stats=stats, residual=buf["resout"].T, energy=buf["eout"],
               redundant=np.flatnonzero(buf["red"][:nl]),
               step_max=vector_step_max(sm) if step_max_keys is None else decode(step_max_keys, sm, step_max_keys))
    aux, k = buf["auxout"].T, 0
    raw["extra"] = {}
    for name, size in (aux_parts or {}).items():
        raw["extra"][name] = aux[:, k:k + size]
        k += size
    return raw
