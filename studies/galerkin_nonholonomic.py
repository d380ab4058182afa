"""Seed 004 (Man, Gao, Zhong 2020): the Galerkin-Lobatto variational integrator
for nonholonomic Hamiltonian systems on the skate and the snakeboard.

One case = one named run (grid parameter ``run``, see :data:`RUNS`):

* ``convergence`` (Fig. 1): skate on the inclined plane, s = 1..8,
  eta = 1/2^n (n = 1..7), T = 10; global error of the state z = (q, p)
  against the closed form, e = max_k ||z_k - z(t_k)||_inf, with the slope
  fitted per s over the errors above round-off.
* ``skate_long`` (Fig. 2): s = 3, eta = 1/8, T = 2000: relative state error
  ||z_k - z(t_k)||_2 / ||z(t_k)||_2, Hamiltonian error (H_k - H_0)/|H_0|,
  the constraint A(q) H_p(q, P).
* ``sb_*`` (Figs. 3-5): the seed-004 snakeboard (axles coupled, conservative)
  from three initial conditions (straight run; locked steering phi = pi/8,
  pi/16, pi/32, whose exact motion is a circle of radius l cot(phi); a
  general one), s = 4, eta = 1/16, T = 2000, and the locked ones again with
  s = 1, eta = 1/2.
* ``*_spec``: locked steering phi = pi/8 with the carried-multiplier
  reconstruction of seed 004's lost eqs. (10)-(16)
  (``variant="spec"``: lam_0 = previous lam_s), s = 4 and s = 1, for
  comparison with the default ``variant="reduced"`` used by every other run
  (docs/galerkin_snakeboard.md): "spec" reverses the board's direction.

Time series are stored at (at most) NSAMPLES evenly spaced steps; the maxima
over the run (``eps_vel`` = max |A H_p(q, P) + b|, ``energy_drift``) are taken
over every step or every stored sample as their long names say.

The figures are drawn from the NetCDF file alone (:func:`figures`).  Run it:
``pyint study run galerkin_nonholonomic [--quick]`` (or ``python -m
pyint.studies.galerkin_nonholonomic [--out DIR] [--quick]``, the same runner).
"""
from __future__ import annotations

import json

import numpy as np
import xarray as xr

from pyint.convergence import fit_order
from pyint.methods.galerkin import GalerkinLobatto, galerkin_order
from pyint.models import Skate, SnakeboardCoupled
from pyint.study import Study, study_main

NAME = "galerkin_nonholonomic"
NSAMPLES = 8000            # stored samples per long run (the whole run is checked step by step)
CONV_S = list(range(1, 9))
CONV_N = list(range(1, 8))
CONV_T = 10.0

#: the seed-004 models by the names the runs use (seed 004's parameters are their defaults)
MODELS = {"skate": Skate, "snakeboard_coupled": SnakeboardCoupled}

#: run name -> parameters of that run
RUNS = {
    "convergence": dict(model="skate", T=CONV_T),
    "skate_long": dict(model="skate", s=3, eta=1 / 8, T=2000.0),
    "sb_straight": dict(model="snakeboard_coupled", ic="straight", s=4, eta=1 / 16, T=2000.0),
    "sb_locked_pi8": dict(model="snakeboard_coupled", ic="locked", phi=np.pi / 8, s=4, eta=1 / 16, T=2000.0),
    "sb_locked_pi16": dict(model="snakeboard_coupled", ic="locked", phi=np.pi / 16, s=4, eta=1 / 16, T=2000.0),
    "sb_locked_pi32": dict(model="snakeboard_coupled", ic="locked", phi=np.pi / 32, s=4, eta=1 / 16, T=2000.0),
    # tol 1e-10: phi passes pi/2 (mod pi, A drops rank) every 31.4 s; at the 42nd passage (t = 1299.9)
    # the Newton matrix is so ill-conditioned (|lam| ~ 850) that 1e-12 is below its round-off floor
    "sb_general": dict(model="snakeboard_coupled", ic="general", s=4, eta=1 / 16, T=2000.0, tol=1e-10),
    "sb_locked_pi8_s1": dict(model="snakeboard_coupled", ic="locked", phi=np.pi / 8, s=1, eta=1 / 2, T=2000.0),
    "sb_locked_pi16_s1": dict(model="snakeboard_coupled", ic="locked", phi=np.pi / 16, s=1, eta=1 / 2, T=2000.0),
    "sb_locked_pi32_s1": dict(model="snakeboard_coupled", ic="locked", phi=np.pi / 32, s=1, eta=1 / 2, T=2000.0),
    "sb_locked_pi8_spec": dict(model="snakeboard_coupled", ic="locked", phi=np.pi / 8, s=4, eta=1 / 16, T=2000.0,
                               variant="spec"),
    "sb_locked_pi8_s1_spec": dict(model="snakeboard_coupled", ic="locked", phi=np.pi / 8, s=1, eta=1 / 2,
                                  T=2000.0, variant="spec"),
}
QUICK_T = 40.0             # --quick: every long run to T = 40, the convergence sweep for s <= 4

