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
    """One dataset from ``results`` = [(grid index tuple, case dataset), ...], or a function returning
    a fresh iterator over them (it is called twice: cases are then never all in memory at once).

    The grid parameters become the leading dimensions in ``grid`` order;
    see the module docstring for how the cases' own dimensions combine.
    Two passes: the first learns the layout (dimensions, sizes, dtypes, attributes), the second
    fills preallocated arrays case by case, so memory is the combined dataset plus one case.
    """
    again = results if callable(results) else (lambda: results)
    if not callable(results):
        results = list(results)
    gdims = list(grid)
    gshape = tuple(len(v) for v in grid.values())

    # -- pass 1: the layout -------------------------------------------------------------------------
    first_time = None
    time_differs = False
    dim_values: dict[str, list] = {}
    dim_attrs: dict[str, dict] = {}
    raw_size: dict[str, int] = {}
    first_var: dict[str, xr.DataArray] = {}
    raw_dims: dict[str, tuple] = {}
    dtypes: dict[str, list] = {}
    strings: dict[str, bool] = {}
    is_coord: dict[str, bool] = {}
    all_equal: dict[str, bool] = {}
    first_attrs, attrs_differ, any_attrs = None, False, False
    for _, ds in again():
        clash = set(map(str, ds.dims)) & set(gdims)
        if clash:
            raise ValueError(f"a case has dimensions {sorted(clash)} that are grid parameters")
        if "time" in ds.dims:
            if first_time is None:
                first_time = ds["time"].values
            elif not time_differs and not np.array_equal(ds["time"].values, first_time):
                time_differs = True
                dim_values.pop("time", None)
        for name, var in ds.variables.items():
            name = str(name)
            for d, size in zip(map(str, var.dims), var.shape):
                raw_size[d] = max(raw_size.get(d, 0), size)
            dims = tuple(map(str, var.dims))
            if name not in raw_dims:
                raw_dims[name], first_var[name] = dims, ds[name]  # a DataArray: equality covers its coords
                dtypes[name], strings[name], is_coord[name], all_equal[name] = [], False, False, True
            elif raw_dims[name] != dims:
                mapped = tuple("sample" if (d == "time" and time_differs) else d for d in raw_dims[name])
                other = tuple("sample" if (d == "time" and time_differs) else d for d in dims)
                raise ValueError(f"variable {name!r} has dimensions {mapped} in one case and {other} in another")
            elif all_equal[name] and dims:
                all_equal[name] = ds[name].equals(first_var[name])
            if var.dtype not in dtypes[name]:
                dtypes[name].append(var.dtype)
            strings[name] = strings[name] or _string_kind(var.dtype)
            is_coord[name] = is_coord[name] or name in ds.coords
        for d in ds.indexes:
            d = str(d)
            dim_attrs.setdefault(d, dict(ds[d].attrs))
            if d == "time" and time_differs:
                continue
            vals = ds.indexes[d].tolist()
            old = dim_values.setdefault(d, vals)
            if old != vals:
                merged = old + [v for v in vals if v not in old]
                try:
                    merged = sorted(merged)
                except TypeError:
                    pass
                dim_values[d] = merged
        if ds.attrs:
            text = json.dumps(ds.attrs, sort_keys=True, default=json_default)
            if first_attrs is None:
                first_attrs, first_attrs_dict = text, dict(ds.attrs)
            elif text != first_attrs:
                attrs_differ = True
            any_attrs = True

    def mapped(dims):
        return tuple("sample" if (d == "time" and time_differs) else d for d in dims)

    dim_size: dict[str, int] = {}
    for d, size in raw_size.items():
        dim_size[mapped((d,))[0]] = max(dim_size.get(mapped((d,))[0], 0), size)
    for d, vals in dim_values.items():
        dim_size[d] = len(vals)
    lookup = {d: {v: i for i, v in enumerate(vals)} for d, vals in dim_values.items()}

    # every variable but the index coordinates of the cases' own dimensions
    names = [n for n in raw_dims if n not in dim_values]
    data_vars, coords, arrays = {}, {}, {}
    for name in names:
        vdims = mapped(raw_dims[name])
        attrs = dict(first_var[name].attrs)
        if is_coord[name] and vdims and all_equal[name]:
            coords[name] = (vdims, first_var[name].values, attrs)  # the same wherever present: once
            continue
        dtype = object if strings[name] else np.result_type(*dtypes[name])
        shape = gshape + tuple(dim_size[d] for d in vdims)
        arrays[name] = (vdims, np.empty(shape, dtype=dtype), np.zeros(shape, dtype=bool), attrs)
    case_attrs = np.full(gshape, "", dtype=object) if attrs_differ else None

    # -- pass 2: the values -------------------------------------------------------------------------
    # each case's text arrives as a new str (numpy's .item()): one object per distinct text, not per
    # case (a sweep's status and message repeat a few values; 100 000 cases held 10 MB of copies)
    texts: dict[str, str] = {}
    for idx, ds in again():
        variables = ds.variables
        for name, (vdims, data, filled, _) in arrays.items():
            if name not in variables:
                continue
            if not vdims:  # a scalar (most variables of a large sweep): no DataArray needed
                value = variables[name].values.item()
                data[idx] = texts.setdefault(value, value) if strings[name] and isinstance(value, str) else value
                filled[idx] = True
                continue
            var = ds[name]
            where = []
            for d, size in zip(vdims, var.shape):
                if d in lookup:
                    where.append(np.array([lookup[d][v] for v in var[d].values.tolist()], dtype=int)
                                 if d in var.coords else np.arange(size))
                else:
                    where.append(np.arange(size))
            sel = (*idx, *np.ix_(*where)) if where else idx
            values = var.values.astype(object) if strings[name] else var.values
            data[sel] = values.item() if values.ndim == 0 else values
            filled[sel] = True
        if case_attrs is not None and ds.attrs:
            case_attrs[idx] = json.dumps({k: attr_value(v) for k, v in ds.attrs.items()}, sort_keys=True)

    for name, (vdims, data, filled, attrs) in arrays.items():
        if not filled.all():
            if strings[name]:
                data[~filled] = ""
            else:
                if data.dtype.kind not in "fc":
                    data = data.astype(np.float64)
                data[~filled] = np.nan
        target = coords if is_coord[name] else data_vars
        target[name] = (tuple(gdims) + vdims, data, attrs)

    for d, vals in dim_values.items():
        coords[d] = (d, np.asarray(vals, dtype=object if isinstance(vals[0], str) else None), dim_attrs[d])
    for k, vals in grid.items():
        coords[k] = (k, np.asarray(vals, dtype=object if isinstance(vals[0], str) else None))
    out = xr.Dataset(data_vars, coords)
    out = out.transpose(*gdims, ...)

    # case attributes: global when all cases that have any agree, else per case as JSON
    if any_attrs:
        if not attrs_differ:
            out.attrs.update(first_attrs_dict)
        else:
            out["case_attrs"] = (tuple(gdims), case_attrs)
    return out
