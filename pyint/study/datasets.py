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

import contextlib
import datetime as _dt
import glob
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import xarray as xr

from ..convergence import fit_order

#: The three constraint levels, in the order of the ``constraint_level`` dimension.
CONSTRAINT_LEVELS = ("position", "velocity", "acceleration")

# Unit placeholders: "[q]" are the units of each coordinate (see the
# ``coord_units`` variable), "[g]" those of the model's constraint functions,
# "[lambda]" those of the multipliers.  A study that knows them better sets the
# units itself (its own attrs, or Study(meta=...)).
#: Standard names: name -> (units, long_name).  Text variables have units "".
STANDARD: dict[str, tuple[str, str]] = {
    # dimensions and coordinates
    "time": ("s", "time"),
    "sample": ("1", "output sample index"),
    "h": ("s", "step size h"),
    "method": ("", "integration method"),
    "coord": ("", "generalized coordinate"),
    "coord_units": ("", "units of each generalized coordinate"),
    "constraint_level": ("", "constraint level (position, velocity, acceleration)"),
    "constraint": ("", "constraint"),
    "rho_inf": ("1", "spectral radius at infinity rho_inf"),
    "rtol": ("1", "relative tolerance"),
    "initial_condition": ("", "initial condition"),
    "T": ("s", "final time"),
    # time series
    "q": ("[q]", "generalized coordinates q (units of each: coord_units)"),
    "v": ("[q]/s", "generalized velocities v"),
    "a": ("[q]/s^2", "generalized accelerations a"),
    "lam": ("[lambda]", "Lagrange multipliers"),
    "violation": ("[g]/s^k", "constraint violation max-norm at each level "
                             "(k = 0, 1, 2 time derivatives of the constraints)"),
    "energy": ("J", "total energy H"),
    "energy_error": ("1", "relative energy error (H(t) - H(0)) / |H(0)|"),
    # metrics (the seeds' violation and energy measures): maxima over the run
    "eps_pos": ("[g]", "position-level constraint violation eps(Phi) = max ||g(q)||_inf"),
    "eps_vel": ("[g]/s", "velocity-level constraint violation eps(Phi') = max ||G v||_inf or ||A v + b||_inf"),
    "eps_acc": ("[g]/s^2", "acceleration-level constraint violation eps(Phi'') = max ||G a + (G v)_q v||_inf"),
    "energy_drift": ("1", "energy drift delta(H) = max |H(t) - H(0)| / |H(0)|"),
    "error": ("[q]", "max error against the reference solution"),
    "order": ("1", "measured order: slope of log(error) against log(h)"),
    "cpu_time": ("s", "CPU time of the integration"),
    "newton_iterations": ("1", "total number of Newton iterations"),
    "jacobian_factorizations": ("1", "number of iteration-matrix factorizations"),
    "failed_steps": ("1", "number of failed or rejected steps"),
    "n_steps": ("1", "number of time steps"),
    "rhs_evaluations": ("1", "number of right-hand-side evaluations"),
    "orthogonality": ("1", "orthogonality error max ||R^T R - I||_F"),
    "direction_error": ("1", "direction-vector error max |e^T e - 1|"),
    # the runner's per-case bookkeeping
    "status": ("", "case status: ok, failed, crashed, skipped (or the study's own)"),
    "message": ("", "why the case did not end ok (empty when ok)"),
    "case_attrs": ("", "attributes of each case's own dataset (JSON)"),
}

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
def annotate(ds: xr.Dataset, meta: dict | None = None, strict: bool = False) -> xr.Dataset:
    """Fill missing ``units``/``long_name`` from ``meta`` (name -> (units, long_name)), then :data:`STANDARD`.

    Attributes the dataset already has are kept.  With ``strict`` a variable
    that still lacks either raises ValueError naming it.
    """
    ds = ds.copy()
    table = {**STANDARD, **(meta or {})}
    missing = []
    for name in list(ds.variables):
        attrs = ds[name].attrs
        known = table.get(str(name))
        if known is not None:
            attrs.setdefault("units", known[0])
            attrs.setdefault("long_name", known[1])
        if "units" not in attrs or "long_name" not in attrs:
            missing.append(str(name))
    if strict and missing:
        raise ValueError(f"variables without units/long_name: {', '.join(missing)} "
                         "(set their attrs, or declare them in Study(meta={name: (units, long_name)}))")
    return ds


def check_conventions(ds: xr.Dataset) -> list[str]:
    """Every way ``ds`` breaks the conventions (empty list: none)."""
    problems = []
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


