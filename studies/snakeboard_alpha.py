"""Seed 000: generalized-alpha, alpha-RATTLE and IDA on the snakeboard (section 4).

Model: ``pyint.models.Snakeboard`` (seed 000 section 4: thrust F = 20 N, springs
k_r = 1, k_w = 0.1 as printed; m, J, J_r, J_w, L illegible in the seed and
taken from seed 004), released from x = y = theta = phi_b = 0, psi = 0.2,
phi_f = pi/3 at rest.  rho_inf = 3/7 (alpha_m = -0.1, alpha_f = 0.3, as printed).

One case per method:

* ``genalpha``, ``alpha_rattle`` (pyint's Fortran kernels) and ``ida``
  (SUNDIALS IDA on the automatic dummy-derivative index-1 form, the DASSL
  substitute, rtol = atol = ``ida_rtol`` = 1e-6, DASSL-like):

  - the paper run: T = 1 s (the motion is violent: theta-dot reaches 24 rad/s,
    |lambda| 3e3; over longer spans the runs at different h part ways, so the
    comparison is made where every method converges), h = 1e-3, outputs every
    4 ms: x, y, theta against time (Figs 2-4) and the violation A_1(q) v of the
    first nonholonomic constraint (Figs 5-7);
  - a convergence sweep: the error (max over the 4 ms outputs, all six
    coordinates) against a tight reference (IDA, dummy-derivative form,
    rtol = atol = 1e-11) for h = 4e-3 / 2^k (the alpha methods) or for
    rtol = 1e-4 ... 1e-8 (IDA), with CPU times: measured orders and a
    work-precision diagram.

* ``genalpha_adaptive`` (issue 18, beyond the paper): generalized-alpha with
  variable steps (pyint's step controller, error per equal share of the steps) at
  rtol = atol = ``adaptive_rtol`` = 1e-6, outputs at the same 4 ms times (interpolated,
  constraints re-imposed), its sweep over rtol = 1e-4 ... 1e-8 beside IDA's in
  the work-precision diagram, and the history of its accepted steps
  (``step_size_history.png``).

The summary prints the table of maximal violations beside the paper's
(generalized-alpha ~1e-15, alpha-RATTLE ~1e-2, DASSL ~1e-3).  For IDA two
numbers are given: at the outputs (where pyint.reference re-solves the
algebraic variables, so the constraint holds to round-off) and over IDA's own
accepted steps, which is what a DASSL run shows.
"""
from __future__ import annotations

import time

import numpy as np
import xarray as xr

from pyint.convergence import fit_order
from pyint.study import Study, study_main

NAME = "snakeboard_alpha"
METHODS = ["genalpha", "alpha_rattle", "ida", "genalpha_adaptive"]
#: seed 000's reported violations (it has no variable-step run)
PAPER_VIOLATION = {"genalpha": 1e-15, "alpha_rattle": 1e-2, "ida": 1e-3, "genalpha_adaptive": np.nan}
#: the methods run at a tolerance (their sweeps are over rtol; the others' over h)
TOLERANCE_METHODS = ("ida", "genalpha_adaptive")
RHO_INF = 3 / 7
DT_OUT = 0.004
DEFAULTS = {"t_end": 1.0, "h": 1e-3, "n_h": 5, "ida_rtol": 1e-6, "adaptive_rtol": 1e-6, "ref_rtol": 1e-11}
QUICK = {"n_h": 3}


def _attrs(units, long_name):
    return {"units": units, "long_name": long_name}


def _model():
    from pyint.models import Snakeboard
    return Snakeboard()


def _times(t_end):
    return np.round(np.arange(0.0, t_end + DT_OUT / 2, DT_OUT), 12)


def _reference(t_end, rtol):
    """Tight IDA reference at the output times (cached by pyint.reference), with its error
    estimate against a solution at rtol / 10 (``ref.error_estimate``)."""
    from pyint import reference
    m = _model()
    q0, v0 = m.initial_state()
    return reference.solve(m, _times(t_end), q0, v0, rtol=rtol, form="dummy_derivative", error_estimate=True)


