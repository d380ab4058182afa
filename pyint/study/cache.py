"""The case store of a study run: batches of finished cases in NetCDF shards, keyed on the study, its
parameters, the pyint version, the compiled kernels and the code that computes a case (see
:mod:`pyint.study.runner`).

Layout, under ``<out>/.cache/<study>/``::

    shards/<id>.nc   one file per batch of finished cases (failed ones too), written by whoever ran
                     the batch (a Dask worker, a local process, this process): to <id>.nc.tmp-<pid>,
                     fsync, rename -- a killed writer leaves a temporary, never half a shard
    index.jsonl      the run's record: one line per shard (its name, case keys, statuses), appended
                     by the study process only; a line cut by a kill is ignored

Why NetCDF shards per batch and not zarr regions: ``to_zarr(region=...)`` lets workers write their
slices of one store only once the store's variables, shapes and dtypes exist (xarray docs, "Appending to
existing Zarr stores" / "region"), but a case's variables and sizes are known only after it ran (failed
cases have none, time axes differ with ``h``, a case's own dimensions are outer-joined).  A shard per
batch needs no schema in advance, no coordination between writers (HDF5 has no safe concurrent writers,
so one file per writer) and no new dependency; the shard directory, not the index, is the truth: a shard
the index lacks (its writer finished after the study process was killed, or another process wrote it)
is found by the one listing at the start of a run.  A case's cache key covers its parameters, the code
that computes it (:func:`code_fingerprint`) and the compiled kernels it ran on (:func:`kernels_fingerprint`),
so any run may use any shard of the same build.

A shard packs its cases' datasets without losing anything (the runner combines them as if each had been
read from its own file): every variable of every case is flattened into one 1-D buffer per (name, dtype)
(``data<j>``), and each case's structure (variables, dims, shape, dtype, attributes, which are
coordinates; global attributes) is a JSON text, stored once per distinct structure.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import inspect
import json
import marshal
import math
import os
import types
import uuid
from pathlib import Path
from typing import Mapping

import numpy as np
import xarray as xr

from .datasets import attr_value, json_default, remove_stale_temporaries
from .declaration import OK, Study


@dataclasses.dataclass
class Case:
    params: dict
    index: tuple
    key: str
    excluded: bool = False


# -- the cache key --------------------------------------------------------------------------------
def _source_text(obj) -> str:
    """The source of a function or class, or (no source file: defined interactively, compiled only)
    a deterministic stand-in: the function's bytecode and constants."""
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        code = getattr(obj, "__code__", None)
        if code is None:
            return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"
        return marshal.dumps(code).hex()


def _repr_default(value):
    try:
        return json_default(value)
    except TypeError:
        return _stable_repr(value)


def _stable_repr(value) -> str:
    """repr(value), or its type when the repr holds an address (it would change at every run)."""
    text = repr(value)
    return f"<{type(value).__module__}.{type(value).__qualname__}>" if " at 0x" in text else text


def _names(code) -> set[str]:
    """The global names a code object (and the functions, lambdas, comprehensions in it) reads."""
    out = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _names(const)
    return out


