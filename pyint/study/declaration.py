"""The declaration of a study: a parameter sweep declared once (:class:`Study`), run by
:mod:`pyint.study.runner`, cached (:mod:`pyint.study.cache`), combined (:mod:`pyint.study.combine`).

Writing a study
---------------
A study is a module that defines one module-level ``STUDY = Study(...)``:
pyint's own are ``studies/<name>.py`` (installed as ``pyint.studies.<name>``);
yours can be any script (``python mystudy.py``, ``pyint study run
path/to/mystudy.py``, ``run_study(STUDY)``) or a module of your package
declared in the entry-point group ``pyint.studies`` (``pyint study list`` and
``pyint study run <name>`` find it, see :mod:`pyint.cli`).  A case may return
an integration's own dataset, ``Result.to_xarray()``: it carries every unit and
long name the runner asks for.  A complete example::

    import time
    import numpy as np
    import xarray as xr
    from pyint.study.datasets import measured_order
    from pyint.study import Study, study_main

    def run_case(p):
        # one case: p holds the fixed parameters and one point of the grid
        if p["h"] <= 0:
            raise ValueError(f"h must be > 0, got {p['h']}")
        t = np.arange(0.0, p["T"] + p["h"] / 2, p["h"])
        t0 = time.process_time()
        y = np.exp(-p["k"] * t)                    # ... the real integration ...
        cpu = time.process_time() - t0
        return xr.Dataset(
            {"y": ("time", y, {"units": "m", "long_name": "displacement"}),
             "error": ((), float(abs(y[-1] - np.exp(-p["k"] * p["T"]))), {"units": "m"}),
             "cpu_time": ((), cpu)},               # standard names get their units
            coords={"time": t})

    def add_order(ds):                              # runs once on the combined dataset
        return ds.assign(order=measured_order(ds["error"], "h"))

    STUDY = Study(
        name="decay", description="exponential decay, error against h",
        grid={"k": [1.0, 2.0], "h": [0.1, 0.05, 0.025]},
        fixed={"T": 1.0},
        quick_grid={"h": [0.1, 0.05], "T": 0.5},
        run_case=run_case, post=add_order)

    if __name__ == "__main__":
        raise SystemExit(study_main(STUDY))

``python decay.py`` (or ``pyint study run decay.py``; ``pyint study run decay``
once it is a module of ``pyint.studies`` or an entry point) then writes
``results/decay.nc`` (dims ``k``, ``h`` and the case's own ``time``/``sample``,
see below) and ``results/decay/*.png``.

The contract
------------
The fields of :class:`Study` (its docstring): name, description, grid, run_case, fixed,
quick_grid, where, post, figures, summary, meta, smoke, version.

"""
from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import xarray as xr


#: Names a study parameter may not take (they are attributes or dimensions of every dataset).
RESERVED = frozenset({"pyint_version", "git_commit", "created", "study", "description", "grid",
                      "grid_dims", "quick", "n_cases", "n_failed", "runner_params", "time", "sample",
                      "status", "message", "case_attrs"})

OK = "ok"

#: The statuses the runner gives a case that produced no result: its run_case raised ("failed")
#: or its worker process died ("crashed").  ``pyint study run`` exits with status 1 when a case
#: has one; a status a case returns itself (a soft failure the study records as a result, e.g.
#: a method that fails at a step beyond its stability limit) is listed but is not an error.
ERROR_STATUSES = ("failed", "crashed")


