"""Figures drawn from a study's NetCDF file alone (PNG, matplotlib's Agg canvas).

:func:`plot_file` looks at the variables the file holds and draws what
applies, one PNG each:

``trajectories.png``          q against time, one panel per coordinate
``constraint_violation.png``  |violation| against time on a log scale, per constraint level
``energy_error.png``          |energy_error| against time on a log scale
``error_vs_h.png``            error against h (log-log) with the fitted slope in the legend
``violation_vs_h.png``        eps_pos / eps_vel / eps_acc against h (log-log)
``work_precision.png``        error against CPU time (log-log)

A "series" is one combination of the grid parameters other than ``h``; the
time-series figures show each series at its smallest ``h`` that ended ok.
Axis labels carry the ``units`` attributes of the file.
"""
from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from .datasets import load_netcdf, measured_order

#: Short axis labels (matplotlib mathtext) for standard names.
LABELS = {
    "time": "t", "h": "h", "error": "error", "cpu_time": "CPU time", "energy_error": r"$|\Delta H / H_0|$",
    "eps_pos": r"$\varepsilon(\Phi)$", "eps_vel": r"$\varepsilon(\dot\Phi)$",
    "eps_acc": r"$\varepsilon(\ddot\Phi)$", "energy_drift": r"$\delta(H)$",
}
_LEVEL_VAR = {"position": "eps_pos", "velocity": "eps_vel", "acceleration": "eps_acc"}


def _units(text: str) -> str:
    return re.sub(r"\^(-?\w+)", lambda m: "$^{" + m.group(1) + "}$", text)


def axis_label(ds, name, short=None, units=None) -> str:
    """``short [units]`` from the variable's attrs (no brackets for dimensionless or text)."""
    short = short or LABELS.get(name, name)
    units = ds[name].attrs.get("units", "") if units is None else units
    if units in ("", "1"):
        return short
    return f"{short} {_units(units)}" if units.startswith("[") else f"{short} [{_units(units)}]"


def grid_dims(ds) -> list[str]:
    """The grid parameters of a study file (the per-case dimensions)."""
    if "grid_dims" in ds.attrs:
        return [d for d in json.loads(ds.attrs["grid_dims"]) if d in ds.dims]
    return list(ds["status"].dims) if "status" in ds else []


def _series(ds, gdims):
    """(label, isel dict) for every combination of the grid dims other than h."""
    sdims = [d for d in gdims if d != "h"]
    for index in itertools.product(*(range(ds.sizes[d]) for d in sdims)):
        sel = dict(zip(sdims, index))
        values = [str(ds[d].values[i]) for d, i in sel.items()]
        label = values[0] if len(values) == 1 else ", ".join(f"{d}={v}" for d, v in zip(sdims, values))
        yield label, sel


def _ok(ds, sel) -> np.ndarray:
    """Boolean mask over h (or a scalar) of the cases with status ok."""
    if "status" not in ds:
        return np.array(True)
    return np.asarray(ds["status"].isel(sel).values == "ok")


def _finest(ds, gdims, sel):
    """sel extended with the smallest ok h (None if no case of the series is ok)."""
    if "h" not in gdims:
        return sel if _ok(ds, sel).all() else None
    ok = _ok(ds, sel)
    if not ok.any():
        return None
    h = np.asarray(ds["h"].values, dtype=float)
    i = int(np.argmin(np.where(ok, h, np.inf)))
    return {**sel, "h": i}


def _with_h(ds, gdims, label, sel):
    return f"{label} (h={ds['h'].values[sel['h']]:g})" if "h" in gdims else label


def _time_and(ds, name, sel):
    sub = ds[name].isel(sel)
    t = np.asarray(ds["time"].isel({k: v for k, v in sel.items() if k in ds["time"].dims}).values, dtype=float)
    return t, sub


def _save(fig, outdir: Path, name: str) -> Path:
    for ax in fig.axes:
        if ax.get_visible() and ax.get_yscale() == "log" and ax.has_data():
            lo, hi = ax.get_ylim()  # round-off data: show at least a decade
            if hi < 10 * lo:
                mid = np.sqrt(lo * hi)
                ax.set_ylim(mid / np.sqrt(10), mid * np.sqrt(10))
    path = outdir / name
    fig.savefig(path)
    return path


def _h_ticks(ax, h):
    """Ticks at the step sizes of the grid, labelled plainly (up to 8 of them; else the log ticks)."""
    h = np.sort(np.asarray(h, dtype=float))
    if not 0 < h.size <= 8:
        return
    ax.set_xticks(h, [f"{x:g}" for x in h])
    ax.xaxis.set_minor_formatter(NullFormatter())


def _title(ds, what):
    return f"{ds.attrs.get('study', 'study')}: {what}"


def _positive(x, y):
    x = np.asarray(x, dtype=float)
    y = np.abs(np.asarray(y, dtype=float))
    keep = np.isfinite(x) & np.isfinite(y) & (y > 0)
    return x[keep], y[keep]