def _code_closure(func, module: str) -> list[str]:
    """The source of ``func`` and of what it uses from its own module, transitively: functions and
    classes defined there (and those held in its containers, e.g. a dict of methods) by their source,
    constants by their value; imported modules and objects by name only."""
    parts, seen, stack = [], set(), [func]

    def visit(value, name):
        if isinstance(value, types.ModuleType):
            parts.append(f"{name}: module {value.__name__}")
        elif inspect.isfunction(value) or inspect.isclass(value):
            if getattr(value, "__module__", None) == module:
                stack.append(value)
            else:
                parts.append(f"{name}: {value.__module__}.{value.__qualname__}")
        elif isinstance(value, (dict, list, tuple, set, frozenset)):
            items = list(value.items()) if isinstance(value, dict) else [(None, v) for v in value]
            try:
                parts.append(f"{name} = " + json.dumps(value, sort_keys=True, default=_repr_default))
            except (TypeError, ValueError):
                parts.append(f"{name} = {_stable_repr(value)}")
            for key, item in items:
                if inspect.isfunction(item) or inspect.isclass(item):
                    visit(item, f"{name}[{key!r}]")
                elif isinstance(item, (dict, list, tuple)):
                    visit(item, f"{name}[{key!r}]")
        else:
            try:
                parts.append(f"{name} = " + json.dumps(value, sort_keys=True, default=_repr_default))
            except (TypeError, ValueError):
                parts.append(f"{name} = {_stable_repr(value)}")

    while stack:
        obj = inspect.unwrap(stack.pop())
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        parts.append(_source_text(obj))
        functions = [obj] if inspect.isfunction(obj) else [
            inspect.unwrap(v.__func__ if isinstance(v, (staticmethod, classmethod)) else v)
            for v in vars(obj).values()
            if inspect.isfunction(v) or isinstance(v, (staticmethod, classmethod, property))]
        for f in functions:
            if isinstance(f, property):
                functions.extend(g for g in (f.fget, f.fset) if g is not None)
                continue
            if not inspect.isfunction(f):
                continue
            glob = f.__globals__
            for name in sorted(_names(f.__code__)):
                # dunders (__name__, __file__, __builtins__) name the module, not the computation:
                # the same study run as a script (__main__) and as pyint.studies.NAME shares its cache
                if name in glob and not (name.startswith("__") and name.endswith("__")):
                    visit(glob[name], name)
    return parts


def code_fingerprint(study: Study) -> str:
    """Hash of the code that computes a case: ``run_case`` and what it uses from the module defining
    it (:func:`_code_closure`: its functions, classes and constants, transitively), as joblib.Memory
    keys on a function's source -- not the module's other contents (the study's ``meta``,
    ``description``, ``figures``, ``post``): editing those recomputes nothing.  Code imported from other
    modules is not tracked (bump the study's ``version``)."""
    func, parts = inspect.unwrap(study.run_case), []
    while isinstance(func, functools.partial):  # the bound arguments, then the function
        parts.append(json.dumps([func.args, func.keywords], sort_keys=True, default=_repr_default))
        func = inspect.unwrap(func.func)
    if not (inspect.isfunction(func) or inspect.ismethod(func)):
        func = type(func)  # a callable object: its class
    if inspect.ismethod(func):
        parts.append(_stable_repr(func.__self__))
        func = func.__func__
    parts.extend(_code_closure(func, getattr(func, "__module__", None) or ""))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


@functools.lru_cache(maxsize=1)
def kernels_fingerprint() -> str:
    """Hash of the compiled kernels (the bytes of pyint's extension module): a case computed by another
    build of the Fortran kernels is another case.  pyint's version alone does not say it (a rebuild
    with changed kernels keeps the version, and its cached cases came back as the new build's: the
    block methods' rtol cases of iftomm_benchmarks after their coupling reuse); an install of the same
    build keeps its cache.  "" where the extension is not found (the key then falls back to the rest)."""
    try:
        from .. import _fortran
        return hashlib.sha256(Path(_fortran.__file__).read_bytes()).hexdigest()[:24]
    except (ImportError, AttributeError, TypeError, OSError):
        return ""


def cache_key(study: Study, params: Mapping, code: str | None = None) -> str:
    """Hash of the study name and version, the case parameters, the pyint version, the compiled kernels
    (:func:`kernels_fingerprint`) and the study's code (:func:`code_fingerprint`; pass it when keying
    many cases)."""
    from .. import __version__
    blob = json.dumps({"study": study.name, "study_version": study.version, "pyint_version": __version__,
                       "kernels": kernels_fingerprint(),
                       "code": code_fingerprint(study) if code is None else code,
                       "params": dict(params)}, sort_keys=True, default=json_default)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _params_json(params) -> str:
    """The case parameters as stored with a case in its shard."""
    return json.dumps(params, sort_keys=True, default=json_default)