COORDS = ("x", "y", "theta", "psi", "phi")           # the union of the two models' coordinates
COORD_UNITS = ("m", "m", "rad", "rad", "rad")


def _var(dims, data, units, long_name):
    return (dims, np.asarray(data), {"units": units, "long_name": long_name})


def _state_error(model, r):
    """Exact skate state z = (q, p) at the samples, and the errors of r against it."""
    z_ex = np.array([np.concatenate([q, model.mass(q) @ v]) for q, v, _, _ in (model.exact(t) for t in r.t)])
    z = np.concatenate([r.q, r.extra["p"]], axis=1)
    return z, z_ex


# -- one case ------------------------------------------------------------------------

def run_case(params):
    """One named run (``params["run"]``; ``params["short"]`` shortens it) -> xarray.Dataset."""
    name = params["run"]
    if name not in RUNS:
        raise ValueError(f"unknown run {name!r}; expected one of {sorted(RUNS)}")
    quick = bool(params.get("short", False))
    p = dict(RUNS[name])
    if name == "convergence":
        return _convergence(p, quick)
    if quick:
        p["T"] = QUICK_T
    return _long_run(name, p)


def _convergence(p, quick):
    model = Skate()
    q0, v0 = model.initial_state()
    svals = CONV_S[:4] if quick else CONV_S
    err = np.full((len(svals), len(CONV_N)), np.nan)
    cpu = np.full_like(err, np.nan)
    for i, s in enumerate(svals):
        for j, n in enumerate(CONV_N):
            r = GalerkinLobatto(s=s).integrate(model, q0, v0, p["T"], 2.0 ** -n)
            z, z_ex = _state_error(model, r)
            err[i, j] = np.max(np.abs(z - z_ex))
            cpu[i, j] = r.cpu_time
    slope, npts = fitted_slopes(np.array([2.0 ** -n for n in CONV_N]), err)
    ds = xr.Dataset(coords={
        "s": _var("s", svals, "1", "interpolation degree s (s + 1 Lobatto nodes)"),
        "eta": _var("eta", [2.0 ** -n for n in CONV_N], "s", "step size eta = 2^-n"),
    })
    ds["conv_error"] = _var(("s", "eta"), err, "1",
                            "global error max_k ||(q, p)_k - (q, p)(t_k)||_inf on the skate (SI units)")
    ds["conv_cpu_time"] = _var(("s", "eta"), cpu, "s", "CPU time of the integration")
    ds["conv_slope"] = _var("s", slope, "1", "fitted slope of log(error) against log(eta)")
    ds["conv_slope_points"] = _var("s", npts, "1", "number of step sizes in the fit (errors above round-off)")
    ds["claimed_order"] = _var("s", [galerkin_order(s) for s in svals], "1",
                               "seed 004: s + 1 for odd s, s for even s")
    ds["run_T"] = _var((), p["T"], "s", "final time of the run")
    ds["status"] = ((), "ok", {"units": "", "long_name": "integration status"})
    ds["message"] = ((), "", {"units": "", "long_name": "integration message"})
    ds["run_variant"] = ((), "reduced", {"units": "", "long_name": "multiplier treatment (reduced or spec)"})
    return ds


