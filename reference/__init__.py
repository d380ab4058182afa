r"""Reference solutions: SUNDIALS IDA (through scikits.odes) on index-1 forms of any model.

Seed 000 validates its alpha-methods against DASSL on a dummy-derivative
index-1 form of the snakeboard; ``pyint.reference`` is that validation layer
for every model of :class:`pyint.models.Model`, with IDA as the DASSL
substitute.  The reduction is automatic: a model only provides its items
(mass, force, constraints, their Jacobians, hol_gamma, nh_gamma; finite
differences fill in what it omits).

Beside it, independent of the integrators under test: :mod:`pyint.reference.ode` (SciPy's DOP853
on the index-1 form, the tight reference of short spans) and :mod:`pyint.reference.lie` (rigid
bodies in unit quaternions, by IDA or DOP853, compared in the Lie-group coordinates).

Usage::

    from pyint.reference import solve
    ref = solve(model, times, q0, v0, rtol=1e-10)     # a ReferenceResult
    ref.q[-1], ref.lam[-1], ref.stats["steps"], ref.form
    ds = ref.to_xarray()                               # what the cache stores

The model is :math:`M(q)\, \dot v = f(t, q, v) - G^\mathsf{T}\lambda_h - A^\mathsf{T}\lambda_n`,
:math:`\dot q = v` with holonomic constraints :math:`g(t, q) = 0` (:math:`G = g_q`) and nonholonomic
constraints :math:`A(t, q)\, v + b = 0`; :math:`C = [G; A]`; :math:`\gamma_h`, :math:`\gamma_n` the
acceleration terms (:math:`G a + \gamma_h = 0`, :math:`A a + \gamma_n = 0`).

The forms (``form=``)
---------------------
``"dummy_derivative"`` (default; Mattsson and Soderlind, SIAM J. Sci. Comput. 14 (1993) 677)
    Keep every constraint level: :math:`g = 0`, :math:`G v + g_t = 0` and :math:`G a + \gamma_h = 0`
    (holonomic: index 3, differentiated twice), :math:`A v + b = 0` and
    :math:`A a + \gamma_n = 0` (nonholonomic: index 2, differentiated once).  That is
    n_hol + n_constraints equations more than the model has unknowns; to
    keep the system square, for each differentiated constraint one
    derivative becomes a new algebraic unknown (a *dummy derivative*):
    :math:`n_\text{hol}` components :math:`\dot q[S_q]` are replaced by :math:`d_q` and
    :math:`n_\text{hol} + n_\text{nonhol}` components :math:`\dot v[S_v]` by :math:`\dot w`, the
    derivative of a velocity-level dummy :math:`w` (:math:`w = v[S_v]` on the exact solution; only
    :math:`\dot w` enters the equations).  The multipliers are not unknowns: the :math:`S_v` rows of
    the dynamics give them, :math:`z = -C_S^{-\mathsf{T}} (M v_d - f)[S_v]` with
    :math:`C_S = C[:, S_v]`, and the other rows are kept.  Unknowns :math:`y = (q, v, d_q, w)`,
    equations

    .. math::

        \dot q[F_q] = v[F_q], \quad d_q = v[S_q], \quad
        (M(q)\, v_d - f + C^\mathsf{T} z)[F_v] = 0 \quad (v_d = \dot v \text{ with } v_d[S_v] = \dot w),\\
        g = 0, \quad G v + g_t = 0, \quad A v + b = 0, \quad
        G v_d + \gamma_h = 0, \quad A v_d + \gamma_n = 0.

    :math:`q[S_q]`, :math:`v[S_v]` and :math:`d_q` are then algebraic (their derivatives no longer
    appear); the system is index 1 as long as :math:`G[:, S_q]` and :math:`C[:, S_v]` are
    nonsingular (the algebraic equations solve, in turn, for :math:`q[S_q]`, :math:`v[S_v]`,
    :math:`d_q` and the accelerations).  Every unknown is a position or a velocity,
    so one tolerance fits all of them (see "Tolerance proportionality" below).

    *Choice of the dummies.*  Sq is chosen on G, Sv on C at the current
    state: QR with column pivoting gives a first choice, then single column
    swaps are made while one grows ``|det|`` of the block by more than 1 %
    (a locally maximal-volume block, :func:`forms.select_columns`).  Its
    quality ``max |C[:, S]^-1 C|`` (:func:`forms.selection_quality`) is then
    ~1; an entry b > 1 says that swapping would grow ``|det|`` by the factor b,
    so the measure does not depend on how the constraints are scaled.

    *Re-selection.*  After every IDA step the quality of the current blocks
    is evaluated; when it exceeds ``reselect`` (default 4: some other choice
    is four times better conditioned) IDA is restarted from that step's
    (t, q, v) with a fresh selection and freshly computed consistent values.
    ``ReferenceResult.extra["selections"]`` lists when each selection began.

``"index1"``
    The plain acceleration-level form :math:`y = (q, v, \lambda)`: :math:`\dot q = v`,
    :math:`M \dot v = f - C^\mathsf{T}\lambda`, :math:`G \dot v + \gamma_h = 0`,
    :math:`A \dot v + \gamma_n = 0`.  Index 1; the position
    and velocity constraints are not imposed and drift.

``"ggl"``
    The stabilized index-2 form of Gear, Gupta and Leimkuhler (1985),
    :math:`y = (q, v, \lambda, \mu)`: :math:`M(q)(\dot q - v) + G^\mathsf{T}\mu = 0` (that is
    :math:`\dot q = v - M^{-1} G^\mathsf{T}\mu`), :math:`M \dot v = f - C^\mathsf{T}\lambda`,
    :math:`g = 0`, :math:`G v + g_t = 0`, :math:`A v + b = 0`.  :math:`\mu` vanishes on the exact
    solution (kept in ``extra["mu"]``).  Index 2: :math:`\lambda` and :math:`\mu` are excluded from the error test and get a unit absolute
    tolerance in IDA's Newton test, as the multipliers of the index-1 form do
    (see ``forms._Form.newton_atol_excluded``).

The IDA driver (:func:`ida.integrate`)
---------------------------------------
* Consistent initial values are computed, not assumed: (q0, v0) must hold
  the position and velocity constraints (``project=True`` projects them);
  a0 and lam0 come from the KKT system, the dummies from (v0, a0).  For the
  index-1 forms IDA's own IDACalcIC is then run on these values as a check;
  the largest change it makes is ``stats["initial_correction"]``
  (in units of ``rtol |y| + atol``; below 1 means IDA accepted them).
* rtol and atol (scalar) apply to q and v.  IDA's local error test covers q
  and v only (including the algebraic q[Sq], v[Sv] of the dummy-derivative
  form); the other unknowns are determined by q and v, and with multipliers
  and acceleration-level dummies in the error test IDA's step control became
  erratic below rtol = 1e-10 (on chain2, rtol = 1e-12: 28887 steps and an
  error of 2e-9 with them, 1119 steps and 7e-11 without).
* *Tolerance proportionality.*  IDA's Newton test measures every unknown
  against ``rtol |x| + atol_x``, and its tolerances are fixed for a run.  A
  Newton change d of an acceleration- or force-level unknown moves v only by
  ~d / cj (cj ~ 1/h, IDA's leading coefficient), so no fixed tolerance suits
  such an unknown at every step size: held to ``rtol |a|`` (ca04593) the steps of
  the 3-link chain collapsed at rtol 1e-11 (from 6e-4 to 4e-7 at t = 0.4893:
  the predicted accelerations carry cj times the Newton error of the stored
  velocities, and IDA's four iterations no longer reached ``rtol |a|``; under
  some OpenBLAS kernels only); with a unit tolerance instead the Newton test
  ignored them and the accuracy suffered (the seed-001 manipulator's T = 1
  quaternion reference at rtol 1e-12: 6.1e-8 m from DOP853, 63 609 steps,
  19 642 failed attempts).  The dummy-derivative form therefore has no such
  unknowns: the multipliers are eliminated and the dummy accelerations are
  the derivatives w' of velocity-level dummies, so IDA's Newton change of w
  is the acceleration change divided by cj, which is the scaling Hairer and
  Wanner give index-2 variables in radau5, at every step size; dq and w get
  the tolerance of v.  (The manipulator's reference: 2.4e-9 m from DOP853,
  25 918 steps, 280 failed attempts; the 3-link chain at rtol 1e-11:
  3.6e-10 ... 6.5e-10 in q, <= 2 % failed attempts, under Haswell, Zen,
  Sandybridge and SkylakeX.)  The index-1 and GGL forms keep their multipliers (and
  mu) with a unit tolerance in the Newton test
  (``forms._Form.newton_atol_excluded``).
* A model that only defines mass, force and its constraints works on every
  form: the finite-difference fallbacks of ``pyint.models.base`` that enter
  the constraint equations (G, g_t, hol_gamma, nh_gamma) are fourth-order
  (directional) differences.
* A non-finite residual or Jacobian at a finite state whose model items are
  non-finite stops IDA at once: :class:`IDAFailure` names the item, the time
  and q (a :class:`pyint.errors.NonFiniteError` is its cause).
* Outputs: IDA runs in one-step mode; at each requested time q and v are
  IDA's interpolant within its last step.  For the dummy-derivative form
  the algebraic components q[Sq], v[Sv] are then re-solved from g = 0 and
  the velocity constraints given the others (IDA solves those equations
  only to its Newton tolerance; the change is ``stats["output_correction"]``,
  in units of ``rtol |x| + atol``); a and lam are the values consistent with
  (t, q, v) (the KKT system).  So at the outputs the dummy-derivative form
  holds every constraint level to round-off, the index-1 form shows its
  position and velocity drift, and the acceleration level is at round-off
  for every form by construction.  What a form keeps at IDA's own steps is
  in ``stats["step_residual_position"]``, ``["step_residual_velocity"]``,
  ``["step_residual_acceleration"]`` (the largest residuals over all
  accepted steps, on IDA's (y, y') there: Newton-tolerance sized).
* Statistics: scikits.odes 2.7 does not expose IDA's counters
  (IDAGetNumSteps, IDAGetNumErrTestFails, ...), so pyint counts them from
  IDA's calls into Python: ``steps``, ``residual_evaluations``,
  ``jacobian_evaluations`` (IDA uses the form's analytic Jacobian, built
  from the model items, with central differences only for the derivatives
  of gamma), ``failed_step_attempts`` (error-test and convergence failures
  together: rejected attempts show up as a change of the time at which IDA
  evaluates the residual within one step), ``restarts``.
* Failure: :class:`IDAFailure` (an :class:`pyint.errors.IntegrationError`)
  with IDA's flag, its name and message, the time reached and the outputs
  computed so far; a model exception inside the residual is chained to it.
* Ctrl-C: during the solve SIGINT only sets a flag (scikits.odes prints and
  ignores an exception raised inside IDA's residual, so a KeyboardInterrupt
  there was lost); the residual then returns IDA's unrecoverable error and the
  driver raises :class:`pyint.errors.Interrupted` (a KeyboardInterrupt) with
  the outputs computed so far, within milliseconds.

The error estimate
------------------
``solve(..., error_estimate=True)`` also solves at rtol/10 (atol/10) and sets
``result.error_estimate = {"q", "v", "lam"}``: ``|y(rtol) - y(rtol/10)|`` at
every output time, an estimate of the returned solution's absolute error
(within a factor 0.56 ... 1.26 of the true error on the closed-form problems,
every form, rtol 1e-6 ... 1e-12); it is stored in the NetCDF
(``error_estimate_q``, ...; attribute ``error_estimate_rtol``) and read back
from the cache.  ``solve(..., target_error=eps)`` tightens rtol tenfold until
the estimate in q and v is at most eps, and raises IntegrationError naming the
best estimate reached when rtol would go below :data:`TIGHTEST_RTOL`.

The cache (:mod:`.cache`)
-------------------------
:func:`solve` stores each result as NetCDF (``ReferenceResult.to_xarray()``
with ``form``, ``rtol``, ``atol`` and the key as attributes) under
``cache_dir`` (default ``$PYINT_REFERENCE_CACHE`` or
``~/.cache/pyint/reference``; checked for writability before IDA runs),
keyed by the model's code (the source files of the classes in its MRO) and
parameters (its attributes, exact), ``describe()``, pyint's version, the
initial state, the times, the form and the options; a second call with the
same arguments loads the file, once it has checked that the file is that
solve (its stored key, its times and the shapes of q, v, a, lam; another
file at the key's name is recomputed, with a warning).  The temporaries of
writers killed before their rename are removed.  A model that cannot be keyed safely (a class
without a source file, an attribute that is a function) is computed and not
cached, and ``result.cache_note`` says why; a failed write returns the result
with a warning.
"""
from __future__ import annotations

