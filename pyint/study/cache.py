"""The case cache of a study run: one file per finished case, keyed on the study, its parameters,
the pyint version and the study's code (see :mod:`pyint.study.runner`, "Running and files")."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import itertools
import json
import marshal
import sys
from pathlib import Path
from typing import Mapping

from .datasets import json_default, load_netcdf
from .declaration import OK, Study


@dataclasses.dataclass
class Case:
    params: dict
    index: tuple
    key: str
    excluded: bool = False


def _source_text(obj) -> str:
    """The source of a function, class or module, or (no source file: defined interactively,
    compiled only) a deterministic stand-in: the function's bytecode and constants."""
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
        return repr(value)  # an object with an address in its repr only costs a recompute


def code_fingerprint(study: Study) -> str:
    """Hash of the code that computes a case: the source of ``run_case`` and of the whole module
    that defines it (its helpers, constants and imports), as joblib.Memory keys on a function's
    source.  Read once per run; a study module edited in place gives new keys."""
    func, parts = inspect.unwrap(study.run_case), []
    while isinstance(func, functools.partial):  # the bound arguments, then the function
        parts.append(json.dumps([func.args, func.keywords], sort_keys=True, default=_repr_default))
        func = inspect.unwrap(func.func)
    if not (inspect.isfunction(func) or inspect.ismethod(func)):
        func = type(func)  # a callable object: its class
    parts.append(_source_text(func))
    module = sys.modules.get(getattr(func, "__module__", None) or "")
    if module is not None:
        parts.append(_source_text(module))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def cache_key(study: Study, params: Mapping, code: str | None = None) -> str:
    """Hash of the study name and version, the case parameters, the pyint version and the
    study's code (:func:`code_fingerprint`; pass it when keying many cases)."""
    from .. import __version__
    blob = json.dumps({"study": study.name, "study_version": study.version, "pyint_version": __version__,
                       "code": code_fingerprint(study) if code is None else code,
                       "params": dict(params)}, sort_keys=True, default=json_default)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def make_cases(study: Study, grid: Mapping[str, list], fixed: Mapping) -> list[Case]:
    keys = list(grid)
    code = code_fingerprint(study)
    cases = []
    for index in itertools.product(*(range(len(grid[k])) for k in keys)):
        params = {**fixed, **{k: grid[k][i] for k, i in zip(keys, index)}}
        excluded = study.where is not None and not study.where(dict(params))
        cases.append(Case(params, index, cache_key(study, params, code), bool(excluded)))
    return cases




def _params_json(params) -> str:
    """The case parameters as stored in its cache file (checked when the file is reused)."""
    return json.dumps(params, sort_keys=True, default=json_default)


def _load_cached(path: Path, case: Case, rerun_failed: bool):
    if not path.is_file():
        return None
    try:
        ds = load_netcdf(path)
    except Exception:  # noqa: BLE001 - unreadable: recompute
        return None
    if ds.attrs.get("runner_params") != _params_json(case.params):
        return None
    if rerun_failed and str(ds["status"].values.item()) != OK:
        return None
    return ds