def fitted_slopes(etas, err, floor=1e-12):
    """Per row of err: least-squares slope of log(err) against log(eta) over the errors above
    ``floor`` (round-off: the state is O(1)); NaN when fewer than two remain."""
    slopes, npts = [], []
    for row in err:
        ok = np.isfinite(row) & (row > floor)
        npts.append(int(ok.sum()))
        slopes.append(fit_order(etas[ok], row[ok]))
    return np.array(slopes), np.array(npts)


def _long_run(name, p):
    model = MODELS[p["model"]]()
    if p["model"] == "skate":
        q0, v0 = model.initial_state()
    elif p["ic"] == "locked":
        q0, v0 = model.initial_state("locked", phi=p["phi"])
    else:
        q0, v0 = model.initial_state(p["ic"])
    nsteps = int(round(p["T"] / p["eta"]))
    every = max(1, nsteps // NSAMPLES)
    variant = p.get("variant", "reduced")
    r = GalerkinLobatto(s=p["s"], variant=variant, tol=p.get("tol", 1e-12)).integrate(model, q0, v0, p["T"], p["eta"], every=every,
                                                            raise_on_failure=False)
    ns = len(r.t)
    cons = np.full((ns, 2), np.nan)
    for k in range(ns):
        cons[k, :model.n_nonhol] = model.nh_A(r.t[k], r.q[k]) @ r.v[k] + model.nh_b(r.t[k], r.q[k])
    lam = np.full((ns, 2), np.nan)
    lam[:, :model.n_nonhol] = r.extra["lam_nodal"]
    h0 = r.energy[0]
    # the one trajectory schema (Result.to_xarray), on the union of the two models' coordinates
    # (NaN where a model has none) and on the output index: the runs' times differ
    ds = (r.to_xarray().reindex(coord=list(COORDS)).drop_vars("coord_units")
          .assign_coords(sample=("time", np.arange(ns), {"units": "1", "long_name": "output sample index"}))
          .swap_dims(time="sample").reset_coords("time"))
    ds = ds.assign_coords(constraint=_var("constraint", ["c0", "c1"], "", "nonholonomic constraint (row of A)"))
    ds["coord"].attrs.update(units="", long_name="generalized coordinate")
    ds["q"].attrs.update(units="m or rad (see coord_units)", long_name="generalized coordinates q")
    ds["v"].attrs.update(units="m/s or rad/s", long_name="velocities v = H_p(q, P)")
    ds["coord_units"] = _var("coord", list(COORD_UNITS), "", "units of each generalized coordinate")
    ds["constraint_value"] = _var(("sample", "constraint"), cons, "m/s",
                                  "constraint A(q) H_p(q, P) + b at the stored samples (signed)")
    ds["lam_nodal"] = _var(("sample", "constraint"), lam, "N",
                           "nodal multiplier lam_s (pyint's sign; variant spec: not the multiplier for even s)")
    ds["energy_error"] = _var("sample", (r.energy - h0) / abs(h0), "1", "relative energy error (H - H0) / |H0|")
    if p["model"] == "skate":
        z, z_ex = _state_error(model, r)
        ds["state_error"] = _var("sample", np.linalg.norm(z - z_ex, axis=1) / np.linalg.norm(z_ex, axis=1), "1",
                                 "relative state error ||z - z_exact||_2 / ||z_exact||_2, z = (q, p)")
    if p.get("ic") == "locked":
        R = model.circle_radius(p["phi"])
        ds["circle_deviation"] = _var("sample", np.hypot(r.q[:, 0], r.q[:, 1] - R) - R, "m",
                                      "distance of the board's centre from the exact circle minus its radius")
        qe = np.array([model.locked_steering(t, phi=p["phi"])[0] for t in r.t])
        ds["locked_error"] = _var("sample", np.max(np.abs(r.q - qe), axis=1), "m or rad",
                                  "max-norm error of q against the exact locked-steering motion")
    scalars = {
        "eps_vel": (r.stats["max_constraint_residual"], "m/s",
                    "max over every step of |A(q) H_p(q, P) + b| (max norm)"),
        "energy_drift": (r.energy_drift, "1", "max over the stored samples of |H - H0| / |H0|"),
        "cpu_time": (r.cpu_time, "s", "CPU time of the integration"),
        "newton_iterations": (r.stats["newton_iterations"], "1", "total number of Newton iterations"),
        "n_steps": (r.stats["steps"], "1", "number of time steps done"),
        "t_reached": (float(r.t[-1]), "s", "time reached"),
        "state_scale": (max(1.0, float(np.max(np.abs(r.q))), float(np.max(np.abs(r.v)))), "1",
                        "max(1, |q|, |v|) over the run: the round-off scale of the constraint"),
    }
    for key, (val, units, long) in scalars.items():
        ds[key] = _var((), val, units, long)
    ds["run_s"] = _var((), p["s"], "1", "interpolation degree s of the run")
    ds["run_variant"] = ((), variant, {"units": "", "long_name": "multiplier treatment (reduced or spec)"})
    ds["run_eta"] = _var((), p["eta"], "s", "step size eta of the run")
    ds["run_T"] = _var((), p["T"], "s", "final time of the run")
    ds["builtin_model"] = _var((), int(model.fortran_name is not None), "1",
                               "1: built-in Fortran model, 0: NumPy model through the callback")
    ds["status"] = ((), r.status, {"units": "", "long_name": "integration status"})
    ds["message"] = ((), r.message, {"units": "", "long_name": "integration message"})
    return ds


# -- figures (from the NetCDF file only) ----------------------------------------------

def figures(nc_path, outdir):
    """Figs. 1-5 of seed 004 from the combined file (dimension ``run``); returns the PNG paths."""
    from pyint.study.plotting import FigureSet, legend_outside
    captions = {
        "fig1_convergence.png": "Seed 004 Fig. 1: the error of the Galerkin–Lobatto integrators on the skate "
                                "(against its closed-form solution) against the step, s = 1 … 8, with the fitted "
                                "slopes.",
        "fig2_skate_long.png": "Seed 004 Fig. 2: a long run of the skate (s = 3): the motion, the relative "
                               "energy error (H − H₀)/|H₀| and the constraint value against time.",
        "fig3_snakeboard_orbits.png": "Seed 004 Fig. 3: orbits of the conservative snakeboard in the plane, the "
                                      "reduced variant (pyint's default) beside the carried-multiplier one.",
        "fig3b_locked_steering.png": "Fig. 3 in detail, locked steering: the exact motion is a circle; the "
                                     "relative energy error and the angular velocities θ′, ψ′ of each run.",
        "fig4_constraints_s1.png": "Seed 004 Fig. 4: the two nonholonomic constraint values against time, "
                                   "s = 1, one panel per run.",
        "fig5_general_long.png": "Seed 004 Fig. 5: the snakeboard from a general initial condition (s = 4): the "
                                 "path, the relative energy error, the constraint values and cos φ against time.",
    }
    figs = FigureSet(nc_path, outdir, captions)
    import matplotlib.pyplot as plt

    ds, paths = figs.ds, figs.paths
    runs = list(ds["run"].values)

    def sel(run):
        d = ds.sel(run=run)
        if "sample" in d.dims:
            d = d.isel(sample=np.flatnonzero(np.isfinite(d["time"].values)))
        return d

    if "convergence" in runs:
        d = ds.sel(run="convergence")
        fig, ax = plt.subplots(figsize=(6.5, 5))
        for s in d["s"].values:
            e = d["conv_error"].sel(s=s)
            if not np.any(np.isfinite(e)):
                continue
            ax.loglog(d["eta"], e, "o-", label=f"s={int(s)}: slope {float(d['conv_slope'].sel(s=s)):.2f} "
                                                f"(claimed {int(d['claimed_order'].sel(s=s))})")
        ax.set_xlabel("step size η [s]")
        ax.set_ylabel("global error of (q, p) [SI]")
        ax.set_title("Fig. 1 — skate, T = %g" % float(d["run_T"]))
        legend_outside(ax)
        ax.grid(True, which="both", alpha=0.3)
        figs.save(fig, "fig1_convergence.png")

    if "skate_long" in runs:
        d = sel("skate_long")
        fig, ax = plt.subplots(3, 1, figsize=(7, 8), sharex=True)
        ax[0].semilogy(d["time"], d["state_error"])
        ax[0].set_ylabel("relative state error [1]")
        ax[1].plot(d["time"], d["energy_error"])
        ax[1].set_ylabel("(H − H0)/|H0| [1]")
        ax[2].plot(d["time"], d["constraint_value"].isel(constraint=0))
        ax[2].set_ylabel("A H_p(q, P) [m/s]")
        ax[2].set_xlabel("time [s]")
        ax[0].set_title("Fig. 2 — skate, s = 3, η = 1/8")
        figs.save(fig, "fig2_skate_long.png")

    sb4 = [r for r in ("sb_straight", "sb_locked_pi8", "sb_locked_pi16", "sb_locked_pi32", "sb_general") if r in runs]
    if sb4:
        fig, ax = plt.subplots(1, 3, figsize=(14, 4.8))
        panels = {"sb_straight": 0, "sb_general": 2}
        for run in sb4:
            d = sel(run)
            k = panels.get(run, 1)
            # the circles of the locked runs as points: a line between sparse samples of a run that goes
            # round its circle many times draws chords (the docs' stored runs keep 250 samples)
            style = dict(ls="none", marker=".", ms=2) if k == 1 else dict(lw=0.8)
            ax[k].plot(d["q"].sel(coord="x"), d["q"].sel(coord="y"), label=f"{run}, s=4, η=1/16", **style)
            s1 = run + "_s1"
            if s1 in runs:
                d1 = sel(s1)
                every = max(1, d1.sizes["sample"] // 500) if "sample" in d1.dims else 1
                ax[k].plot(d1["q"].sel(coord="x")[::every], d1["q"].sel(coord="y")[::every], "o", ms=2.5,
                           mfc="none", label=f"{s1}, s=1, η=1/2")
        for k, title in enumerate(["(a) straight run", "(b) locked steering φ = π/8, π/16, π/32", "(c) general"]):
            ax[k].set_title(title)
            ax[k].set_xlabel("x [m]")
            ax[k].set_ylabel("y [m]")
            if k > 0:
                ax[k].set_aspect("equal", adjustable="datalim")
        legend_outside(fig)
        fig.suptitle("Fig. 3 — snakeboard orbits, T = %g" % float(sel(sb4[0])["time"].max()))
        figs.save(fig, "fig3_snakeboard_orbits.png")


    locked = [r for r in ("sb_locked_pi8", "sb_locked_pi16", "sb_locked_pi32") if r in runs or r + "_s1" in runs]
    if locked:
        fig, ax = plt.subplots(len(locked), 3, figsize=(13, 3.2 * len(locked)), squeeze=False)
        for i, run in enumerate(locked):
            for run_, style in ((run, "-"), (run + "_s1", ":")):
                if run_ not in runs:
                    continue
                d = sel(run_)
                lab = "s=4, η=1/16" if run_ == run else "s=1, η=1/2"
                ax[i, 0].semilogy(d["time"], np.abs(d["circle_deviation"]) + 1e-17, style, label=lab)
                ax[i, 1].plot(d["time"], d["energy_error"], style, label=lab)
                ax[i, 2].plot(d["time"], d["v"].sel(coord="theta"), style, label="θ', " + lab)
                ax[i, 2].plot(d["time"], d["v"].sel(coord="psi"), style, label=lab.replace("s=", "ψ', s="))
            ax[i, 0].set_ylabel(f"{run}\n|distance from circle| [m]")
            ax[i, 1].set_ylabel("(H − H0)/|H0| [1]")
            ax[i, 2].set_ylabel("θ', ψ' [rad/s]")
            for a in ax[i]:
                legend_outside(a)
        for a in ax[-1]:
            a.set_xlabel("time [s]")
        fig.suptitle("Fig. 3(b) detail — locked steering: exact motion is the circle of radius l·cot φ "
                     "with constant θ'")
        figs.save(fig, "fig3b_locked_steering.png")

    s1 = [r for r in ("sb_locked_pi8_s1", "sb_locked_pi16_s1", "sb_locked_pi32_s1") if r in runs]
    if s1:
        fig, ax = plt.subplots(1, len(s1), figsize=(4.5 * len(s1), 3.8), squeeze=False)
        for k, run in enumerate(s1):
            d = sel(run)
            for c in range(2):
                ax[0, k].plot(d["time"], d["constraint_value"].isel(constraint=c), lw=0.7, label=f"row {c}")
            ax[0, k].set_title(run)
            ax[0, k].set_xlabel("time [s]")
            ax[0, k].set_ylabel("A H_p(q, P) [m/s]")
            legend_outside(ax[0, k])
        fig.suptitle("Fig. 4 — snakeboard constraints, s = 1, η = 1/2")
        figs.save(fig, "fig4_constraints_s1.png")

    if "sb_general" in runs:
        d = sel("sb_general")
        fig, ax = plt.subplots(2, 2, figsize=(11, 7))
        ax[0, 0].plot(d["q"].sel(coord="x"), d["q"].sel(coord="y"), lw=0.6)
        ax[0, 0].set_xlabel("x [m]")
        ax[0, 0].set_ylabel("y [m]")
        ax[0, 1].plot(d["time"], d["energy_error"])
        ax[0, 1].set_ylabel("(H − H0)/|H0| [1]")
        for c in range(2):
            ax[1, 0].plot(d["time"], d["constraint_value"].isel(constraint=c), lw=0.6, label=f"row {c}")
        ax[1, 0].set_ylabel("A H_p(q, P) [m/s]")
        legend_outside(ax[1, 0])
        ax[1, 1].plot(d["time"], np.cos(d["q"].sel(coord="phi")))
        ax[1, 1].set_ylabel("cos φ [1] (A drops rank at 0)")
        for a in ax[1]:
            a.set_xlabel("time [s]")
        fig.suptitle("Fig. 5 — snakeboard, general initial condition, s = 4, η = 1/16")
        figs.save(fig, "fig5_general_long.png")
    ds.close()
    return paths


def summary(ds):
    """One line per run: status, time reached, constraint, energy, CPU."""
    lines = [f"{'run':<20} {'status':<14} {'T reached':>9} {'max|A Hp|':>10} {'scale':>8} {'dH/H0':>9} {'cpu [s]':>8}"]
    for run in ds["run"].values:
        d = ds.sel(run=run)
        if run == "convergence":
            sl = ", ".join(f"s={int(s)}: {float(x):.2f}" for s, x in zip(d["s"].values, d["conv_slope"].values)
                           if np.isfinite(x))
            lines.append(f"{'convergence':<20} slopes {sl}")
            continue
        lines.append(f"{run:<20} {str(d['status'].values):<14} {float(d['t_reached']):>9.1f} "
                     f"{float(d['eps_vel']):>10.1e} {float(d['state_scale']):>8.1f} "
                     f"{float(d['energy_drift']):>9.1e} {float(d['cpu_time']):>8.2f}")
    return "\n".join(lines)


# -- the study declaration (pyint.study) ---------------------------------------------------

def add_run_definitions(ds):
    """The runner's ``post``: the source and every named run's parameters as attributes."""
    ds.attrs.update(source="seed 004 (Man, Gao, Zhong 2020)", runs=json.dumps(
        {k: {kk: (float(vv) if isinstance(vv, float) else vv) for kk, vv in v.items()} for k, v in RUNS.items()}))
    return ds


STUDY = Study(
    name=NAME,
    description="seed 004: Galerkin-Lobatto variational integrator on the skate and the snakeboard (Figs. 1-5)",
    grid={"run": list(RUNS)},
    fixed={"short": False},
    quick_grid={"short": True},
    meta={"short": ("1", "shortened runs (--quick)"), "run": ("1", "named run of the study")},
    run_case=run_case,
    post=add_run_definitions,
    figures=figures,
    summary=summary,
)


if __name__ == "__main__":      # the same as `pyint study run galerkin_nonholonomic [options]`
    raise SystemExit(study_main(STUDY))
