"""Dataset conventions of pyint: names, units, provenance, atomic NetCDF files.

Every study writes its results as one xarray Dataset (one NetCDF file) that
follows these conventions; ``docs/datasets.md`` is the reader's version.

* Dimensions mean something: ``time``, ``h``, ``method``, ``coord``,
  ``constraint_level``, the study's other grid parameters, and ``sample``
  (the output index, used when the cases' time grids differ).
* Every variable (data and coordinate) has ``units`` and ``long_name``.
  :data:`STANDARD` holds them for the standard names; :func:`annotate` fills
  them in, :func:`check_conventions` lists what is missing.
* Metrics are data variables with the standard names of :data:`STANDARD`
  (``eps_pos``, ``eps_vel``, ``eps_acc``, ``energy_drift``, ``error``,
  ``order``, ``cpu_time``, ``newton_iterations``, ...), as defined by :class:`pyint.results.Result`.
* Attributes are scalars or strings only (:func:`attr_value` flattens the rest
  to JSON); :func:`provenance` gives ``pyint_version``, ``git_commit``,
  ``created`` and ``study``.
* :func:`write_netcdf` writes to a temporary file next to the target and
  renames it, so a crash never leaves a half-written file.
"""
from __future__ import annotations

import datetime as _dt
import json
import subprocess
from pathlib import Path

import numpy as np
import xarray as xr

from .._files import atomic_path, remove_stale_temporaries, temporary_name  # noqa: F401  (re-exported)
from ..convergence import fit_order

from ..results import Result
from ..schema import CONSTRAINT_LEVELS, STANDARD  # noqa: F401  (re-exported: defined once, there)

#: Global attributes every pyint dataset carries.
PROVENANCE_ATTRS = ("pyint_version", "git_commit", "created", "study")


# -- attributes and provenance ---------------------------------------------------
def json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot store {type(value).__name__} {value!r} as an attribute")


def attr_value(value):
    """A NetCDF-safe attribute value: str, int and float stay; the rest becomes JSON.

    Booleans become 0/1 (NetCDF has no boolean), None, lists, tuples and dicts
    become JSON strings (dict keys sorted), NumPy scalars their Python value.
    """
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (str, int, float)):
        return value
    return json.dumps(value, sort_keys=True, default=json_default)