def _run(method, h_or_rtol, t_end):
    """(result, cpu, step violation) of one run with outputs every DT_OUT."""
    m = _model()
    q0, v0 = m.initial_state()
    if method == "ida":
        from pyint import reference
        cpu = time.process_time()
        r = reference.solve(m, _times(t_end), q0, v0, rtol=h_or_rtol, form="dummy_derivative", cache_dir=False)
        cpu = time.process_time() - cpu
        return r, cpu, float(r.stats["step_residual_velocity"])
    from pyint.methods.genalpha import AlphaRattle, GeneralizedAlpha
    if method == "genalpha_adaptive":   # issue 18: variable steps, outputs at the 4 ms grid
        cpu = time.process_time()
        r = GeneralizedAlpha(rho_inf=RHO_INF).integrate(m, q0, v0, t_end, rtol=h_or_rtol, t_eval=_times(t_end),
                                                        max_steps=2_000_000)
        return r, time.process_time() - cpu, r.step_max("eps_vel")
    cls = GeneralizedAlpha if method == "genalpha" else AlphaRattle
    h = h_or_rtol
    every = int(round(DT_OUT / h))
    cpu = time.process_time()
    r = cls(rho_inf=RHO_INF).integrate(m, q0, v0, t_end, h, every=every)
    cpu = time.process_time() - cpu
    # every step, not only the outputs: the kernel keeps A v + b at its Newton tolerance at every
    # step, and the driver's per-step maximum of the velocity level (the snakeboard has only
    # nonholonomic constraints: |A v + b|) comes with the run
    return r, cpu, r.step_max("eps_vel")


def run_case(params):
    """One method: the paper run and the convergence sweep, as one Dataset."""
    method = params["method"]
    t_end, h = float(params["t_end"]), float(params["h"])
    m = _model()
    knob = {"ida": float(params["ida_rtol"]), "genalpha_adaptive": float(params["adaptive_rtol"])}.get(method, h)
    res, cpu, step_viol = _run(method, knob, t_end)
    t, q, v = res.t, res.q, res.v
    viol1 = np.array([m.nh_A(tk, qk)[0] @ vk + m.nh_b(tk, qk)[0] for tk, qk, vk in zip(t, q, v)])
    # the one trajectory schema (Result.to_xarray; IDA's ReferenceResult too), then the paper's own variables
    ds = res.to_xarray()
    ds["violation1"] = ("time", viol1, _attrs("m/s", "violation of the first nonholonomic constraint A_1(q) v"))
    ds["max_violation_outputs"] = ((), float(np.max(np.abs(viol1))),
                                   _attrs("m/s", "max |A_1 v| over the 4 ms outputs"))
    ds["max_violation_steps"] = ((), step_viol, _attrs("m/s", "max |A v + b| over every step "
                                                        "(IDA: over its accepted steps)"))
    ds["paper_violation"] = ((), PAPER_VIOLATION[method], _attrs("m/s", "order of the violation in seed 000"))
    ds["cpu_time"] = ((), cpu, _attrs("s", "CPU time of the paper run"))

    # convergence sweep against the tight reference
    ref = _reference(t_end, float(params["ref_rtol"]))
    ds["ref_error_estimate"] = ((), float(np.max(ref.error_estimate["q"])),
                                _attrs("m", "estimated error of the reference in q (max over the outputs): "
                                            "|q(ref_rtol) - q(ref_rtol / 10)|"))
    n_h = int(params["n_h"])
    if method in TOLERANCE_METHODS:
        steps = 10.0 ** -np.arange(4, 4 + n_h)              # rtol
        dim, unit, long = "rtol", "1", "relative (= absolute) tolerance (IDA, adaptive generalized-alpha)"
    else:
        steps = 4e-3 / 2.0 ** np.arange(n_h)                 # h
        dim, unit, long = "h", "s", "step size"
    errs, cpus = [], []
    for s in steps:
        r, c, _ = _run(method, float(s), t_end)
        errs.append(float(np.max(np.abs(r.q - ref.q))))
        cpus.append(c)
    ds = ds.assign_coords({f"sweep_{dim}": (f"sweep_{dim}", steps, _attrs(unit, long))})
    ds[f"error_{dim}"] = (f"sweep_{dim}", errs, _attrs("m", "max error in q over the outputs vs IDA rtol 1e-11"))
    ds[f"cpu_{dim}"] = (f"sweep_{dim}", cpus, _attrs("s", "CPU time"))
    if method not in TOLERANCE_METHODS:
        ds["order"] = ((), float(fit_order(steps, errs)),
                       _attrs("1", "measured order (slope of log error against log h)"))
    return ds