# -- the cases of a run -----------------------------------------------------------------------------
class CaseGrid:
    """The cases of a run without a Python object per case: case ``i`` (the flat, C-order index into the
    grid) is built on demand; the keys are one array of 24-byte strings and ``excluded`` (the study's
    ``where``) one boolean array, so a million cases cost ~25 MB."""

    def __init__(self, study: Study, grid: Mapping[str, list], fixed: Mapping):
        self.study, self.grid, self.fixed = study, {k: list(v) for k, v in grid.items()}, dict(fixed)
        self.shape = tuple(len(v) for v in self.grid.values())
        self.size = math.prod(self.shape)
        code = code_fingerprint(study)
        self.keys = np.empty(self.size, dtype="S24")
        self.excluded = np.zeros(self.size, dtype=bool)
        for i in range(self.size):
            params = self.params(i)
            self.keys[i] = cache_key(study, params, code)
            if study.where is not None:
                self.excluded[i] = not study.where(dict(params))

    def index(self, i: int) -> tuple:
        return tuple(int(j) for j in np.unravel_index(i, self.shape))

    def params(self, i: int) -> dict:
        return {**self.fixed, **{k: v[j] for (k, v), j in zip(self.grid.items(), self.index(i))}}

    def case(self, i: int) -> Case:
        return Case(self.params(i), self.index(i), self.keys[i].decode(), bool(self.excluded[i]))

    def __len__(self):
        return self.size


def make_cases(study: Study, grid: Mapping[str, list], fixed: Mapping) -> list[Case]:
    """Every case of the grid as a list (small sweeps and tests; the runner uses :class:`CaseGrid`)."""
    cases = CaseGrid(study, grid, fixed)
    return [cases.case(i) for i in range(len(cases))]


# -- shards ---------------------------------------------------------------------------------------------
def _attrs(attrs) -> dict:
    return {str(k): attr_value(v) for k, v in attrs.items()}


def pack_cases(cases) -> xr.Dataset:
    """One dataset holding ``cases`` = [(key, params, case dataset), ...] (see the module docstring)."""
    buffers: dict[tuple, list] = {}
    structures: dict[str, int] = {}
    keys, params_text, struct_of, status = [], [], [], []
    for key, params, ds in cases:
        variables = []
        for name, var in ds.variables.items():
            values = np.asarray(var.values)
            kind = "str" if values.dtype.kind in "OUS" else values.dtype.str
            buffers.setdefault((str(name), kind), []).append(values.reshape(-1))
            variables.append([str(name), list(map(str, var.dims)), list(values.shape), values.dtype.str, kind,
                              name in ds.coords, _attrs(var.attrs)])
        text = json.dumps({"variables": variables, "attrs": _attrs(ds.attrs)}, default=json_default)
        struct_of.append(structures.setdefault(text, len(structures)))
        keys.append(key)
        params_text.append(_params_json(params))
        status.append(str(ds.variables["status"].values.item()) if "status" in ds.variables else OK)
    data = {"case_key": ("case", np.array(keys, dtype=object)),
            "case_params": ("case", np.array(params_text, dtype=object)),
            "case_status": ("case", np.array(status, dtype=object)),
            "case_structure": ("case", np.array(struct_of, dtype=np.int32))}
    table = []
    for j, ((name, kind), chunks) in enumerate(buffers.items()):
        flat = np.concatenate(chunks) if chunks else np.empty(0)
        if kind == "str":
            flat = flat.astype(str).astype(object)
        data[f"data{j}"] = (f"n{j}", flat)
        table.append([name, kind])
    return xr.Dataset(data, attrs={"pyint_shard": 1, "buffers": json.dumps(table),
                                   "structures": json.dumps(list(structures))})


class _Scalar:
    """A 0-d variable as :func:`pyint.study.combine.combine_cases` reads it (dims, shape, dtype, values,
    attrs), without the cost of an ``xarray.Variable``."""

    __slots__ = ("values", "attrs")
    dims = shape = ()

    def __init__(self, values, attrs):
        self.values, self.attrs = values, attrs

    @property
    def dtype(self):
        return self.values.dtype


class ScalarCase:
    """A case whose variables are all scalars, as :func:`combine_cases` reads it (``variables``,
    ``coords``, ``dims``, ``indexes``, ``attrs``): building an ``xarray.Dataset`` costs ~100 us, a
    large sweep of small cases has millions of them.  ``dataset()`` gives the real one."""

    dims: dict = {}
    indexes: dict = {}

    def __init__(self, variables: dict, coords: set, attrs: dict):
        self.variables, self.coords, self.attrs = variables, coords, attrs

    def __contains__(self, name):
        return name in self.variables

    def dataset(self) -> xr.Dataset:
        variables = {n: xr.Variable((), v.values, v.attrs) for n, v in self.variables.items()}
        return xr.Dataset({n: v for n, v in variables.items() if n not in self.coords},
                          {n: v for n, v in variables.items() if n in self.coords}, attrs=self.attrs)

    def __getitem__(self, name):
        return self.dataset()[name]


