"""Seed 003: direction-vector model of the planar two-link manipulator and the
multistep block methods, beside classical RK4 and the independent-coordinate
ODE (14).  Tables 1-6 and Figs 3-11 of the paper, plus the measured global
order against a tight reference and the schemes' stability on the imaginary
axis.

One case = one integration, parameters

* ``method``: ``block_uniform_rk`` (the paper's printed scheme: uniform nodes,
  RK-stable, order 4), ``block_uniform_eq8``, ``block_chebyshev``,
  ``block_legendre`` (eq. (8), order 5) or ``rk4_index1``;
* ``formulation``: ``dae`` (natural coordinates, index-1 form (7)) or ``ode``
  (the angles of eq. (14) as printed: thin bars);
* ``h`` (block length / step) and ``T`` (final time).  T = 1 s is the order
  study (errors against a tight reference every 0.2 s, h = 0.02 ... 0.00125);
  T = 10 and 100 s are the paper's runs; h = 0.02 and 0.04 probe stability.

Run it with ``pyint study run direction_vector_block`` (or ``python -m
pyint.studies.direction_vector_block --out results``): the runner writes
``results/direction_vector_block.nc`` and the figures; the summary is the tables.
Runtimes are CPU seconds of the Fortran integration (the minimum of a few
repeats for the short runs); the paper's are from its own (unnamed) machine
and software: the ratio is a fact about two runs, not a hardware comparison.
"""
from __future__ import annotations

import itertools
import json

import numpy as np

from pyint.convergence import fit_order

NAME = "direction_vector_block"
METHODS = ("block_uniform_rk", "block_uniform_eq8", "block_chebyshev", "block_legendre", "rk4_index1")
FORMULATIONS = ("dae", "ode")
PAPER_STEPS = (0.01, 0.0075, 0.005, 0.0025, 0.001)
PROBE_STEPS = (0.04, 0.02)                      # stability probe beyond the paper's steps
ORDER_STEPS = (0.02, 0.01, 0.005, 0.0025, 0.00125)
STEPS = tuple(sorted(set(PAPER_STEPS + PROBE_STEPS + ORDER_STEPS), reverse=True))
SPANS = (1.0, 10.0, 25.0, 50.0, 75.0, 100.0)
GRID = {"method": list(METHODS), "formulation": list(FORMULATIONS), "h": list(STEPS), "T": list(SPANS)}
ORDER_SAMPLE = 0.2          # order study: errors every 0.2 s up to T = 1
MAX_SAMPLES = 2001          # time series kept per case (metrics use every step)
ERROR_FLOOR = 1e-11         # order fits use errors above this (references ~1e-13)

#: The paper's numbers (seed 003): runtime [s], |H|max [J], Phi, Phi_v, Phi_a.
PAPER = {
    "table1": {0.01: (19.2656, 0.3196, 1.5705e-4, 3.0000e-3, 9.6367e-13),
               0.0075: (26.0781, 0.0939, 5.0866e-5, 8.9471e-4, 6.9278e-13),
               0.005: (40.1719, 0.0175, 9.9524e-6, 1.7251e-4, 3.2596e-13),
               0.0025: (75.0156, 9.2364e-4, 1.3800e-6, 1.0620e-5, 8.8818e-14),
               0.001: (177.5781, 5.0996e-5, 9.1179e-5, 2.7712e-7, 8.5265e-14)},
    "table2": {"block_uniform_rk": (19.2656, 0.3196, 1.5705e-4, 3.0000e-3, 9.6367e-13),
               "block_chebyshev": (22.3906, 0.0590, 5.8171e-4, 7.7284e-4, 1.1227e-12),
               "block_legendre": (20.9219, 0.0035, 6.4452e-5, 3.0520e-4, 1.0729e-12)},
    "table3": {"block_uniform_rk": (19.2656, 0.3196, 1.5705e-4, 3.0000e-3, 9.6367e-13),
               "rk4_index1": (1.7344, 9.8735, 0.0315, 0.0081, 3.98e-13)},
    "table4": {10.0: (19.2656, 0.3196, 1.5705e-4, 3.0000e-3, 9.6367e-13),
               25.0: (445.7656, 0.8501, 0.0020, 0.0030, 1.1120e-12),
               50.0: (989.2188, 3.8028, 0.0111, 0.0040, 1.1120e-12),
               75.0: (1556.8, 7.4762, 0.0243, 0.0044, 1.3154e-12),
               100.0: (1921.3, 14.0751, 0.0438, 0.0044, 1.3199e-12)},
    "table5": {0.01: (1921.3, 14.0751, 0.0438, 0.0044, 1.3199e-12),
               0.0075: (2268.5, 1.9613, 0.0057, 0.0011, 7.7982e-13),
               0.005: (3544.4, 0.1580, 4.5526e-4, 2.1002e-4, 3.6948e-13),
               0.0025: (6568.3, 0.0012, 7.9626e-6, 1.1884e-5, 9.9476e-14),
               0.001: (15168.0, 2.8894e-4, 8.7923e-7, 3.0851e-7, 1.1369e-13)},
    # ODE runtime, H1max (ODE), H2max (DAE), DAE runtime
    "table6": {0.01: (4.3438, 0.0499, 0.3196, 19.2656), 0.0075: (5.7344, 0.0561, 0.0939, 26.0781),
               0.005: (7.9688, 0.0747, 0.0175, 40.1719), 0.0025: (14.7500, 0.1412, 9.2364e-4, 75.0156),
               0.001: (33.0781, 0.3508, 5.0996e-5, 177.5781)},
}


