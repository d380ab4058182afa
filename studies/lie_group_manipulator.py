"""Seed 001: the two-link spatial manipulator on SO(3), Tables 1-2 and Figs 2-8.

Li, Li, Ding, Pan, "Constraints stabilization method for DAEs on Lie group of
multibody system dynamics" (seed 001): the index-1, -2, -3 Lie-group DAEs and
the stabilized DAES, all by backward differences + Crouch-Grossman, on the
two-link manipulator of seed 001 section 3 (m = 5 kg, l = 1 m, spherical joints, gravity,
R1 = R2 = I, Omega1 = (10pi, 0, 0), Omega2 = (10pi, 10pi, 20pi), consistent
v1 = 0, v2 = (0, 10pi, -5pi)).  The paper gives no inertias: each link is a
solid cylinder of radius 0.05 m (our choice; the paper is silent).  T = 1 s, h = 1e-5 (Table 1) and 1e-4
(Table 2).  Beyond the paper: DAES with the projected history, and Lie-group
generalized-alpha (index 3; stabilized index 2), which is second order.

Every case returns the time series at 1001 samples (every 1 ms), the metrics
delta(H), eps(Phi), eps(Phidot), eps(Phiddot), max |R^T R - I|, the CPU time,
the end state, and the paper's table entries beside ours (at T = 1 s).  After
the sweep, :func:`add_reference_errors` (the runner's ``post``) adds the errors
at T in x, R (log map) and V against the IDA reference (pyint.reference.lie:
SUNDIALS IDA on the quaternion dummy-derivative form, rtol 1e-12, computed
once and kept in the reference cache), the observed orders between the step
sizes, and the distance of that reference from the quaternion DOP853 ODE.
Figures are drawn from the NetCDF file alone (:func:`figures`).

Run it: ``pyint study run lie_group_manipulator [--quick]`` (or ``python -m
pyint.studies.lie_group_manipulator [--out DIR] [--quick]``, the same runner).
"""
from __future__ import annotations


import numpy as np
import xarray as xr

from pyint.study import Study, study_main

NAME = "lie_group_manipulator"
T_END = 1.0
SAMPLE_DT = 1e-3

#: Case name -> (registered method, options).  DAE1..DAES are the paper's four.
METHODS = {
    "DAE1": ("lie_dae1", {}),
    "DAE2": ("lie_dae2", {}),
    "DAE3": ("lie_dae3", {}),
    "DAES": ("lie_daes", {}),
    "DAES_projected": ("lie_daes", {"history": "projected"}),
    "genalpha_index3": ("lie_genalpha", {}),
    "genalpha_stab2": ("lie_genalpha_s2", {}),
}

GRID = {"method": list(METHODS), "h": [1e-4, 1e-5]}
QUICK_GRID = {"method": ["DAE3", "DAES", "genalpha_stab2"], "h": [1e-4, 5e-5], "T": 0.1}
REFERENCE_RTOL = 1e-12

#: Tables 1 (h = 1e-5) and 2 (h = 1e-4) of the paper: delta(H), eps(Phi), eps(Phidot), eps(Phiddot).
PAPER = {
    1e-5: {"DAE1": (0.0106, 0.0089, 0.0183, 7.4473e-6),
           "DAE2": (0.0083, 0.0029, 1.7764e-14, 1.0551),
           "DAE3": (0.0156, 3.8858e-16, 0.0127, 2.1335),
           "DAES": (0.0086, 3.8858e-16, 2.1316e-14, 4.3201e-12)},
    1e-4: {"DAE1": (0.1307, 0.0902, 0.1770, 3.1041e-4),
           "DAE2": (0.0728, 0.0287, 1.4211e-14, 10.5240),
           "DAE3": (0.0820, 5.6621e-15, 0.1231, 21.3930),
           "DAES": (0.0765, 1.7136e-13, 2.3146e-12, 1.7113e-8)},
}
METRICS = ("energy_drift", "eps_pos", "eps_vel", "eps_acc")


def _system():
    from pyint.models.rigid_bodies import RigidBodySystem
    return RigidBodySystem.two_link_manipulator()


