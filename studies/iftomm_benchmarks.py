"""The IFToMM / A Coruna multibody benchmark library, problems A01 to A05, through every method.

Sources
-------
* The library: M. Gonzalez, D. Dopico, U. Lugris, J. Cuadrado, "A benchmarking system for MBS
  simulation software: problem standardization and performance measurement", Multibody System
  Dynamics 16 (2006) 179-190; its problem pages, http://lim.ii.udc.es/mbsbenchmark/dist/A0k/
  A0k_specification.xml (2005), now hosted by the IFToMM Technical Committee for Multibody
  Dynamics (https://www.iftomm-multibody.org/benchmark/).
* Behaviour at singular configurations: F. Gonzalez, D. Dopico, R. Pastorino, J. Cuadrado,
  "Behaviour of augmented Lagrangian and Hamiltonian methods for multibody dynamics in the
  proximity of singular configurations", Nonlinear Dynamics 85 (2016) 1491-1508 (A02 is its test).
* The geometry where the problem page shows it only as a figure: the OpenSim reproduction of the
  library (L. Tagliapietra et al., github.com/RehabEngGroup/MBSbenchmarksInOpenSim, 2013-2015,
  src/A0k-*/createModel.cpp) and Exudyn's TestModels/bricardMechanism.py (J. Gerstmayr).

What each problem specifies (and what this study chose where it does not say)
------------------------------------------------------------------------------
A01 simple pendulum (A01_specification.xml).  A 1 kg lumped mass on a massless 1 m link, gravity
    9.81 N/kg along -y; starts at rest, horizontal, x(P1) = +1 m.  Dynamic simulation of 2000 s.
    Reference solution: the time history of the position of P1 (x, y).  Maximum allowed errors
    1e-1 (low precision) and 1e-3 (high precision), "measured with 4000 output steps and a
    threshold value of 1e-3".  Here: ``PendulumChain(1)``; reference the closed form
    (Jacobi elliptic functions, ``pyint.studies.selftest.exact_position``).
A02 N four-bar mechanism (A02_specification.xml).  N four-bar windows of 2N + 1 links of 1 m
    length, uniformly distributed mass 1 kg, gravity 9.81 along -y.  Starts with the cranks
    vertical (OpenSim: cranks pinned at (k, 0), couplers at y = 1 m), the x-velocity of B0 (tip of
    the first crank) 1 m/s.  Simulation of 20 s "particularized for N = 40".  Reference solution:
    position and velocity of B0 (x, y); maximum allowed errors 1e-1 / 1e-3, "measured with 400
    output steps and a threshold value of 1e-3".  When the cranks are horizontal the mobility
    jumps from 1 to N + 1 (the singular configuration).  Here: :func:`pyint.models.iftomm.n_four_bar`
    for N = 2, 4 (the N of the OpenSim and 2016 papers' runs) and 40 (the library's); reference the
    reduced 1-DOF equation J theta'' = K g sin(theta) (all cranks parallel, couplers translating),
    DOP853 at rtol = atol = 1e-12.
A02 in space (``A02_N2_spatial``, ``A02_N4_spatial``): the same mechanism built from spatial revolute
    joints in a generic plane (:func:`pyint.models.iftomm.n_four_bar_spatial`, a RigidBodySystem:
    3N + 1 revolutes, 3N redundant joint rows), the way a planar loop is modelled in 3D, for the
    Lie-group methods (the vector methods are skipped on it, as the Lie methods on the planar one);
    the same reduced reference and reported point (B0 in the loop's plane coordinates), N = 2 over
    the library's 20 s, N = 4 over 10 s; ``--quick``: N = 2 over 1.5 s (6 Lie runs and one rtol run,
    about a second of CPU: three singular passages).
A04 Bricard's mechanism (the library's A04 page; its specification text could not be retrieved,
    only its summary by the OpenSim reproduction).  Five rods of 1 m, 1 kg, square section 0.1 m,
    six revolute joints, gravity along -y; Grubler's count gives 0 degrees of freedom, the
    mechanism has 1 (one redundant constraint).  Simulated over 10 s; reference: the position of
    point P3.  Not found and chosen here: the start at rest (as Exudyn's model), the joint points
    (0,0,0), (1,0,0), (1,-1,0), (1,-1,1), (0,-1,1), (0,0,1) with axes y, z, x, y, z, x (Exudyn's and
    OpenSim's layout), P3 = (1,-1,1) the joint between bars 3 and 4, 200 output steps (one per
    0.05 s), and the A01/A02 tolerances 1e-1 / 1e-3 with threshold 1e-3.  Its reference: no
    closed-form reduced coordinate, so the index-1 form of the non-redundant twin (the
    redundant row found by the column-pivoted QR of G(q0)^T dropped), DOP853 at rtol = 1e-11,
    atol = 1e-12 (``pyint.reference.ode.ode_reference``); its own constraint drift is recorded
    (``reference_eps_pos``).
A03 Andrews' squeezing mechanism (the library's A03 page could not be retrieved; its data as the
    OpenSim reproduction and COMSOL's model give them are those of E. Hairer, G. Wanner, Solving
    Ordinary Differential Equations II, sec. VII.7, after W. Schiehlen (ed.), Multibody Systems
    Handbook, 1990, and of the Test Set for IVP Solvers, F. Mazzia, C. Magherini, problem
    "andrews").  Seven planar bodies, one degree of freedom, no gravity, the motor torque 0.033 N m
    on the crank OF against the spring C-D (4530 N/m, rest length 0.07785 m), starting at rest at
    beta = -0.0617 rad; the mechanism turns over in milliseconds (beta' = 1.1e3 rad/s at 0.03 s).
    Here: :func:`pyint.models.iftomm.andrews`, a SymbolicModel in the seven relative angles
    (Hairer & Wanner's coordinates); the reported point F (the crank's tip, the point the OpenSim
    reproduction compares), position and velocity; T = 0.03 s, the Test Set's interval, with output
    every 1e-3 s; the tolerances 1e-1 / 1e-3 and threshold 1e-3 of A01 / A02 (the library's A03
    values not retrieved).  Fixed steps: h = 1e-5 (the ``h=1e-3`` runs of the other problems would
    take 30 steps through the whole motion: a fixed step applies to A03 when h <= 1e-4, to the
    others when h >= 1e-4).  Reference: DOP853 on the index-1 form at rtol = atol = 1e-12 (every
    order-4/5 method at h = 1e-6 lands within 3e-12 rad of it); it differs from the Test Set's
    published values at t = 0.03 (PSIDE at tol 1e-14 on a Cray C90) by 1.4e-9 rad in the angles
    (9e-11 relative to |beta|) and 5.4e-7 rad/s in the rates (3.8e-10 relative), recorded in the
    case's attributes (``reference_testset_deviation_*``).
A05 the stiff flyball governor (A05_specification.xml, summarized by the OpenSim reproduction; the
    layout as Exudyn's TestModels/stiffFlyballGovernor.py builds it).  A vertical shaft on a revolute
    joint, a slider on it (prismatic), two rods hinged to the shaft's top at x = +-0.05 m, 30 deg
    below the horizontal, each with a 5 kg point mass at its end; rods and shaft 1 x 0.01 x 0.01 m,
    the slider a 0.1 m cube, density 3000 kg/m^3; the coupler rods of Watt's governor replaced by
    spring-dampers (K = 8e5 N/m, C = 4e4 N s/m, rest length 0.5 m) from the slider's sides to the
    rods' midpoints; slider at s = 0.5 m; the shaft turning at 2 pi rad/s; gravity along -z.  Stiff:
    the dampers' time scale is ~1e-4 s against the 1 s oscillation of s.  Reported: the slider's
    centre (its height is the library's s), position and velocity, one output per 0.01 s.  T: the
    OpenSim reproduction ran 10 s; here 2 s (two oscillations of s; ``--grid t_a05=10`` for 10 s),
    quick 0.1 s.  Here: :func:`pyint.models.iftomm.flyball_governor` in natural coordinates (48
    coordinates, 44 constraints, 4 degrees of freedom).  Reference: the reduced equations in the four
    degrees of freedom (:func:`pyint.models.iftomm.flyball_reduced`, Lagrange's equations derived
    with SymPy, independent of the natural coordinates) by Radau IIA at rtol = atol = 1e-11; the
    library's own reference history could not be retrieved.  RATTLE and the Gauss composition
    (s = 2) miss the 1e-3 tolerance at h = 1e-3 with status ok (quick: 0.107, 0.398): their
    truncation error, not a wrong result (order 2 measured through h = 1e-4; docs/iftomm.md).

The error measure
-----------------
The problem pages give the tolerances, the number of output steps and the threshold, but the
formula of the paper could not be retrieved.  This study's ``error``: at the benchmark's output
steps, the largest deviation of each reported component from the reference, divided by the larger
of that component's amplitude (max |reference| over the run) and the threshold; the maximum over
the components.  It is dimensionless, scale-free, and the threshold only matters for a component
that stays near zero.  ``error_position`` (m) and ``error_velocity`` (m/s) hold the plain maxima,
so another measure can be applied to the file.  ``passed_high`` / ``passed_low``: the run ended
``ok`` and error <= 1e-3 / 1e-1.

The grid
--------
``benchmark`` (A01, A02_N2, A02_N4, A02_N2_spatial, A02_N4_spatial, A03, A04, A05; A02_N40 on request:
``--grid benchmark=A02_N40``) x
``method`` (every registered method, :data:`pyint.methods.METHODS`, constructed with its defaults;
a method that does not accept the model, ``cls.accepts``, is ``skipped``) x ``stepping``:
``h=1e-3`` (the fixed step; A03: ``h=1e-5``) and ``rtol=1e-6`` (variable steps, atol = rtol,
outputs at the benchmark's output steps; skipped for the methods that refuse rtol; ``rtol=1e-8``
on request; RK4 index-1 at a tenth of it, :data:`RTOL_SCALE`).
A run that stops (Newton failure at a singular configuration, NaN, a start the method refuses,
too many steps) is recorded with its status and message and what it computed before (a variable-step
run's accepted steps, at most as many as the output steps, spread over the run); it is never
an error of the study, so the file shows whatever each method does today.

Sizes.  The default runs the library's T for A01 (2000 s) and A02 with N = 2 (20 s); A02 with
N = 4 over 10 s, A03 over the Test Set's 0.03 s, A04 over 5 s (one period of its swing: P3 goes
from (1, -1, 1) to (-1, -1, 1) and back) and A05 over 2 s, because the symplectic family (RATTLE,
the composition, Lobatto IIIA-IIIB) costs 1-60 ms per step on these models (Lobatto IIIA-IIIB: 58 s
of CPU for 1 s of A04 at h = 1e-3), and N = 40 (486 coordinates; the library's 20 s, 1 to 3 min of
CPU per method, generalized-alpha's rtol run 2 min) is left to ``--grid benchmark=A02_N40``.  ``--quick``: A01 10 s, A02 (N = 2, planar and spatial) 1.5 s (three singular passages,
Lobatto IIIA-IIIB's failure at t = 1.23), A03 0.01 s, A04 0.15 s, A05 0.1 s.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from pyint.study import Study, study_main

NAME = "iftomm_benchmarks"
G = 9.81
TOL_HIGH, TOL_LOW, THRESHOLD = 1e-3, 1e-1, 1e-3
#: benchmark -> (kind, N, spacing of the output steps [s], key of its final time in the parameters)
BENCHMARKS = {
    "A01": ("A01", 0, 0.5, "t_a01"),
    "A02_N2": ("A02", 2, 0.05, "t_a02"),
    "A02_N4": ("A02", 4, 0.05, "t_a02_n4"),
    "A02_N40": ("A02", 40, 0.05, "t_a02_n40"),
    "A02_N2_spatial": ("A02S", 2, 0.05, "t_a02"),
    "A02_N4_spatial": ("A02S", 4, 0.05, "t_a02_n4"),
    "A03": ("A03", 0, 1e-3, "t_a03"),
    "A04": ("A04", 0, 0.05, "t_a04"),
    "A05": ("A05", 0, 0.01, "t_a05"),
}
STEPS = ["h=1e-3", "h=1e-5", "rtol=1e-6"]  # --grid stepping=h=1e-3,rtol=1e-6,rtol=1e-8: a tighter run
#: The library's protocol: each solver runs at the cheapest settings that meet the precision.  The
#: stepping's rtol is every method's but RK4 index-1's, which runs at a tenth of it: its per-step
#: control leaves a global error of ~5e3 rtol over A02's 20 s (the drift's work on the energy and
#: the motion's sensitivity to it, no defect: docs/adaptive_steps.md section 2.1); A02 with N = 2
#: over 20 s: 5.3e-3 at rtol 1e-6, 4.9e-4 at 1e-7 (2 273 steps; generalized-alpha takes 2.8e5 at
#: 1e-6).  The rtol a run used is in its ``rtol`` variable.
RTOL_SCALE = {"rk4_index1": 0.1}
#: the fixed steps a benchmark runs: A03's motion takes 30 ms (1e-3 of the others' time scale)
H_RANGE = {"A03": (0.0, 1e-4)}
H_RANGE_OTHERS = (1e-4, np.inf)
DEFAULTS = {"t_a01": 2000.0, "t_a02": 20.0, "t_a02_n4": 10.0, "t_a02_n40": 20.0, "t_a03": 0.03, "t_a04": 5.0,
            "t_a05": 2.0}
QUICK = {"t_a01": 10.0, "t_a02": 1.5, "t_a02_n4": 1.5, "t_a02_n40": 0.6, "t_a03": 0.01, "t_a04": 0.15, "t_a05": 0.1}
#: the Test Set for IVP Solvers' reference of "andrews" at t = 0.03 (Mazzia and Magherini; PSIDE at
#: rtol = atol = 1e-14 on a Cray C90): the seven angles [rad], then their rates [rad/s]
ANDREWS_TESTSET_T = 0.03
ANDREWS_TESTSET = np.array([
    0.1581077119629904e+2, -0.1575637105984298e+2, 0.4082224013073101e-1, -0.5347301163226948e+0,
    0.5244099658805304e+0, 0.5347301163226948e+0, 0.1048080741042263e+1,
    0.1139920302151208e+4, -0.1424379294994111e+4, 0.1103291221937134e+2, 0.1929337464421385e+2,
    0.5735699284790808e+0, -0.1929337464421385e+2, 0.3231791658026955e+0])


def method_names():
    import pyint.methods  # noqa: F401  (registers every method)
    from pyint.integrator import METHODS
    return sorted(METHODS)


def parse_step(step):
    """'h=1e-3' -> ('h', 0.001); 'rtol=1e-6' -> ('rtol', 1e-6)."""
    kind, _, value = step.partition("=")
    if kind not in ("h", "rtol") or not value:
        raise ValueError(f"step must be 'h=<value>' or 'rtol=<value>', got {step!r}")
    return kind, float(value)


@functools.lru_cache(maxsize=None)
def benchmark_model(name):
    """The model of a benchmark and its initial state: (model, q0, v0)."""
    from pyint.models import PendulumChain
    from pyint.models.iftomm import (ANDREWS_Q0, andrews, bricard, flyball_governor, flyball_state, n_four_bar,
                                     n_four_bar_spatial, n_four_bar_state)
    kind, n, _, _ = BENCHMARKS[name]
    if kind == "A01":
        model = PendulumChain(1, mass=1.0, length=1.0, grav=G)
        q0, v0 = np.array([1.0, 0.0]), np.zeros(2)           # horizontal, x(P1) = +1 m, at rest
    elif kind == "A03":
        model = andrews()
        q0, v0 = ANDREWS_Q0.copy(), np.zeros(7)               # Hairer & Wanner's consistent start, at rest
    elif kind in ("A02", "A02S"):
        model = n_four_bar(n, g=G) if kind == "A02" else n_four_bar_spatial(n, g=G)
        q0, v0 = n_four_bar_state(model, 0.0, 1.0 / model.params["length"])   # B0x' = 1 m/s
    elif kind == "A05":
        model = flyball_governor(g=G)
        q0, v0 = flyball_state(model)                          # spinning at 2 pi rad/s
    else:
        model = bricard(g=G)
        q0, v0 = model.initial_state()
    return model, q0, v0


def reported(name, model, q, v):
    """The benchmark's reported point: (position (..., d), velocity (..., d))."""
    from pyint.models.iftomm import andrews_point_f, bricard_point, flyball_point, n_four_bar_point
    kind = BENCHMARKS[name][0]
    if kind == "A01":
        return np.asarray(q)[..., :2], np.asarray(v)[..., :2]
    if kind == "A03":
        return andrews_point_f(model, q, v)
    if kind == "A05":
        return flyball_point(model, q, v)
    return (n_four_bar_point if kind in ("A02", "A02S") else bricard_point)(model, q, v)