def keep_case(p):
    """The cases of the grid that are run (the others are the runner's 'skipped')."""
    h, T, dae = p["h"], p["T"], p["formulation"] == "dae"
    if T == 1.0:
        return h in ORDER_STEPS
    if T == 10.0:
        return h in PAPER_STEPS + PROBE_STEPS
    if T == 100.0:
        return dae and h in PAPER_STEPS
    return dae and h == 0.01                 # T = 25, 50, 75 (Table 4)


# -- the case -------------------------------------------------------------------------
def _models(formulation):
    from pyint.models import TwoLinkAngles, two_link_manipulator
    return two_link_manipulator() if formulation == "dae" else TwoLinkAngles(width=0.0)


def _method(name):
    import pyint.methods  # noqa: F401
    from pyint.integrator import METHODS as REG
    return REG[name]()


def _reference(formulation, times):
    """Tight reference q at `times`: the angle ODE by DOP853 (rtol 2.5e-14); for the DAE the
    manipulator problem's reference (the ODE with the bars' width, mapped to natural coordinates)."""
    from pyint.models import TwoLinkAngles
    from pyint.problems import manipulator_reference
    from pyint.reference.ode import ode_reference
    if formulation == "dae":
        return manipulator_reference(times)[0]
    return ode_reference(TwoLinkAngles(width=0.0), np.zeros(2), np.zeros(2), times)[0]


def _natural(formulation, q):
    """q (nt, n) in natural coordinates (r, e1, e2 of each link): the ODE's angles mapped."""
    if formulation == "dae":
        return q
    from pyint.models import TwoLinkAngles
    return TwoLinkAngles().to_natural(q, np.zeros_like(q))[0]


def _tips(formulation, q):
    """Positions of the two link ends r + (L/2) e1, shape (nt, 2 points, 2 components)."""
    qn = _natural(formulation, q)
    return np.stack([qn[:, 0:2] + 0.25 * qn[:, 2:4], qn[:, 6:8] + 0.5 * qn[:, 8:10]], axis=1)


def _centres(formulation, q):
    """Reference points r of the two links (centres of mass), (nt, 2 links, 2)."""
    qn = _natural(formulation, q)
    return np.stack([qn[:, 0:2], qn[:, 6:8]], axis=1)


def _kinetic(model, q, v):
    if model.constant_mass:
        mq = model.mass(q[0])
        return 0.5 * np.einsum("ti,ij,tj->t", v, mq, v)
    return np.array([0.5 * vk @ model.mass(qk) @ vk for qk, vk in zip(q, v)])


