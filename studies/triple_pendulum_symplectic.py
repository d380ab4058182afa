"""Seed 002: constrained symplectic methods on the planar triple pendulum.

Paper: Wu et al. 2004 (seeds/002), section 3 (example).  Planar triple pendulum of
unit point masses on unit links, gravity 1, written as a SymbolicModel
(:func:`triple_pendulum_model`, the twin of ``pyint.problems`` "triple_pendulum"),
released from rest at q(0) = (0.5, -sqrt(.75), 0, -2 sqrt(.75), 0, -1 - 2 sqrt(.75)).

One case per method (the grid is the method, plus the run sizes):

* ``paper``  h = 0.12, T = 60 (the paper's run): position and velocity
  constraint errors and the energy error against time (Figs 2-3 for the
  composition, Figs 4-5 for Baumgarte-RK4).
* ``long``   h = 0.12, T = 6000: the energy error stays bounded for the
  symplectic methods and drifts for Baumgarte-RK4.
* ``sweep``  h = 0.12 / 2^k, k = 0..n_h-1, error at the final time against a
  tight reference (``pyint.reference.ode.ode_reference``, DOP853 rtol = atol =
  1e-13) on the triple pendulum (T = 6) and on the anharmonic chain
  (``anharmonic_chain2``, T = 2.4), where the composition's variants differ;
  measured orders = least-squares slopes of log error against log h.

Methods: the seed's composition with the implicit midpoint (s = 1, the
paper's Figs 2-3) and 2-stage Gauss-Legendre middle step, RATTLE (Stormer-
Verlet middle step), Lobatto IIIA-IIIB with 3 stages, Baumgarte-RK4
(alpha = beta = 5).

Run: ``pyint study run triple_pendulum_symplectic [--quick]`` writes
``results/triple_pendulum_symplectic.nc`` (dimension ``method`` from the
grid, then each case's ``time``, ``time_long``, ``problem``, ``h``) and the
figures under ``results/triple_pendulum_symplectic/``, drawn from the file
alone (``pyint plot FILE`` redraws them).
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np

from pyint.convergence import fit_order
from pyint.study import Study, study_main

#: study method label -> (class name in pyint, constructor keyword arguments)
METHODS = {
    "composition_midpoint": ("SymplecticComposition", {"stages": 1}),
    "composition_gl2": ("SymplecticComposition", {"stages": 2}),
    "rattle": ("Rattle", {}),
    "lobatto_iiiab3": ("LobattoIIIAB", {"stages": 3}),
    "baumgarte_rk4": ("BaumgarteRK4", {"alpha": 5.0, "beta": 5.0}),
}
PAPER_H, PAPER_T = 0.12, 60.0
SWEEP = {"triple_pendulum": 6.0, "anharmonic_chain2": 2.4}   # problem -> final time
DEFAULTS = {"t_long": 6000.0, "every_long": 10, "n_h": 6}
QUICK = {"t_long": 120.0, "n_h": 2}
NAME = "triple_pendulum_symplectic"


def make_method(label):
    from pyint.methods import baumgarte, symplectic
    cls_name, kwargs = METHODS[label]
    cls = getattr(symplectic, cls_name, None) or getattr(baumgarte, cls_name)
    return cls(**kwargs)


def triple_pendulum_model():
    """Seed 002's triple pendulum written as a user would, a :class:`pyint.models.SymbolicModel`:
    unit point masses at (x_i, y_i) on unit links, gravity 1 along -y, the three link-length
    constraints g_i = (|p_i - p_{i-1}|^2 - l^2) / 2 (p_0 the fixed origin), in the coordinates
    and conventions of ``pyint.problems.triple_pendulum_model()`` (PendulumChain(3)), which stays
    the reference's model.  Compiled to Fortran once and cached (pyint.models.symbolic)."""
    import sympy as sp
    from pyint.models import SymbolicModel

    x, y = sp.symbols("x1:4"), sp.symbols("y1:4")
    vx, vy = sp.symbols("vx1:4"), sp.symbols("vy1:4")
    m, l, g = sp.symbols("m l g")
    q = [c for i in range(3) for c in (x[i], y[i])]
    v = [c for i in range(3) for c in (vx[i], vy[i])]
    hol = [((x[i] - (x[i - 1] if i else 0))**2 + (y[i] - (y[i - 1] if i else 0))**2 - l**2) / 2
           for i in range(3)]
    return SymbolicModel(q, v, mass=sp.diag(*[m] * 6), potential=sum(m * g * yi for yi in y), hol=hol,
                         params={m: 1.0, l: 1.0, g: 1.0}, name="triple_pendulum_symbolic",
                         coord_units=("m",) * 6)


