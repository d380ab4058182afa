"""On-disk cache of reference solutions: one NetCDF file per (model, initial state, times, form, options).

The key is a SHA-256 of a JSON description holding the model class, its
``describe()``, a fingerprint of its items evaluated at two states (so two
instances with the same ``describe()`` but different parameters do not
collide), the initial state and times (exact, as hex floats), the form and
the solver options, and :data:`CACHE_VERSION`.  Files are written to a
temporary name and renamed, so a crash never leaves a half-written file.
"""
from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path

import numpy as np

#: Bump when a change of the reference algorithm changes its results (invalidates old files).
CACHE_VERSION = 1


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


def cache_key(model, times, q0, v0, form, options):
    """(key, description): the file stem and the JSON it hashes."""
    from .. import __version__

    cls = type(model)
    desc = {
        "cache_version": CACHE_VERSION,
        "pyint_version": __version__,
        "model_class": f"{cls.__module__}.{cls.__qualname__}",
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


def cache_path(cache_dir, model, key, form):
    return Path(cache_dir) / f"{model.name}-{form}-{key}.nc"


def load(path, model):
    """The cached result at ``path`` for ``model``, or None (missing or unreadable file)."""
    import xarray as xr

    from .result import ReferenceResult

    path = Path(path)
    if not path.exists():
        return None
    try:
        with xr.open_dataset(path) as ds:
            ds = ds.load()
        return ReferenceResult.from_xarray(ds, model)
    except Exception as exc:  # a damaged file is recomputed, not trusted
        warnings.warn(f"ignoring unreadable reference cache file {path}: {exc}", RuntimeWarning, stacklevel=3)
        return None


def write_atomic(ds, path):
    """Write ``ds`` to ``path`` through a temporary file in the same directory and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
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
