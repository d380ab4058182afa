"""The one call site of the Fortran driver (fortran/api/api_run.f90: ``run``, ``run_batch``).

:func:`run` takes one or many trajectories of one method (``integrate`` is a batch of one),
checks the options, makes the start states and the output buffers, calls the driver ONCE and
builds the results (pyint/_result_builder.py).  That one call resolves the model block, checks
the start's constraint levels, resets and reports the run control, runs the steps and, with
t_eval, interpolates and re-imposes the outputs (fortran/core/dense_output.f90): the boundary
is crossed once per run, as a Fortran integrator's caller does (Hairer, Wanner, Solving ODEs II,
IV.8: RADAU5 and its SOLOUT).
"""
from __future__ import annotations

import time

import numpy as np

from . import _control, _fortran
from . import _validate as V
from ._dense import DENSE_NONE, dense_buffer, dense_mode, dense_result
from ._result_builder import raise_recorded
from ._status import STATUS_BAD_INPUT
from .errors import Interrupted
from .models._fortran_model import check_builtin, uses_fortran_twin
from .options import AOPT, pack_aopt
from .results import trajectory_residuals

#: aopt of a fixed-step run (no rtol: the driver's fixed-step loop).
FIXED_STEP = np.zeros(1)
#: The start's tolerances and projection when Python checked the start (the run checks nothing): the
#: driver's grid(3:5) = [tol_q, tol_v, project].
NO_CHECK = (-1.0, -1.0, 0.0)
#: The driver's output arrays, in the order of the f2py entry run_batch (then aopt, hout, counts as run's).
_OUT_BATCH = ("tout", "qout", "vout", "aout", "lout", "auxout", "resout", "eout", "stepmax", "stats", "red")
#: The f2py entry run's: run_batch's, then the variable-step block (aopt in, the accepted steps hout and
#: counts = [accepted, rejected, Newton failures] out; aopt = [0]: the fixed-step loop).
_OUT = _OUT_BATCH + ("aopt", "hout", "counts")
#: The residuals the driver keeps per sample for a vector model (fortran/core/metrics.f90:
#: |g|, |G v + g_t|, |G a + gamma_h|, |A v + b|, |A a + gamma_n|); its per-step maxima are these, then
#: max |E - E0|.
NRES = 5


def n_samples(nsteps, every):
    """Output samples of nsteps steps kept every `every`: t0, every `every`-th step,
    and the final state when `every` does not divide nsteps."""
    return nsteps // every + 1 + (nsteps % every != 0)


def _option_arrays(options):
    iopt, ropt = options
    return np.array(list(iopt) or [0], dtype=np.int32), np.array(list(ropt) or [0.0], dtype=np.float64)


def driver_buffers(nq, nv, nl, nsteps, every, nstats=0, naux=0, nres=NRES, nb=None, warn=True, room=False):
    """Fortran-ordered output arrays of the driver for :func:`n_samples` samples (with a trailing
    trajectory index when nb is given), refused above :data:`pyint._validate.MAX_OUTPUT_BYTES`.
    room: the sample arrays are room for at most nsteps samples, of which the caller reads only
    those the kernel wrote (the adaptive driver's max_steps): left unset (np.empty)."""
    nout = n_samples(nsteps, every)
    V.check_output_size(nout, (nb or 1) * (2 + nq + 2 * nv + max(nl, 1) + naux + nres), nsteps, every, warn, room)
    tail = () if nb is None else (nb,)
    z = lambda *shape: np.zeros(shape + tail, order="F")  # noqa: E731
    r = (lambda *shape: np.empty(shape + tail, order="F")) if room else z  # noqa: E731
    buf = dict(tout=r(nout), qout=r(nq, nout), vout=r(nv, nout), aout=r(nv, nout), lout=r(max(nl, 1), nout),
               auxout=r(naux, nout) if naux else z(1, 1), resout=r(nres, nout), eout=r(nout),
               stepmax=z(nres + 1), stats=z(max(nstats, 1)),
               red=np.zeros((max(nl, 1),) + tail, dtype=np.int32, order="F"))   # rows dropped as redundant
    buf.update(hout=z(1), counts=np.zeros((3,) + tail, dtype=np.int32, order="F"))
    if nb is None:
        buf.update(aopt=FIXED_STEP)
    return buf