def reference_end(T):
    """(x, R, V) at T from the IDA reference and its distance (x, R, V) from the DOP853 ODE."""
    from pyint.reference.lie import ida_reference, reference
    from pyint.models.so3 import rotation_error
    s = _system()
    x0, r0, v0 = s.manipulator_initial_state()
    xs, rs, vs, _, diag = ida_reference(s, x0, r0, v0, [0.0, T], rtol=REFERENCE_RTOL, cache_dir=None,
                                        error_estimate=True)
    xo, ro, vo, _, _ = reference(s, x0, r0, v0, [0.0, T], rtol=2.5e-14, atol=1e-15)
    check = (float(np.max(np.abs(xs[-1] - xo[-1]))),
             max(rotation_error(ro[-1][i], rs[-1][i]) for i in range(s.nb)),
             float(np.max(np.abs(vs[-1] - vo[-1]))))
    return xs[-1], rs[-1], vs[-1], check, diag


def _paper_value(h, method, k, T=T_END):
    """The paper's Table 1-2 entry (T = 1 s only; NaN otherwise)."""
    row = PAPER.get(h, {}).get(method) if abs(T - T_END) < 1e-12 else None
    return float(row[k]) if row else float("nan")


def run_case(p):
    """One (method, h) case: the trajectory at 1 ms samples and the Table 1-2 metrics."""
    import pyint.methods  # noqa: F401  (registers the Lie-group methods)
    from pyint.integrator import METHODS as REGISTRY

    method, h = p["method"], float(p["h"])
    T = float(p.get("T", T_END))
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; one of {sorted(METHODS)}")
    every = int(round(SAMPLE_DT / h))
    if every < 1 or abs(every * h - SAMPLE_DT) > 1e-12:
        raise ValueError(f"h = {h} must divide the sampling interval {SAMPLE_DT}")
    reg_name, opts = METHODS[method]
    s = _system()
    x0, r0, v0 = s.manipulator_initial_state()
    integ = REGISTRY[reg_name](**opts)
    res = integ.integrate(s, (x0, r0), v0, T, h, every=every)
    l = s.paper["length"]
    tip = np.array([l / 2, 0.0, 0.0])
    endpoint = res.x + np.einsum("tbij,j->tbi", res.R, tip)
    kinetic = np.array([s.energy(np.zeros_like(x), v) for x, v in zip(res.x, res.v)])
    potential = res.energy - kinetic
    # the same time values in every case (t0 + k h rounds differently for different h)
    t = np.arange(len(res.t)) * SAMPLE_DT
    assert np.max(np.abs(t - res.t)) <= 1e-12
    # the one trajectory schema (Result.to_xarray: q, v, a, lam, violation, energy, x, R, V, ...)
    ds = res.to_xarray().assign_coords(time=("time", t, {"units": "s", "long_name": "time"}))
    ds = ds.assign_coords(
        body=("body", [1, 2], {"units": "1", "long_name": "link"}),
        multiplier=("multiplier", [f"lam{i + 1}" for i in range(s.m)],
                    {"units": "", "long_name": "Lagrange multiplier (joint 1: 1-3, joint 2: 4-6)"}))
    ds["lam"].attrs["units"] = "N"
    ds["violation"].attrs.update(units="m, m/s, m/s^2", long_name="|Phi|, |B V|, |B Vdot + Bdot V| (max norm)")
    ds["endpoint"] = (("time", "body", "axis"), endpoint, {"units": "m", "long_name": "end point of the link"})
    ds["kinetic_energy"] = ("time", kinetic, {"units": "J", "long_name": "kinetic energy"})
    ds["potential_energy"] = ("time", potential, {"units": "J", "long_name": "potential energy"})
    scalars = {
        "energy_drift": (res.energy_drift, "1", "max |H - H0| / |H0|"),
        "eps_pos": (res.eps_pos, "m", "max |Phi| over every step"),
        "eps_vel": (res.eps_vel, "m/s", "max |B V| over every step"),
        "eps_acc": (res.eps_acc, "m/s^2", "max |B Vdot + Bdot V| over every step"),
        "eps_acc_sampled": (float(np.max(res.residual[:, 2])), "m/s^2",
                            "max |B Vdot + Bdot V| over the 1 ms samples"),
    }
    for k, name in enumerate(METRICS):
        scalars[f"paper_{name}"] = (_paper_value(h, method, k, T), scalars[name][1], f"paper (Tables 1-2): {name}")
    for name, (val, units, long) in scalars.items():
        ds[name] = ((), float(val), {"units": units, "long_name": long})
    ds.attrs = {"registered_method": reg_name, "inertia": "solid cylinder r = 0.05 m (our choice; the paper is silent)", "T": T}
    return ds