def _finish_single(fig, ax, ds, xname, yname, what, outdir):
    ax.set_xlabel(axis_label(ds, xname))
    ax.set_ylabel(axis_label(ds, yname))
    ax.legend(fontsize="small")
    ax.set_title(_title(ds, what))
    return _save(fig, outdir, what.replace(" ", "_").replace("-", "_") + ".png")


def _coord_units(ds):
    """The units of each coordinate.  Cases of different models (their coordinates outer-joined by
    the runner) leave coord_units on the grid dimensions, "" where a case lacks the coordinate: then
    the units the coordinate has where it is present."""
    cu = ds["coord_units"]
    if cu.ndim == 1:
        return [str(u) for u in cu.values]
    flat = cu.transpose(..., "coord").values.reshape(-1, cu.sizes["coord"])
    return [next((str(u) for u in column if str(u)), "") for column in flat.T]


def plot_trajectories(ds, gdims, outdir):
    coords = [str(c) for c in ds["coord"].values][:9]
    ncol = min(3, len(coords))
    nrow = -(-len(coords) // ncol)
    fig = Figure(figsize=(4.2 * ncol, 2.8 * nrow + 0.6), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    cunits = _coord_units(ds) if "coord_units" in ds else [ds["q"].attrs["units"]] * len(coords)
    for label, sel in _series(ds, gdims):
        sel = _finest(ds, gdims, sel)
        if sel is None:
            continue
        t, q = _time_and(ds, "q", sel)
        for j, ax in enumerate(axes[:len(coords)]):
            ax.plot(t, q.isel(coord=j).values, label=_with_h(ds, gdims, label, sel))
    for j, ax in enumerate(axes):
        if j >= len(coords):
            ax.set_visible(False)
            continue
        ax.set_xlabel(axis_label(ds, "time"))
        ax.set_ylabel(axis_label(ds, "q", short=coords[j], units=cunits[j]))
    axes[0].legend(fontsize="small")
    fig.suptitle(_title(ds, "trajectories"))
    return _save(fig, outdir, "trajectories.png")


def _level_units(units, level):
    """The units of one level from the violation's "<constraint units>/s^k" (k = 0, 1, 2)."""
    k = {"position": 0, "velocity": 1, "acceleration": 2}.get(level)
    if k is None or not units.endswith("/s^k"):
        return units
    return units[:-4] + ("", "/s", "/s^2")[k]


def plot_violation(ds, gdims, outdir):
    levels = [str(lv) for lv in ds["constraint_level"].values]
    shown = [i for i, lv in enumerate(levels) if (np.abs(ds["violation"].isel(constraint_level=i).values) > 0).any()]
    if not shown:
        return None
    fig = Figure(figsize=(4.2 * len(shown), 3.6), layout="constrained")
    axes = fig.subplots(1, len(shown), squeeze=False).ravel()
    for label, sel in _series(ds, gdims):
        sel = _finest(ds, gdims, sel)
        if sel is None:
            continue
        t, viol = _time_and(ds, "violation", sel)
        for ax, i in zip(axes, shown):
            x, y = _positive(t, viol.isel(constraint_level=i).values)
            ax.semilogy(x, y, label=_with_h(ds, gdims, label, sel))
    for ax, i in zip(axes, shown):
        var = _LEVEL_VAR.get(levels[i])
        units = ds[var].attrs["units"] if var in ds else _level_units(ds["violation"].attrs["units"], levels[i])
        ax.set_title(f"{levels[i]} level")
        ax.set_xlabel(axis_label(ds, "time"))
        ax.set_ylabel(axis_label(ds, "violation", short=f"|{levels[i]} violation|", units=units))
    axes[0].legend(fontsize="small")
    fig.suptitle(_title(ds, "constraint violation"))
    return _save(fig, outdir, "constraint_violation.png")


def plot_energy(ds, gdims, outdir):
    fig = Figure(figsize=(7, 4.2), layout="constrained")
    ax = fig.subplots()
    drawn = False
    for label, sel in _series(ds, gdims):
        sel = _finest(ds, gdims, sel)
        if sel is None:
            continue
        t, err = _time_and(ds, "energy_error", sel)
        x, y = _positive(t, err.values)
        if x.size:
            ax.semilogy(x, y, label=_with_h(ds, gdims, label, sel))
            drawn = True
    return _finish_single(fig, ax, ds, "time", "energy_error", "energy error", outdir) if drawn else None


def plot_against_h(ds, gdims, outdir, names, filename, what, slope=False):
    names = [n for n in names if n in ds and "h" in ds[n].dims]
    if not names:
        return None
    fig = Figure(figsize=(5.2 * len(names), 4.2), layout="constrained")
    axes = fig.subplots(1, len(names), squeeze=False).ravel()
    h = np.asarray(ds["h"].values, dtype=float)
    h_ok = h[(ds["status"] == "ok").transpose(..., "h").values.reshape(-1, h.size).any(axis=0)] \
        if "status" in ds else h
    for ax, name in zip(axes, names):
        for label, sel in _series(ds, gdims):
            y = np.where(_ok(ds, sel), ds[name].isel(sel).values, np.nan)
            x, yy = _positive(h, y)
            if not x.size:
                continue
            if slope:
                order = float(measured_order(ds[name].isel(sel).copy(data=y), "h"))
                label = f"{label}: slope {order:.2f}"
            ax.loglog(x, yy, "o-", label=label)
        _h_ticks(ax, h_ok)
        ax.set_xlabel(axis_label(ds, "h"))
        ax.set_ylabel(axis_label(ds, name))
        ax.legend(fontsize="small")
    fig.suptitle(_title(ds, what))
    return _save(fig, outdir, filename)


def plot_work_precision(ds, gdims, outdir):
    fig = Figure(figsize=(7, 4.8), layout="constrained")
    ax = fig.subplots()
    drawn = False
    for label, sel in _series(ds, gdims):
        ok = _ok(ds, sel)
        x = np.atleast_1d(np.where(ok, ds["cpu_time"].isel(sel).values, np.nan))
        y = np.atleast_1d(np.where(ok, ds["error"].isel(sel).values, np.nan))
        keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
        if keep.any():
            order = np.argsort(x[keep])
            ax.loglog(x[keep][order], y[keep][order], "o-", label=label)
            drawn = True
    return _finish_single(fig, ax, ds, "cpu_time", "error", "work-precision", outdir) if drawn else None


def plot_file(path, outdir=None) -> list[Path]:
    """Draw every figure that applies to the study file ``path``; return the PNG paths.

    ``outdir`` defaults to ``<file without .nc>/`` beside the file.
    """
    path = Path(path)
    ds = load_netcdf(path)
    outdir = Path(outdir) if outdir is not None else path.with_suffix("")
    outdir.mkdir(parents=True, exist_ok=True)
    gdims = grid_dims(ds)
    made = []
    if "q" in ds and "coord" in ds.dims and "time" in ds:
        made.append(plot_trajectories(ds, gdims, outdir))
    if "violation" in ds and "constraint_level" in ds.dims:
        made.append(plot_violation(ds, gdims, outdir))
    if "energy_error" in ds and "time" in ds:
        made.append(plot_energy(ds, gdims, outdir))
    if "h" in gdims and ds.sizes["h"] > 1:
        made.append(plot_against_h(ds, gdims, outdir, ["error"], "error_vs_h.png", "error against h", slope=True))
        made.append(plot_against_h(ds, gdims, outdir, ["eps_pos", "eps_vel", "eps_acc"], "violation_vs_h.png",
                                   "constraint violation against h"))
    if "error" in ds and "cpu_time" in ds:
        made.append(plot_work_precision(ds, gdims, outdir))
    return [p for p in made if p is not None]


class FigureSet:
    """A study's own (paper-specific) figures: its file ``ds`` (loaded, closed), the output folder
    ``outdir`` (created), and :meth:`save`.  Studies draw with pyplot on the Agg canvas."""

    def __init__(self, nc_path, outdir):
        import matplotlib
        matplotlib.use("Agg")
        self.ds = load_netcdf(nc_path)
        self.outdir = Path(outdir)
        self.outdir.mkdir(parents=True, exist_ok=True)
        self.paths: list[Path] = []

    def save(self, fig, name, dpi=110) -> Path:
        """Lay out ``fig``, write it as ``outdir/name`` (PNG), close it and keep its path in ``paths``."""
        import matplotlib.pyplot as plt
        path = self.outdir / name
        fig.tight_layout()
        fig.savefig(path, dpi=dpi)
        plt.close(fig)
        self.paths.append(path)
        return path


def study_figures(path, outdir=None, study=None) -> list[Path]:
    """The figures of a study file: the standard figures of :func:`plot_file` (every study's file
    has them), then ``study``'s own paper-specific ``figures`` if it has them.

    ``pyint plot`` passes the study named by the file's ``study`` attribute (the CLI finds studies).
    """
    path = Path(path)
    outdir = Path(outdir) if outdir is not None else path.with_suffix("")
    ds = load_netcdf(path)
    missing = [what for what, ok in (("global attribute 'study'", "study" in ds.attrs),
                                     ("variable 'status'", "status" in ds.variables)) if not ok]
    if missing:
        raise ValueError(f"{path} is not a study's file (written by pyint study run): it has no "
                         f"{' and no '.join(missing)}; nothing to draw")
    made = plot_file(path, outdir)
    if study is not None and study.figures is not None:
        outdir.mkdir(parents=True, exist_ok=True)
        made += [Path(p) for p in study.figures(path, outdir)]
    return made