def unpack_cases(shard: xr.Dataset, light: bool = False):
    """The (key, params JSON, case dataset) of every case in a shard, in order (a generator).
    ``light``: a case whose variables are all scalars comes as a :class:`ScalarCase`."""
    table = [tuple(x) for x in json.loads(shard.attrs["buffers"])]
    structures = [json.loads(s) for s in json.loads(shard.attrs["structures"])]
    scalar_only = [all(not dims for _, dims, *_ in s["variables"]) for s in structures]
    data = {nk: shard[f"data{j}"].values for j, nk in enumerate(table)}
    offset = dict.fromkeys(table, 0)
    keys, params, struct_of = (shard[v].values for v in ("case_key", "case_params", "case_structure"))
    for key, ptext, s in zip(keys, params, struct_of):
        struct = structures[int(s)]
        light_case = light and scalar_only[int(s)]
        data_vars, coords = {}, {}
        for name, dims, shape, dtype, kind, is_coord, attrs in struct["variables"]:
            n = math.prod(shape)
            flat = data[(name, kind)][offset[(name, kind)]:offset[(name, kind)] + n]
            offset[(name, kind)] += n
            # text as fixed-width unicode: an object array costs xarray a pass through pandas per variable
            values = flat.astype(str) if kind == "str" else flat.astype(np.dtype(dtype), copy=False)
            if light_case:
                var = _Scalar(values.reshape(()), attrs)
            else:
                var = xr.Variable(tuple(dims), values.reshape(shape), attrs)
            (coords if is_coord else data_vars)[name] = var
        if light_case:
            yield str(key), str(ptext), ScalarCase({**data_vars, **coords}, set(coords), struct["attrs"])
        else:
            yield str(key), str(ptext), xr.Dataset(data_vars, coords, attrs=struct["attrs"])


def _fsync_replace(tmp: Path, path: Path):
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _write_packed(packed: xr.Dataset, path: Path):
    """Write a packed shard with netCDF4-python under xarray's process-wide netCDF/HDF5 lock.

    Not ``to_netcdf``: on a Dask worker xarray takes a *distributed* lock for every file it writes (a
    round trip to the scheduler per shard, and no write at all once the scheduler is gone); HDF5 is not
    thread-safe, so writers in one process (a worker's threads) still go one at a time, under the same
    lock xarray's own reads and writes take."""
    import netCDF4
    from xarray.backends.netCDF4_ import NETCDF4_PYTHON_LOCK
    with NETCDF4_PYTHON_LOCK:
        nc = netCDF4.Dataset(path, "w", format="NETCDF4")
        try:
            for dim, size in packed.sizes.items():
                nc.createDimension(str(dim), size if size else None)  # 0 would be unlimited anyway
            for name, var in packed.variables.items():
                values = var.values
                if values.dtype.kind in "OUS":
                    out = nc.createVariable(str(name), str, var.dims)
                    if values.size:
                        out[:] = values.astype(object)
                else:
                    out = nc.createVariable(str(name), values.dtype, var.dims)
                    if values.size:
                        out[:] = values
            nc.setncatts(packed.attrs)
        finally:
            nc.close()


def write_shard(shard_dir, cases) -> tuple[str, list[str], list[str]]:
    """Write ``cases`` = [(key, params, dataset), ...] as a new shard of ``shard_dir`` (atomically: a
    temporary, fsync, rename); returns (shard file name, keys, statuses).  Runs wherever the batch ran."""
    shard_dir = Path(shard_dir)
    shard_dir.mkdir(parents=True, exist_ok=True)
    packed = pack_cases(cases)
    name = f"{uuid.uuid4().hex}.nc"
    path = shard_dir / name
    tmp = path.with_name(f"{name}.tmp-{os.getpid()}")
    try:
        _write_packed(packed, tmp)
        _fsync_replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return name, packed["case_key"].values.tolist(), packed["case_status"].values.tolist()


