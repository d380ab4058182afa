"""The IDA driver (SUNDIALS IDA through scikits.odes) for the forms of :mod:`.forms`.

IDA runs in one-step mode: after every internal step the driver reads the
solution at the requested output times that step passed (IDA's own
interpolation, one call in normal mode), checks the conditioning of the dummy
selection, and restarts IDA from the step's state with a new selection when it
has degraded.  Statistics are counted here because scikits.odes 2.7 does not
expose IDA's counters (IDAGetNumSteps, ...): see :func:`integrate`.
"""
from __future__ import annotations

import time as _time

import numpy as np

from .. import _validate as V
from .._control import sigint_as
from ..errors import IntegrationError, Interrupted, NonFiniteError
from ..models.base import nonfinite_item as first_nonfinite_item
from ..models.subset import independent_subset
from ..results import trajectory_residuals
from .forms import FORMS
from .result import ReferenceResult


class IDAFailure(IntegrationError):
    """IDA stopped before the last output time.

    ``flag`` and ``flag_name`` are IDA's return flag (e.g. -3, "ERR_FAIL"), or
    None and "max_steps" when pyint's step limit stopped it; ``ida_message``
    is IDA's explanation; ``time`` the last time IDA reached; ``result`` the
    outputs computed before it.

    Examples
    --------
    pyint's step limit stops IDA on a pendulum chain over a long span:

    >>> import numpy as np
    >>> from pyint.models import PendulumChain
    >>> from pyint.reference import IDAFailure, integrate
    >>> model = PendulumChain(n_links=2)
    >>> q0, v0 = model.initial_state()
    >>> try:
    ...     integrate(model, np.linspace(0.0, 10.0, 11), q0, v0, max_steps=20)
    ... except IDAFailure as exc:
    ...     print(exc.flag_name, exc.time < 10.0)
    max_steps True
    """

    def __init__(self, message, result=None, step=None, time=None, flag=None, flag_name="",
                 ida_message=""):
        super().__init__(message, result=result, step=step, time=time)
        self.flag = flag
        self.flag_name = flag_name
        self.ida_message = ida_message


def check_times(times):
    """Output times as a float64 vector: finite, at least two, strictly increasing."""
    try:
        t = np.asarray(times, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"times must be an array of numbers, got {times!r}") from None
    if t.ndim != 1 or t.size < 2:
        raise ValueError(f"times must be a 1-D array of at least two times (t0 first), got shape {t.shape}")
    if not np.all(np.isfinite(t)):
        raise ValueError("times contains NaN or Inf")
    if np.any(np.diff(t) <= 0):
        bad = int(np.flatnonzero(np.diff(t) <= 0)[0])
        raise ValueError(f"times must be strictly increasing: times[{bad}] = {t[bad]} >= times[{bad + 1}] = {t[bad + 1]}")
    return np.ascontiguousarray(t)


class _Counters:
    def __init__(self):
        self.residuals = 0
        self.jacobians = 0
        self.steps = 0
        self.failed_attempts = 0
        self.attempt_times = set()
        self.error = None
        self.interrupted = False  # Ctrl-C during the solve (sigint_as): the callbacks stop IDA
        self.messages = []  # what IDA's error handler reported (instead of printing it)


def nonfinite_item(form, t, y, yp):
    """A :class:`NonFiniteError` naming the first model item that is non-finite at the state in
    (y, y') (:func:`pyint.models.base.nonfinite_item`), or None (finite items: e.g. an overflow of
    a wild Newton iterate, recoverable)."""
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(yp))):
        return None
    q, v, a, _, _ = form.unpack(y, yp)
    return first_nonfinite_item(form.model, t, q, v, a)


def _callbacks(form, counts):
    """The residual and Jacobian callables IDA calls (return 0 ok, 1 recoverable, -1 fatal).

    After Ctrl-C (``counts.interrupted``) they return -1 at once, so IDA stops at its next call
    and the driver raises :class:`pyint.errors.Interrupted`.  A non-finite residual or Jacobian at a finite state whose model items are non-finite is
    fatal at once, with the item named (:func:`nonfinite_item`); otherwise (an overflow at a
    wild iterate) it is recoverable and IDA retries with a smaller step."""

    def nonfinite(t, y, yp):
        try:
            err = nonfinite_item(form, t, y, yp)
        except Exception as exc:
            err = exc
        if err is None:
            return 1
        counts.error = err
        return -1

    def resfn(t, y, yp, r):
        if counts.interrupted:
            return -1
        counts.residuals += 1
        counts.attempt_times.add(t)
        try:
            form.residual(t, y, yp, r)
        except Exception as exc:  # a model error: stop IDA, re-raised by the driver
            counts.error = exc
            return -1
        return 0 if np.all(np.isfinite(r)) else nonfinite(t, y, yp)

    def jacfn(t, y, yp, r, cj, jac):
        if counts.interrupted:
            return -1
        counts.jacobians += 1
        try:
            form.jacobian(t, y, yp, cj, jac)
        except Exception as exc:
            counts.error = exc
            return -1
        return 0 if np.all(np.isfinite(jac)) else nonfinite(t, y, yp)

    def errfn(code, module, function, msg, *user_data):
        text = msg.decode(errors="replace") if isinstance(msg, bytes) else str(msg)
        name = function.decode(errors="replace") if isinstance(function, bytes) else str(function)
        counts.messages.append(f"{name}: {text}")

    return resfn, jacfn, errfn