def run_case(p):
    """One integration of the manipulator; returns its xarray Dataset."""
    from pyint.errors import IntegrationError
    method, formulation, h, T = p["method"], p["formulation"], float(p["h"]), float(p["T"])
    model = _models(formulation)
    q0, v0 = model.initial_state() if formulation == "dae" else (np.zeros(2), np.zeros(2))
    meth = _method(method)
    nsteps = int(np.ceil(T / h - 1e-9))       # h = 0.0075 does not divide 10: end at the first t >= T
    T_end = nsteps * h
    repeats = 1 if T < 10 else (5 if nsteps <= 2000 else (2 if nsteps <= 20000 else 1))   # timing tables only
    cpu = np.inf
    for _ in range(repeats):
        try:
            res = meth.integrate(model, q0, v0, T_end, h)
        except IntegrationError as exc:        # keep what was computed before the failure
            res = exc.result
            cpu = res.cpu_time
            break
        cpu = min(cpu, res.cpu_time)
    # the one trajectory schema (Result.to_xarray: q, v, a, lam, violation, energy, eps_*, energy_drift;
    # natural coordinates add Delta per sample and its maximum, direction_error), then the paper's own
    # variables; the run maxima are over every step (every step is a sample), the time series thinned
    ds = res.to_xarray()
    if not model.n_constraints:     # the angle ODE: no constraint, no violation (not a violation of 0)
        ds = ds.drop_vars(["violation", "eps_pos", "eps_vel", "eps_acc", "lam", "multiplier", "constraint_level"])
    for key, units in (("eps_pos", "m"), ("eps_vel", "m/s"), ("eps_acc", "m/s^2"), ("violation", "m/s^k")):
        if key in ds:
            ds[key].attrs["units"] = units
    ds["cpu_time"] = ((), cpu, {"units": "s", "long_name": "CPU time of the integration (min over repeats)"})
    ds["t_reached"] = ((), float(res.t[-1]), {"units": "s", "long_name": "last time computed (T unless the "
                                                                          "integration failed)"})
    error = np.nan
    if T == 1.0 and res.status == "ok":
        every = int(round(ORDER_SAMPLE / h))
        error = float(np.max(np.abs(res.q[every::every] - _reference(formulation, res.t[every::every]))))
    ds["error"] = ((), error, {"units": "[q]", "long_name": "max error every 0.2 s against the reference (T = 1 only)"})
    ds["status"] = ((), res.status, {"units": "", "long_name": "case status"})
    ds["message"] = ((), res.message, {"units": "", "long_name": "why the case did not end ok"})
    # time series, thinned to at most MAX_SAMPLES (always with the last sample)
    nt = len(res.t)
    ds = ds.isel(time=np.unique(np.linspace(0, nt - 1, min(nt, MAX_SAMPLES)).round().astype(int)))
    q = ds["q"].values
    kinetic = _kinetic(model, q, ds["v"].values)
    ds = ds.assign_coords(point=("point", ["end1", "end2"], {"units": "", "long_name": "end of link 1, 2"}),
                          link=("link", ["link1", "link2"], {"units": "", "long_name": "link"}),
                          xy=("xy", ["x", "y"], {"units": "", "long_name": "component"}))
    ds["kinetic"] = ("time", kinetic, {"units": "J", "long_name": "kinetic energy"})
    ds["potential"] = ("time", ds["energy"].values - kinetic, {"units": "J", "long_name": "potential energy"})
    ds["tip"] = (("time", "point", "xy"), _tips(formulation, q), {"units": "m", "long_name": "link ends"})
    ds["centre"] = (("time", "link", "xy"), _centres(formulation, q),
                    {"units": "m", "long_name": "reference points r of the links (centres of mass)"})
    ds.attrs = {"method_params": json.dumps({k: v for k, v in res.params.items() if k not in ("A", "U")},
                                            default=str)}
    return ds