def add_reference_errors(ds):
    """Errors at T against the IDA reference (x; R via |log(R_ref^T R)|; V), the observed
    order between successive step sizes, and the reference's distance from the DOP853 ODE."""
    from pyint.models.so3 import rotation_error
    T = float(ds.time.values[-1])
    xr_, rr_, vr_, check, diag = reference_end(T)
    end = ds.isel(time=-1)
    shape = (ds.sizes["method"], ds.sizes["h"])
    err = {k: np.full(shape, np.nan) for k in ("x", "R", "V")}
    for i, m in enumerate(ds.method.values):
        for j, h in enumerate(ds.h.values):
            c = end.sel({"method": m, "h": h})
            if np.isnan(c["x"].values).any():          # a failed case
                continue
            err["x"][i, j] = np.max(np.abs(c["x"].values - xr_))
            err["R"][i, j] = max(rotation_error(rr_[b], c["R"].values[b]) for b in range(len(rr_)))
            err["V"][i, j] = np.max(np.abs(c["V"].values.ravel() - vr_))
    units = {"x": "m", "R": "rad", "V": "m/s, rad/s"}
    what = {"x": "max |x - x_ref|", "R": "max |log(R_ref^T R)|", "V": "max |V - V_ref|"}
    out = ds.copy()
    hs = ds.h.values
    for k in ("x", "R", "V"):
        out[f"error_{k}"] = (("method", "h"), err[k],
                             {"units": units[k], "long_name": f"{what[k]} at T (IDA reference)"})
        order = np.full(shape, np.nan)           # at each h but the largest: against the next larger h
        by_size = np.argsort(hs)
        for small, large in zip(by_size[:-1], by_size[1:]):
            order[:, small] = np.log(err[k][:, large] / err[k][:, small]) / np.log(hs[large] / hs[small])
        out[f"order_{k}"] = (("method", "h"), order,
                             {"units": "1", "long_name": f"observed order in {k} against the next larger h"})
    out.attrs.update({
        "reference": f"pyint.reference.lie.ida_reference: SUNDIALS IDA, quaternion dummy-derivative form, "
                     f"rtol = atol = {REFERENCE_RTOL:g}, {diag['stats'].get('steps')} steps",
        "reference_vs_dop853": f"x {check[0]:.2e} m, R {check[1]:.2e} rad, V {check[2]:.2e} (m/s, rad/s) at T",
        "reference_error_estimate": (f"quaternion model q = (x, p) {diag['error_estimate']['q']:.2e}, "
                                     f"q' {diag['error_estimate']['v']:.2e} (difference from IDA at rtol/10)"),
    })
    return out


# -- figures and tables (from the file) -----------------------------------------------

def _style(method):
    """Line style per method family: paper forms solid, variants dash-dot, gen-alpha dashed."""
    m = str(method)
    return {"ls": "--" if m.startswith("genalpha") else "-." if m.endswith("projected") else "-", "lw": 0.9}