def read_shard(path) -> xr.Dataset:
    """A shard, read whole with netCDF4-python (under the lock of :func:`_write_packed`; a tenth of
    ``xarray.load_dataset``'s time for a file of a few 1-D variables, which the study file's combine
    reads twice per shard)."""
    import netCDF4
    from xarray.backends.netCDF4_ import NETCDF4_PYTHON_LOCK
    with NETCDF4_PYTHON_LOCK:
        nc = netCDF4.Dataset(path, "r")
        try:
            nc.set_auto_mask(False)
            variables = {name: (var.dimensions, var[:]) for name, var in nc.variables.items()}
            attrs = {k: nc.getncattr(k) for k in nc.ncattrs()}
        finally:
            nc.close()
    # text as fixed-width unicode (object arrays cost xarray a pass through pandas each)
    return xr.Dataset({name: (dims, values.astype(str) if values.dtype == object else values)
                       for name, (dims, values) in variables.items()}, attrs=attrs)


# -- the store: shards and their index ------------------------------------------------------------------
class CaseStore:
    """The shards of one study (``<out>/.cache/<study>/``) and the study process's record of them.

    :meth:`open` reads the index and lists the shard directory once (adding what the index lacks);
    :meth:`record` appends one line per finished batch; :meth:`lookup` gives, for every case key of a run,
    the shard that holds it and its status.  Nothing is kept per case but three small arrays.
    """

    def __init__(self, directory):
        self.dir = Path(directory)
        self.shards = self.dir / "shards"
        self.index = self.dir / "index.jsonl"
        self.names: list[str] = []
        self._keys: list[np.ndarray] = []
        self._ok: list[np.ndarray] = []

    def open(self) -> "CaseStore":
        self.shards.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(self.shards)
        known = set()
        if self.index.is_file():
            with open(self.index, encoding="utf-8") as fh:
                for line in fh:
                    try:
                        entry = json.loads(line)
                        name, keys, status = entry["shard"], entry["keys"], entry["status"]
                    except (ValueError, KeyError, TypeError):
                        continue  # a line cut by a kill: its shard is found below
                    if name in known or not (self.shards / name).is_file():
                        continue
                    known.add(name)
                    self._add(name, keys, status)
        missing = sorted(e.name for e in os.scandir(self.shards) if e.name.endswith(".nc") and e.name not in known)
        for name in missing:
            try:
                ds = read_shard(self.shards / name)
                keys, status = ds["case_key"].values.tolist(), ds["case_status"].values.tolist()
            except Exception:  # noqa: BLE001 - not a shard of ours: leave it
                continue
            self.record(name, keys, status)
        return self

    def _add(self, name, keys, status):
        self.names.append(name)
        self._keys.append(np.array(keys, dtype="S24"))
        self._ok.append(np.array([s == OK for s in status], dtype=bool))

    def record(self, name, keys, status):
        """Add a finished shard to the record (one appended line; no fsync: the shard is the truth)."""
        self._add(name, keys, status)
        with open(self.index, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"shard": name, "keys": list(keys), "status": list(status)}) + "\n")

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each of ``keys``: the number of the shard holding it (-1: none; the latest shard wins, so
        a case rerun with ``rerun_failed`` is taken from its new shard) and whether it ended ok."""
        shard = np.full(len(keys), -1, dtype=np.int64)
        ok = np.zeros(len(keys), dtype=bool)
        if not self._keys:
            return shard, ok
        all_keys = np.concatenate(self._keys)
        all_shard = np.concatenate([np.full(len(k), i) for i, k in enumerate(self._keys)])
        all_ok = np.concatenate(self._ok)
        # the last occurrence of each key: sort stably by key, keep the last of each run of equal keys
        order = np.argsort(all_keys, kind="stable")
        sk = all_keys[order]
        last = np.ones(len(sk), dtype=bool)
        last[:-1] = sk[1:] != sk[:-1]
        sk, order = sk[last], order[last]
        pos = np.searchsorted(sk, keys)
        pos = np.minimum(pos, len(sk) - 1)
        found = sk[pos] == keys
        shard[found] = all_shard[order[pos[found]]]
        ok[found] = all_ok[order[pos[found]]]
        return shard, ok

    def path(self, shard: int) -> Path:
        return self.shards / self.names[shard]


__all__ = ["Case", "CaseGrid", "CaseStore", "cache_key", "code_fingerprint", "kernels_fingerprint", "make_cases",
           "pack_cases", "unpack_cases", "write_shard"]