# -- what needs several cases ----------------------------------------------------------
def add_derived(ds):
    """Measured orders (T = 1) and the block schemes' stability on the imaginary axis."""
    from pyint.methods.block_coefficients import PRESETS
    if "error" in ds and 1.0 in ds["T"].values:
        err = ds["error"].sel({"T": 1.0})
        hs = np.asarray(ds["h"].values, dtype=float)
        order = np.full((ds.sizes["method"], ds.sizes["formulation"]), np.nan)
        for i, j in itertools.product(range(order.shape[0]), range(order.shape[1])):
            e = np.asarray(err.isel(method=i, formulation=j).values, dtype=float)
            order[i, j] = fit_order(hs, e, floor=ERROR_FLOOR, min_points=3)
        ds["order"] = (("method", "formulation"), order,
                       {"units": "1", "long_name": "measured order at T = 1 s (errors above 1e-11)"})
    y = np.linspace(0.0, 6.0, 601)
    names = [n for n in PRESETS]
    rad = np.array([[PRESETS[n].spectral_radius(1j * yy) for yy in y] for n in names])
    ds = ds.assign_coords(scheme=("scheme", [f"block_{n}" for n in names], {"units": "", "long_name": "block scheme"}),
                          iy=("iy", y, {"units": "1", "long_name": "imaginary part of z = h lambda"}))
    ds["stability_radius"] = (("scheme", "iy"), rad,
                              {"units": "1", "long_name": "spectral radius of the stability matrix M(i y)"})
    return ds


# -- tables -----------------------------------------------------------------------------
def _val(ds, var, **sel):
    try:
        x = ds[var].sel(sel).values
    except (KeyError, ValueError):
        return np.nan
    return float(x) if np.size(x) == 1 and np.issubdtype(np.asarray(x).dtype, np.number) else np.nan


def _row(ds, label, sel, paper=None):
    ours = [_val(ds, k, **sel) for k in ("cpu_time", "energy_drift", "eps_pos", "eps_vel", "eps_acc",
                                          "direction_error")]
    line = f"{label:<22s}" + "".join(f"{x:11.4g}" for x in ours)
    try:
        status = str(ds["status"].sel(sel).values)
    except (KeyError, ValueError):
        status = "ok"
    if status not in ("ok", "skipped"):
        line = f"{label:<22s}  {status} at t = {_val(ds, 't_reached', **sel):.4g} s (values up to then:)\n" + line
    if paper is not None:
        line += "   | " + "".join(f"{x:11.4g}" for x in paper)
        line += f"   | x{paper[0] / ours[0]:,.0f}" if np.isfinite(ours[0]) and ours[0] > 0 else ""
    return line


_HEAD = (f"{'':<22s}{'runtime s':>11s}{'|H|max J':>11s}{'eps(Phi)':>11s}{'eps(Phi.)':>11s}{'eps(Phi..)':>11s}"
         f"{'Delta':>11s}   | paper: runtime, |H|max, Phi, Phi_v, Phi_a   | runtime ratio")