def _adaptive_steps(ds):
    """The accepted step sizes of the adaptive run in a study file (the runner pads the other
    cases' step axis with NaN), or None without that case."""
    if "genalpha_adaptive" not in ds["method"].values or "accepted_step" not in ds:
        return None
    hk = ds["accepted_step"].sel({"method": "genalpha_adaptive"}).values
    return hk[np.isfinite(hk)]


def figures(nc_path, outdir):
    from pyint.study.plotting import FigureSet, legend_outside, series_style
    figs = FigureSet(nc_path, outdir)
    import matplotlib.pyplot as plt

    ds = figs.ds

    def tsel(mth):   # each case's own output times (the runner keeps them per case when they differ)
        t = ds["time"]
        return (t.sel({"method": mth}) if "method" in t.dims else t).values

    labels = {"genalpha": "generalized-α", "alpha_rattle": "α-RATTLE", "ida": "IDA (dummy derivatives)",
              "genalpha_adaptive": "generalized-α, adaptive"}
    # Figs 2-4: the four runs coincide to the eye, so a lower panel shows each one's distance from
    # the IDA run (interpolated onto the method's outputs), which tells them apart.
    ref = "ida" if "ida" in ds["method"].values else None
    for k, (c, unit) in enumerate([("x", "m"), ("y", "m"), ("theta", "rad")]):
        fig, (ax, dax) = plt.subplots(2, 1, figsize=(6.5, 5), sharex=True, height_ratios=(3, 2))
        for i, mth in enumerate(ds["method"].values):
            y = ds["q"].sel({"method": mth}).isel(coord=k).values
            style = series_style(i)
            ax.plot(tsel(mth), y, label=labels.get(str(mth), str(mth)), lw=1.2, **style)
            if ref is not None and mth != ref:
                t, t_ref = tsel(mth), tsel(ref)
                ok, ok_ref = np.isfinite(t) & np.isfinite(y), np.isfinite(t_ref)
                y_ref = np.interp(t[ok], t_ref[ok_ref], ds["q"].sel({"method": ref}).isel(coord=k).values[ok_ref])
                dax.semilogy(t[ok], np.maximum(np.abs(y[ok] - y_ref), 1e-16), lw=0.8, **style)
        ax.set_ylabel(f"{c} [{unit}]")
        ax.set_title(f"snakeboard: {c} against time (seed 000 Fig. {2 + k})")
        legend_outside(ax)
        dax.set_xlabel("t [s]")
        dax.set_ylabel(f"|{c} − {c}_IDA| [{unit}]")
        figs.save(fig, f"fig{2 + k}_{c}.png",
                  caption=f"Seed 000 Fig. {2 + k}: the snakeboard's {c} against time for every method (top; the "
                          "curves coincide to the eye) and each method's distance from the IDA run (bottom, log "
                          "scale), which tells them apart.")
    for k, mth in enumerate(ds["method"].values):
        fig, ax = plt.subplots(figsize=(6, 3.5))
        v = np.abs(ds["violation1"].sel({"method": mth}).values)
        ax.semilogy(tsel(mth), np.maximum(v, 1e-18))
        ax.set_xlabel("t [s]")
        ax.set_ylabel("|A₁(q) v| [m/s]")
        ax.set_title(f"{labels.get(str(mth), mth)}: first constraint (Fig. {5 + k}); "
                     f"steps max {float(ds['max_violation_steps'].sel({'method': mth})):.1e}", fontsize=9)
        figs.save(fig, f"fig{5 + k}_violation_{mth}.png",
                  caption=f"Seed 000 Fig. {5 + k}: the violation |A₁(q) v| of the first nonholonomic constraint "
                          f"against time, {labels.get(str(mth), mth)}, at the outputs (zeros drawn at 1e-18).")
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for mth in ("genalpha", "alpha_rattle"):
        if mth in ds["method"].values:
            e = ds["error_h"].sel({"method": mth})
            a1.loglog(ds["sweep_h"], e, "o-", label=f"{labels[mth]} (slope {float(ds['order'].sel({'method': mth})):.2f})")
            a2.loglog(ds["cpu_h"].sel({"method": mth}), e, "o-", label=labels[mth])
    for mth in TOLERANCE_METHODS:
        if mth in ds["method"].values:
            a2.loglog(ds["cpu_rtol"].sel({"method": mth}), ds["error_rtol"].sel({"method": mth}), "s-",
                      label=f"{labels[mth]} (rtol sweep)")
    from matplotlib.ticker import NullFormatter
    a1.xaxis.set_minor_formatter(NullFormatter())
    a1.set_xlabel("h [s]"); a1.set_ylabel("max error in q [m]"); legend_outside(a1); a1.set_title("convergence")
    a2.set_xlabel("CPU time [s]"); a2.set_ylabel("max error in q [m]"); legend_outside(a2); a2.set_title("work-precision")
    figs.save(fig, "convergence_work_precision.png",
              caption="Left: the largest error in q against an IDA reference at tight tolerance, against the "
                      "step h (log-log; the legend gives the fitted slope). Right: the same errors against the "
                      "CPU time, with IDA's tolerance sweep.")
    hk = _adaptive_steps(ds)
    if hk is not None:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.semilogy(np.cumsum(hk), hk, lw=0.8)
        ax.axhline(float(ds["h"].max()) if "h" in ds else DEFAULTS["h"], color="0.6", ls="--", lw=0.8,
                   label="fixed step of the paper runs")
        ax.set_xlabel("t [s]")
        ax.set_ylabel("accepted step h [s]")
        ax.set_title(f"adaptive generalized-α, rtol {DEFAULTS['adaptive_rtol']:g}: "
                     f"{hk.size} steps", fontsize=9)
        legend_outside(ax)
        figs.save(fig, "step_size_history.png",
                  caption="The accepted steps of the adaptive generalized-α run against time, beside the fixed "
                          "step of the paper's runs (dashed).")
    return figs.paths