def redundant_rows(model, q0, tol=1e-10):
    """Rows of G(q0) that depend on the others: the column-pivoted QR of G^T keeps rank(G) rows."""
    from scipy.linalg import qr
    g = model.hol_jac(0.0, q0)
    _, r, piv = qr(g.T, pivoting=True, mode="economic")
    d = np.abs(np.diag(r))
    rank = int(np.sum(d > tol * d[0]))
    return sorted(int(i) for i in piv[rank:])


@functools.lru_cache(maxsize=None)
def reference(name, t_end):
    """(t_out, position, velocity, info) of the reference at the benchmark's output steps."""
    from scipy.integrate import solve_ivp
    kind, n, dt, _ = BENCHMARKS[name]
    t = np.linspace(0.0, t_end, int(round(t_end / dt)) + 1)
    model, q0, v0 = benchmark_model(name)
    if kind == "A01":
        from pyint.studies.selftest import exact_position
        pos = exact_position(t, np.pi / 2, 1.0, G)
        return t, pos, np.full_like(pos, np.nan), {"reference": "closed form (Jacobi elliptic functions)"}
    if kind in ("A02", "A02S"):
        from pyint.models.iftomm import n_four_bar_reduced_motion, n_four_bar_reduced_point
        L = model.params["length"]
        pos, vel = n_four_bar_reduced_point(*n_four_bar_reduced_motion(n, t, model.params["mass"], L, G), L)
        return t, pos, vel, {"reference": "reduced 1-DOF equation J theta'' = K g sin(theta), DOP853 "
                                          "rtol = atol = 1e-12"}
    from pyint.reference.ode import ode_reference
    if kind == "A05":
        from pyint.models.iftomm import flyball_reduced
        rhs, _ = flyball_reduced(model.params)
        p = model.params
        y0 = np.array([0.0, p["s0"], p["alpha"], p["alpha"], p["omega"], 0.0, 0.0, 0.0])
        sol = solve_ivp(rhs, (0.0, t_end), y0, method="Radau", rtol=1e-11, atol=1e-11, t_eval=t)
        pos, vel = np.zeros((len(t), 3)), np.zeros((len(t), 3))
        pos[:, 2], vel[:, 2] = sol.y[1], sol.y[5]              # the slider's centre stays on the z axis
        return t, pos, vel, {"reference": "reduced equations in the 4 degrees of freedom (Lagrange, SymPy), "
                                          "Radau IIA rtol = atol = 1e-11"}
    if kind == "A03":
        q, v, _ = ode_reference(model, q0, v0, t, rtol=1e-12, atol=1e-12)
        pos, vel = reported(name, model, q, v)
        info = {"reference": "index-1 form, DOP853 rtol = atol = 1e-12",
                "reference_eps_pos": float(np.max(np.abs([model.hol(0.0, qk) for qk in q])))}
        at = np.flatnonzero(np.abs(t - ANDREWS_TESTSET_T) < 1e-12)
        if len(at):                                          # the Test Set's published values at t = 0.03
            info["reference_testset_deviation_q"] = float(np.max(np.abs(q[at[0]] - ANDREWS_TESTSET[:7])))
            info["reference_testset_deviation_v"] = float(np.max(np.abs(v[at[0]] - ANDREWS_TESTSET[7:])))
        return t, pos, vel, info
    from pyint.models.iftomm import bricard
    dropped = redundant_rows(model, q0)
    twin = bricard(g=G, drop_rows=[r - model.n_hol + len(model.system.scalars) for r in dropped])
    q, v, _ = ode_reference(twin, q0, v0, t, rtol=1e-11, atol=1e-12)
    pos, vel = reported(name, model, q, v)
    drift = float(np.max(np.abs([model.hol(0.0, qk) for qk in q])))
    return t, pos, vel, {"reference": "index-1 form of the non-redundant twin (rows "
                                      f"{dropped} dropped), DOP853 rtol = 1e-11, atol = 1e-12",
                         "reference_eps_pos": drift}