@functools.lru_cache(maxsize=None)
def _model():
    return triple_pendulum_model()


@functools.lru_cache(maxsize=None)
def _reference(problem_name, t_end):
    from pyint.problems import PROBLEMS
    from pyint.reference.ode import ode_reference
    prob = PROBLEMS[problem_name]
    return tuple(x[-1] for x in ode_reference(prob.model, *prob.initial_state, [t_end]))


def _attrs(units, long_name):
    return {"units": units, "long_name": long_name}


def run_case(params):
    """One method: the paper run, the long run and the h-sweeps, as one xarray Dataset.

    params: ``method`` (a key of METHODS) and optionally ``t_long``,
    ``every_long``, ``n_h`` (DEFAULTS).  Dimensions: time (paper run),
    time_long, problem, h.
    """
    import xarray as xr
    from pyint.errors import IntegrationError
    from pyint.problems import PROBLEMS

    p = {**DEFAULTS, **params}
    method = make_method(p["method"])
    prob = PROBLEMS["triple_pendulum"]
    model = _model()   # the SymbolicModel twin of prob.model
    q0, v0 = prob.initial_state

    paper = method.integrate(model, q0, v0, PAPER_T, PAPER_H)
    long = method.integrate(model, q0, v0, float(p["t_long"]), PAPER_H, every=int(p["every_long"]))
    de_paper, de_long = paper.energy - paper.energy[0], long.energy - long.energy[0]
    trend = np.polyfit(long.t, de_long, 1)[0] * (long.t[-1] - long.t[0])

    hs = PAPER_H / 2.0 ** np.arange(int(p["n_h"]))
    shape = (len(SWEEP), len(hs))
    err = {k: np.full(shape, np.nan) for k in ("q", "v", "lam")}
    cpu = np.full(shape, np.nan)
    newton = np.full(shape, np.nan)
    status = np.full(shape, "", dtype=object)
    for i, (pname, t_end) in enumerate(SWEEP.items()):
        sp = PROBLEMS[pname]
        qr, vr, lr = _reference(pname, t_end)
        for j, h in enumerate(hs):
            try:
                r = method.integrate(model if pname == "triple_pendulum" else sp.model, *sp.initial_state,
                                     t_end, h)
            except IntegrationError as exc:     # e.g. no solution of the step equations at large h
                status[i, j] = exc.result.status
                continue
            status[i, j] = r.status
            err["q"][i, j] = np.max(np.abs(r.q[-1] - qr))
            err["v"][i, j] = np.max(np.abs(r.v[-1] - vr))
            err["lam"][i, j] = np.max(np.abs(r.lam[-1] - lr))
            cpu[i, j] = r.cpu_time
            newton[i, j] = r.stats.get("newton_iterations", 0)

    def slope(e):
        return fit_order(hs, e)

    # the paper run in the one trajectory schema (Result.to_xarray: q, v, lam, violation, energy_error, ...)
    ds = paper.to_xarray().assign_coords({
        "time": ("time", paper.t, _attrs("s", "time (paper run, h = 0.12)")),
        "time_long": ("time_long", long.t, _attrs("s", "time (long run, h = 0.12)")),
        "problem": ("problem", list(SWEEP), _attrs("", "problem of the h-sweep")),
        "h": ("h", hs, _attrs("s", "step size h")),
    })
    # the chain's constraints are g_i = (|d_i|^2 - l_i^2) / 2: units m^2
    new = {}   # added in one merge (Dataset.assign): each ds[name] = ... is a merge of its own
    new["pos_error"] = ("time", paper.residual[:, 0], _attrs("m^2", "position constraint error max|g(q)|"))
    new["vel_error"] = ("time", paper.residual[:, 1],
                        _attrs("m^2/s", "velocity constraint error max|G v| = max|G H_p|"))
    new["energy_change"] = ("time", de_paper, _attrs("J", "energy change H(t) - H(0)"))
    new["pos_error_long"] = ("time_long", long.residual[:, 0], _attrs("m^2", "position constraint error (long run)"))
    new["vel_error_long"] = ("time_long", long.residual[:, 1], _attrs("m^2/s", "velocity constraint error (long run)"))
    new["energy_change_long"] = ("time_long", de_long, _attrs("J", "energy change H(t) - H(0) (long run)"))
    for k, unit, what in (("q", "m", "position"), ("v", "m/s", "velocity"), ("lam", "N/m", "multiplier")):
        new[f"error_{k}"] = (("problem", "h"), err[k],
                             _attrs(unit, f"max {what} error at the final time against the reference"))
        new[f"order_{k}"] = ("problem", np.array([slope(e) for e in err[k]]),
                             _attrs("1", f"measured order in {what}: slope of log error against log h"))
    new["cpu_time_sweep"] = (("problem", "h"), cpu, _attrs("s", "CPU time of the integration"))
    new["newton_iterations_sweep"] = (("problem", "h"), newton, _attrs("1", "Newton iterations"))
    new["status_sweep"] = (("problem", "h"), status.astype(str), _attrs("", "status of the sweep run"))
    scalars = {
        "eps_pos": (paper.eps_pos, "m^2", "max|g(q)| over the paper run (T = 60)"),
        "eps_vel": (paper.eps_vel, "m^2/s", "max|G v| over the paper run (T = 60)"),
        "energy_drift": (paper.energy_drift, "1", "max|H - H0| / |H0| over the paper run (T = 60)"),
        "energy_change_max": (float(np.max(np.abs(de_paper))), "J", "max|H - H0| over the paper run (T = 60)"),
        "energy_change_max_long": (float(np.max(np.abs(de_long))), "J", "max|H - H0| over the long run"),
        "energy_trend_long": (float(trend), "J", "change of H - H0 over the long run along its least-squares line"),
        "eps_pos_long": (long.eps_pos, "m^2", "max|g(q)| over the long run"),
        "cpu_time": (paper.cpu_time, "s", "CPU time of the paper run"),
        "cpu_time_long": (long.cpu_time, "s", "CPU time of the long run"),
        "newton_iterations": (float(paper.stats.get("newton_iterations", 0)), "1",
                              "Newton iterations of the paper run"),
    }
    for key, (val, unit, long_name) in scalars.items():
        new[key] = ((), val, _attrs(unit, long_name))
    new["method_params"] = ((), json.dumps(paper.params, sort_keys=True), _attrs("", "method parameters (JSON)"))
    ds = ds.assign(new)
    ds.attrs = {"model_params": json.dumps(model.describe(), sort_keys=True), "h_paper": PAPER_H,
                "t_paper": PAPER_T,
                "reference": "pyint.reference.ode.ode_reference: DOP853 on the index-1 form, rtol = atol = 1e-13"}
    return ds


