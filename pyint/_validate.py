"""Input checks shared by every integrator: shapes, finiteness, step size,
consistency of the initial state with the constraints, rank of the
constraint Jacobian.  Every failure is a ValueError/TypeError that names the
problem and, for constraint violations, says by how much."""
from __future__ import annotations

import math
import numbers
import os
import warnings

import numpy as np

#: Default tolerance for "the initial state satisfies the constraints".
CONSISTENCY_TOL = 1e-10

#: Largest step count, ``every`` and size the Fortran kernels take: their integers are C ints.
C_INT_MAX = 2**31 - 1

#: Output arrays (t, q, v, a, lambda of every kept sample) larger than this many bytes are refused
#: before anything is allocated (pass a larger ``every``); overridden by the environment variable
#: ``PYINT_MAX_OUTPUT_BYTES`` (an integer number of bytes) or by assigning this constant.
MAX_OUTPUT_BYTES = 2 * 1024**3

#: Above this many bytes of output a ResourceWarning says how much will be allocated.
WARN_OUTPUT_BYTES = 256 * 1024**2


def as_vector(x, n, name):
    """x as a float64 vector of length n, finite."""
    if type(x) is np.ndarray and x.dtype == np.float64 and x.shape == (n,) and x.flags.c_contiguous:
        arr = x   # (the common case, float64 already: the checks below pass it as it is)
    else:
        try:
            arr = np.asarray(x)
        except Exception as exc:  # pragma: no cover - exotic input
            raise TypeError(f"{name} must be an array of numbers: {exc}") from None
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
        if np.iscomplexobj(arr):
            raise TypeError(f"{name} must be real, got complex values")
        if arr.shape != (n,):
            raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
        arr = np.ascontiguousarray(arr, dtype=np.float64)
    if not np.isfinite(arr).all():
        bad = np.flatnonzero(~np.isfinite(arr))
        raise ValueError(f"{name} contains NaN or Inf at index {bad.tolist()}")
    return arr


def as_real(x, name, positive=False, lo=None, hi=None):
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        try:
            x = float(np.asarray(x).item())
        except Exception:
            raise TypeError(f"{name} must be a real number, got {x!r}") from None
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    if positive and x <= 0:
        raise ValueError(f"{name} must be > 0, got {x}")
    if lo is not None and hi is not None and not lo <= x <= hi:
        raise ValueError(f"{name} must lie in [{lo}, {hi}], got {x}")
    if lo is not None and x < lo:
        raise ValueError(f"{name} must be >= {lo}, got {x}")
    if hi is not None and x > hi:
        raise ValueError(f"{name} must be <= {hi}, got {x}")
    return x


def as_int(x, name, minimum=None, maximum=None):
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {x!r}")
    x = int(x)
    if minimum is not None and x < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {x}")
    if maximum is not None and x > maximum:
        limit = "2**31 - 1 (the kernels' C int)" if maximum == C_INT_MAX else str(maximum)
        raise ValueError(f"{name} must be <= {limit}, got {x}")
    return x


#: The index-1 methods' option ``projection`` (rk4_index1, baumgarte_rk4): "none", the published
#: scheme, or "steps", every step projected onto the constraints (fortran/core/index1.f90: project_step).
PROJECTIONS = ("none", "steps")


def as_projection(projection):
    """``projection`` checked against :data:`PROJECTIONS` (a ValueError naming the choices)."""
    if projection not in PROJECTIONS:
        raise ValueError(f"projection must be one of {list(PROJECTIONS)}, got {projection!r}")
    return projection


def as_every(every):
    """The output stride ``every``: an integer in [1, 2**31 - 1]."""
    return as_int(every, "every", minimum=1, maximum=C_INT_MAX)


def max_output_bytes() -> int:
    """The output size limit: ``PYINT_MAX_OUTPUT_BYTES`` if set, else :data:`MAX_OUTPUT_BYTES`."""
    text = os.environ.get("PYINT_MAX_OUTPUT_BYTES", "").strip()
    if not text:
        return MAX_OUTPUT_BYTES
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"PYINT_MAX_OUTPUT_BYTES must be an integer number of bytes, got {text!r}") from None


