"""On-disk cache of reference solutions: one NetCDF file per (model, initial state, times, form, options).

The key is a SHA-256 of a JSON description holding the model's code and
parameters (:func:`model_identity`: a hash of the source file of every class
in the model's MRO, ``pyint.models.base`` included, and the instance's
attributes, exact), its ``describe()``, a fingerprint of its items at two
states, pyint's version and :data:`CACHE_VERSION`, the initial state and times
(exact, as hex floats), the form and the solver options.  When the model has
no such identity (a class without a source file, e.g. defined in an
interactive session, or an attribute that is neither a number, a string, an
array nor a model) no key is safe: :func:`cache_key` raises
:class:`NoSafeKey` and ``solve`` computes without the cache and says so.
Files are written to a temporary name and renamed, so a crash never leaves a
half-written file (a killed writer's temporary is removed by the next write:
pyint/_files.py).  :func:`load` returns a file only when its stored key, times
and shapes are those asked for.
"""
from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path

import numpy as np

from .._files import remove_stale_temporaries, temporary_name

#: Bump when a change of the reference algorithm changes its results (invalidates old files).
CACHE_VERSION = 3


class NoSafeKey(Exception):
    """The model cannot be keyed safely (its code or parameters cannot be fingerprinted)."""


def default_cache_dir():
    """``$PYINT_REFERENCE_CACHE`` if set, else ``~/.cache/pyint/reference``."""
    env = os.environ.get("PYINT_REFERENCE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "pyint" / "reference"


def _round(x, digits=10):
    """Values rounded to ``digits`` significant digits, as a list of strings."""
    x = np.atleast_1d(np.asarray(x, dtype=float)).ravel()
    return [f"{v:.{digits - 1}e}" for v in x]


def model_fingerprint(model, t0, q0, v0):
    """The model's items at (t0, q0, v0) and at a fixed nearby state, rounded to 10 digits."""
    n = model.n
    shift = 0.1 * np.sin(1.0 + np.arange(n))
    items = []
    for t, q, v in ((t0, q0, v0), (t0 + 0.125, q0 + shift, v0 - shift)):
        items += [model.mass(q), model.force(t, q, v)]
        if model.n_hol:
            items += [model.hol(t, q), model.hol_jac(t, q), model.hol_gamma(t, q, v)]
        if model.n_nonhol:
            items += [model.nh_A(t, q), model.nh_b(t, q), model.nh_gamma(t, q, v)]
    return [_round(x) for x in items]


def _source_hash(cls, memo):
    """SHA-256 of the source file of ``cls`` (the whole module: helpers it calls change with it)."""
    import inspect

    try:
        path = inspect.getsourcefile(cls)
    except TypeError:
        path = None
    if path is None or not os.path.isfile(path):
        raise NoSafeKey(f"the source of class {cls.__qualname__} (module {cls.__module__}) is not a file")
    if path not in memo:
        memo[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return memo[path]


def _value_identity(value, where, memo):
    """An exact JSON-able identity of a model attribute, or NoSafeKey."""
    from ..models import Model

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value).hex()
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        arr = np.ascontiguousarray(value)
        return {"dtype": arr.dtype.str, "shape": list(arr.shape), "sha256": hashlib.sha256(arr.tobytes()).hexdigest()}
    if isinstance(value, (list, tuple)):
        return [_value_identity(x, f"{where}[{i}]", memo) for i, x in enumerate(value)]
    if isinstance(value, dict) and all(isinstance(k, (str, int, float, tuple)) for k in value):
        return [[repr(k), _value_identity(x, f"{where}[{k!r}]", memo)] for k, x in value.items()]
    if isinstance(value, Model) or (hasattr(value, "__dict__") and not callable(value)):
        return model_identity(value, where, memo)  # a sub-model or a parameter object: the same rule
    raise NoSafeKey(f"{where} is a {type(value).__name__}, which the cache cannot fingerprint")


def model_identity(model, where="model", memo=None):
    """The model's code and parameters: its class, a hash of the source file of every class
    in its MRO (``pyint.models.base.Model``'s included: its finite-difference fallbacks), and
    its attributes (``vars``), exact; an attribute that is itself an object with attributes
    (a sub-model, a parameter record) is keyed by the same rule.  Raises :class:`NoSafeKey` when one of them cannot be
    fingerprinted."""
    memo = {} if memo is None else memo
    if where.count(".") > 20:
        raise NoSafeKey(f"{where}: model attributes nested too deeply (a cycle?)")
    cls = type(model)
    code = {f"{c.__module__}.{c.__qualname__}": _source_hash(c, memo) for c in cls.__mro__ if c is not object}
    params = {k: _value_identity(val, f"{where}.{k}", memo) for k, val in sorted(vars(model).items())}
    return {"class": f"{cls.__module__}.{cls.__qualname__}", "code": code, "params": params}


def cache_key(model, times, q0, v0, form, options):
    """(key, description): the file stem and the JSON it hashes; :class:`NoSafeKey` when the
    model cannot be keyed (see :func:`model_identity`)."""
    from .. import __version__

    cls = type(model)
    desc = {
        "cache_version": CACHE_VERSION,
        "pyint_version": __version__,
        "model_class": f"{cls.__module__}.{cls.__qualname__}",
        "model_identity": model_identity(model),
        "model": model.describe(),
        "fingerprint": model_fingerprint(model, float(times[0]), q0, v0),
        "q0": [float(x).hex() for x in q0],
        "v0": [float(x).hex() for x in v0],
        "times": hashlib.sha256(np.ascontiguousarray(times, dtype=float).tobytes()).hexdigest(),
        "n_times": int(len(times)),
        "form": form,
        "options": options,
    }
    text = json.dumps(desc, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32], text


def check_writable(cache_dir):
    """Create ``cache_dir`` if needed and check that a file can be written there (before the
    computation, so that an unusable directory does not cost a run); raises OSError naming it."""
    cache_dir = Path(cache_dir)
    probe = cache_dir / f".write-test-{os.getpid()}"
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise OSError(f"the reference cache directory {str(cache_dir)!r} is not writable ({exc}); "
                      "pass cache_dir=False to solve without the cache, or another directory") from exc


def cache_path(cache_dir, model, key, form):
    return Path(cache_dir) / f"{model.name}-{form}-{key}.nc"


def load(path, model, key=None, times=None):
    """The cached result at ``path`` for ``model``, or None (missing, unreadable, or not the
    entry asked for).

    A file is returned only when it is what was asked for: its stored ``cache_key`` is ``key``,
    its times are ``times`` (same length, same values) and its q, v, a have the model's n
    columns; a file of another solve sitting at the key's name (copied, renamed, a hash
    collision of the name) is recomputed with a warning instead of being returned as the answer.
    """
    import xarray as xr

    from .result import ReferenceResult

    path = Path(path)
    if not path.exists():
        return None
    try:
        with xr.open_dataset(path) as ds:
            ds = ds.load()
        result = ReferenceResult.from_xarray(ds, model)
        mismatch = _mismatch(ds, result, model, key, times)
    except Exception as exc:  # a damaged file is recomputed, not trusted
        warnings.warn(f"ignoring unreadable reference cache file {path}: {exc}", RuntimeWarning, stacklevel=3)
        return None
    if mismatch:
        warnings.warn(f"ignoring reference cache file {path}: it is not the solve asked for ({mismatch}); "
                      "recomputing", RuntimeWarning, stacklevel=3)
        return None
    return result


def _mismatch(ds, result, model, key, times):
    """Why the loaded entry is not the one asked for, or "" (see :func:`load`)."""
    if key is not None and ds.attrs.get("cache_key") != key:
        return f"its key is {ds.attrs.get('cache_key')!r}, expected {key!r}"
    if times is not None:
        times = np.asarray(times, dtype=float)
        t = np.asarray(result.t, dtype=float)
        if t.shape != times.shape or not np.array_equal(t, times):
            return (f"its {t.size} times run from {t[0] if t.size else float('nan'):.10g} to "
                    f"{t[-1] if t.size else float('nan'):.10g}, expected {times.size} from {times[0]:.10g} "
                    f"to {times[-1]:.10g}")
    for name in ("q", "v", "a"):
        arr = np.asarray(getattr(result, name))
        if arr.ndim != 2 or arr.shape[1] != model.n or arr.shape[0] != np.size(result.t):
            return f"its {name} has shape {arr.shape}, expected ({np.size(result.t)}, {model.n})"
    lam = np.asarray(result.lam)
    if lam.ndim != 2 or lam.shape[1] != model.n_constraints:
        return f"its lam has shape {lam.shape}, expected ({np.size(result.t)}, {model.n_constraints})"
    return ""


def write_atomic(ds, path):
    """Write ``ds`` to ``path`` through a temporary file in the same directory and a rename (the
    temporaries of killed writers there are removed first: pyint._files)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent)
    tmp = temporary_name(path)
    try:
        ds.to_netcdf(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def store(result, path, key, description):
    """Write ``result`` (with its cache key and description as attributes) to ``path``."""
    ds = result.to_xarray()
    ds.attrs["cache_key"] = key
    ds.attrs["cache_description"] = description
    write_atomic(ds, path)