def _flag_info(ret):
    from scikits.odes.sundials.ida import STATUS_MESSAGE, StatusEnumIDA

    try:
        flag = StatusEnumIDA(int(ret.flag))
        return int(flag), flag.name, STATUS_MESSAGE.get(flag, "")
    except ValueError:
        return int(ret.flag), f"flag{int(ret.flag)}", ""


def integrate(model, times, q0, v0, form="dummy_derivative", rtol=1e-10, atol=None, max_steps=500_000,
              reselect=4.0, max_order=5, check_initial=True, backend="auto"):
    r"""Solve the model with IDA on the named form; outputs at ``times`` (times[0] = t0), uncached.

    :func:`solve` is the cached entry with defaults; this is the solver itself.

    Parameters
    ----------
    model : Model
        The system.
    times : array_like
        The output times; times[0] is the initial time.
    q0, v0 : array_like
        The initial state; it must satisfy the position and velocity constraints (a0 and lam0,
        and the dummies, are computed from the index-1 system).
    form : {"dummy_derivative", "index1", "ggl"}, default "dummy_derivative"
        The DAE form (:data:`FORMS`).
    rtol : float, default 1e-10
        IDA's relative tolerance.
    atol : float, optional
        IDA's absolute tolerance (default: rtol).
    max_steps : int, default 500000
        The limit on IDA's internal steps over the whole run.
    reselect : float or None, default 4.0
        Restart with a new dummy selection when ``selection_quality`` exceeds it (None:
        never).
    max_order : int, default 5
        IDA's maximal BDF order.
    check_initial : bool, default True
        Run IDA's consistent-initial-value solver (IDACalcIC) on the start of the index-1
        forms and report the largest change it makes as ``initial_correction`` (units of
        ``rtol |y| + atol``).
    backend : {"auto", "fortran", "callback"}, default "auto"
        How the model's items are evaluated (as for :meth:`pyint.Integrator.integrate`).

    Returns
    -------
    ReferenceResult
        ``method == "ida"``, with the statistics below in ``stats``.

    Raises
    ------
    IDAFailure
        IDA stopped before the last output time.

    Notes
    -----
    IDA's local error test covers q and v only; the multipliers and the
    dummy derivatives (force-, velocity- and acceleration-level unknowns)
    are left out of it.  At each output time q and v are IDA's (interpolated
    within its last step; for the dummy-derivative form with q[Sq], v[Sv]
    re-solved from the constraints, :meth:`forms.DummyDerivative.complete`);
    :math:`a` and :math:`\lambda` are the values consistent with them (the index-1 system at that
    :math:`(t, q, v)`).

    Statistics (counted by pyint from IDA's calls into Python, exact):
    ``steps`` (successful internal steps), ``residual_evaluations``,
    ``jacobian_evaluations`` (the analytic Jacobian of the form; IDA never
    differences the residual), ``failed_step_attempts`` (rejected attempts:
    error-test and nonlinear-convergence failures together, counted from the
    distinct times at which IDA evaluated the residual within one step),
    ``restarts`` (re-selections of the dummies), ``output_correction`` (the
    largest change that completion made, in units of ``rtol |x| + atol``), and
    the largest constraint residuals over all accepted steps, evaluated on
    IDA's own (y, y') there: ``step_residual_position``,
    ``step_residual_velocity``, ``step_residual_acceleration`` (holonomic and
    nonholonomic together).
    """
    from scikits.odes import dae

    if form not in FORMS:
        raise ValueError(f"form must be one of {sorted(FORMS)}, got {form!r}")
    times = check_times(times)
    rtol = V.as_real(rtol, "rtol", positive=True)
    atol = rtol if atol is None else V.as_real(atol, "atol", positive=True)
    max_steps = V.as_int(max_steps, "max_steps", minimum=1)
    max_order = V.as_int(max_order, "max_order", minimum=1)
    if max_order > 5:
        raise ValueError(f"max_order must be <= 5 (IDA's BDF orders 1..5), got {max_order}")
    if reselect is not None:
        reselect = V.as_real(reselect, "reselect")
        if reselect <= 1.0:
            raise ValueError(f"reselect must be > 1 (a fresh selection has quality ~1), got {reselect}")
    t0 = float(times[0])
    q0 = V.as_vector(q0, model.n, "q0")
    v0 = V.as_vector(v0, model.n, "v0")
    V.consistent_initial_state(model, t0, q0, v0)
    # a redundant mechanism: IDA solves the form of its independent rows, as the kernels run them
    # (pyint.models.subset); the outputs keep every row (lam zero on the dropped ones)
    mechanism, model = model, independent_subset(model, t0, q0)
    redundant = np.setdiff1d(np.arange(mechanism.n_constraints), getattr(model, "rows", []))

    fm = FORMS[form](model)
    n, m, nt = model.n, model.n_constraints, times.size
    out = {"q": np.full((nt, n), np.nan), "v": np.full((nt, n), np.nan), "a": np.full((nt, n), np.nan),
           "lam": np.full((nt, m), np.nan)}
    extra_out = {}
    counts = _Counters()
    resfn, jacfn, errfn = _callbacks(fm, counts)
    selections = []
    step_res = np.zeros(3)
    ic_correction = float("nan")  # stays NaN when IDACalcIC is not run
    out_correction = 0.0
    nout = 0
    t_reached = t0

    def store(k, t, y, yp):
        nonlocal out_correction
        q_ida, v_ida, _, _, extra = fm.unpack(y, yp)
        q, v = fm.complete(t, q_ida, v_ida)
        change = np.concatenate([np.abs(q - q_ida) / (rtol * np.abs(q_ida) + atol),
                                 np.abs(v - v_ida) / (rtol * np.abs(v_ida) + atol)])
        out_correction = max(out_correction, float(np.max(change)))
        a, lh, ln = model.consistent_acceleration(t, q, v)
        out["q"][k], out["v"][k], out["a"][k], out["lam"][k] = q, v, a, np.concatenate([lh, ln])
        for key, val in extra.items():
            extra_out.setdefault(key, np.full((nt, np.size(val)), np.nan))[k] = val

    def finish(status, message):
        k = nout
        t = times[:k]
        arrays = {key: val[:k] for key, val in out.items()}
        if model is not mechanism:
            arrays["lam"] = model.full_multipliers(arrays["lam"])
        res, energy = trajectory_residuals(mechanism, t, arrays["q"], arrays["v"], arrays["a"], backend)
        stats = {"steps": counts.steps, "residual_evaluations": counts.residuals,
                 "jacobian_evaluations": counts.jacobians, "failed_step_attempts": counts.failed_attempts,
                 "restarts": max(len(selections) - 1, 0), "initial_correction": ic_correction,
                 "output_correction": out_correction,
                 "step_residual_position": step_res[0], "step_residual_velocity": step_res[1],
                 "step_residual_acceleration": step_res[2]}
        params = {"form": form, "rtol": rtol, "atol": atol, "reselect": reselect, "max_order": max_order,
                  "max_steps": max_steps, "check_initial": bool(check_initial)}
        extra = {key: val[:k] for key, val in extra_out.items()}
        if fm.reselects:
            extra["selections"] = selections
        return ReferenceResult(method="ida", model=mechanism, t=t, residual=res,
                               energy=energy if model.conservative else None, stats=stats, params=params,
                               h=float("nan"), status=status, message=message,
                               cpu_time=_time.process_time() - cpu, extra=extra,
                               redundant=redundant if model is not mechanism else np.zeros(0, dtype=int), **arrays)

    def fail(message, flag=None, flag_name="", ida_message="", cause=None):
        result = finish("ida_failed", message)
        err = IDAFailure(message, result=result, step=counts.steps, time=t_reached, flag=flag,
                         flag_name=flag_name, ida_message=ida_message)
        if cause is not None:
            raise err from cause
        raise err

    def check(ret, what):
        if counts.interrupted:
            message = (f"IDA on the {form} form of {model.name!r} interrupted (Ctrl-C) during {what} at "
                       f"t = {t_reached:.10g}, {nout} of {nt} output times computed")
            raise Interrupted(message, result=finish("interrupted", message), step=counts.steps,
                              time=t_reached)
        if counts.error is not None:
            exc = counts.error
            said = str(exc) if isinstance(exc, NonFiniteError) else f"the model raised {type(exc).__name__}: {exc}"
            fail(f"IDA on the {form} form of {model.name!r} stopped during {what} at t = {t_reached:.10g}: "
                 f"{said}", cause=exc)
        if ret is not None and ret.flag < 0:
            flag, name, text = _flag_info(ret)
            said = f" IDA said: {counts.messages[-1]}" if counts.messages else ""
            fail(f"IDA failed on the {form} form of {model.name!r} during {what}: flag {flag} ({name}: "
                 f"{text or ret.message}); reached t = {t_reached:.10g} after {counts.steps} steps, "
                 f"{nout} of {nt} output times computed.{said}", flag, name,
                 counts.messages[-1] if counts.messages else text or str(ret.message))

    def start(t, q, v):
        """A new IDA run from (t, q, v): select dummies, consistent values, IDACalcIC check."""
        nonlocal ic_correction
        fm.select(t, q)
        a, lh, ln = model.consistent_acceleration(t, q, v)
        y0, yp0 = fm.initial(t, q, v, a, np.concatenate([lh, ln]))
        atol_vec = np.full(fm.size, atol)
        if fm.newton_atol_excluded is not None:
            atol_vec[fm.error_excluded_idx] = fm.newton_atol_excluded
        opts = dict(old_api=False, rtol=rtol, atol=atol_vec, jacfn=jacfn, err_handler=errfn,
                    one_step_compute=True, order=max_order)
        if check_initial and fm.index1 and fm.algebraic_idx.size:
            checker = dae("ida", resfn, algebraic_vars_idx=fm.algebraic_idx, compute_initcond="yp0",
                          compute_initcond_t0=1e-3 * (times[-1] - t), **opts)
            ret = checker.init_step(t, y0, yp0)
            check(ret, "the consistent-initial-value check (IDACalcIC)")
            change = np.abs(np.asarray(ret.values.y) - y0) / (rtol * np.abs(y0) + atol)
            ic_correction = float(np.fmax(ic_correction, np.max(change)))
        if fm.error_excluded_idx.size:
            opts.update(algebraic_vars_idx=fm.error_excluded_idx, exclude_algvar_from_error=True)
        solver = dae("ida", resfn, **opts)
        check(solver.init_step(t, y0, yp0), "the initialisation")
        if fm.reselects:
            selections.append({"t": t, **fm.selection()})
        return solver, y0, yp0

    def interrupt(signum, frame):
        counts.interrupted = True

    # Ctrl-C: a KeyboardInterrupt raised inside IDA's residual is printed and ignored by
    # scikits.odes ("Exception ignored in ...ida._res") and IDA carries on; SIGINT only sets
    # counts.interrupted here, the callbacks then return -1 (IDA stops) and check() raises
    with sigint_as(interrupt):
        cpu = _time.process_time()
        solver, y0, yp0 = start(t0, q0, v0)
        store(0, t0, y0, yp0)
        nout = 1
        while nout < nt:
            if counts.steps >= max_steps:
                fail(f"IDA on the {form} form of {model.name!r} used max_steps = {max_steps} internal steps and "
                     f"reached t = {t_reached:.10g}; {nout} of {nt} output times computed",
                     flag_name="max_steps", ida_message="step limit reached")
            counts.attempt_times.clear()
            ret = solver.step(times[-1])
            check(ret, "a step")
            counts.steps += 1
            counts.failed_attempts += max(len(counts.attempt_times) - 1, 0)
            tn = float(ret.values.t)
            t_reached = tn
            y_n, yp_n = np.array(ret.values.y, dtype=float), np.array(ret.values.ydot, dtype=float)
            q, v, a, _, _ = fm.unpack(y_n, yp_n)
            step_res = np.maximum(step_res, fm.constraint_levels(tn, q, v, a))
            while nout < nt and times[nout] <= tn:
                solver.set_options(one_step_compute=False)
                r_out = solver.step(times[nout])  # tout inside the last step: interpolation only
                solver.set_options(one_step_compute=True)
                check(r_out, "output interpolation")
                store(nout, times[nout], np.asarray(r_out.values.y), np.asarray(r_out.values.ydot))
                nout += 1
            if nout < nt and fm.reselects and reselect is not None:
                if fm.selection_quality(tn, q) > reselect:
                    # IDA's step holds the constraints to its Newton tolerance: project onto them
                    # (an O(tolerance) change) so that the restart is consistent to round-off
                    q = V.project_position(model, tn, q) if model.n_hol else q
                    solver = start(tn, q, V.project_velocity(model, tn, q, v))[0]
        check(None, "the last output")  # Ctrl-C after the last callback still interrupts
        return finish("ok", "")
