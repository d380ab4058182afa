"""One dataset from the cases of a study run, in memory or written to its NetCDF file in blocks.

Combining: a case dimension with the same coordinate in every case stays
as it is.  If the cases' ``time`` coordinates differ (different ``h``), the
case dimension ``time`` becomes ``sample`` (the output index) and ``time``
becomes a coordinate on (grid dims..., ``sample``), NaN-padded after each
case's end; other case dimensions with differing coordinates are outer-joined
(union of the values, NaN where a case has none).  Integers with gaps become
floats with NaN; text gaps are "".

Two passes over the cases (a function giving a fresh iterator: they are read twice and never held
all at once).  The first learns the :class:`Layout` (dimensions, sizes, dtypes, attributes, and
whether every case writes every cell of a variable: an integer with gaps becomes a float before
anything is written).  The second fills blocks of consecutive grid cells (C order) case by case
(:func:`_fill`).  :func:`combine_cases` fills one block spanning the grid and returns the Dataset;
:func:`write_combined` creates the study's file through xarray's own NetCDF encoding (the same
variables, dtypes, fill values, compression and attributes as ``to_netcdf`` of that Dataset) and
fills it by blocks of at most :data:`BLOCK_BYTES`, so its memory does not grow with the number of
cases (the "stores for sweeps" of the xarray docs, "Writing to a region": a file written in pieces).
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import math
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import xarray as xr

from .._files import atomic_path, held_interrupt, remove_stale_temporaries
from .datasets import _encoding, attr_value, flat_attrs, json_default, write_netcdf

#: Bytes of one block of cases held while the study file is written, and how many blocks are kept
#: (the least recently used is written out; cases arrive shard by shard, close to grid order).
BLOCK_BYTES = 8 * 2**20
BLOCKS_KEPT = 2


def _string_kind(dtype) -> bool:
    return dtype.kind in "OUS"


def _flat(idx, gshape) -> int:
    """The C-order position of the grid cell ``idx``."""
    if len(idx) != len(gshape):
        raise IndexError(f"grid index {tuple(idx)} does not fit the grid {gshape}")
    flat = 0
    for i, n in zip(idx, gshape):
        if not 0 <= i < n:
            raise IndexError(f"grid index {tuple(idx)} is outside the grid {gshape}")
        flat = flat * n + int(i)
    return flat


# -- pass 1: the layout ---------------------------------------------------------------------------------
@dataclasses.dataclass
class _Var:
    """A variable that varies with the case: held per grid cell as ``shape`` (its case dims ``dims``)."""

    dims: tuple
    shape: tuple
    dtype: np.dtype
    attrs: dict
    coord: bool
    text: bool
    fill: object        # what a cell no case writes holds ("", NaN; 0 where every case writes every cell)


@dataclasses.dataclass
class Layout:
    """What the first pass over the cases learns: enough to build (or create on disk) the combined
    dataset before any value is filled in."""

    grid: dict
    gshape: tuple
    variables: dict         # name -> _Var, in the cases' order (``case_attrs`` last when present)
    constants: dict         # name -> (dims, values, attrs): coordinates the same in every case
    dim_values: dict        # the cases' own index coordinates (outer-joined)
    dim_attrs: dict
    lookup: dict            # dim -> {value: position}
    attrs: dict | None      # the cases' attributes when they all agree

    @property
    def size(self) -> int:
        return math.prod(self.gshape)

    def flat(self, idx) -> int:
        return _flat(idx, self.gshape)

    def block(self, start: int, stop: int) -> dict:
        """Arrays (stop - start, *var.shape) for the grid cells [start, stop), every cell holding its fill."""
        return {name: np.full((stop - start,) + var.shape, var.fill, dtype=var.dtype)
                for name, var in self.variables.items()}

    def dataset(self, arrays: Mapping | None = None) -> xr.Dataset:
        """The combined Dataset, ``arrays`` (name -> array on grid dims + var dims) as its values; without
        them every variable is its fill, broadcast (no memory): the skeleton of the file."""
        gdims = tuple(self.grid)
        data_vars, coords, shaped = {}, {}, {}
        for name, (dims, values, attrs) in self.constants.items():
            coords[name] = (dims, values, attrs)
        for name, var in self.variables.items():
            shape = self.gshape + var.shape
            if arrays is not None:
                shaped[name] = np.asarray(arrays[name]).reshape(shape)
            else:
                shaped[name] = np.broadcast_to(np.array(var.fill, dtype=var.dtype), shape)
        for name, var in self.variables.items():
            if name == "case_attrs":
                continue
            (coords if var.coord else data_vars)[name] = (gdims + var.dims, shaped[name], var.attrs)
        for d, vals in self.dim_values.items():
            coords[d] = (d, np.asarray(vals, dtype=object if isinstance(vals[0], str) else None), self.dim_attrs[d])
        for k, vals in self.grid.items():
            coords[k] = (k, np.asarray(vals, dtype=object if isinstance(vals[0], str) else None))
        out = xr.Dataset(data_vars, coords).transpose(*gdims, ...)
        # case attributes: global when all cases that have any agree, else per case as JSON
        if "case_attrs" in self.variables:
            out["case_attrs"] = (gdims, shaped["case_attrs"], self.variables["case_attrs"].attrs)
        elif self.attrs:
            out.attrs.update(self.attrs)
        return out


def _layout(grid: Mapping[str, list], cases) -> Layout:
    """Pass 1 over ``cases`` = iterable of (grid index, case dataset)."""
    gdims = list(grid)
    gshape = tuple(len(v) for v in grid.values())
    seen = np.zeros(math.prod(gshape), dtype=bool)      # a byte per grid cell: no case given twice
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
    cells: dict[str, int] = {}                          # cells of the combined variable the cases write
    first_attrs, first_attrs_dict, attrs_differ, any_attrs = None, None, False, False
    for idx, ds in cases:
        flat = _flat(idx, gshape)
        if seen[flat]:
            raise ValueError(f"two cases for the grid index {tuple(idx)}")
        seen[flat] = True
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
                dtypes[name], strings[name], is_coord[name], all_equal[name], cells[name] = [], False, False, True, 0
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
            cells[name] += math.prod(var.shape)
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
    variables, constants = {}, {}
    for name in (n for n in raw_dims if n not in dim_values):
        vdims = mapped(raw_dims[name])
        attrs = dict(first_var[name].attrs)
        if is_coord[name] and vdims and all_equal[name]:
            constants[name] = (vdims, first_var[name].values, attrs)  # the same wherever present: once
            continue
        shape = tuple(dim_size[d] for d in vdims)
        full = cells[name] == math.prod(gshape + shape)   # every case writes every cell
        if strings[name]:
            dtype, fill = np.dtype(object), ""
        else:
            dtype = np.result_type(*dtypes[name])
            if not full and dtype.kind not in "fc":
                dtype = np.dtype(np.float64)
            fill = 0 if full else np.nan
        variables[name] = _Var(vdims, shape, dtype, attrs, is_coord[name], strings[name], fill)
    if attrs_differ:
        variables["case_attrs"] = _Var((), (), np.dtype(object), {}, False, True, "")
    return Layout(dict(grid), gshape, variables, constants, dim_values, dim_attrs, lookup,
                  first_attrs_dict if any_attrs and not attrs_differ else None)


# -- pass 2: the values -------------------------------------------------------------------------------------
def _fill(layout: Layout, cases, block_of: Callable[[int], tuple]):
    """Write every case's values into its cell of the block ``block_of(flat position)`` gives as
    (arrays, row)."""
    # each case's text arrives as a new str (numpy's .item()): one object per distinct text, not per
    # case (a sweep's status and message repeat a few values; 100 000 cases held 10 MB of copies)
    texts: dict[str, str] = {}
    items = [(name, var) for name, var in layout.variables.items() if name != "case_attrs"]
    case_attrs = "case_attrs" in layout.variables
    lookup = layout.lookup
    for idx, ds in cases:
        arrays, row = block_of(layout.flat(idx))
        variables = ds.variables
        for name, var in items:
            if name not in variables:
                continue
            data = arrays[name]
            if not var.dims:  # a scalar (most variables of a large sweep): no DataArray needed
                value = variables[name].values.item()
                data[row] = texts.setdefault(value, value) if var.text and isinstance(value, str) else value
                continue
            case_var = ds[name]
            where = []
            for d, size in zip(var.dims, case_var.shape):
                if d in lookup and d in case_var.coords:
                    where.append(np.array([lookup[d][v] for v in case_var[d].values.tolist()], dtype=int))
                else:
                    where.append(np.arange(size))
            values = case_var.values.astype(object) if var.text else case_var.values
            data[(row, *np.ix_(*where))] = values
        if case_attrs and ds.attrs:
            arrays["case_attrs"][row] = json.dumps({k: attr_value(v) for k, v in ds.attrs.items()},
                                                   sort_keys=True)


def _again(results):
    """``results`` as a function giving a fresh iterator (a list is iterated again)."""
    if callable(results):
        return results
    results = list(results)
    return lambda: iter(results)


def combine_cases(grid: Mapping[str, list], results) -> xr.Dataset:
    """One dataset from ``results`` = [(grid index tuple, case dataset), ...], or a function returning
    a fresh iterator over them (it is called twice: cases are then never all in memory at once).

    The grid parameters become the leading dimensions in ``grid`` order;
    see the module docstring for how the cases' own dimensions combine.
    Memory: the combined dataset plus one case (:func:`write_combined` writes the file without the
    combined dataset).
    """
    again = _again(results)
    layout = _layout(grid, again())
    arrays = layout.block(0, layout.size)
    _fill(layout, again(), lambda flat: (arrays, flat))
    return layout.dataset(arrays)


# -- the study file, block by block ---------------------------------------------------------------------------
def _boxes(start: int, stop: int, shape: tuple) -> list[tuple]:
    """Hyperslabs (tuples of slices, in C order) that together hold the flat positions [start, stop) of
    an array of ``shape``: a partial row, whole rows, a partial row, recursively (at most 2 ndim - 1)."""
    if start >= stop:
        return []
    if not shape:
        return [()]
    inner = math.prod(shape[1:])
    i0, r0 = divmod(start, inner)
    i1, r1 = divmod(stop, inner)
    if i0 == i1:
        return [(slice(i0, i0 + 1),) + box for box in _boxes(r0, r1, shape[1:])]
    out = []
    if r0:
        out += [(slice(i0, i0 + 1),) + box for box in _boxes(r0, inner, shape[1:])]
        i0 += 1
    if i1 > i0:
        out.append((slice(i0, i1),) + tuple(slice(0, n) for n in shape[1:]))
    if r1:
        out += [(slice(i1, i1 + 1),) + box for box in _boxes(0, r1, shape[1:])]
    return out


def _cases_per_block(layout: Layout) -> int:
    """Grid cells per block: as many as :data:`BLOCK_BYTES` holds (text counted as its pointer: a
    sweep's texts repeat a few values, shared), at least one."""
    per_case = sum(math.prod(var.shape) * var.dtype.itemsize for var in layout.variables.values())
    return max(1, min(layout.size, BLOCK_BYTES // max(1, per_case)))


class _FileBlocks:
    """The blocks of grid cells being filled, written to the NetCDF variables ``targets`` (netCDF4) when
    they leave memory: at most :data:`BLOCKS_KEPT` held, the least recently used written out; a block
    met again after it was written is read back first.  Every write holds Ctrl-C (:func:`held_interrupt`)
    and xarray's netCDF/HDF5 lock."""

    def __init__(self, layout: Layout, targets: dict, cast: dict):
        self.layout, self.targets, self.cast = layout, targets, cast
        self.cases = _cases_per_block(layout)
        self.written = np.zeros(-(-layout.size // self.cases), dtype=bool)
        self.kept: collections.OrderedDict = collections.OrderedDict()

    def _range(self, k):
        return k * self.cases, min(self.layout.size, (k + 1) * self.cases)

    def _io(self, k, arrays, write):
        from xarray.backends.netCDF4_ import NETCDF4_PYTHON_LOCK
        start, stop = self._range(k)
        boxes = _boxes(start, stop, self.layout.gshape)
        with held_interrupt(), NETCDF4_PYTHON_LOCK:
            for name, var in self.layout.variables.items():
                target, data, row = self.targets[name], arrays[name], 0
                for box in boxes:
                    n = math.prod(s.stop - s.start for s in box)
                    key = box + (slice(None),) * len(var.shape) if box or var.shape else Ellipsis
                    shaped = tuple(s.stop - s.start for s in box) + var.shape
                    if write:
                        part = data[row:row + n].reshape(shaped)
                        target[key] = part if self.cast.get(name) is None else part.astype(self.cast[name])
                    else:
                        data[row:row + n] = np.asarray(target[key]).reshape((n,) + var.shape)
                    row += n

    def __call__(self, flat: int) -> tuple:
        k, row = divmod(flat, self.cases)
        if k in self.kept:
            self.kept.move_to_end(k)
            return self.kept[k], row
        if len(self.kept) >= BLOCKS_KEPT:
            old, arrays = self.kept.popitem(last=False)
            self._io(old, arrays, write=True)
            self.written[old] = True
        arrays = self.layout.block(*self._range(k))
        if self.written[k]:
            self._io(k, arrays, write=False)
        self.kept[k] = arrays
        return arrays, row

    def finish(self):
        """Write the blocks held, and the fill of every block no case reached."""
        while self.kept:
            k, arrays = self.kept.popitem(last=False)
            self._io(k, arrays, write=True)
            self.written[k] = True
        for k in np.flatnonzero(~self.written):
            self._io(int(k), self.layout.block(*self._range(int(k))), write=True)
            self.written[k] = True


def _streamable(layout: Layout) -> bool:
    """Whether the block writer handles every variable: numbers, booleans and text (their NetCDF
    encoding does not depend on the values; times and complex numbers are written in memory)."""
    return all(var.dtype.kind in "fiubO" for var in layout.variables.values())


def _create(store, skeleton: xr.Dataset, blocked: set) -> tuple[dict, dict]:
    """Create in ``store`` (an xarray NetCDF4DataStore) what ``to_netcdf(skeleton, encoding=_encoding)``
    creates -- dimensions, variables, dtypes, fill values, compression, attributes, the CF
    ``coordinates`` -- through xarray's own steps (``xarray.backends.writers.dump_to_store``), and
    write the variables not in ``blocked``.  A variable in ``blocked`` is encoded on its first element
    (its encoding depends on its dtype and attributes, not its values) and left for the blocks.
    Returns its netCDF4 variables and the dtype each block is cast to (None: none; booleans: int8)."""
    from xarray import conventions
    from xarray.backends.common import ArrayWriter
    encoding = _encoding(skeleton)
    variables, attrs = conventions.encode_dataset_coordinates(skeleton)
    for name, enc in encoding.items():
        variables[name].encoding = enc
    shapes = {name: var.shape for name, var in variables.items()}
    for name in blocked:
        var = variables[name]
        variables[name] = xr.Variable(var.dims, np.asarray(var.data[(slice(0, 1),) * var.ndim]), var.attrs,
                                      var.encoding)
    variables, attrs = store.encode(variables, attrs)
    for name in blocked:
        var = variables[name]
        variables[name] = xr.Variable(var.dims, np.broadcast_to(var.data, shapes[name]), var.attrs, var.encoding)
    store.set_attributes(attrs)
    store.set_dimensions(variables)
    writer, targets, cast = ArrayWriter(), {}, {}
    for name, var in variables.items():
        target, source = store.prepare_variable(name, var, name in encoding)
        if name in blocked:
            targets[name] = store.ds.variables[name]
            targets[name].set_auto_maskandscale(False)
            cast[name] = var.dtype if skeleton[name].dtype.kind == "b" else None
        else:
            writer.add(source, target)
    return targets, cast


def write_combined(grid: Mapping[str, list], results, path,
                   prepare: Callable[[xr.Dataset], xr.Dataset] | None = None) -> Path:
    """Write the dataset :func:`combine_cases` gives to the NetCDF file ``path`` without holding it:
    the same file as ``write_netcdf(prepare(combine_cases(grid, results)), path)`` (data, dimensions,
    coordinates, attributes, encodings), its variables filled by blocks of grid cells.

    ``prepare`` (units, provenance: anything but the values) is applied to the combined dataset's
    skeleton (every value its fill, broadcast) after the first pass.  Atomic as :func:`write_netcdf`:
    on any error, Ctrl-C included, the temporary file is removed; Ctrl-C is held during each block's
    write, so it is answered within one block (:data:`BLOCK_BYTES`).
    """
    again = _again(results)
    prepare = prepare or (lambda ds: ds)
    layout = _layout(grid, again())
    if not _streamable(layout):
        arrays = layout.block(0, layout.size)
        _fill(layout, again(), lambda flat: (arrays, flat))
        with held_interrupt():
            return write_netcdf(prepare(layout.dataset(arrays)), path)
    skeleton = flat_attrs(prepare(layout.dataset()))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent, path.name)  # left by a killed writer of the same file
    from xarray.backends import NetCDF4DataStore
    from xarray.backends.netCDF4_ import NETCDF4_PYTHON_LOCK
    with atomic_path(path) as tmp:
        with held_interrupt():
            # the process-wide netCDF/HDF5 lock the blocks' writes take (_FileBlocks._io); without
            # lock=, xarray asks Dask for a per-file write lock, importing dask and distributed
            # (0.2 s) in the study process, which writes alone and never runs on a Dask worker
            store = NetCDF4DataStore.open(tmp, mode="w", format="NETCDF4", lock=NETCDF4_PYTHON_LOCK)
        try:
            with held_interrupt():
                targets, cast = _create(store, skeleton, set(layout.variables))
            blocks = _FileBlocks(layout, targets, cast)
            _fill(layout, again(), blocks)
            blocks.finish()
        except BaseException:
            with held_interrupt(), contextlib.suppress(Exception):
                store.close()
            raise
        with held_interrupt():
            store.close()
    return path