def summary(ds):
    """Tables 1-6 beside the paper's numbers, the measured orders and the stability probe."""
    out = []

    def table(title, keys, point, label, paper=None):
        """A title and a row per key (h, T or method) at the DAE grid point point(key), beside PAPER[paper]."""
        out.append(title)
        out.extend(_row(ds, label.format(k), dict(point(k), formulation="dae"),
                        None if paper is None else PAPER[paper].get(k)) for k in keys)

    uniform, block_methods = "block_uniform_rk", ("block_uniform_rk", "block_uniform_eq8", "block_chebyshev",
                                                  "block_legendre")
    table("Table 1  uniform nodes (block_uniform_rk = the printed scheme), T = 10 s\n" + _HEAD, PAPER["table1"],
          lambda h: dict(method=uniform, h=h, T=10.0), "h = {:g}", "table1")
    table("  and uniform nodes by eq. (8):", PAPER["table1"],
          lambda h: dict(method="block_uniform_eq8", h=h, T=10.0), "  eq8 h = {:g}")
    table("\nTable 2  node sets, h = 0.01, T = 10 s\n" + _HEAD, block_methods,
          lambda m: dict(method=m, h=0.01, T=10.0), "{}", "table2")
    table("\nTable 3  block method vs RK4 on (7), h = 0.01, T = 10 s\n" + _HEAD, (uniform, "rk4_index1"),
          lambda m: dict(method=m, h=0.01, T=10.0), "{}", "table3")
    table("\nTable 4  simulation time, uniform (printed) scheme, h = 0.01\n" + _HEAD, PAPER["table4"],
          lambda T: dict(method=uniform, h=0.01, T=T), "T = {:g}", "table4")
    table("  RK4 on (7):", PAPER["table4"], lambda T: dict(method="rk4_index1", h=0.01, T=T), "  rk4 T = {:g}")
    table("\nTable 5  T = 100 s, uniform (printed) scheme\n" + _HEAD, PAPER["table5"],
          lambda h: dict(method=uniform, h=h, T=100.0), "h = {:g}", "table5")
    table("  Legendre (eq. (8)):", PAPER["table5"],
          lambda h: dict(method="block_legendre", h=h, T=100.0), "  legendre h = {:g}")
    out.append("\nTable 6  ODE (14) in angles (thin bars, as printed) vs DAE (7), uniform (printed) scheme, T = 10 s")
    out.append(f"{'':<12s}{'ODE runtime':>12s}{'|H1|max':>11s}{'|H2|max':>11s}{'DAE runtime':>12s}"
               f"{'ODE RK4 |H1|':>14s}   | paper: ODE runtime, |H1|, |H2|, DAE runtime")
    for h, pap in PAPER["table6"].items():
        sel = dict(method="block_uniform_rk", h=h, T=10.0)
        ours = (_val(ds, "cpu_time", formulation="ode", **sel), _val(ds, "energy_drift", formulation="ode", **sel),
                _val(ds, "energy_drift", formulation="dae", **sel), _val(ds, "cpu_time", formulation="dae", **sel),
                _val(ds, "energy_drift", formulation="ode", method="rk4_index1", h=h, T=10.0))
        out.append(f"h = {h:<8g}" + f"{ours[0]:12.4g}{ours[1]:11.4g}{ours[2]:11.4g}{ours[3]:12.4g}{ours[4]:14.4g}"
                   + "   | " + "".join(f"{x:11.4g}" for x in pap))
    if "order" in ds:
        out.append("\nMeasured global order at T = 1 s (errors every 0.2 s against DOP853 on the angle ODE)")
        for m in ds["method"].values:
            o = [float(ds["order"].sel({"method": m, "formulation": f})) for f in ("dae", "ode")]
            out.append(f"{m:<22s} DAE {o[0]:5.2f}   ODE {o[1]:5.2f}")
    out.append("\nStability probe, T = 10 s (status, max |H - H0|):")
    for m in METHODS:
        cells = []
        for h in (0.04, 0.02, 0.01):
            try:
                st = str(ds["status"].sel({"method": m, "formulation": "dae", "h": h, "T": 10.0}).values)
            except (KeyError, ValueError):
                st = "?"
            cells.append(f"h={h:g}: {st} {_val(ds, 'energy_drift', method=m, formulation='dae', h=h, T=10.0):.3g}")
        out.append(f"{m:<22s} " + ";  ".join(cells))
    if "stability_radius" in ds:
        out.append("Imaginary-axis stability |M(iy)| <= 1 for y up to:")
        y = ds["iy"].values
        for s in ds["scheme"].values:
            rad = ds["stability_radius"].sel(scheme=s).values
            bad = np.flatnonzero(rad > 1 + 1e-12)
            out.append(f"  {s:<20s} " + (f"{y[bad[0]]:.3g} (max {rad.max():.4f} on [0, 6])" if bad.size else "all y <= 6"))
    return "\n".join(out)