# -- the declaration -----------------------------------------------------------------
def _check_values(key, values):
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"grid parameter {key!r}: expected a list of values, got {values!r}")
    values = [v.item() if isinstance(v, np.generic) else v for v in values]
    if not values:
        raise ValueError(f"grid parameter {key!r} has no values")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise TypeError(f"grid parameter {key!r}: values must be str, int or float, got {v!r}")
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"grid parameter {key!r}: value {v!r} is not finite")
    if len({isinstance(v, str) for v in values}) > 1:
        raise TypeError(f"grid parameter {key!r} mixes text and numbers: {values!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"grid parameter {key!r} has repeated values: {values!r}")
    return values


def _check_name(kind, key):
    if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        raise ValueError(f"{kind} name {key!r} must be an identifier (letters, digits, _)")
    if key in RESERVED:
        raise ValueError(f"{kind} name {key!r} is reserved (one of {sorted(RESERVED)})")


@dataclasses.dataclass(frozen=True, eq=False)
class Study:
    """A parameter sweep, declared once: run locally or on Dask, cached, one NetCDF file.

    A study is a module that defines one module-level ``STUDY = Study(...)`` (the module
    docstring of :mod:`pyint.study.declaration` has a complete example, the cache and the
    combined dataset).

    Parameters
    ----------
    name, description : str
        identifier (letters, digits, ``_``) and one line for ``pyint study list``.
    grid : dict of str to list
        ``{parameter: [values, ...]}``: the cases are the Cartesian product, and the
        parameters become the dimensions of the combined dataset, in this order.  Values are
        str, int or float (one kind per parameter).
    run_case : callable
        ``run_case(params) -> xarray.Dataset``: defined at module level (processes and Dask
        workers import it by name), deterministic for given ``params`` (the cache relies on
        it).  ``params`` is ``fixed`` updated with one grid point.  Use the standard names
        of :data:`pyint.study.datasets.STANDARD` (``eps_pos``, ``error``, ``cpu_time``, ...:
        units and long names are filled in); any other variable needs ``units`` and
        ``long_name`` attrs or an entry in ``meta``, else the case fails with a message
        saying so.  Raising records the case as ``status = "failed"`` with the exception as
        ``message``; to record a soft failure with partial data, return a dataset with a
        string ``status`` other than ``"ok"`` and a ``message``.  Parameter names may not be
        used as names of the case's dimensions or variables.  Case attributes that all cases
        with attributes agree on become global attributes; if they differ, each case's
        attributes are kept as JSON in the ``case_attrs`` variable.
    fixed : dict, optional
        ``{parameter: value}`` passed to every case, written as attributes (dicts and lists
        as JSON), part of the cache key.
    quick_grid : dict, optional
        overrides for ``--quick``: a list of values for a grid parameter, a new value for a
        fixed one.  The quick grid is the smoke test every registered study gets in the test
        suite (tests/test_cli.py): keep it to seconds.  The default grid is what ``./dev.sh
        studies`` runs: all studies together should finish in about 10 minutes on 2 cores.
    where : callable, optional
        ``where(params) -> bool``: keep only the cases it accepts; the others appear with
        ``status = "skipped"``.
    post : callable, optional
        ``post(ds) -> ds``: adds what needs several cases (e.g. ``order`` from
        :func:`pyint.study.datasets.measured_order`).
    figures : callable, optional
        ``figures(nc_path, outdir) -> [png paths]``: the study's own figures, drawn from the
        file; default :func:`pyint.study.plotting.plot_file`.
    summary : callable, optional
        ``summary(ds) -> str``: the table printed after the run; default
        :func:`pyint.study.runner.summary_table`.
    meta : dict of str to (str, str), optional
        ``{name: (units, long_name)}`` for the study's own parameters/variables.
    smoke : bool, default False
        ``True`` for a smoke test of the machinery (the ``selftest`` study): ``pyint study
        list`` marks it and ``pyint study run --all`` leaves it out.
    version : str, default "1"
        bump it to invalidate the study's cached cases (an edit of the study module
        invalidates them anyway: the module docstring; bump it when a change elsewhere, e.g. in a
        helper module, changes the results).

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> import xarray as xr
    >>> from pyint.study import Study, run_study
    >>> def run_case(p):
    ...     return xr.Dataset({"error": ((), abs(np.exp(-p["h"]) - (1 - p["h"])), {"units": "1"})})
    >>> decay = Study(name="decay", description="one Euler step of y' = -y", grid={"h": [0.1, 0.05]},
    ...               run_case=run_case)
    >>> run = run_study(decay, out=tempfile.mkdtemp(), workers=1, figures=False, verbose=False)
    >>> run.n_cases, run.n_failed, run.dataset["error"].dims
    (2, 0, ('h',))
    """

    name: str
    description: str
    grid: Mapping[str, list]
    run_case: Callable[[dict], xr.Dataset]
    fixed: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    quick_grid: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    where: Callable[[dict], bool] | None = None
    post: Callable[[xr.Dataset], xr.Dataset] | None = None
    figures: Callable[[Path, Path], list] | None = None
    summary: Callable[[xr.Dataset], str] | None = None
    meta: Mapping[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    version: str = "1"
    smoke: bool = False

    def __post_init__(self):
        if not isinstance(self.name, str) or not re.fullmatch(r"[A-Za-z0-9_]+", self.name):
            raise ValueError(f"study name {self.name!r} must be letters, digits and _")
        if not callable(self.run_case):
            raise TypeError(f"study {self.name!r}: run_case must be callable")
        if not isinstance(self.grid, Mapping) or not self.grid:
            raise ValueError(f"study {self.name!r}: grid must be a non-empty dict of parameter -> values")
        grid = {}
        for key, values in self.grid.items():
            _check_name("grid parameter", key)
            grid[key] = _check_values(key, values)
        for key in self.fixed:
            _check_name("fixed parameter", key)
        both = set(grid) & set(self.fixed)
        if both:
            raise ValueError(f"study {self.name!r}: {sorted(both)} are both grid and fixed parameters")
        for key, value in self.quick_grid.items():
            if key in grid:
                _check_values(key, value)
            elif key not in self.fixed:
                raise ValueError(f"study {self.name!r}: quick_grid names {key!r}, "
                                 "which is neither a grid nor a fixed parameter")
        for key, entry in self.meta.items():
            if not (isinstance(entry, tuple) and len(entry) == 2 and all(isinstance(s, str) for s in entry)):
                raise TypeError(f"study {self.name!r}: meta[{key!r}] must be a (units, long_name) tuple")
        if not isinstance(self.smoke, bool):
            raise TypeError(f"study {self.name!r}: smoke must be True or False, got {self.smoke!r}")
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "fixed", dict(self.fixed))

    # -- parameters ----------------------------------------------------------------
    def parse_overrides(self, items) -> dict[str, list]:
        """Parse command-line ``key=v1,v2`` items into typed value lists (typed like the defaults)."""
        out = {}
        for item in items or ():
            key, sep, text = str(item).partition("=")
            key = key.strip()
            if not sep or not key:
                raise ValueError(f"--grid expects key=v1,v2,..., got {item!r}")
            if key in out:
                raise ValueError(f"--grid {key}=... is given twice; give all its values once: {key}=v1,v2,...")
            if key in self.grid:
                proto = self.grid[key]
            elif key in self.fixed:
                proto = [self.fixed[key]]
            else:
                raise ValueError(f"study {self.name!r} has no parameter {key!r}; grid: {list(self.grid)}, "
                                 f"fixed: {list(self.fixed)}")
            out[key] = _parse_values(key, text, proto)
        return out

    def resolve(self, overrides: Mapping[str, list] | None = None, quick: bool = False):
        """The (grid, fixed) of a run: defaults, then ``quick_grid``, then ``overrides``.

        An override of a fixed parameter with one value replaces it; with
        several values the parameter becomes a new (last) grid dimension.
        """
        grid = {k: list(v) for k, v in self.grid.items()}
        fixed = dict(self.fixed)
        if quick:
            for key, value in self.quick_grid.items():
                if key in grid:
                    grid[key] = list(value)
                else:
                    fixed[key] = value
        for key, values in (overrides or {}).items():
            if key not in grid and key not in fixed:
                raise ValueError(f"study {self.name!r} has no parameter {key!r}; grid: {list(self.grid)}, "
                                 f"fixed: {list(self.fixed)}")
            values = _check_values(key, values)
            if key in grid:
                grid[key] = values
            elif len(values) == 1:
                fixed[key] = values[0]
            else:
                del fixed[key]
                grid[key] = values
        return grid, fixed


def _parse_values(key, text, proto):
    parts = [s.strip() for s in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise ValueError(f"--grid {key}=...: empty value in {text!r}")
    kinds = {type(v) for v in proto}
    if not kinds <= {str, int, float}:
        return [json.loads(text)]  # a structured fixed value: one JSON value

    def conv(s):
        if str in kinds:
            return s
        try:
            return int(s) if kinds == {int} else float(s)
        except ValueError:
            raise ValueError(f"--grid {key}: {s!r} is not {'an integer' if kinds == {int} else 'a number'}") from None

    return [conv(p) for p in parts]