def git_commit() -> str:
    """The git commit pyint was built from ("<sha>[-dirty]"), or "unknown".

    The build records it in ``pyint/_build_info.py``; running from a source
    checkout without a build, ``git rev-parse`` of the package's tree is used.
    """
    try:
        from .._build_info import GIT_COMMIT
    except ImportError:
        GIT_COMMIT = "unknown"
    if GIT_COMMIT and GIT_COMMIT != "unknown":
        return GIT_COMMIT
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def provenance(study: str | None = None, params: dict | None = None) -> dict:
    """The provenance attributes, plus ``params`` flattened by :func:`attr_value`."""
    from .. import __version__
    attrs = {
        "pyint_version": __version__,
        "git_commit": git_commit(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    if study is not None:
        attrs["study"] = study
    for key, value in (params or {}).items():
        if key in attrs:
            raise ValueError(f"parameter name {key!r} clashes with the provenance attribute of that name")
        attrs[key] = attr_value(value)
    return attrs


# -- variable metadata --------------------------------------------------------------
def metadata_table(meta: dict | None = None) -> dict:
    """name -> (units, long_name): :data:`STANDARD`, then a study's ``meta`` over it."""
    return {**STANDARD, **(meta or {})}


def annotate(ds: xr.Dataset, meta: dict | None = None, strict: bool = False) -> xr.Dataset:
    """Fill missing ``units``/``long_name`` from ``meta`` (name -> (units, long_name)), then :data:`STANDARD`.

    Attributes the dataset already has are kept.  With ``strict`` a variable
    that still lacks either raises ValueError naming it.
    """
    ds = ds.copy()
    table = metadata_table(meta)
    missing = []
    for name, var in ds.variables.items():
        attrs = var.attrs  # the variable's own dict (ds[name] would build a DataArray per variable)
        known = table.get(str(name))
        if known is not None:
            attrs.setdefault("units", known[0])
            attrs.setdefault("long_name", known[1])
        if "units" not in attrs or "long_name" not in attrs:
            missing.append(str(name))
    if strict and missing:
        raise ValueError(f"variables without units/long_name: {', '.join(missing)} "
                         "(set their attrs, or declare them in Study(meta={name: (units, long_name)}))")
    if strict:
        wrong = trajectory_schema_problems(ds)
        if wrong:
            raise ValueError("not pyint's trajectory schema (docs/datasets.md): " + "; ".join(wrong))
    return ds


#: The trajectory variables of :meth:`pyint.results.Result.to_xarray`: name -> the dimensions
#: their last axes must have (after the case's time axis, ``time`` or ``sample``); None: no axis
#: beyond time.  A study's file holds them with its grid dimensions in front.
TRAJECTORY_DIMS = {
    "q": ("coord",),
    "v": (("coord", "velocity"),),
    "a": (("coord", "velocity"),),
    "lam": ("multiplier",),
    "violation": ("constraint_level",),
    "energy": (),
    "energy_error": (),
}
#: Maxima over the run: never on a time axis.
RUN_MAXIMA = ("eps_pos", "eps_vel", "eps_acc", "energy_drift")
TIME_DIMS = ("time", "sample")


def trajectory_schema_problems(ds: xr.Dataset) -> list[str]:
    """Every way the trajectory variables of ``ds`` (:data:`TRAJECTORY_DIMS`) break the one
    trajectory schema: their dimensions, the ``constraint_level`` labels, time-free maxima."""
    problems = []
    for name, tail in TRAJECTORY_DIMS.items():
        if name not in ds.variables:
            continue
        dims = tuple(map(str, ds.variables[name].dims))
        k = len(dims) - len(tail) - 1
        if k < 0 or dims[k] not in TIME_DIMS or any(
                d not in (want if isinstance(want, tuple) else (want,)) for d, want in zip(dims[k + 1:], tail)):
            want = ", ".join("|".join(w) if isinstance(w, tuple) else w for w in tail)
            problems.append(f"{name!r} has dimensions {dims}, not (..., time|sample{', ' + want if want else ''})")
    if "constraint_level" in ds.dims and list(map(str, ds["constraint_level"].values)) != list(CONSTRAINT_LEVELS):
        problems.append(f"constraint_level is {list(map(str, ds['constraint_level'].values))}, "
                        f"not {list(CONSTRAINT_LEVELS)}")
    for name in RUN_MAXIMA:
        if name in ds.variables and set(map(str, ds.variables[name].dims)) & set(TIME_DIMS):
            problems.append(f"{name!r} is a maximum over the run but has dimensions {ds.variables[name].dims}")
    if "residual" in ds.variables and "constraint_level" in ds.variables["residual"].dims:
        problems.append("'residual' on constraint_level is the old name of 'violation'")
    return problems


def check_conventions(ds: xr.Dataset) -> list[str]:
    """Every way ``ds`` breaks the conventions (empty list: none): units and long_name of every
    variable, the provenance attributes, scalar attributes, and the one trajectory schema
    (:func:`trajectory_schema_problems`).  The runner applies the same rules to every case and
    every study file (:func:`annotate` with ``strict``)."""
    problems = trajectory_schema_problems(ds)
    for name in ds.variables:
        for key in ("units", "long_name"):
            if not isinstance(ds[name].attrs.get(key), str):
                problems.append(f"variable {name!r} has no {key}")
    for key in PROVENANCE_ATTRS:
        if key not in ds.attrs:
            problems.append(f"attribute {key!r} is missing")
    for key, value in ds.attrs.items():
        if not isinstance(value, (str, int, float, np.integer, np.floating)) or isinstance(value, bool):
            problems.append(f"attribute {key!r} is a {type(value).__name__}, not a scalar or string")
    return problems


# -- helpers studies use -----------------------------------------------------------------
def measured_order(error: xr.DataArray, dim: str = "h") -> xr.DataArray:
    """Least-squares slope of log(error) against log(``dim``), for every other index
    (:func:`pyint.convergence.fit_order`: non-finite and non-positive errors are left out;
    fewer than two points give NaN).
    """
    x = np.asarray(error[dim].values, dtype=float)
    out = xr.apply_ufunc(lambda y: fit_order(x, y), error, input_core_dims=[[dim]], vectorize=True)
    out.attrs = {"units": STANDARD["order"][0], "long_name": STANDARD["order"][1]}
    return out.rename("order")


def select_case(ds: xr.Dataset, **params) -> xr.Dataset:
    """One case of a study file, with ``time`` as its dimension (the ``sample`` padding dropped).

    ``select_case(ds, method="rk4", h=0.01)``: keyword names are grid
    parameters (``ds.sel(method=...)`` would not work: ``method`` is a
    keyword of ``sel`` itself).
    """
    unknown = sorted(set(params) - set(ds.dims))
    if unknown:
        raise ValueError(f"{unknown} are not dimensions of the dataset: {sorted(map(str, ds.dims))}")
    case = ds.sel(params)
    if "sample" in case.dims and "time" in case.coords:
        case = case.isel(sample=np.isfinite(case["time"].values)).swap_dims(sample="time")
    return case


def trajectory_dataset(model, t, q, v, a=None, lam=None, method="given") -> xr.Dataset:
    """The standard Dataset of a trajectory of ``model`` computed outside pyint's integrators
    (an ODE solution, a closed form): :meth:`pyint.results.Result.to_xarray` of it.

    ``t`` (N,), ``q`` and ``v`` (N, n), optionally ``a`` (N, n) and ``lam``
    (N, n_hol + n_nonhol).  The constraint residuals and the energy are evaluated in Python
    on the model; ``violation`` is NaN where a level does not apply (position for a purely
    nonholonomic model, acceleration without ``a``), and so is its maximum.
    """
    t, q, v = (np.asarray(x, dtype=float) for x in (t, q, v))
    a = None if a is None else np.asarray(a, dtype=float)
    if t.ndim != 1:
        raise ValueError(f"t must be one-dimensional, got shape {t.shape}")
    nt, n = t.size, model.n
    for name, arr in (("q", q), ("v", v), ("a", a)):
        if arr is not None and arr.shape != (nt, n):
            raise ValueError(f"{name} must have shape ({nt}, {n}) for {nt} times and n = {n}, got {arr.shape}")
    # the columns of Result.residual: |g|, |G v + g_t|, |G a + gamma|, |A v + b|, |A a + gamma_n|
    res = np.full((nt, 5), np.nan)
    items = []
    if model.n_hol:
        items += [(0, lambda tk, qk, vk, ak: model.hol(tk, qk)), (1, lambda tk, qk, vk, ak: model.hol_vel(tk, qk, vk))]
        if a is not None:
            items.append((2, lambda tk, qk, vk, ak: model.hol_acc(tk, qk, vk, ak)))
    if model.n_nonhol:
        items.append((3, lambda tk, qk, vk, ak: model.nh_vel(tk, qk, vk)))
        if a is not None:
            items.append((4, lambda tk, qk, vk, ak: model.nh_acc(tk, qk, vk, ak)))
    for k in range(nt):
        for col, item in items:
            res[k, col] = np.max(np.abs(np.atleast_1d(item(t[k], q[k], v[k], None if a is None else a[k]))))
    for hol, nonhol in ((1, 3), (2, 4)):       # a level that applies to one kind only: the other's column is 0
        applies = [c for c in (hol, nonhol) if any(col == c for col, _ in items)]
        if applies:
            res[:, [c for c in (hol, nonhol) if c not in applies]] = 0.0
    energy = None
    if model.conservative:
        energy = np.array([model.energy(t[k], q[k], v[k]) for k in range(nt)], dtype=float)
    nl = model.n_hol + model.n_nonhol
    lam = np.full((nt, 0), np.nan) if lam is None else np.asarray(lam, dtype=float).reshape(nt, -1)
    result = Result(method=method, model=model, t=t, q=q, v=v, a=a, lam=lam, residual=res, energy=energy,
                    stats={}, params={}, h=float("nan"))
    ds = result.to_xarray()
    if lam.shape[1] == 0 and nl:
        ds = ds.drop_vars(["lam", "multiplier"])
    for i, name in enumerate(("eps_pos", "eps_vel", "eps_acc")):
        if not np.isfinite(result.level_residuals[:, i]).any():
            ds = ds.drop_vars(name)
    return ds


# -- files ---------------------------------------------------------------------------
def _encoding(ds: xr.Dataset) -> dict:
    enc = {}
    for name, var in ds.data_vars.items():
        if var.ndim and var.dtype.kind in "fiu":
            enc[name] = {"zlib": True, "complevel": 4}
    return enc


def flat_attrs(ds: xr.Dataset) -> xr.Dataset:
    """A shallow copy of ``ds`` whose attributes (global and per variable) are NetCDF-safe
    (:func:`attr_value`): what every pyint file holds."""
    ds = ds.copy()
    ds.attrs = {k: attr_value(v) for k, v in ds.attrs.items()}
    for name in ds.variables:
        ds[name].attrs = {k: attr_value(v) for k, v in ds[name].attrs.items()}
    return ds


def write_netcdf(ds: xr.Dataset, path) -> Path:
    """Write ``ds`` to ``path`` atomically: to ``<name>.tmp-<pid>`` beside it, then rename
    (:func:`pyint._files.atomic_path`).

    On any error the temporary file is removed and an existing file at
    ``path`` is left untouched.  Attributes are flattened by :func:`attr_value`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent, path.name)  # left by a killed writer of the same file
    ds = flat_attrs(ds)
    with atomic_path(path) as tmp:
        ds.to_netcdf(tmp, engine="netcdf4", encoding=_encoding(ds))
    return path


def load_netcdf(path) -> xr.Dataset:
    """Read a whole NetCDF file into memory and close it (safe to overwrite afterwards)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such NetCDF file: {path}")
    return xr.load_dataset(path, engine="netcdf4")