def imodel(args, n):
    """The model block's integers for the driver: [model_id, n, mh, mn, mflags(3)]."""
    return np.array([args["model_id"], n, args["mh"], args["mn"], *args["mflags"]], dtype=np.int32)


def call_run(kernel, args, n, iopt, ropt, t0, h, nsteps, every, q0, v0, buf, tols=NO_CHECK, t_eval=None,
             mode=DENSE_NONE, dense=None):
    """One trajectory through the f2py entry ``run``: returns (istat, start levels, ctl)."""
    teval = np.asarray([t0] if t_eval is None else t_eval, dtype=float)
    dense = np.zeros((1, teval.size), order="F") if dense is None else dense
    start, ctl, istat = _fortran.run(kernel, imodel(args, n), args["ipar"], args["rpar"], args["usercb"], iopt, ropt,
                                     [t0, h, *tols], [nsteps, every, mode], q0, v0, *(buf[k] for k in _OUT), teval,
                                     dense)
    return istat, start, ctl


def check_step_choice(name, h, rtol, atol, h0, h_min, h_max, t_eval, per_unit_step):
    """Exactly one of h (a fixed step) and rtol (variable steps), and no option of variable
    steps with a fixed step."""
    if rtol is not None:
        if h is not None:
            raise ValueError(f"{name}: give either h (a fixed step) or rtol (variable steps), not both")
        return
    if h is None:
        raise ValueError(f"{name}: give the step h (a fixed step) or rtol (variable steps)")
    for opt, value in (("atol", atol), ("h0", h0), ("h_min", h_min), ("h_max", h_max), ("t_eval", t_eval),
                       ("per_unit_step", per_unit_step)):
        if value is not None:
            raise ValueError(f"{name}: {opt} is an option of variable steps (rtol); a fixed-step run "
                             f"(h = {h!r}) takes none")


def adaptive_setup(method, model, t0, t_end, rtol, atol, h0, h_min, h_max, t_eval, max_steps, per_unit_step,
                   every):
    """The checked options of a variable-step run: (t0, aopt, t_eval, max_steps); aopt is the
    driver's [t_end, rtol, atol, h0, h_min, h_max, norm_mode] (fortran/api/api_run.f90)."""
    name = method.name
    why = method.adaptive_refusal(model)
    if why is not None:
        raise ValueError(f"{name} runs at a fixed step only (give h, not rtol): {why}")
    if every != 1:
        raise ValueError(f"{name}: every is an option of fixed steps; with rtol the samples are the accepted "
                         "steps, or t_eval")
    t0 = V.as_real(t0, "t0")
    t_end = V.as_real(t_end, "t_end")
    if not t_end > t0:
        raise ValueError(f"t_end = {t_end!r} must be after t0 = {t0!r}")
    span = t_end - t0
    rtol = V.as_real(rtol, "rtol", positive=True)
    if rtol < 1e-13 or rtol >= 1:
        raise ValueError(f"rtol = {rtol!r} must lie in [1e-13, 1) (below, round-off dominates the estimate)")
    atol = rtol if atol is None else V.as_real(atol, "atol")
    if not atol > 0:   # the norm divides by atol + rtol |y|: 0/0 at a component that is zero
        raise ValueError(f"atol = {atol!r} must be > 0: atol + rtol |y| scales the error of each component, and "
                         "with atol = 0 a component at zero (a velocity at rest) has no scale; give atol > 0")
    h_min = 1e-12 * span if h_min is None else V.as_real(h_min, "h_min", positive=True)
    h_max = span if h_max is None else V.as_real(h_max, "h_max", positive=True)
    if h_max < h_min:
        raise ValueError(f"h_max = {h_max!r} is below h_min = {h_min!r}")
    h0 = 0.0 if h0 is None else V.as_real(h0, "h0", positive=True)
    if h0 and not h_min <= h0 <= h_max:
        raise ValueError(f"h0 = {h0!r} must lie in [h_min, h_max] = [{h_min!r}, {h_max!r}]")
    max_steps = V.as_int(max_steps, "max_steps", minimum=1)
    if per_unit_step is None:
        per_unit_step = method.ADAPTIVE_PER_UNIT_STEP
    if per_unit_step is not None and not isinstance(per_unit_step, (bool, np.bool_)):
        raise TypeError(f"per_unit_step must be True or False, got {per_unit_step!r}")
    if t_eval is not None:
        t_eval = np.asarray(t_eval, dtype=float)
        if t_eval.ndim != 1 or t_eval.size == 0 or not np.all(np.isfinite(t_eval)):
            raise ValueError(f"t_eval must be a non-empty 1-D array of finite times, got shape {t_eval.shape}")
        if np.any(np.diff(t_eval) < 0) or t_eval[0] < t0 or t_eval[-1] > t_end:
            raise ValueError(f"t_eval must be nondecreasing within [t0, t_end] = [{t0!r}, {t_end!r}]")
    mode = 2 if per_unit_step is None else int(per_unit_step)    # the driver's norm_mode
    aopt = pack_aopt(t_end=t_end, rtol=rtol, atol=atol, h0=h0, h_min=h_min, h_max=h_max, norm_mode=mode)
    return t0, aopt, t_eval, max_steps


