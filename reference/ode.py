"""The ODE reference: SciPy's DOP853 on the index-1 form of a model (the accelerations and
multipliers from the KKT system at every right-hand side), for short spans where the index-1 form
drifts off the constraints only at the tolerance level.  Results are kept on disk under the key of
the IDA references (:mod:`.cache`: the model's code and parameters, the initial state, the times,
the tolerances), with SciPy's version, as one ``.npz`` per solve."""
from __future__ import annotations

import hashlib
import io
import warnings
from pathlib import Path

import numpy as np

from . import cache as _cache
from .._files import remove_stale_temporaries, write_bytes_atomic
from ..errors import Interrupted

#: the ``form`` of the cache key and file name (the IDA references' are their DAE forms)
FORM = "ode_dop853"


def dop853(rhs, span, y0, rtol, atol, t_eval, what):
    """SciPy's DOP853 (``solve_ivp``) from ``y0`` over ``span``, outputs at ``t_eval``; Ctrl-C
    (a KeyboardInterrupt from wherever it lands in SciPy's Python loop) is raised as
    :class:`pyint.errors.Interrupted` naming ``what``, as from every reference solve (IDA's:
    :mod:`.ida`); a failed integration is a RuntimeError naming it."""
    from scipy.integrate import solve_ivp

    try:
        sol = solve_ivp(rhs, span, y0, method="DOP853", rtol=rtol, atol=atol, t_eval=t_eval)
    except Interrupted:
        raise
    except KeyboardInterrupt:
        raise Interrupted(f"{what} interrupted (Ctrl-C) during DOP853 over [{span[0]:.10g}, {span[1]:.10g}]; "
                          "no outputs are kept") from None
    if not sol.success:
        raise RuntimeError(f"{what} failed: {sol.message}")
    return sol


def ode_reference(model, q0, v0, times, rtol=2.5e-14, atol=1e-15, cache_dir=None):
    """Tight reference at ``times``: SciPy DOP853 on the index-1 ODE form
    (a from the KKT system at every right-hand side).  The index-1 form drifts
    off the constraints only at the tolerance level over these short spans.
    rtol = 2.5e-14 (SciPy's smallest is 100 eps) gives errors ~3e-14, about 5x
    below rtol = atol = 1e-13: room for the order-4 and -5 methods' errors.
    ``cache_dir``: where solves are kept and found again (None: ``$PYINT_REFERENCE_CACHE`` or
    ``~/.cache/pyint/reference``, as :func:`pyint.reference.solve`; False: no cache); a model
    without a safe key (:func:`.cache.cache_key`) is computed every time.
    Returns (q, v, lam), each (len(times), dim)."""
    n = model.n
    times = np.atleast_1d(np.asarray(times, dtype=float))
    path = None
    if cache_dir is not False:
        import scipy
        q0, v0 = np.asarray(q0, dtype=float), np.asarray(v0, dtype=float)
        # this file's code is part of the key: a change here is another solve
        options = {"rtol": rtol, "atol": atol, "scipy": scipy.__version__,
                   "code": hashlib.sha256(Path(__file__).read_bytes()).hexdigest()}
        try:
            key, _ = _cache.cache_key(model, times, q0, v0, FORM, options)
        except _cache.NoSafeKey:
            pass
        else:
            where = _cache.default_cache_dir() if cache_dir is None else cache_dir
            path = Path(where) / f"{model.name}-{FORM}-{key}.npz"
            cached = _load(path, key, times, model)
            if cached is not None:
                return cached

    def rhs(t, y):
        a, _, _ = model.consistent_acceleration(t, y[:n], y[n:])
        return np.concatenate([y[n:], a])

    sol = dop853(rhs, (0.0, times[-1]), np.concatenate([q0, v0]), rtol, atol, times, "the reference integration")
    q, v = sol.y[:n].T, sol.y[n:].T
    lam = []
    for t, qk, vk in zip(times, q, v):
        _, lh, ln = model.consistent_acceleration(t, qk, vk)
        lam.append(np.concatenate([lh, ln]))
    lam = np.array(lam)
    if path is not None:
        _store(path, key, times, q, v, lam)
    return q, v, lam


def _load(path, key, times, model):
    """(q, v, lam) from ``path`` when it holds the solve ``key`` at ``times`` with the model's
    shapes; else None (missing; unreadable or another solve: recomputed, with a warning)."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as f:
            stored_key, t, q, v, lam = (f[k] for k in ("key", "t", "q", "v", "lam"))
        shape = (times.size, model.n)
        ok = (str(stored_key) == key and t.shape == times.shape and np.array_equal(t, times)
              and q.shape == shape and v.shape == shape and lam.shape == (times.size, model.n_constraints))
    except Exception as exc:  # noqa: BLE001 - a damaged file is recomputed, not trusted
        ok, why = False, f"unreadable ({exc})"
    else:
        why = "not the solve asked for"
    if not ok:
        warnings.warn(f"ignoring reference cache file {path}: {why}; recomputing", RuntimeWarning, stacklevel=3)
        return None
    return q, v, lam


def _store(path, key, times, q, v, lam):
    """Write the solve to ``path`` (atomic: pyint._files); a failed write warns and is not fatal."""
    buf = io.BytesIO()
    np.savez(buf, key=np.array(key), t=times, q=q, v=v, lam=lam)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path.parent)
        write_bytes_atomic(path, buf.getvalue())
    except OSError as exc:
        warnings.warn(f"pyint.reference.ode: writing {path} failed ({exc}); the result is returned uncached",
                      RuntimeWarning, stacklevel=3)