def check_output_size(nsamples, values_per_sample, nsteps, every, warn=True, max_steps=False):
    """Refuse (ValueError) output arrays of nsamples x values_per_sample float64 above
    :func:`max_output_bytes`, warn (ResourceWarning) above :data:`WARN_OUTPUT_BYTES`;
    both before anything is allocated, naming ``every``.  warn=False: no warning (a
    variable-step run's buffers for max_steps accepted steps, whose pages stay unused
    until a step is written).  max_steps: nsteps is a variable-step run's max_steps (which
    the refusal names instead of every, an option of fixed steps)."""
    size = 8 * int(nsamples) * int(values_per_sample)
    limit = max_output_bytes()
    if size <= limit and (not warn or size <= WARN_OUTPUT_BYTES):
        return size
    if max_steps and size > limit:
        fits = max(limit // (8 * int(values_per_sample)) - 1, 0)
        raise ValueError(f"max_steps = {nsteps} accepted steps keep up to {nsamples} samples of {values_per_sample} "
                         f"values: {size / 1024**2:.0f} MiB of output, above the limit of {limit / 1024**2:.0f} MiB; "
                         f"lower max_steps (max_steps <= {fits} fits) or raise the limit (environment variable "
                         "PYINT_MAX_OUTPUT_BYTES, in bytes)")
    text = (f"{nsteps} steps with every={every} keep {nsamples} samples of {values_per_sample} values: "
            f"{size / 1024**2:.0f} MiB of output")
    if size > limit:
        # samples kept with every = k: nsteps // k + 1, plus the final state when k does not divide
        fits = nsteps // max(limit // (8 * int(values_per_sample)) - 2, 1) + 1
        raise ValueError(f"{text}, above the limit of {limit / 1024**2:.0f} MiB; keep fewer samples with a "
                         f"larger every (every >= {fits} fits) or raise the limit (environment variable "
                         "PYINT_MAX_OUTPUT_BYTES, in bytes)")
    warnings.warn(f"{text} will be allocated; pass a larger every to keep fewer samples",
                  ResourceWarning, stacklevel=4)
    return size


def time_grid(h, t0, t_end, every):
    """(h, t0, every, nsteps) of a fixed-step run from t0 to t_end, each checked."""
    h = as_real(h, "h", positive=True)
    t0 = as_real(t0, "t0")
    t_end = as_real(t_end, "t_end")
    every = as_every(every)
    return h, t0, every, step_count(t0, t_end, h)


def step_count(t0, t_end, h):
    """Number of steps of size h from t0 to t_end (which must be a multiple of h)."""
    span = t_end - t0
    if span <= 0:
        raise ValueError(f"t_end must be greater than t0, got t0={t0}, t_end={t_end}")
    nsteps = int(round(span / h))
    if nsteps < 1 or abs(nsteps * h - span) > 1e-8 * max(1.0, abs(span)):
        raise ValueError(f"(t_end - t0) = {span} is not an integer multiple of h = {h}")
    if nsteps > C_INT_MAX:
        raise ValueError(f"(t_end - t0) / h = {nsteps} steps exceeds the kernels' limit of 2**31 - 1 steps "
                         "per call; integrate in several pieces or with a larger h")
    return nsteps


def constraint_matrix(model, t, q):
    """[G; A] at (t, q), shape (n_hol + n_nonhol, n)."""
    return np.vstack([model.checked("hol_jac", model.hol_jac(t, q), t), model.checked("nh_A", model.nh_A(t, q), t)])


#: independent_rows' rank threshold on |R_kk| / |R_11| of the column-pivoted QR of C^T: the
#: kernels' (fortran/core/reduced_model.f90: SIGMA_TOL), so both sides drop the same rows.
SIGMA_TOL = 1e-7


def singular_mass(model, t, q):
    """The ValueError naming a singular mass matrix when the index-1 matrix [M C^T; C 0] of a start
    at (t, q) is singular because M is singular on the motions the constraints allow (a zero mass or
    inertia), else None.  The kernel's start reports any singular index-1 matrix as rank-deficient
    constraints, which blamed the constraints even when there were none.  None also when q is None
    or the model is not a vector model (nothing to evaluate)."""
    from scipy.linalg import null_space

    if q is None or not all(hasattr(model, k) for k in ("mass", "hol_jac", "nh_A")) or np.shape(q) != (model.n,):
        return None
    try:
        c = constraint_matrix(model, t, q)
        m = np.asarray(model.mass(q), dtype=float)
        z = np.eye(model.n) if c.shape[0] == 0 else null_space(c)
        ev = np.linalg.eigvalsh(z.T @ (0.5 * (m + m.T)) @ z) if z.shape[1] else np.ones(1)
    except Exception:  # noqa: BLE001 - items that fail here: the kernel's finding stands
        return None
    if not ev[0] <= 1e-12 * max(1.0, float(np.max(np.abs(ev)))):
        return None
    where = "" if c.shape[0] == 0 else " on the motions the constraints allow (Z^T M Z, Z a basis of null(C))"
    zero = [i for i in range(model.n) if np.all(m[i] == 0) and np.all(m[:, i] == 0)]
    rows = f"; row and column {zero} of M are zero" if zero else ""
    return ValueError(
        f"the mass matrix M(q) of model {model.name!r} is singular at t={t}{where}: its smallest eigenvalue is "
        f"{ev[0]:.3e}{rows}.  Every coordinate needs a mass or an inertia: check mass() (a coordinate "
        "without one must be eliminated or given a mass)"
        + ("; the constraint Jacobian [G; A] has full rank" if c.shape[0] and
           np.linalg.matrix_rank(c) == c.shape[0] else ""))


def independent_rows(c):
    """The rows of the constraint Jacobian ``c`` = [G; A] that a redundant mechanism keeps: the
    first rank(C) pivots of the column-pivoted QR of C^T (Golub and Van Loan, Matrix
    Computations, 5.4.2), sorted; all rows when C has full row rank.  The Fortran start
    (fortran/core/reduced_model.f90: drop_redundant_rows) chooses them the same way."""
    from scipy.linalg import qr

    m = c.shape[0]
    if m == 0:
        return np.arange(0)
    _, r, piv = qr(c.T, mode="economic", pivoting=True)
    d = np.abs(np.diag(r))
    rank = int(np.sum(d > SIGMA_TOL * d[0])) if d.size and d[0] > 0 else 0
    return np.arange(m) if rank == m else np.sort(piv[:rank])


def _inconsistent(what, labels, resid, rows, tol):
    """ValueError for constraints that no state near the start satisfies: the dependent rows
    ``rows`` left at ``resid`` after the independent ones were imposed."""
    bad = [int(i) for i in rows if abs(resid[i]) > tol]
    listed = ", ".join(f"{labels(i)} = {resid[i]:.3e}" for i in bad[:6]) + (" ..." if len(bad) > 6 else "")
    return ValueError(f"inconsistent {what} constraints: with the independent rows imposed, the rows that depend "
                      f"on them are not satisfied ({listed}; tolerance {tol:.1e}); no state near the start satisfies "
                      "all of them: check the joints' geometry (two joints that disagree on a length or an axis)")


def project_position(model, t, q, tol=1e-13, maxit=50):
    """Project q onto g(t, q) = 0 (M-orthogonal Gauss-Newton on the independent rows of G, which
    impose the dependent ones of a redundant mechanism; inconsistent rows: ValueError naming them)."""
    q = q.copy()
    minv = None
    for _ in range(maxit):
        g = model.checked("hol", model.hol(t, q), t)
        if np.max(np.abs(g), initial=0.0) <= tol:
            return q
        gq = model.checked("hol_jac", model.hol_jac(t, q), t)
        keep = independent_rows(gq)
        if np.max(np.abs(g[keep]), initial=0.0) <= tol:
            break                     # the dependent rows are not implied by the kept ones
        if minv is None or not model.constant_mass:
            minv = np.linalg.inv(model.checked("mass", model.mass(q)))
        minv_gt = minv @ gq[keep].T
        q -= minv_gt @ np.linalg.solve(gq[keep] @ minv_gt, g[keep])
    else:
        raise ValueError(f"could not project the initial position onto g = 0 (|g| = {np.max(np.abs(g)):.3e})")
    raise _inconsistent("holonomic", lambda i: f"g[{i}]", g, np.setdiff1d(np.arange(g.size), keep), tol)


def project_velocity(model, t, q, v):
    """M-orthogonal projection of v onto G v + g_t = 0, A v + b = 0 (through the independent rows
    of [G; A]: a redundant mechanism's dependent rows follow; inconsistent ones: ValueError)."""
    c = constraint_matrix(model, t, q)
    if c.shape[0] == 0:
        return v

    def residual(v):
        return np.concatenate([np.asarray(model.hol_vel(t, q, v), dtype=float).reshape(model.n_hol),
                               np.asarray(model.nh_vel(t, q, v), dtype=float).reshape(model.n_nonhol)])

    r = residual(v)
    keep = independent_rows(c)
    minv_ct = np.linalg.solve(model.checked("mass", model.mass(q)), c[keep].T)
    v = v - minv_ct @ np.linalg.solve(c[keep] @ minv_ct, r[keep])
    if keep.size < c.shape[0]:
        r = residual(v)
        tol = CONSISTENCY_TOL * max(1.0, float(np.max(np.abs(v), initial=0.0)))
        if np.max(np.abs(r), initial=0.0) > tol:
            raise _inconsistent("velocity", lambda i: f"row {i} of [G; A] v + [g_t; b]", r,
                                np.setdiff1d(np.arange(r.size), keep), tol)
    return v


def check_model_items(model, t, q, v):
    """The model's primary items at (t, q, v) have their declared shapes (ValueError
    naming the item, the expected and the got shape) and are finite (NonFiniteError).
    The items the Fortran kernels request through a callback are checked again
    there (pyint.models.base.Model.fortran_callback), with their derivatives."""
    mh, mn = model.n_hol, model.n_nonhol
    # constraints defined but not declared (a forgotten n_hol = ...): said so, not a reshape error later
    for name, size, call in (("hol", "n_hol", lambda: model.hol(t, q)), ("nh_A", "n_nonhol", lambda: model.nh_A(t, q))):
        if getattr(model, size):
            continue
        try:
            got = np.shape(call())
        except Exception:  # noqa: BLE001 - the base class's default (nothing to report)
            continue
        if got and got[0]:
            raise ValueError(f"model {model.name!r} defines {name}() (it returns {got[0]} "
                             f"{'constraints' if name == 'hol' else 'rows'} at t={t}) but declares {size} = 0: "
                             f"set {size} = {got[0]} in the class ({type(model).__name__})")
    items = [("mass", lambda: model.mass(q)), ("force", lambda: model.force(t, q, v))]
    if mh:
        items += [("hol", lambda: model.hol(t, q)), ("hol_jac", lambda: model.hol_jac(t, q))]
    if mn:
        items += [("nh_A", lambda: model.nh_A(t, q)), ("nh_b", lambda: model.nh_b(t, q))]
    for name, item in items:
        model.checked(name, item(), t)
    if model.constant_mass and getattr(model, "fortran_name", None) is None:
        check_constant_mass(model, q)


def check_constant_mass(model, q):
    """A Python model declaring a constant mass matrix (``constant_mass = True``, the default of
    pyint.models.Model) has the same M at q and at a nearby point (ValueError otherwise): the
    kernels trust the declaration (M(q0) kept for the whole run, (M a)_q = 0), so an M(q) left
    declared constant gave a wrong trajectory with status "ok".  Second-order changes are seen too
    (|dq| = 1e-3 (1 + max|q|), bound 1e-10 max|M|, round-off far below it); a point where mass()
    fails or is not finite is left to the run's own checks."""
    rng = np.random.default_rng(0)
    d = rng.standard_normal(model.n)
    dq = 1e-3 * (1.0 + float(np.max(np.abs(q), initial=0.0))) * d / np.max(np.abs(d))
    try:
        m0 = np.array(model.mass(q), dtype=float)      # copies: a model may return one buffer it refills
        m1 = np.array(model.mass(q + dq), dtype=float)
    except Exception:  # noqa: BLE001 - the run reports a failing item itself
        return
    if m0.shape != (model.n, model.n) or m1.shape != m0.shape or not (np.all(np.isfinite(m0))
                                                                       and np.all(np.isfinite(m1))):
        return
    change = float(np.max(np.abs(m1 - m0), initial=0.0))
    if change > 1e-10 * max(float(np.max(np.abs(m0), initial=0.0)), 1e-300):
        raise ValueError(f"model {model.name!r} declares constant_mass = True (the default of pyint.models.Model) "
                         f"but mass(q) changes with q (max|M(q + dq) - M(q)| = {change:.3e} at |dq| <= "
                         f"{np.max(np.abs(dq)):.1e}); the integrators would keep M(q0) for the whole run: set "
                         "constant_mass = False in the model class")


def start_tolerances(q0, v0, tol=CONSISTENCY_TOL):
    """(tol_q, tol_v): the largest violation of the position and of the velocity constraints an
    initial state may have (tol relative to max(1, max|q0|) and max(1, max|v0|))."""
    return (tol * max(1.0, float(np.abs(q0).max(initial=0.0))),
            tol * max(1.0, float(np.abs(v0).max(initial=0.0))))


def start_violation(model, levels, tols):
    """The ValueError of a start whose levels (max|g|, max|G v + g_t|, max|A v + b|) exceed
    tols = (tol_q, tol_v) (a level that is not finite counts as violated), else None."""
    if model.n_hol and not levels[0] <= tols[0]:
        return ValueError(f"the initial position violates the holonomic constraints: max|g(q0)| = {levels[0]:.3e} "
                          f"> {tols[0]:.1e}; pass project=True to project it onto g = 0")
    for label, err, present in (("G v + g_t", levels[1], model.n_hol), ("A v + b", levels[2], model.n_nonhol)):
        if present and not err <= tols[1]:
            return ValueError(f"the initial velocity violates the constraints: max|{label}| = {err:.3e} "
                              f"> {tols[1]:.1e}; pass project=True to project it onto the constraints")
    return None


def consistent_initial_state(model, t0, q0, v0, project=False, tol=CONSISTENCY_TOL, kernel_checks=False,
                             levels=None):
    """Check (or, with project=True, enforce) g = 0, G v + g_t = 0, A v + b = 0 at t0.

    Returns (q0, v0).  Raises ValueError naming the violated level and the
    size of the violation when project is False (:func:`start_violation`).  kernel_checks: the
    kernel evaluates the model's Fortran twin and checks the rank of [G; A] at its
    start (fortran/core/driver.f90: consistent_start): the Python items are
    then not checked here, nor the rank (unless projecting, which needs it).
    levels: None (the model's Python items) or a function (t, q, v) -> (max|g|,
    max|G v + g_t|, max|A v + b|) that evaluates the three levels another way
    (the Fortran twin's structured items: O(nnz), where the Python default
    G v forms the dense G); a level that is not finite counts as violated.
    """
    if not kernel_checks or project:
        check_model_items(model, t0, q0, v0)

    def measured(q, v):
        if levels is not None:
            return tuple(float(x) for x in levels(t0, q, v))
        err = lambda r: float(np.max(np.abs(np.asarray(r, dtype=float)), initial=0.0))  # noqa: E731
        return (err(model.checked("hol", model.hol(t0, q), t0)) if model.n_hol else 0.0,
                err(model.hol_vel(t0, q, v)) if model.n_hol else 0.0,
                err(model.nh_vel(t0, q, v)) if model.n_nonhol else 0.0)

    tols = start_tolerances(q0, v0, tol)
    bad = start_violation(model, measured(q0, v0), tols)
    if bad is None:
        return q0, v0
    if not project:
        raise bad
    at = measured(q0, v0)
    if model.n_hol and not at[0] <= tols[0]:
        q0 = project_position(model, t0, q0)
        at = measured(q0, v0)
    if start_violation(model, (0.0, at[1], at[2]), tols) is not None:    # the velocity levels at the new q0
        v0 = project_velocity(model, t0, q0, v0)
    return q0, v0


def check_option_names(cls, kwargs):
    """A method class's keyword options checked against its own signature: a misspelt one is a
    TypeError naming the public class, its close matches (difflib) and its options, instead of
    Python's, which names the (often private) base class whose __init__ received it."""
    if not kwargs:
        return
    import difflib
    import inspect
    params = inspect.signature(cls.__init__).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    names = [k for k, p in params.items() if k != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for key in kwargs:
        if key not in names:
            close = difflib.get_close_matches(key, names, n=3, cutoff=0.6)
            hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
            raise TypeError(f"{cls.__name__} has no option {key!r}{hint} (its options: {', '.join(names) or 'none'})")


def check_method_model(method, model, methods):
    """Raise why ``method`` does not integrate ``model``: a configuration space it does not take
    (TypeError naming the registered ``methods`` that do), a size out of range, or a kind of
    constraint it does not handle (ValueError)."""
    space = getattr(model, "configuration_space", "R^n")
    name = getattr(model, "name", type(model).__name__)
    if space not in method.spaces:
        raise TypeError(f"{method.name} integrates models whose configuration space is "
                        f"{' or '.join(method.spaces)}; model {name!r} lives on {space} (methods for it: "
                        f"{sorted(k for k, c in methods.items() if space in c.spaces)})")
    n = getattr(model, "n", None)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"model {name!r} has n = {n!r} coordinates; an integrator needs at least 1")
    if n > C_INT_MAX:
        raise ValueError(f"model {name!r} has n = {n} coordinates, above the kernels' limit 2**31 - 1")
    for kind, count in (("holonomic", model.n_hol), ("nonholonomic", model.n_nonhol)):
        if count and kind not in method.supports:
            raise ValueError(f"{method.name} does not handle {kind} constraints (model {name!r} has {count})")