def start_state(method, model, t0, q0, v0, project, backend, suffix=""):
    """(q0, v0, tols): the driver's start vectors from the user's, checked (``q0{suffix}`` names
    them in errors), and the tolerances of the start's constraint levels the run checks itself
    (on the model's Fortran twin, before any step), or :data:`NO_CHECK` when checked (or projected)
    here.  A model whose configuration space is not R^n checks its own (``checked_initial_state``:
    rigid bodies pass their tolerances, and the projection, to the run).
    The rank of [G; A] and the model's items are left to the kernel when its stepper checks them at
    the start (``START_CHECKS_RANK``) on the model's twin."""
    hook = getattr(model, "checked_initial_state", None)
    if hook is not None:
        return hook(t0, q0, v0, project=project)
    q0 = V.as_vector(q0, model.n, f"q0{suffix}")
    v0 = V.as_vector(v0, model.n, f"v0{suffix}")
    twin = uses_fortran_twin(model, backend)
    kernel_checks = method.START_CHECKS_RANK and twin
    if twin and not project:
        if not kernel_checks:
            V.check_model_items(model, t0, q0, v0)
        return q0, v0, (*V.start_tolerances(q0, v0), 0.0)
    levels = _twin_levels(model, backend) if twin else None
    q0, v0 = V.consistent_initial_state(model, t0, q0, v0, project=project, kernel_checks=kernel_checks,
                                        levels=levels)
    return q0, v0, NO_CHECK


def _twin_levels(model, backend):
    """(t, q, v) -> (max|g|, max|G v + g_t|, max|A v + b|) through the model's Fortran twin
    (fortran/core/metrics.f90: the structured items, O(nnz))."""
    def levels(t, q, v):
        res, _ = trajectory_residuals(model, [t], q[None, :], v[None, :], np.zeros((1, model.n)), backend)
        return res[0, 0], res[0, 1], res[0, 3]
    return levels


def _refused_start(models, backend, istat, start, tols, t0):
    """A run refused at its start (STATUS_BAD_INPUT, no step): raise why, when it is the start's
    levels (the ValueError of an inconsistent start; a model's own ``start_violation`` words its
    diagnostics) or the model block (its parameters)."""
    for k, m in enumerate(models):
        if int(istat[0, k]) != STATUS_BAD_INPUT or int(istat[1, k]) != 0:
            continue
        if tols[k][0] >= 0:
            own = getattr(m, "start_violation", None)
            bad = own(t0, start[:, k], tols[k]) if own is not None else V.start_violation(m, start[:, k], tols[k])
            if bad is not None:
                raise bad
        if getattr(m, "fortran_name", None) is not None and backend != "callback" and \
                not hasattr(m, "compiled_ipar"):
            check_builtin(m)