from . import cache as _cache
from .forms import FORMS, select_columns, selection_quality
from ..errors import IntegrationError
from .ida import IDAFailure, check_times as _check_times, integrate
from .result import ReferenceResult

__all__ = ["solve", "integrate", "FORMS", "IDAFailure", "ReferenceResult", "select_columns",
           "selection_quality"]


#: The tightest rtol ``solve(..., target_error=...)`` tries (IDA's corrector and the model's
#: round-off leave nothing to gain below it).
TIGHTEST_RTOL = 1e-13


def solve(model, times, q0=None, v0=None, *, rtol=1e-10, atol=None, form="dummy_derivative",
          cache_dir=None, project=False, reselect=4.0, max_order=5, max_steps=500_000,
          check_initial=True, backend="auto", error_estimate=False, target_error=None):
    """Reference solution of ``model`` at ``times`` by SUNDIALS IDA, cached (times[0] is the initial time).

    Parameters
    ----------
    model : Model
        The system (any model of the shared interface).
    times : array_like
        The output times; times[0] is the initial time.
    q0, v0 : array_like, optional
        The initial state (default ``model.initial_state()``); it must satisfy the position
        and velocity constraints, unless ``project`` is True.
    rtol : float, default 1e-10
        IDA's relative tolerance on q and v.
    atol : float, optional
        IDA's absolute tolerance (default: rtol).
    form : {"dummy_derivative", "index1", "ggl"}, default "dummy_derivative"
        The DAE form IDA integrates (:data:`FORMS`).
    cache_dir : str, None or False, optional
        The directory of the NetCDF cache (None: the default, see
        ``pyint.reference.cache.default_cache_dir``; False: no cache); checked for writability
        before IDA runs.
    project : bool, default False
        Project an inconsistent initial state onto the constraints.
    reselect, max_order, max_steps, check_initial, backend
        Passed to :func:`integrate`.
    error_estimate : bool, default False
        Also solve at rtol/10 (and atol/10) and set ``result.error_estimate`` = {"q", "v",
        "lam"}: the absolute difference of the two solutions at every output time (an estimate
        of the error of the returned solution; stored in its NetCDF and cache file).
    target_error : float, optional
        Tighten rtol (and atol) tenfold until the estimated error in q and v (max over time and
        components) is at most ``target_error``; returns that solution with its estimate.

    Returns
    -------
    ReferenceResult
        A :class:`pyint.Result` with ``method == "ida"``; ``result.cache_file`` names the file
        it was stored in or loaded from, ``result.from_cache`` says which, and
        ``result.cache_note`` why it was not cached (a model without a safe key, or a failed
        write: then also a warning).

    Raises
    ------
    IDAFailure
        IDA stopped before the last output time (failures are not cached).
    IntegrationError
        ``target_error`` not reached even at rtol = :data:`TIGHTEST_RTOL` (the message names
        the best estimate).

    Examples
    --------
    >>> import numpy as np
    >>> from pyint import PendulumChain
    >>> from pyint.reference import solve
    >>> model = PendulumChain(n_links=2)
    >>> q0, v0 = model.initial_state([np.pi / 3, np.pi / 2])
    >>> ref = solve(model, np.linspace(0.0, 1.0, 11), q0, v0, rtol=1e-10, cache_dir=False)
    >>> ref.method, ref.q.shape, ref.eps_pos < 1e-8
    ('ida', (11, 4), True)
    """
    from .. import _validate as V

    if form not in FORMS:
        raise ValueError(f"form must be one of {sorted(FORMS)}, got {form!r}")
    if hasattr(model, "compiled_ipar"):
        # a SymbolicModel: compile (or load from its cache) so that the residuals come from the
        # compiled items, the very routine the kernels call (pyint/models/symbolic.py)
        model.compiled_ipar()
    if form not in FORMS:
        raise ValueError(f"form must be one of {sorted(FORMS)}, got {form!r}")
    if q0 is None or v0 is None:
        if not hasattr(model, "initial_state"):
            raise TypeError(f"model {model.name!r} has no initial_state(); pass q0 and v0")
        d_q, d_v = model.initial_state()
        q0 = d_q if q0 is None else q0
        v0 = d_v if v0 is None else v0
    times = _check_times(times)
    q0 = V.as_vector(q0, model.n, "q0")
    v0 = V.as_vector(v0, model.n, "v0")
    q0, v0 = V.consistent_initial_state(model, float(times[0]), q0, v0, project=project)
    rtol = V.as_real(rtol, "rtol", positive=True)
    atol = rtol if atol is None else V.as_real(atol, "atol", positive=True)
    if target_error is not None:
        target_error = V.as_real(target_error, "target_error", positive=True)
    if cache_dir is not False:
        cache_dir = _cache.default_cache_dir() if cache_dir is None else cache_dir
        _cache.check_writable(cache_dir)
    options = dict(reselect=reselect, max_order=max_order, max_steps=max_steps, check_initial=check_initial)

    def run(rt, at):
        rt, at = float(f"{rt:.12g}"), float(f"{at:.12g}")  # rtol / 10 / 10 keys as 1e-12 does
        return _solve_once(model, times, q0, v0, form, cache_dir, backend, dict(rtol=rt, atol=at, **options))

    if target_error is None:
        result = run(rtol, atol)
        if error_estimate and not _has_estimate(result):
            _attach_estimate(result, run(rtol / 10, atol / 10), cache_dir)
        return result
    result, best = run(rtol, atol), None
    while True:
        try:
            if not _has_estimate(result):
                _attach_estimate(result, run(result.rtol / 10, result.atol / 10), cache_dir)
        except IntegrationError as exc:
            raise IntegrationError(
                f"target_error = {target_error:g} not reached: IDA failed at rtol = {result.rtol / 10:g}; "
                + (f"the best estimated error was {best[0]:.3g} at rtol = {best[1]:g}" if best else
                   "no error estimate was obtained") + f" ({exc})", result=getattr(exc, "result", None)) from exc
        est = result.error_estimate_max()
        best = (est, result.rtol) if best is None or est < best[0] else best
        if est <= target_error:
            return result
        if result.rtol / 100 < TIGHTEST_RTOL * (1 - 1e-9):
            raise IntegrationError(
                f"target_error = {target_error:g} not reached: the best estimated error (q, v) was "
                f"{best[0]:.3g} at rtol = {best[1]:g}; rtol below {TIGHTEST_RTOL:g} is not tried",
                result=result)
        result = run(result.rtol / 10, result.atol / 10)


