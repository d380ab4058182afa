"""One dataset from the cases of a study run.

Combining: a case dimension with the same coordinate in every case stays
as it is.  If the cases' ``time`` coordinates differ (different ``h``), the
case dimension ``time`` becomes ``sample`` (the output index) and ``time``
becomes a coordinate on (grid dims..., ``sample``), NaN-padded after each
case's end; other case dimensions with differing coordinates are outer-joined
(union of the values, NaN where a case has none).  Integers with gaps become
floats with NaN; text gaps are "".
"""
from __future__ import annotations

import json
from typing import Mapping

import numpy as np
import xarray as xr

from .datasets import attr_value, json_default


# -- combining cases ---------------------------------------------------------------------------------
def _string_kind(dtype) -> bool:
    return dtype.kind in "OUS"


def combine_cases(grid: Mapping[str, list], results) -> xr.Dataset:
    """One dataset from ``results`` = [(grid index tuple, case dataset), ...].

    The grid parameters become the leading dimensions in ``grid`` order;
    see the module docstring for how the cases' own dimensions combine.
    """
    gdims = list(grid)
    gshape = tuple(len(v) for v in grid.values())
    results = list(results)
    with_time = [ds for _, ds in results if "time" in ds.dims]
    time_differs = any(not np.array_equal(ds["time"].values, with_time[0]["time"].values) for ds in with_time)

    def dims_of(var):
        return tuple("sample" if (d == "time" and time_differs) else str(d) for d in var.dims)

    # the cases' own dimensions: coordinate values (None = positional) and sizes
    dim_values: dict[str, list] = {}
    dim_size: dict[str, int] = {}
    for _, ds in results:
        clash = set(map(str, ds.dims)) & set(gdims)
        if clash:
            raise ValueError(f"a case has dimensions {sorted(clash)} that are grid parameters")
        for var in ds.variables.values():
            for d, size in zip(dims_of(var), var.shape):
                dim_size[d] = max(dim_size.get(d, 0), size)
        for d in ds.indexes:
            if d == "time" and time_differs:
                continue
            vals = ds.indexes[d].tolist()
            old = dim_values.setdefault(str(d), vals)
            if old != vals:
                merged = old + [v for v in vals if v not in old]
                try:
                    merged = sorted(merged)
                except TypeError:
                    pass
                dim_values[str(d)] = merged
    for d, vals in dim_values.items():
        dim_size[d] = len(vals)
    lookup = {d: {v: i for i, v in enumerate(vals)} for d, vals in dim_values.items()}

    # every variable but the index coordinates of the cases' own dimensions
    names = [n for n in dict.fromkeys(str(n) for _, ds in results for n in ds.variables) if n not in dim_values]

    data_vars, coords = {}, {}
    for name in names:
        present = [(idx, ds[name]) for idx, ds in results if name in ds.variables]
        vdims = dims_of(present[0][1])
        for _, var in present:
            if dims_of(var) != vdims:
                raise ValueError(f"variable {name!r} has dimensions {vdims} in one case and "
                                 f"{dims_of(var)} in another")
        is_coord = any(name in ds.coords for _, ds in results if name in ds.variables)
        attrs = dict(present[0][1].attrs)
        if is_coord and vdims and all(var.equals(present[0][1]) for _, var in present):
            coords[name] = (vdims, present[0][1].values, attrs)  # the same wherever present: once
            continue
        strings = any(_string_kind(var.dtype) for _, var in present)
        dtype = object if strings else np.result_type(*(var.dtype for _, var in present))
        shape = gshape + tuple(dim_size[d] for d in vdims)
        data = np.empty(shape, dtype=dtype)
        filled = np.zeros(shape, dtype=bool)
        for idx, var in present:
            where = []
            for d, size in zip(vdims, var.shape):
                if d in lookup:
                    where.append(np.array([lookup[d][v] for v in var[d].values.tolist()], dtype=int)
                                 if d in var.coords else np.arange(size))
                else:
                    where.append(np.arange(size))
            sel = (*idx, *np.ix_(*where)) if where else idx
            values = var.values.astype(object) if strings else var.values
            data[sel] = values.item() if values.ndim == 0 else values
            filled[sel] = True
        if not filled.all():
            if strings:
                data[~filled] = ""
            else:
                if data.dtype.kind not in "fc":
                    data = data.astype(np.float64)
                data[~filled] = np.nan
        target = coords if is_coord else data_vars
        target[name] = (tuple(gdims) + vdims, data, attrs)

    for d, vals in dim_values.items():
        coords[d] = (d, np.asarray(vals, dtype=object if isinstance(vals[0], str) else None),
                     dict(next(ds[d].attrs for _, ds in results if d in ds.indexes)))
    for k, vals in grid.items():
        coords[k] = (k, np.asarray(vals, dtype=object if isinstance(vals[0], str) else None))
    out = xr.Dataset(data_vars, coords)
    out = out.transpose(*gdims, ...)

    # case attributes: global when all cases that have any agree, else per case as JSON
    attr_sets = [(idx, ds.attrs) for idx, ds in results if ds.attrs]
    if attr_sets:
        first = json.dumps(attr_sets[0][1], sort_keys=True, default=json_default)
        if all(json.dumps(a, sort_keys=True, default=json_default) == first for _, a in attr_sets):
            out.attrs.update(attr_sets[0][1])
        else:
            text = np.full(gshape, "", dtype=object)
            for idx, a in attr_sets:
                text[idx] = json.dumps({k: attr_value(v) for k, v in a.items()}, sort_keys=True)
            out["case_attrs"] = (tuple(gdims), text)
    return out