def run(method, models, q0s, v0s, t_end, h, t0, every, backend, project, raise_on_failure, steps, threads=None):
    """The Results of trajectories k of ``method`` on models[k] from (q0s[k], v0s[k]) in ONE driver call:
    ``run`` (threads None: one trajectory, any model) or ``run_batch`` (built-in models in threads).
    steps: the variable-step options of :meth:`Integrator.integrate` by name (rtol None: fixed steps)."""
    batch = threads is not None
    first = models[0]
    rtol = steps["rtol"]
    if rtol is not None:
        t0, aopt, t_eval, max_steps = adaptive_setup(method, first, t0, t_end, every=every, **steps)
        h, nsteps = 0.0, 0
    else:
        h, t0, every, nsteps = V.time_grid(h, t0, t_end, every)
        aopt, t_eval = FIXED_STEP, None
    kms = [method.kernel_model(m, backend) for m in models]
    args = [km[0] for km in kms]
    if batch:
        for m, km in zip(models, kms):
            a = km[0]
            if (type(m) is not type(first) or km[1:] != kms[0][1:] or a["mh"] != args[0]["mh"]
                    or a["mn"] != args[0]["mn"] or not np.array_equal(a["ipar"], args[0]["ipar"])
                    or a["rpar"].size != args[0]["rpar"].size):
                raise ValueError(f"integrate_batch needs models of one kind and size; {m.name!r} differs "
                                 f"from {first.name!r}")
    _, nq, nv, nl = kms[0]
    nb = len(models)
    starts = [start_state(method, m, t0, q, v, project, backend, f"s[{k}]" if batch else "")
              for k, (m, q, v) in enumerate(zip(models, q0s, v0s))]
    opts = [method._ropt_start(m, t0, q, v) for m, (q, v, _) in zip(models, starts)]
    if rtol is not None:
        opts = [method.adaptive_options(m, *o) for m, o in zip(models, opts)]
        naux = sum(method.adaptive_aux(first).values())
        # the driver writes every accepted step: buffers for max_steps of them; where they would not
        # fit and t_eval is given, for the samples the outputs' interpolation needs (at most 3 per
        # output time, the first and the last: fortran/core/driver.f90 drive_adaptive keeps only those)
        nkeep = [max_steps] + ([3 * len(t_eval) + 2] if t_eval is not None and 3 * len(t_eval) + 2 < max_steps
                               else [])
        for room in nkeep:
            try:
                buf = driver_buffers(nq, nv, nl, room, 1, nstats=len(method.STATS), naux=naux, nres=method.NRES,
                                     nb=nb if batch else None, warn=False, room=True)
                break
            except ValueError as e:
                if room == nkeep[-1]:
                    raise ValueError(f"{method.name} on model {first.name!r}: {e}") from None
        buf.update(hout=np.empty((max_steps,) + ((nb,) if batch else ()), order="F"))
        if not batch:
            buf.update(aopt=aopt)
    else:
        buf = driver_buffers(nq, nv, nl, nsteps, every, nstats=len(method.STATS),
                             naux=sum(method.kernel_aux(first).values()), nres=method.NRES, nb=nb if batch else None)
    opts = [_option_arrays(o) for o in opts]
    mode = dense_mode(method) if t_eval is not None else DENSE_NONE
    teval = np.asarray([t0] if t_eval is None else t_eval, dtype=float)
    dense = dense_buffer(nq, nv, nl, method.NRES, teval, nb if batch else None) if mode else np.zeros(
        (1, teval.size) + ((nb,) if batch else ()), order="F")
    tols = [s[2] for s in starts]
    cpu = time.process_time()
    with _control.kernel_run(reports=True) as krun:
        if batch:
            a = args[0]
            rpar = np.asfortranarray(np.stack([x["rpar"] for x in args], axis=1))
            ropt = np.asfortranarray(np.stack([o[1] for o in opts], axis=1))
            q0f = np.asfortranarray(np.stack([s[0] for s in starts], axis=1))
            v0f = np.asfortranarray(np.stack([s[1] for s in starts], axis=1))
            dctl = np.zeros((2, nb), dtype=np.int32, order="F")
            start, ctl, istat = _fortran.run_batch(
                method.KERNEL, imodel(a, nv), a["ipar"], rpar, opts[0][0], ropt, [t0, h], [nsteps, every, threads, mode],
                np.asfortranarray(np.array(tols, dtype=float).T), q0f, v0f, *(buf[k] for k in _OUT_BATCH), aopt,
                buf["hout"], buf["counts"], teval, dense, dctl)
        else:
            dctl = None
            istat, start, ctl = call_run(method.KERNEL, args[0], nv, *opts[0], t0, h, nsteps, every, starts[0][0],
                                         starts[0][1], buf, tols[0], t_eval, mode, dense)
            istat, start = istat[:, None], start[:, None]
        krun.report(ctl)
    cpu = (time.process_time() - cpu) / nb
    if not (krun.interrupted or krun.aborted or krun.lapack):
        _refused_start(models, backend, istat, start, tols, t0)
    stopped = batch and (krun.interrupted or krun.lapack is not None)   # raised below with every result
    results = []
    for k, m in enumerate(models):
        one = {key: x[..., k] for key, x in buf.items()} if batch else buf
        raise_k = raise_on_failure and not stopped
        run_k = None if batch else krun
        raw = method._driver_raw(m, one, nl, istat[:, k], *(() if rtol is None else (method.adaptive_aux(m),)))
        raw["q0"] = starts[k][0]
        if batch:
            raw["stats"].update(batch_size=nb, threads=threads)
        if rtol is None:
            results.append(method._make_result(m, raw, t0, h, cpu, backend, raise_k, run_k))
            continue
        counts = one["counts"]
        raw["stats"].update(accepted=int(counts[0]), rejected=int(counts[1]), newton_failures=int(counts[2]),
                            rtol=float(aopt[AOPT["rtol"]]), atol=float(aopt[AOPT["atol"]]),
                            norm_mode=int(aopt[AOPT["norm_mode"]]))   # 0 per step, 1 per unit step, 2 per share
        hs = one["hout"][:int(istat[1, k])].copy()
        result = method._make_result(m, raw, t0, hs, cpu, backend, raise_k, run_k)
        if t_eval is not None and result.status == "ok":
            failed, at = (ctl[3], ctl[4]) if dctl is None else (dctl[0, k], dctl[1, k])
            result = dense_result(result, t_eval, dense[..., k] if batch else dense, int(failed), int(at), krun)
        results.append(result)
    if stopped:
        raise_recorded(krun, results, int(istat[0, 0]), int(istat[1, 0]), t0, h if rtol is None else results[0].h)
    return results


def batch_inputs(models, q0s, v0s):
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


def run_each(method, models, q0s, v0s, t_end, h, t0, every, project, raise_on_failure, steps):
    """The trajectories of a batch whose model cannot run in threads (its items are Python calls),
    one ``integrate`` after another; Ctrl-C: Interrupted with the finished results and the
    interrupted one's."""
    results = []
    try:
        for m, q, v in zip(models, q0s, v0s):
            results.append(method.integrate(m, q, v, t_end, h, t0=t0, every=every, project=project,
                                            raise_on_failure=raise_on_failure, **steps))
    except KeyboardInterrupt as e:
        part = getattr(e, "result", None)
        raise Interrupted(str(e) or f"{method.name}: interrupted (Ctrl-C) after {len(results)} of {len(models)} "
                          "trajectories", result=results + ([] if part is None else [part]),
                          step=getattr(e, "step", None), time=getattr(e, "time", None)) from e
    return results