# -- figures ----------------------------------------------------------------------------
def figures(nc_path, outdir):
    """Figs 3-11 (and order, stability) drawn from the NetCDF file alone."""
    from pyint.study.plotting import FigureSet, legend_outside
    figs = FigureSet(nc_path, outdir)
    import matplotlib.pyplot as plt
    import matplotlib.ticker  # noqa: F401

    ds, paths = figs.ds, figs.paths

    def series(var, **sel):
        """(t, values) of a case's time series, or None when the case is not in the file."""
        try:
            sub = ds.sel(sel)
        except KeyError:
            return None
        t = sub["time"].values
        ok = np.isfinite(t)
        return (t[ok], sub[var].values[ok]) if ok.any() else None

    def save(fig, name, caption):
        figs.save(fig, f"{name}.png", caption=caption)

    def finest(**sel):
        """The smallest h whose case (sel) is in the file."""
        for h in sorted(ds["h"].values):
            if series("time", h=h, **sel) is not None:
                return float(h)
        return None

    hf = finest(method="block_uniform_rk", formulation="dae", T=10.0)
    fine = dict(method="block_uniform_rk", h=hf, T=10.0)
    # Fig 3: link ends (DAE solid, ODE dashed) and r components
    if hf is not None:
        fig, ax = plt.subplots(1, 2, figsize=(11, 4.5))
        for form, ls in (("dae", "-"), ("ode", "--")):
            if series("tip", formulation=form, **fine) is None:
                continue
            t, tip = series("tip", formulation=form, **fine)
            for k, col in enumerate(("C0", "C1")):
                ax[0].plot(tip[:, k, 0], tip[:, k, 1], ls, color=col, lw=0.6,
                           label=f"end of link {k + 1} ({form.upper()})")
            t, c = series("centre", formulation=form, **fine)
            if form == "dae":
                for k in range(2):
                    for j, comp in enumerate("xy"):
                        ax[1].plot(t, c[:, k, j], lw=0.8, label=f"r{j + 1}^({k + 1})")
        ax[0].set(xlabel="x / m", ylabel="y / m", title=f"link ends: DAE (7) solid, ODE (14) dashed, h = {hf:g}",
                  aspect="equal")
        legend_outside(ax[0])
        ax[1].set(xlabel="t / s", ylabel="m", title=f"reference points r^(i) (DAE, h = {hf:g})")
        legend_outside(ax[1])
        save(fig, "fig03_trajectories", f"Seed 003 Fig. 3: the paths of the two link ends, DAE (7) in natural "
             f"coordinates (solid) and ODE (14) in angles (dashed), and the reference points r against time "
             f"(uniform block scheme, h = {hf:g}, T = 10 s).")
    # Figs 4/10: energies; 5/11: constraint violations
    for T, (fe, fc) in ((10.0, ("fig04_energy", "fig05_constraints")), (100.0, ("fig10_energy_T100", "fig11_constraints_T100"))):
        hT = finest(method="block_uniform_rk", formulation="dae", T=T)
        if hT is None:
            continue
        sel = dict(method="block_uniform_rk", formulation="dae", h=hT, T=T)
        fig, ax = plt.subplots(1, 2, figsize=(11, 4))
        for var in ("energy", "kinetic", "potential"):
            t, y = series(var, **sel)
            ax[0].plot(t, y, lw=0.8, label=var)
        ax[0].set(xlabel="t / s", ylabel="J", title=f"energies, uniform block scheme, h = {hT:g}")
        legend_outside(ax[0])
        t, y = series("energy", **sel)
        ax[1].plot(t, np.abs(y - y[0]), lw=0.8)
        ax[1].set(xlabel="t / s", ylabel="J", yscale="log", title="|H(t) - H(0)|")
        save(fig, fe, f"Seed 003 Fig. {4 if T == 10 else 10}: kinetic, potential and total energy against time "
                      f"and the energy error |H(t) − H(0)| (log scale), uniform block scheme, h = {hT:g}, T = {T:g} s.")
        fig, ax = plt.subplots(figsize=(6.5, 4))
        t, y = series("violation", **sel)
        for j, lab in enumerate(("position |Phi|", "velocity |Phi'|", "acceleration |Phi''|")):
            ax.semilogy(t, np.maximum(y[:, j], 1e-17), lw=0.8, label=lab)
        ax.set(xlabel="t / s", ylabel="m, m/s, m/s^2", title=f"constraint violations, uniform block, h = {hT:g}")
        legend_outside(ax)
        save(fig, fc, f"Seed 003 Fig. {5 if T == 10 else 11}: the constraint violations at the position, velocity "
                      f"and acceleration level against time (log scale), uniform block scheme, h = {hT:g}, "
                      f"T = {T:g} s.")
    # Figs 6-9: direction-vector error, h = 0.01, T = 10
    for num, m in ((6, "rk4_index1"), (7, "block_uniform_rk"), (8, "block_chebyshev"), (9, "block_legendre")):
        if series("delta", method=m, formulation="dae", h=0.01, T=10.0) is None:
            continue
        fig, ax = plt.subplots(figsize=(6.5, 3.6))
        t, y = series("delta", method=m, formulation="dae", h=0.01, T=10.0)
        ax.semilogy(t, np.maximum(y, 1e-17), lw=0.8)
        ax.set(xlabel="t / s", ylabel="1", title=f"Fig. {num}: Delta = max |e^T e - I|, {m}, h = 0.01")
        save(fig, f"fig{num:02d}_direction_error_{m}",
             f"Seed 003 Fig. {num}: the direction-vector error Δ = max |eᵀe − I| against time, {m}, h = 0.01, "
             "T = 10 s (log scale).")
    # stability probe: energy error against time at the large steps
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    drawn = False
    for ax, h in zip(axes, PROBE_STEPS[::-1]):
        for m in METHODS:
            s = series("energy", method=m, formulation="dae", h=h, T=10.0)
            if s is None:
                continue
            drawn = True
            st = str(ds["status"].sel({"method": m, "formulation": "dae", "h": h, "T": 10.0}).values)
            ax.semilogy(s[0], np.clip(np.abs(s[1] - s[1][0]), 1e-16, 1e6), lw=0.8,
                        label=m + ("" if st == "ok" else f" ({st})"))
        ax.set(xlabel="t / s", ylabel="|H(t) - H(0)| / J (clipped at 1e6)", ylim=(1e-16, 1e7),
               title=f"stability probe, DAE (7), h = {h:g}")
        if ax.lines:
            legend_outside(ax)
    if drawn:
        save(fig, "stability_probe_energy", "Beyond the paper's steps: the energy error |H(t) − H(0)| of every "
             "method at h = 0.02 and 0.04 (log scale, clipped at 1e6 J); the legend marks the runs that failed.")
    else:
        plt.close(fig)
    # order study
    if "error" in ds:
        fig, ax = plt.subplots(figsize=(6.5, 4.5))
        hs = ds["h"].values
        for m in ds["method"].values:
            e = ds["error"].sel({"method": m, "formulation": "dae", "T": 1.0}).values
            ok = np.isfinite(e)
            o = float(ds["order"].sel({"method": m, "formulation": "dae"})) if "order" in ds else np.nan
            ax.loglog(hs[ok], e[ok], "o-", label=f"{m} (slope {o:.2f})")
        ax.axhline(ERROR_FLOOR, color="0.6", ls=":", lw=0.8)
        ax.set_xticks(hs[np.isfinite(ds["error"].sel({"formulation": "dae", "T": 1.0}).values).any(axis=0)])
        ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set(xlabel="h / s", ylabel="max |q - q_ref|", title="global error at t <= 1 s, DAE (7)")
        legend_outside(ax)
        save(fig, "order_dae", "The global error at t ≤ 1 s against a tight reference, against the step h "
             "(log-log), every method on the DAE (7); the legend gives the fitted slopes; dotted: the floor below "
             "which errors are not fitted.")
    if "stability_radius" in ds:
        fig, ax = plt.subplots(figsize=(6.5, 4))
        for s in ds["scheme"].values:
            ax.plot(ds["iy"].values, ds["stability_radius"].sel(scheme=s).values - 1, label=s)
        ax.axhline(0, color="k", lw=0.5)
        ax.set(xlabel="y (z = i y)", ylabel="rho(M(iy)) - 1", title="stability on the imaginary axis")
        ax.set_yscale("symlog", linthresh=1e-10)
        ax.set_yticks([-1e-1, -1e-4, -1e-7, -1e-10, 0, 1e-10, 1e-7, 1e-4, 1e-1])
        legend_outside(ax)
        save(fig, "stability_imaginary_axis", "The spectral radius of each block scheme's stability matrix on "
             "the imaginary axis, minus 1 (symlog scale): above 0 the scheme amplifies an undamped oscillation.")
    ds.close()
    return paths


# -- the study declaration (pyint.study) ---------------------------------------------------
from pyint.study import Study, study_main  # noqa: E402

STUDY = Study(
    name=NAME,
    description="seed 003: direction-vector manipulator, block methods vs RK4 and the angle ODE (Tables 1-6, Figs 3-11)",
    grid=GRID,
    quick_grid={"method": ["block_uniform_rk", "block_legendre", "rk4_index1"], "h": [0.01], "T": [1.0, 10.0]},
    where=keep_case,
    run_case=run_case,
    post=add_derived,
    figures=figures,
    summary=summary,
    meta={"formulation": ("", "dae: natural coordinates, eq. (7); ode: angles, eq. (14)"),
          "h": ("s", "step size (block length) h"), "T": ("s", "final time")},
)


if __name__ == "__main__":      # the same as `pyint study run direction_vector_block [options]`
    raise SystemExit(study_main(STUDY))