def figures(nc_path, outdir):
    """Figs 2-8 of the paper from the study's NetCDF file; returns the PNG paths."""
    from pyint.study.plotting import FigureSet, legend_outside
    captions = {
        "fig2_endpoints.png": "Seed 001 Fig. 2: the paths of the two link ends in space (DAES, the smallest h).",
        "fig3_displacements_multipliers.png": "Seed 001 Fig. 3: the links' centres of mass (top) and the "
                                              "Lagrange multipliers (bottom) against time (DAES, the smallest h).",
        "fig4_energies.png": "Seed 001 Fig. 4: kinetic, potential and total energy against time (DAES, the "
                             "smallest h).",
        "fig5_constraints.png": "Seed 001 Fig. 5: the constraint residuals at the position, velocity and "
                                "acceleration level against time, every method, the smallest h (log scale; exact "
                                "zeros drawn at 1e-18).",
        "fig6_rotation.png": "Seed 001 Fig. 6: the nine components of each link's rotation matrix against time.",
        "fig7_orthogonality.png": "Seed 001 Fig. 7: the orthogonality error max |RᵀR − I| of every method "
                                  "against time (log scale).",
        "fig8_total_energy.png": "Seed 001 Fig. 8: the total energy of every method against time, one panel "
                                 "per step h.",
    }
    figs = FigureSet(nc_path, outdir, captions)
    import matplotlib.pyplot as plt

    ds, paths = figs.ds, figs.paths
    hsel = float(ds.h.min())
    main = "DAES" if "DAES" in ds.method.values else str(ds.method.values[0])
    one = ds.sel({"h": hsel, "method": main})
    t = one.time.values

    # Fig 2: trajectories of the link ends
    fig = plt.figure(figsize=(6, 5))
    ax = fig.add_subplot(projection="3d")
    for b in (1, 2):
        e = one.endpoint.sel(body=b)
        ax.plot(e.sel(axis="x"), e.sel(axis="y"), e.sel(axis="z"), lw=0.8, label=f"end of link {b}")
    ax.set_xlabel("x [m]"); ax.set_ylabel("y [m]"); ax.set_zlabel("z [m]")
    ax.set_title(f"Fig. 2: link ends, {main}, h = {hsel:g} s")
    legend_outside(ax)
    figs.save(fig, "fig2_endpoints.png")

    # Fig 3: centres of mass and multipliers
    fig, axs = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for b in (1, 2):
        for a in ("x", "y", "z"):
            axs[0].plot(t, one.x.sel(body=b, axis=a), lw=0.8, label=f"{a}{b}")
    axs[0].set_ylabel("centre of mass [m]"); legend_outside(axs[0])
    for k in one.multiplier.values:
        axs[1].plot(t, one.lam.sel(multiplier=k), lw=0.8, label=str(k))
    axs[1].set_ylabel("multiplier [N]"); axs[1].set_xlabel("time [s]"); legend_outside(axs[1])
    axs[0].set_title(f"Fig. 3: {main}, h = {hsel:g} s")
    figs.save(fig, "fig3_displacements_multipliers.png")

    # Fig 4: energies
    fig, ax = plt.subplots(figsize=(7, 4))
    for name in ("kinetic_energy", "potential_energy", "energy"):
        ax.plot(t, one[name], label=one[name].attrs["long_name"])
    ax.set_xlabel("time [s]"); ax.set_ylabel("energy [J]"); legend_outside(ax)
    ax.set_title(f"Fig. 4: energies, {main}, h = {hsel:g} s")
    figs.save(fig, "fig4_energies.png")

    # Fig 5: constraint levels against time, every method
    levels = list(ds.constraint_level.values)
    fig, axs = plt.subplots(1, 3, figsize=(13, 4), sharex=True)
    for ax, lev, unit in zip(axs, levels, ("m", "m/s", "m/s^2")):
        for m in ds.method.values:
            r = ds.violation.sel({"h": hsel, "method": m, "constraint_level": lev})
            ax.semilogy(t, np.maximum(r, 1e-18), label=str(m), **_style(m))
        ax.set_title(f"{lev} level"); ax.set_xlabel("time [s]"); ax.set_ylabel(f"residual [{unit}]")
    legend_outside(fig)
    fig.suptitle(f"Fig. 5: constraint residuals, h = {hsel:g} s (exact zeros drawn at 1e-18)")
    figs.save(fig, "fig5_constraints.png")

    # Fig 6: rotation matrix components
    fig, axs = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, b in zip(axs, (1, 2)):
        for i in (1, 2, 3):
            for j in (1, 2, 3):
                ax.plot(t, one.R.sel(body=b, row=i, col=j), lw=0.7, label=f"R{i}{j}")
        ax.set_title(f"link {b}"); ax.set_xlabel("time [s]")
    axs[0].set_ylabel("component [1]"); legend_outside(axs[1])
    fig.suptitle(f"Fig. 6: rotation matrices, {main}, h = {hsel:g} s")
    figs.save(fig, "fig6_rotation.png")

    # Fig 7: orthogonality error
    fig, ax = plt.subplots(figsize=(7, 4))
    for m in ds.method.values:
        ax.semilogy(t, np.maximum(ds.orthogonality.sel({"h": hsel, "method": m}), 1e-18), label=str(m),
                    **_style(m))
    ax.set_xlabel("time [s]"); ax.set_ylabel("max |R^T R - I|_F [1]"); legend_outside(ax)
    ax.set_title(f"Fig. 7: orthogonality of R, h = {hsel:g} s")
    figs.save(fig, "fig7_orthogonality.png")

    # Fig 8: total energy of every method, both step sizes
    fig, axs = plt.subplots(1, ds.sizes["h"], figsize=(6 * ds.sizes["h"], 4), squeeze=False)
    for ax, h in zip(axs[0], ds.h.values):
        for m in ds.method.values:
            e = ds.energy.sel({"h": h, "method": m})
            ax.plot(t, e, label=str(m), **_style(m))
        ax.set_title(f"h = {float(h):g} s"); ax.set_xlabel("time [s]"); ax.set_ylabel("total energy [J]")
    legend_outside(fig)
    fig.suptitle("Fig. 8: total energy")
    figs.save(fig, "fig8_total_energy.png")
    ds.close()
    return paths