def benchmark_error(y, y_ref, threshold=THRESHOLD):
    """Max over components of max_t |y - y_ref| / max(max_t |y_ref|, threshold) (NaN components skipped)."""
    y, y_ref = np.atleast_2d(y), np.atleast_2d(y_ref)
    worst = []
    for j in range(y_ref.shape[1]):
        if np.all(np.isnan(y_ref[:, j])):
            continue
        scale = max(float(np.max(np.abs(y_ref[:, j]))), threshold)
        worst.append(float(np.max(np.abs(y[:, j] - y_ref[:, j]))) / scale)
    return max(worst) if worst else float("nan")


def _attrs(units, long_name):
    return {"units": units, "long_name": long_name}


def run_case(p):
    """One benchmark x method x step: the reported point against the reference and the run's metrics."""
    import xarray as xr
    from pyint.errors import IntegrationError
    from pyint.integrator import METHODS

    name, step = p["benchmark"], p["stepping"]
    kind, n_win, dt, tkey = BENCHMARKS[name]
    t_end = float(p[tkey])
    model, q0, v0 = benchmark_model(name)
    n_coords = len(q0)                                         # a rigid-body system's flat q: 12 per body
    method = METHODS[p["method"]]()
    t_ref, pos_ref, vel_ref, info = reference(name, t_end)
    how, value = parse_step(step)
    if how == "h":
        kw = dict(h=value, every=int(round(dt / value)))
    else:
        # max_steps: room for what an order-2 method takes at rtol = 1e-6 over A02's 20 s (a few 1e5
        # steps: the error is controlled per equal share of the steps; with t_eval the driver keeps
        # only the samples the outputs need where every step would not fit, so memory does not limit it); 1e6 (A01's 2000 s would
        # take ~3e8 at an equal share, steps growing as T^1.5: it stops at max_steps either way)
        value *= RTOL_SCALE.get(p["method"], 1.0)
        kw = dict(rtol=value, atol=value, t_eval=t_ref, max_steps=1_000_000)
    status, message = "ok", ""
    try:
        res = method.integrate(model, q0, v0, t_end, raise_on_failure=False, **kw)
        status, message = res.status, res.message
    except (IntegrationError, ValueError, np.linalg.LinAlgError) as exc:     # refused or stopped
        res = getattr(exc, "result", None)
        status, message = ("refused" if res is None else (res.status if res.status != "ok" else "failed")), \
            f"{type(exc).__name__}: {exc}"
    if res is not None and len(res.t):
        ds = res.to_xarray()
        # the trajectory (and a rigid-body run's x, R, V on their body axes) is not kept
        ds = ds.drop_vars([k for k in ("q", "v", "a", "lam", "delta", "x", "R", "V", "orthogonality")
                           if k in ds.variables])
        ds = ds.drop_vars([c for c in ("coord", "coord_units", "multiplier", "velocity", "body", "axis", "row", "col",
                                       "velocity_component") if c in ds.coords])
        ds = ds.drop_dims([d for d in ("coord", "multiplier", "velocity", "body", "axis", "row", "col",
                                       "velocity_component") if d in ds.dims])
        t = res.t
        pos, vel = reported(name, model, res.q, res.v)
        if len(t) > len(t_ref):
            # a failed variable-step run returns its accepted steps: at most as many samples as the
            # output steps are kept, spread over them (the first and the last included), so one run
            # that stopped after thousands of steps does not set the length of every case's time axis
            keep = np.unique(np.round(np.linspace(0, len(t) - 1, len(t_ref))).astype(int))
            ds, t, pos, vel = ds.isel(time=keep), t[keep], pos[keep], vel[keep]
    else:
        t = np.zeros(0)
        ds = xr.Dataset(coords={"time": ("time", t)})
        pos = vel = np.zeros((0, pos_ref.shape[1]))
    # a failed variable-step run returns its accepted steps, not the output steps: no error then
    k = len(t)
    aligned = k <= len(t_ref) and np.allclose(t, t_ref[:k], rtol=0, atol=1e-9 * max(1.0, t_end))
    axes = ["x", "y", "z"][:pos_ref.shape[1]]
    nan = np.full((k, len(axes)), np.nan)
    ds = ds.assign_coords(axis=("axis", axes, _attrs("", "component of the reported point")))
    ds["point_position"] = (("time", "axis"), pos, _attrs("m", "position of the reported point"))
    ds["point_velocity"] = (("time", "axis"), vel, _attrs("m/s", "velocity of the reported point"))
    ds["reference_position"] = (("time", "axis"), pos_ref[:k] if aligned else nan,
                                _attrs("m", "reference position of the point"))
    ds["reference_velocity"] = (("time", "axis"), vel_ref[:k] if aligned else nan,
                                _attrs("m/s", "reference velocity of the point"))
    if aligned and k:
        err = benchmark_error(np.concatenate([pos, vel], axis=1), np.concatenate([pos_ref, vel_ref], axis=1)[:k])
        e_pos = float(np.max(np.abs(pos - pos_ref[:k])))
        e_vel = float(np.max(np.abs(vel - vel_ref[:k]))) if not np.all(np.isnan(vel_ref)) else np.nan
    else:
        err = e_pos = e_vel = np.nan
    finished = status == "ok" and aligned and k == len(t_ref)
    ds["error"] = ((), err, _attrs("1", "benchmark error: max over components of max|y - y_ref| / "
                                       "max(amplitude, threshold) at the output steps"))
    ds["error_position"] = ((), e_pos, _attrs("m", "max position error of the reported point"))
    ds["error_velocity"] = ((), e_vel, _attrs("m/s", "max velocity error of the reported point"))
    ds["passed_high"] = ((), float(finished and err <= TOL_HIGH), _attrs("1", f"ended ok with error <= {TOL_HIGH:g}"))
    ds["passed_low"] = ((), float(finished and err <= TOL_LOW), _attrs("1", f"ended ok with error <= {TOL_LOW:g}"))
    ds["t_reached"] = ((), float(t[-1]) if len(t) else 0.0, _attrs("s", "last time computed"))
    ds["rtol"] = ((), value if how == "rtol" else np.nan, _attrs("1", "rtol = atol of the run (RTOL_SCALE)"))
    ds["redundant_rows"] = ((), float(len(getattr(res, "redundant", ()))) if res is not None else np.nan,
                            _attrs("1", "constraint rows the start found redundant"))
    energy = getattr(res, "energy", None)
    ds["energy_change_max"] = ((), float(np.max(np.abs(energy - energy[0]))) if energy is not None and len(energy)
                               else np.nan, _attrs("J", "max |H(t) - H(0)| over the output steps"))
    if res is None:
        ds["cpu_time"] = ((), np.nan)
    if status != "ok":
        ds["status"] = ((), status)
        ds["message"] = ((), message)
    ds.attrs = {"reference_" + k if not k.startswith("reference") else k: v for k, v in info.items()}
    ds.attrs.update(model=model.name, n_coordinates=n_coords, n_constraints=model.n_hol, t_end=t_end)
    return ds