def summary(ds):
    def opt(x, fmt, width):      # "–" where there is no number (no paper value, no h-sweep)
        return f"{x:>{width}{fmt}}" if np.isfinite(x) else f"{'–':>{width}}"

    lines = ["max violation of the nonholonomic constraints (T = 1 s, h = 1e-3; IDA rtol 1e-6)",
             f"{'method':<18}{'ours: outputs':>15}{'ours: every step':>18}{'paper':>9}{'order':>8}"]
    for mth in ds["method"].values:
        sel = {"method": mth}
        order = float(ds["order"].sel(sel)) if "order" in ds else np.nan
        lines.append(f"{str(mth):<18}{float(ds['max_violation_outputs'].sel(sel)):>15.2e}"
                     f"{float(ds['max_violation_steps'].sel(sel)):>18.2e}"
                     f"{opt(float(ds['paper_violation'].sel(sel)), '.0e', 9)}{opt(order, '.2f', 8)}")
    hk = _adaptive_steps(ds)
    if hk is not None:
        lines.append(f"adaptive generalized-alpha: {hk.size} accepted steps, h from {hk.min():.2e} to "
                     f"{hk.max():.2e} s")
    if "ref_error_estimate" in ds:
        lines.append(f"IDA reference: estimated error in q {float(ds['ref_error_estimate'].max()):.1e} "
                     "(|q(ref_rtol) - q(ref_rtol / 10)|, max over the outputs)")
    return "\n".join(lines)


STUDY = Study(
    name=NAME,
    description="seed 000: generalized-alpha (fixed and adaptive steps), alpha-RATTLE and IDA (dummy derivatives) "
                "on the snakeboard",
    grid={"method": METHODS},
    fixed=dict(DEFAULTS),
    quick_grid=dict(QUICK),
    run_case=run_case,
    figures=figures,
    summary=summary,
    meta={"t_end": ("s", "final time"), "h": ("s", "step of the paper run"),
          "n_h": ("1", "points of the convergence sweep"), "ida_rtol": ("1", "IDA tolerance of the paper run"),
          "adaptive_rtol": ("1", "tolerance of the adaptive generalized-alpha run"),
          "ref_rtol": ("1", "tolerance of the IDA reference")},
)


if __name__ == "__main__":      # the same as `pyint study run snakeboard_alpha [options]`
    raise SystemExit(study_main(STUDY))