def _solve_once(model, times, q0, v0, form, cache_dir, backend, options):
    """One IDA solution through the cache (``cache_dir`` False: no cache)."""
    path, note = None, ""
    if cache_dir is not False:
        try:
            key, description = _cache.cache_key(model, times, q0, v0, form, options)
        except _cache.NoSafeKey as exc:
            note = f"not cached: no safe cache key for model {model.name!r} ({exc})"
        else:
            path = _cache.cache_path(cache_dir, model, key, form)
            cached = _cache.load(path, model, key, times)
            if cached is not None:
                cached.cache_file, cached.from_cache = str(path), True
                cached.cache_key = (key, description)
                return cached
    result = integrate(model, times, q0, v0, form=form, backend=backend, **options)
    result.cache_note = note
    if path is not None:
        result.cache_key = (key, description)
        _store(result, path)
    return result


def _store(result, path):
    """Write ``result`` to its cache file; a failed write keeps the result and warns."""
    import warnings

    try:
        _cache.store(result, path, *result.cache_key)
    except OSError as exc:
        result.cache_note = f"not cached: writing {path} failed ({exc})"
        warnings.warn(f"pyint.reference: {result.cache_note}; the result is returned uncached",
                      RuntimeWarning, stacklevel=4)
    else:
        result.cache_file = str(path)


def _has_estimate(result):
    """Whether ``result`` (e.g. from the cache) carries an estimate against rtol / 10."""
    return result.error_estimate is not None and abs(result.error_estimate_rtol * 10 / result.rtol - 1) < 1e-9


def _attach_estimate(result, tight, cache_dir):
    """Set ``result.error_estimate`` from the tighter solution ``tight`` (and re-store ``result``
    in its cache file with the estimate)."""
    import numpy as np

    result.error_estimate = {key: np.abs(getattr(result, key) - getattr(tight, key)) for key in ("q", "v", "lam")}
    result.error_estimate_rtol = tight.rtol
    if cache_dir is not False and getattr(result, "cache_key", None) is not None:
        _store(result, result.cache_file or _cache.cache_path(cache_dir, result.model, result.cache_key[0],
                                                              result.form))