# -- figures: from the NetCDF file alone -------------------------------------------------------
def _cases(ds):
    from pyint.study.datasets import select_case
    for b in ds.benchmark.values:
        for m in ds.method.values:
            for s in ds.stepping.values:
                c = select_case(ds, benchmark=str(b), method=str(m), stepping=str(s))
                if str(c["status"].values) == "skipped":
                    continue
                yield str(b), str(m), str(s), c


def _runs(ds):
    """(benchmark, method, stepping, status, error, cpu_time) of every run that was not skipped, from
    the per-case scalars alone: no case's time series is copied (:func:`_cases` copies each)."""
    scalars = {k: ds[k].transpose("benchmark", "method", "stepping").values for k in ("status", "error", "cpu_time")}
    for i, b in enumerate(ds.benchmark.values):
        for j, m in enumerate(ds.method.values):
            for k, s in enumerate(ds.stepping.values):
                status = str(scalars["status"][i, j, k])
                if status != "skipped":
                    yield (str(b), str(m), str(s), status, float(scalars["error"][i, j, k]),
                           float(scalars["cpu_time"][i, j, k]))


def figures(path, outdir=None):
    """error_by_method.png (the benchmark error of every run against the tolerances, failures
    marked), work_precision_benchmarks.png (error against CPU time per benchmark) and
    reported_points.png (the reported point's components against the reference)."""
    import matplotlib
    matplotlib.use("Agg")
    import xarray as xr

    path = Path(path)
    outdir = Path(outdir) if outdir else path.with_suffix("")
    outdir.mkdir(parents=True, exist_ok=True)
    # read lazily, only what is drawn: a default run's file (650 MB once) read whole, then every
    # case copied out of it, was killed; the errors and times come from the per-case scalars
    # (_runs), the time series of the few runs reported_points.png draws are read case by case
    with xr.open_dataset(path, engine="netcdf4") as ds:
        return _draw(ds, outdir)