def summary(ds):
    """Tables 1-2: ours beside the paper's (p:) for every method and h.  Our maxima are over
    every step; eps(Phiddot) is also given at the 1 ms samples ("smp"), which leaves out the
    first step: there DAE3's A = (V^1 - V^0)/h pairs the exact V^0 with a chord velocity and
    misses half the centripetal term (~1e3 m/s^2 whatever h), a value the paper's tables do not show."""
    lines = []
    for h in sorted(ds.h.values):
        table = 1 if np.isclose(h, 1e-5) else 2 if np.isclose(h, 1e-4) else None
        lines.append(f"h = {float(h):g} s" + (f" (paper Table {table})" if table else ""))
        lines.append(f"{'method':16s} {'delta(H)':>21s} {'eps(Phi)':>21s} {'eps(Phidot)':>21s} "
                     f"{'eps(Phiddot)':>9s} {'smp':>21s} {'|RtR-I|':>9s} {'err x':>9s} {'err R':>9s} {'err V':>9s} "
                     f"{'order':>5s} {'cpu s':>6s}")
        for m in ds.method.values:
            c = ds.sel({"h": h, "method": m})

            def cell(name, paper_name):
                ours, paper = float(c[name]), float(c[paper_name])
                return f"{ours:9.3e} (p:{paper:9.3e})" if np.isfinite(paper) else f"{ours:9.3e}{'':12s}"

            cells = [cell(name, f"paper_{name}") for name in METRICS[:3]]
            cells += [f"{float(c['eps_acc']):9.3e}", cell("eps_acc_sampled", "paper_eps_acc")]
            errs = " ".join(f"{float(c[f'error_{k}']) if f'error_{k}' in c else float('nan'):9.2e}"
                            for k in ("x", "R", "V")).replace("nan", "  –")
            order = float(c["order_x"]) if "order_x" in c else float("nan")
            order = f"{order:5.2f}" if np.isfinite(order) else f"{'–':>5s}"   # the largest h: no order
            lines.append(f"{str(m):16s} " + " ".join(cells) +
                         f" {float(c['orthogonality_max']):9.2e} {errs} {order} {float(c['cpu_time']):6.2f}")
        lines.append("")
    if "reference" in ds.attrs:
        lines.append(f"errors at T against {ds.attrs['reference']}; order: in x, against the next larger h")
        lines.append(f"that reference vs the quaternion DOP853 ODE (rtol 2.5e-14): {ds.attrs.get('reference_vs_dop853')}")
        lines.append(f"that reference's own error estimate: {ds.attrs.get('reference_error_estimate')}")
    return "\n".join(lines)


# -- the study runner's declaration (pyint.study) ------------------------------------
STUDY = Study(name=NAME, description="seed 001: Lie-group DAE1/2/3/DAES and gen-alpha, two-link manipulator",
              grid=GRID, fixed={"T": T_END}, quick_grid=QUICK_GRID, run_case=run_case,
              post=add_reference_errors, figures=figures, summary=summary, version="2")


if __name__ == "__main__":      # the same as `pyint study run lie_group_manipulator [options]`
    raise SystemExit(study_main(STUDY))