def trajectory_dataset(model, t, q, v, a=None, lam=None) -> xr.Dataset:
    """The standard time series and metrics of one trajectory of ``model``.

    ``t`` (N,), ``q`` and ``v`` (N, n), optionally ``a`` (N, n) and ``lam``
    (N, n_hol + n_nonhol).  Returns ``q``/``v``(/``a``/``lam``) on
    (``time``, ``coord``), ``violation`` on (``time``, ``constraint_level``)
    (NaN where a level does not apply: position for a purely nonholonomic
    model, acceleration without ``a``), the maxima ``eps_pos``/``eps_vel``/
    ``eps_acc`` of the levels that apply, and for a conservative model
    ``energy``, ``energy_error`` and ``energy_drift``.
    """
    t, q, v = (np.asarray(x, dtype=float) for x in (t, q, v))
    a = None if a is None else np.asarray(a, dtype=float)
    if t.ndim != 1:
        raise ValueError(f"t must be one-dimensional, got shape {t.shape}")
    nt, n = t.size, model.n
    for name, arr in (("q", q), ("v", v), ("a", a)):
        if arr is not None and arr.shape != (nt, n):
            raise ValueError(f"{name} must have shape ({nt}, {n}) for {nt} times and n = {n}, got {arr.shape}")
    viol = np.full((nt, 3), np.nan)
    for k in range(nt):
        tk, qk, vk = t[k], q[k], v[k]
        levels = [[], [], []]
        if model.n_hol:
            levels[0].append(model.hol(tk, qk))
            levels[1].append(model.hol_vel(tk, qk, vk))
            if a is not None:
                levels[2].append(model.hol_acc(tk, qk, vk, a[k]))
        if model.n_nonhol:
            levels[1].append(model.nh_vel(tk, qk, vk))
            if a is not None:
                levels[2].append(model.nh_acc(tk, qk, vk, a[k]))
        for i, parts in enumerate(levels):
            if parts:
                viol[k, i] = np.max(np.abs(np.concatenate([np.atleast_1d(p) for p in parts])))
    units = model.units()
    coords = {"time": t, "coord": list(model.names()), "coord_units": ("coord", list(units)),
              "constraint_level": list(CONSTRAINT_LEVELS)}
    one_unit = units[0] if len(set(units)) == 1 else "[q]"
    ds = xr.Dataset(coords=coords)
    ds["q"] = (("time", "coord"), q, {"units": one_unit})
    ds["v"] = (("time", "coord"), v, {"units": f"{one_unit}/s"})
    if a is not None:
        ds["a"] = (("time", "coord"), a, {"units": f"{one_unit}/s^2"})
    if lam is not None:
        lam = np.asarray(lam, dtype=float).reshape(nt, -1)
        ds["lam"] = (("time", "constraint"), lam)
        ds = ds.assign_coords(constraint=[f"hol{i + 1}" for i in range(model.n_hol)]
                              + [f"nonhol{i + 1}" for i in range(model.n_nonhol)])
    ds["violation"] = (("time", "constraint_level"), viol)
    for i, name in enumerate(("eps_pos", "eps_vel", "eps_acc")):
        if np.isfinite(viol[:, i]).any():
            ds[name] = ((), float(np.nanmax(viol[:, i])))
    if model.conservative:
        energy = np.array([model.energy(t[k], q[k], v[k]) for k in range(nt)], dtype=float)
        ds["energy"] = (("time",), energy)
        h0 = energy[0]
        if h0 != 0:
            ds["energy_error"] = (("time",), (energy - h0) / abs(h0))
        else:  # relative error undefined: absolute, and say so
            ds["energy_error"] = (("time",), energy - h0,
                                  {"units": "J", "long_name": "energy error H(t) - H(0) (H(0) = 0)"})
        ds["energy_drift"] = ((), float(np.max(np.abs(ds["energy_error"].values))),
                              dict(ds["energy_error"].attrs) if h0 == 0 else {})
    return annotate(ds)


# -- files ---------------------------------------------------------------------------
def _encoding(ds: xr.Dataset) -> dict:
    enc = {}
    for name, var in ds.data_vars.items():
        if var.ndim and var.dtype.kind in "fiu":
            enc[name] = {"zlib": True, "complevel": 4}
    return enc


def write_netcdf(ds: xr.Dataset, path) -> Path:
    """Write ``ds`` to ``path`` atomically: to ``<name>.tmp-<pid>`` beside it, then rename.

    On any error the temporary file is removed and an existing file at
    ``path`` is left untouched.  Attributes are flattened by :func:`attr_value`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent, path.name)  # left by a killed writer of the same file
    ds = ds.copy()
    ds.attrs = {k: attr_value(v) for k, v in ds.attrs.items()}
    for name in ds.variables:
        ds[name].attrs = {k: attr_value(v) for k, v in ds[name].attrs.items()}
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        ds.to_netcdf(tmp, engine="netcdf4", encoding=_encoding(ds))
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return path


def load_netcdf(path) -> xr.Dataset:
    """Read a whole NetCDF file into memory and close it (safe to overwrite afterwards)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such NetCDF file: {path}")
    return xr.load_dataset(path, engine="netcdf4")


def remove_stale_temporaries(directory, name="*") -> int:
    """Remove ``<name>.tmp-<pid>`` files in ``directory`` (default: every name) whose writing
    process is gone (a run killed while writing); those of live processes are kept."""
    removed = 0
    for tmp in Path(directory).glob(f"{glob.escape(name) if name != '*' else name}.tmp-*"):
        pid = tmp.name.rsplit(".tmp-", 1)[-1]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # the writer is alive
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
            removed += 1
    return removed