# -- figures: from the NetCDF file alone -------------------------------------------------------

COLORS = {"composition_midpoint": "C0", "composition_gl2": "C2", "rattle": "C1", "lobatto_iiiab3": "C4",
          "baumgarte_rk4": "C3"}
STYLES = {"composition_midpoint": "-", "composition_gl2": "--", "rattle": ":", "lobatto_iiiab3": "-",
          "baumgarte_rk4": "-"}
FLOOR = 1e-17   # zero residuals are drawn at this level on log axes


# NB: select methods with .sel({"method": m}): .sel(method=m) is read as sel's own
# `method` argument (inexact matching) and silently selects nothing.
def _label(ds, name):
    v = ds[name]
    return f"{v.attrs.get('long_name', name)} [{v.attrs.get('units', '')}]"


def figures(path, outdir=None):
    """Draw the study's figures from the NetCDF file ``path``; returns the PNG paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from pyint.study.plotting import legend_outside
    from pyint.study.datasets import load_netcdf

    path = Path(path)
    outdir = Path(outdir) if outdir else path.with_suffix("")
    outdir.mkdir(parents=True, exist_ok=True)
    out = []
    ds = load_netcdf(path)
    methods = [str(m) for m in ds.method.values]
    symp = [m for m in methods if m != "baumgarte_rk4"]

    captions = {
        "fig2_3_constraints_composition.png": "Seed 002 Figs 2–3: the position and velocity constraint errors "
                                              "of the symplectic methods against time (log scale; exact zeros "
                                              "drawn at the floor).",
        "fig4_5_constraints_baumgarte.png": "Seed 002 Figs 4–5: the position and velocity constraint errors of "
                                            "Baumgarte-stabilized RK4 against time (log scale): they drift.",
        "energy_change.png": "The energy change H(t) − H(0) of every method over the paper's run (linear scale: "
                             "the sign shows which way each drifts).",
        "energy_error_long.png": "The long run: the largest |H − H(0)| over each of 100 windows against time "
                                 "(log scale): bounded for the symplectic methods, drifting for Baumgarte-RK4.",
        "h_sweep_orders.png": "The error in q at the end against the step h (log-log), one panel per problem; the "
                              "legend gives each method's measured order.",
    }

    def save(fig, name):
        fig.tight_layout()
        p = outdir / name
        fig.savefig(p, dpi=110, bbox_inches="tight", metadata={"Description": captions[name]})
        plt.close(fig)
        out.append(p)

    # Figs 2-3 (composition) and 4-5 (Baumgarte-RK4): constraint errors against time
    for name, chosen, title in (("fig2_3_constraints_composition.png", symp,
                                 f"symplectic methods (zeros drawn at {FLOOR:g})"),
                                ("fig4_5_constraints_baumgarte.png", ["baumgarte_rk4"], "Baumgarte-RK4")):
        chosen = [m for m in chosen if m in methods]
        if not chosen:
            continue
        fig, axes = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
        for ax, var, short in zip(axes, ("pos_error", "vel_error"), ("position: max|g(q)|", "velocity: max|G v|")):
            for m in chosen:
                y = np.maximum(ds[var].sel({"method": m}).values, FLOOR)
                ax.semilogy(ds.time, y, STYLES.get(m, "-"), color=COLORS.get(m), lw=1, label=m)
            ax.set_ylabel(f"{short} [{ds[var].attrs.get('units', '')}]")
            ax.grid(True, which="major", alpha=0.3)
        axes[0].set_title(f"Triple pendulum, h = {ds.attrs['h_paper']}: {title}", fontsize=9)
        legend_outside(axes[0])
        axes[1].set_xlabel(_label(ds, "time"))
        save(fig, name)

    # energy error: the paper run, and the long run as the maximum of |H - H0| over 100 windows
    fig, ax = plt.subplots(figsize=(7, 4))
    for m in methods:
        ax.plot(ds.time, ds.energy_change.sel({"method": m}), STYLES.get(m, "-"), color=COLORS.get(m), lw=0.8,
                label=m)
    ax.set_xlabel(_label(ds, "time"))
    ax.set_ylabel(_label(ds, "energy_change"))
    ax.set_title(f"Energy error, h = {ds.attrs['h_paper']}, T = {float(ds.time[-1]):g} s", fontsize=9)
    ax.grid(True, alpha=0.3)
    legend_outside(ax)
    save(fig, "energy_change.png")     # not energy_error.png: the standard figure of that name

    fig, ax = plt.subplots(figsize=(7, 4))
    nwin = 100
    for m in methods:
        e = np.abs(ds.energy_change_long.sel({"method": m}).values[1:])
        t = ds.time_long.values[1:]
        k = len(e) // nwin
        ax.semilogy(t[:k * nwin].reshape(nwin, k)[:, -1], e[:k * nwin].reshape(nwin, k).max(axis=1),
                    STYLES.get(m, "-"), color=COLORS.get(m), lw=1.2, label=m)
    ax.set_xlabel(_label(ds, "time_long"))
    ax.set_ylabel(f"max |H - H0| over windows of {float(ds.time_long[-1]) / nwin:g} s [J]", fontsize=8)
    ax.set_title(f"Long run: energy error, h = {ds.attrs['h_paper']}, T = {float(ds.time_long[-1]):g} s "
                 "(bounded: symplectic; drifting: Baumgarte-RK4)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    legend_outside(ax)
    save(fig, "energy_error_long.png")

    # h-sweep with measured orders
    probs = [str(p) for p in ds.problem.values]
    fig, axes = plt.subplots(1, len(probs), figsize=(5.5 * len(probs), 4.2), squeeze=False)
    for ax, prob in zip(axes[0], probs):
        for m in methods:
            e = ds.error_q.sel({"method": m, "problem": prob})
            order = float(ds.order_q.sel({"method": m, "problem": prob}))
            ax.loglog(ds.h, e, "o" + STYLES.get(m, "-"), color=COLORS.get(m), ms=3, lw=1,
                      label=f"{m}: order {order:.2f}")
        ax.set_xlabel(_label(ds, "h"))
        ax.set_ylabel(_label(ds, "error_q"), fontsize=8)
        ax.set_title(f"{prob}: error against h", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        legend_outside(ax)
    save(fig, "h_sweep_orders.png")
    return out


def summary(ds):
    """One line per method: the figures the issue asks for."""
    lines = [f"{'method':22s} {'eps_pos':>9s} {'eps_vel':>9s} {'max|dH| 60':>10s} {'max|dH| long':>12s} "
             f"{'trend long':>10s} {'order tp':>8s} {'order nl':>8s} {'cpu long':>8s}"]
    for m in ds.method.values:
        d = ds.sel({"method": m})
        lines.append(f"{str(m):22s} {float(d.eps_pos):9.2e} {float(d.eps_vel):9.2e} "
                     f"{float(d.energy_change_max):10.3e} {float(d.energy_change_max_long):12.3e} "
                     f"{float(d.energy_trend_long):10.3e} {float(d.order_q.sel(problem='triple_pendulum')):8.2f} "
                     f"{float(d.order_q.sel(problem='anharmonic_chain2')):8.2f} {float(d.cpu_time_long):8.2f}")
    return "\n".join(lines)


STUDY = Study(
    name=NAME,
    description="seed 002: symplectic composition, RATTLE, Lobatto IIIA-IIIB, Baumgarte-RK4 on the triple pendulum",
    grid={"method": list(METHODS)},
    fixed=dict(DEFAULTS),
    quick_grid={"method": ["composition_midpoint", "baumgarte_rk4"], **QUICK},
    run_case=run_case, figures=figures, summary=summary,
    meta={"t_long": ("s", "final time of the long run"),
          "every_long": ("1", "output every this many steps in the long run"),
          "n_h": ("1", "number of step sizes of the h-sweep (h = 0.12 / 2^k)")})


if __name__ == "__main__":      # the same as `pyint study run triple_pendulum_symplectic [options]`
    raise SystemExit(study_main(STUDY))
