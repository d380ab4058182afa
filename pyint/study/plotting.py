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

Readability rules every figure here (and the studies' own, through :func:`series_style`,
:func:`legend_outside` and :class:`FigureSet`) follows: series are told apart by colour and
line style together (ten colours, then the ten again dashed, ...: no two of the first 40
series look alike), the legend stands right of the axes (never over the curves) with short
labels (a text parameter's value alone, ``key=value`` for a number, parameters with a single
value left out), a series with nothing to draw gets no legend entry, and every PNG carries its
caption (what it shows) in its ``Description`` text chunk (:func:`caption_of`), which the
documentation prints under the figure.
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


#: What each standard figure shows (its caption).
CAPTIONS = {
    "trajectories.png": "The coordinates q against time, each series at its smallest step that ended ok.",
    "constraint_violation.png": "The constraint violation |g|, |Ġ| and |g̈| (position, velocity and acceleration "
                                "level, the levels a series violates at all) against time, on a log scale, each "
                                "series at its smallest step that ended ok.",
    "energy_error.png": "The absolute relative energy error |H(t) − H(0)| / |H(0)| against time, on a log scale "
                        "(zeros left out), each series at its smallest step that ended ok; a series drawn "
                        "under an earlier one (equal to 0.1 %) says so in the legend.",
    "error_vs_h.png": "The error against the step h (log-log); the legend gives each series' fitted slope, "
                      "its measured order.",
    "violation_vs_h.png": "The largest constraint violation at the position, velocity and acceleration level "
                          "against the step h (log-log).",
    "work_precision.png": "Work-precision: the error against the CPU time (log-log), one point per step h.",
}

_LINESTYLES = ("-", "--", "-.", ":")