def _draw(ds, outdir):
    """The figures of :func:`figures`, from the open file ``ds`` into ``outdir``."""
    import matplotlib.pyplot as plt
    from pyint.study.datasets import select_case

    cases = list(_runs(ds))
    benches = [str(b) for b in ds.benchmark.values]
    methods = [str(m) for m in ds.method.values if any(mm == str(m) for _, mm, _, _, _, _ in cases)]
    markers = {s: mk for s, mk in zip([str(s) for s in ds.stepping.values], "os^dv")}
    out = []

    def save(fig, fname):
        fig.tight_layout()
        fig.savefig(outdir / fname, dpi=100)
        plt.close(fig)
        out.append(outdir / fname)

    fig, axes = plt.subplots(len(benches), 1, figsize=(11, 2.6 * len(benches)), squeeze=False)
    for ax, b in zip(axes[:, 0], benches):
        for bb, m, s, status, e, _ in cases:
            if bb != b:
                continue
            x = methods.index(m) + 0.15 * (list(markers).index(s) - 1)
            if status == "ok" and np.isfinite(e):
                ax.semilogy(x, max(e, 1e-16), markers[s], color="C0" if e <= TOL_HIGH else "C1", ms=5)
            else:
                ax.semilogy(x, 1e1, "x", color="C3", ms=7)
        ax.axhline(TOL_HIGH, color="k", lw=0.8, ls="--")
        ax.axhline(TOL_LOW, color="k", lw=0.8, ls=":")
        ax.set_ylim(1e-14, 3e1)
        ax.set_xticks(range(len(methods)))
        ax.set_xticklabels(methods if ax is axes[-1, 0] else [], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel(f"{b}: error [1]", fontsize=8)
        ax.grid(True, which="major", alpha=0.3)
    axes[0, 0].set_title("benchmark error per method (" + ", ".join(f"{mk} {s}" for s, mk in markers.items())
                         + "; x: stopped; --- 1e-3 high, ... 1e-1 low precision)", fontsize=8)
    save(fig, "error_by_method.png")

    fig, axes = plt.subplots(1, len(benches), figsize=(4 * len(benches), 3.6), squeeze=False)
    for ax, b in zip(axes[0], benches):
        for i, m in enumerate(methods):
            for bb, mm, s, status, e, cpu in cases:
                if bb == b and mm == m and status == "ok":
                    ax.loglog(max(cpu, 1e-4), max(e, 1e-16), markers[s],
                              color=f"C{i % 10}", ms=4, label=m if s == "h=1e-3" else None)
        ax.axhline(TOL_HIGH, color="k", lw=0.8, ls="--")
        ax.set_title(b, fontsize=9)
        ax.set_xlabel("CPU time [s]")
        ax.grid(True, which="both", alpha=0.3)
    axes[0, 0].set_ylabel("benchmark error [1]")
    axes[0, -1].legend(fontsize=5, ncol=2)
    save(fig, "work_precision_benchmarks.png")

    fig, axes = plt.subplots(len(benches), 1, figsize=(8, 2.4 * len(benches)), squeeze=False)
    for ax, b in zip(axes[:, 0], benches):
        shown = False
        for bb, m, s, _, _, _ in cases:
            if bb != b or m != "genalpha" or not s.startswith("h=") or shown:
                continue                                     # the benchmark's (first) fixed step
            c = select_case(ds[["time", "point_position", "reference_position"]],
                            benchmark=b, method=m, stepping=s).load()
            t = c["time"].values
            for j, a in enumerate(c.axis.values):
                if np.all(np.isnan(c["point_position"].values[:, j])):
                    continue                                 # z of a planar benchmark
                ax.plot(t, c["reference_position"].values[:, j], "k-", lw=1.6, alpha=0.5)
                ax.plot(t, c["point_position"].values[:, j], "--", color=f"C{j}", lw=0.9, label=f"{a} (genalpha)")
            if np.nanmax(t) > 100:                           # A01's 2000 s: the first 20 s, as the library plots it
                ax.set_xlim(0, 20)
            shown = True
        if shown:
            ax.set_ylabel(f"{b}: point [m]", fontsize=8)
            ax.legend(fontsize=7, loc="upper right")
            ax.grid(True, alpha=0.3)
    axes[-1, 0].set_xlabel("time [s]")
    axes[0, 0].set_title("reported point: reference (grey) and generalized-alpha, fixed step", fontsize=9)
    save(fig, "reported_points.png")
    return out


def summary(ds):
    """One line per run that was not skipped ("-" where a run has no number: no error where it
    stopped, no energy drift for a model that is not conservative)."""
    def num(x, fmt):
        x = float(x)
        return format(x, fmt) if np.isfinite(x) else format("-", ">" + fmt.split(".")[0].lstrip(">"))
    lines = [f"{'benchmark':9s} {'method':30s} {'stepping':10s} {'status':15s} {'error':>9s} {'pass':>5s} "
             f"{'drift':>9s} {'cpu [s]':>8s} {'t_end':>7s}"]
    for b, m, s, c in _cases(ds):
        verdict = "high" if float(c["passed_high"]) == 1 else ("low" if float(c["passed_low"]) == 1 else "no")
        lines.append(f"{b:9s} {m:30s} {s:10s} {str(c['status'].values):15s} {num(c['error'], '9.2e')} "
                     f"{verdict:>5s} {num(c['energy_drift'] if 'energy_drift' in c else np.nan, '9.2e')} "
                     f"{num(c['cpu_time'], '8.3f')} {num(c['t_reached'], '7.3g')}")
    return "\n".join(lines)


def where(p):
    """Keep a method only on the models it accepts, its fixed steps only in the benchmark's range
    (:data:`H_RANGE`), and its variable-step runs only if it has steps control."""
    from pyint.integrator import METHODS
    model = benchmark_model(p["benchmark"])[0]
    cls = METHODS[p["method"]]
    if not cls.accepts(model):
        return False
    how, value = parse_step(p["stepping"])
    if how == "h":
        lo, hi = H_RANGE.get(BENCHMARKS[p["benchmark"]][0], H_RANGE_OTHERS)
        return lo <= value <= hi
    return cls().adaptive_refusal(model) is None


STUDY = Study(
    name=NAME,
    description="IFToMM benchmark library A01, A02 (N = 2, 4; 40 on request; N = 2, 4 in space for the Lie-group "
                "methods), A03, A04, A05: every method, h and rtol",
    grid={"benchmark": ["A01", "A02_N2", "A02_N4", "A02_N2_spatial", "A02_N4_spatial", "A03", "A04", "A05"],
          "method": method_names(),
          "stepping": STEPS},
    fixed=dict(DEFAULTS),
    quick_grid={"benchmark": ["A01", "A02_N2", "A02_N2_spatial", "A03", "A04", "A05"], **QUICK},
    run_case=run_case, where=where, figures=figures, summary=summary,
    meta={"t_a01": ("s", "final time of A01"), "t_a02": ("s", "final time of A02 with N = 2"), "t_a02_n4": ("s", "final time of A02 with N = 4"),
          "t_a02_n40": ("s", "final time of A02 with N = 40"), "t_a03": ("s", "final time of A03"),
          "t_a04": ("s", "final time of A04"), "t_a05": ("s", "final time of A05"),
          "axis": ("", "component of the reported point"), "benchmark": ("", "IFToMM benchmark problem"),
          "stepping": ("", "fixed step h or variable steps with tolerance rtol")},
    version="1")


if __name__ == "__main__":      # the same as `pyint study run iftomm_benchmarks [options]`
    raise SystemExit(study_main(STUDY))