def series_style(i: int) -> dict:
    """The colour and line style of the ``i``-th series: the ten default colours, then the same
    ten dashed, dash-dotted, dotted (no two of the first 40 series share a style)."""
    return {"color": f"C{i % 10}", "linestyle": _LINESTYLES[(i // 10) % len(_LINESTYLES)]}


def legend_outside(where, handles=None, labels=None, fontsize="small", **kw):
    """A legend right of the axes ``where`` (below the panels, for a Figure: one legend for series
    that every panel shows), so that it never covers a curve; nothing (and no "No artists with labels found" warning) when nothing is labelled.

    The figure must be saved with a layout that makes room for it: a ``layout="constrained"``
    figure, or ``bbox_inches="tight"`` (:meth:`FigureSet.save` does)."""
    from matplotlib.figure import Figure as _Figure
    if handles is None:
        axes = where.axes if isinstance(where, _Figure) else [where]
        seen = {}
        for ax in axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                seen.setdefault(lab, h)
        labels, handles = list(seen), list(seen.values())
    if not handles:
        return None
    if isinstance(where, _Figure):
        # below the panels, in columns, the figure made taller by its rows (so the panels keep their size
        # and a suptitle never meets it)
        width = max(len(str(lab)) for lab in labels)
        ncol = max(1, min(len(handles), int(where.get_figwidth() * 72 / (7 * width + 40))))
        rows = -(-len(handles) // ncol)
        engine = where.get_layout_engine()
        if engine is not None and "Constrained" in type(engine).__name__:
            where.set_figheight(where.get_figheight() + 0.2 * rows + 0.2)
            return where.legend(handles, labels, loc="outside lower center", fontsize=fontsize, frameon=False,
                                ncol=ncol, **kw)
        return where.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=fontsize,
                            frameon=False, ncol=ncol, **kw)      # kept by savefig(bbox_inches="tight")
    ncol = 1 if len(handles) <= 16 else 2
    # the figure grown to hold the legend's rows and columns beside axes of at least 4 x 3 inches
    # (else constrained layout collapses the axes, as 87 series of IFToMM's --quick study did)
    fig = where.figure
    rows = -(-len(handles) // ncol)
    width = max(len(str(lab)) for lab in labels)
    fig.set_figheight(max(fig.get_figheight(), 0.18 * rows + 1.0))
    fig.set_figwidth(max(fig.get_figwidth(), 4.0 + ncol * (6 * width + 40) / 72))
    return where.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                        fontsize=fontsize, frameon=False, ncol=ncol, **kw)


def caption_of(png) -> str:
    """The caption stored in a PNG written by this module or :class:`FigureSet` ("" if none)."""
    from PIL import Image
    with Image.open(png) as im:
        return str(getattr(im, "text", {}).get("Description", ""))


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


def _short(ds, dim, i) -> str:
    """One parameter's part of a series label: a text value alone, a number as ``dim=value``."""
    v = ds[dim].values[i]
    return f"{dim}={v:g}" if isinstance(v, (int, float, np.integer, np.floating)) else str(v)


def _series(ds, gdims):
    """(label, isel dict) for every combination of the grid dims other than h; the label names
    only the dims with more than one value (a single series is labelled by its own name)."""
    sdims = [d for d in gdims if d != "h"]
    varying = [d for d in sdims if ds.sizes[d] > 1]
    for index in itertools.product(*(range(ds.sizes[d]) for d in sdims)):
        sel = dict(zip(sdims, index))
        label = ", ".join(_short(ds, d, sel[d]) for d in varying) or ds.attrs.get("study", "study")
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


def _save(fig, outdir: Path, name: str, caption: str | None = None) -> Path:
    for ax in fig.axes:
        if ax.get_visible() and ax.get_yscale() == "log" and ax.has_data():
            lo, hi = ax.get_ylim()  # round-off data: show at least a decade
            if hi < 10 * lo:
                mid = np.sqrt(lo * hi)
                ax.set_ylim(mid / np.sqrt(10), mid * np.sqrt(10))
    path = outdir / name
    fig.savefig(path, metadata={"Description": caption if caption is not None else CAPTIONS.get(name, "")})
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
    legend_outside(ax)
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
    for k, (label, sel) in enumerate(_series(ds, gdims)):
        sel = _finest(ds, gdims, sel)
        if sel is None:
            continue
        t, q = _time_and(ds, "q", sel)
        for j, ax in enumerate(axes[:len(coords)]):
            y = q.isel(coord=j).values
            if np.isfinite(y).any():
                ax.plot(t, y, label=_with_h(ds, gdims, label, sel), **series_style(k))
    for j, ax in enumerate(axes):
        if j >= len(coords):
            ax.set_visible(False)
            continue
        ax.set_xlabel(axis_label(ds, "time"))
        ax.set_ylabel(axis_label(ds, "q", short=coords[j], units=cunits[j]))
    legend_outside(fig)
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
    for k, (label, sel) in enumerate(_series(ds, gdims)):
        sel = _finest(ds, gdims, sel)
        if sel is None:
            continue
        t, viol = _time_and(ds, "violation", sel)
        for ax, i in zip(axes, shown):
            x, y = _positive(t, viol.isel(constraint_level=i).values)
            if x.size:
                ax.semilogy(x, y, label=_with_h(ds, gdims, label, sel), **series_style(k))
    for ax, i in zip(axes, shown):
        var = _LEVEL_VAR.get(levels[i])
        units = ds[var].attrs["units"] if var in ds else _level_units(ds["violation"].attrs["units"], levels[i])
        ax.set_title(f"{levels[i]} level")
        ax.set_xlabel(axis_label(ds, "time"))
        ax.set_ylabel(axis_label(ds, "violation", short=f"|{levels[i]} violation|", units=units))
    legend_outside(fig)
    fig.suptitle(_title(ds, "constraint violation"))
    return _save(fig, outdir, "constraint_violation.png")


def plot_energy(ds, gdims, outdir):
    fig = Figure(figsize=(8.5, 4.2), layout="constrained")
    ax = fig.subplots()
    drawn = False
    seen = {}
    for k, (label, sel) in enumerate(_series(ds, gdims)):
        sel = _finest(ds, gdims, sel)
        if sel is None:
            continue
        t, err = _time_and(ds, "energy_error", sel)
        x, y = _positive(t, err.values)       # |energy_error|: the signed error has no log plot
        if x.size:
            label = _with_h(ds, gdims, label, sel)
            same = next((lab for lab, (xx, yy) in seen.items() if xx.shape == x.shape and np.allclose(xx, x)
                         and np.allclose(yy, y, rtol=1e-3, atol=0)), None)
            seen[label] = (x, y)
            if same is not None:      # drawn exactly under an earlier curve: say so, or it looks missing
                label = f"{label} (= {same})"
            ax.semilogy(x, y, label=label, **series_style(k))
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
        for k, (label, sel) in enumerate(_series(ds, gdims)):
            y = np.where(_ok(ds, sel), ds[name].isel(sel).values, np.nan)
            x, yy = _positive(h, y)
            if not x.size:
                continue
            if slope:
                order = float(measured_order(ds[name].isel(sel).copy(data=y), "h"))
                label = f"{label}: slope {order:.2f}"
            ax.loglog(x, yy, marker="o", label=label, **series_style(k))
        _h_ticks(ax, h_ok)
        ax.set_xlabel(axis_label(ds, "h"))
        ax.set_ylabel(axis_label(ds, name))
    if slope:
        legend_outside(axes[-1])
    else:       # the same series in every panel: one legend
        legend_outside(fig)
    fig.suptitle(_title(ds, what))
    return _save(fig, outdir, filename)


def plot_work_precision(ds, gdims, outdir):
    fig = Figure(figsize=(8.5, 4.8), layout="constrained")
    ax = fig.subplots()
    drawn = False
    for k, (label, sel) in enumerate(_series(ds, gdims)):
        ok = _ok(ds, sel)
        x = np.atleast_1d(np.where(ok, ds["cpu_time"].isel(sel).values, np.nan))
        y = np.atleast_1d(np.where(ok, ds["error"].isel(sel).values, np.nan))
        keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
        if keep.any():
            order = np.argsort(x[keep])
            ax.loglog(x[keep][order], y[keep][order], marker="o", label=label, **series_style(k))
            drawn = True
    return _finish_single(fig, ax, ds, "cpu_time", "error", "work-precision", outdir) if drawn else None


def plot_file(path, outdir=None, skip=()) -> list[Path]:
    """Draw every figure that applies to the study file ``path``; return the PNG paths.

    ``outdir`` defaults to ``<file without .nc>/`` beside the file; a figure whose file name is
    in ``skip`` is not drawn (:func:`study_figures`: a study's own figure of that name).
    """
    path = Path(path)
    ds = load_netcdf(path)
    outdir = Path(outdir) if outdir is not None else path.with_suffix("")
    outdir.mkdir(parents=True, exist_ok=True)
    gdims = grid_dims(ds)
    made = []
    skip = set(skip)
    want = lambda name: name not in skip  # noqa: E731
    if "q" in ds and "coord" in ds.dims and "time" in ds and want("trajectories.png"):
        made.append(plot_trajectories(ds, gdims, outdir))
    if "violation" in ds and "constraint_level" in ds.dims and want("constraint_violation.png"):
        made.append(plot_violation(ds, gdims, outdir))
    if "energy_error" in ds and "time" in ds and want("energy_error.png"):
        made.append(plot_energy(ds, gdims, outdir))
    if "h" in gdims and ds.sizes["h"] > 1:
        if want("error_vs_h.png"):
            made.append(plot_against_h(ds, gdims, outdir, ["error"], "error_vs_h.png", "error against h",
                                       slope=True))
        if want("violation_vs_h.png"):
            made.append(plot_against_h(ds, gdims, outdir, ["eps_pos", "eps_vel", "eps_acc"], "violation_vs_h.png",
                                       "constraint violation against h"))
    if "error" in ds and "cpu_time" in ds and want("work_precision.png"):
        made.append(plot_work_precision(ds, gdims, outdir))
    return [p for p in made if p is not None]


class FigureSet:
    """A study's own (paper-specific) figures: its file ``ds`` (loaded, closed), the output folder
    ``outdir`` (created), the figures' ``captions`` by file name (optional), and :meth:`save`.
    Studies draw with pyplot on the Agg canvas."""

    def __init__(self, nc_path, outdir, captions=None):
        import matplotlib
        matplotlib.use("Agg")
        self.ds = load_netcdf(nc_path)
        self.outdir = Path(outdir)
        self.outdir.mkdir(parents=True, exist_ok=True)
        self.captions = dict(captions or {})
        self.paths: list[Path] = []

    def save(self, fig, name, caption=None, dpi=110) -> Path:
        """Lay out ``fig``, write it as ``outdir/name`` (PNG, with ``caption``, what the figure shows, in
        its ``Description`` text: :func:`caption_of`; default: ``captions[name]``, else none), close it
        and keep its path in ``paths``.  The bounding box is the drawing's own, so a legend right of
        the axes (:func:`legend_outside`) is kept."""
        import matplotlib.pyplot as plt
        if caption is None:
            caption = self.captions.get(name, "")
        path = self.outdir / name
        fig.tight_layout()
        fig.savefig(path, dpi=dpi, bbox_inches="tight", metadata={"Description": caption})
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
    own = []
    if study is not None and study.figures is not None:   # first: a standard figure of the same name
        outdir.mkdir(parents=True, exist_ok=True)          # is the study's own, not drawn over it
        own = [Path(p) for p in study.figures(path, outdir)]
    return plot_file(path, outdir, skip={p.name for p in own}) + own
