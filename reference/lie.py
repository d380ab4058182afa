"""Tight reference solutions for rigid-body systems, independent of the Lie-group integrators.

Both work in unit quaternions p_i (nothing is shared with the integrators
under test but the system definition: no exponential map, no tangent
operator, no Crouch-Grossman update, no Fortran) and are compared in the
integrators' coordinates: x, V and R (through log(R_ref^T R)).

:func:`ida_reference` -- the suite's reference (issue 6).  SUNDIALS IDA
    through :func:`pyint.reference.solve` on the dummy-derivative index-1
    form of :class:`pyint.models.rigid_quaternion.QuaternionRigidBodies`:
    q = (x_i, p_i), v = q', the joints and the norm conditions |p_i| = 1 as
    holonomic constraints, every level kept.  rtol = atol = 1e-12 by default.

:func:`reference` -- a cross-check by another integrator and another form:
    the index-1 ODE for (x, p, V) (p' = p (x) (0, Omega) / 2, (Vdot, lam)
    from [M B^T; B 0] [Vdot; lam] = [Q; -Bdot V] at every right-hand side)
    by SciPy's DOP853.  It does not keep Phi = 0 and B V = 0 exactly; at
    these tolerances they drift by ~1e-12 over the spans used (reported).

Both return ``(x (nt, nb, 3), R (nt, nb, 3, 3), V (nt, 6 nb), lam (nt, m), diag)``
at ``times`` (t0 = times[0]); lam are the joint multipliers of the Lie-group
form M V' + B^T lam = Q.  Redundant joints run on the independent rows at t0
(:meth:`RigidBodySystem.independent_rows`; ``rows=`` a Lie run's kept rows, which
may differ where rows tie in the pivoted QR): lam is zero on the others, as
the kernels return it, and B^T lam is unique.
"""
from __future__ import annotations

import numpy as np

from ..models.so3 import quat_rate, quat_to_rot, rot_to_quat


def _split(system, y):
    nb = system.nb
    x = y[:3 * nb].reshape(nb, 3)
    p = y[3 * nb:7 * nb].reshape(nb, 4)
    v = y[7 * nb:]
    rot = np.stack([quat_to_rot(p[i]) for i in range(nb)])
    return x, p, rot, v


def _kept_rows(system, rot0, rows):
    """The joint rows a reference runs on: ``rows`` (e.g. a Lie run's, every row but
    ``Result.redundant``), else the independent rows at t0 (every row unless the joints are redundant)."""
    if rows is not None:
        return np.asarray(rows, dtype=int)
    return system.independent_rows(np.asarray(rot0, dtype=float).reshape(system.nb, 3, 3))


def reference(system, x0, rot0, v0, times, rtol=1e-13, atol=1e-13, rows=None):
    """x (nt, nb, 3), R (nt, nb, 3, 3), V (nt, 6 nb), lam (nt, m) at ``times`` (t0 = times[0]),
    and a dict of diagnostics: max |Phi|, |B V|, quaternion-norm drift, energy drift, rhs calls.
    rows: the joint rows of a redundant system's multipliers (:func:`_kept_rows`)."""
    from .ode import dop853

    nb = system.nb
    times = np.asarray(times, dtype=float)
    p0 = np.concatenate([rot_to_quat(r) for r in np.asarray(rot0).reshape(nb, 3, 3)])
    y0 = np.concatenate([np.ravel(x0), p0, v0])
    keep = _kept_rows(system, rot0, rows)                      # redundant joints: the start's rows

    def rhs(t, y):
        x, p, rot, v = _split(system, y)
        acc, _ = system.consistent_acceleration(rot, v, keep)
        pdot = np.concatenate([quat_rate(p[i], v[6 * i + 3:6 * i + 6]) for i in range(nb)])
        vel = np.concatenate([v[6 * i:6 * i + 3] for i in range(nb)])
        return np.concatenate([vel, pdot, acc])

    sol = dop853(rhs, (times[0], times[-1]), y0, rtol, atol, times, "the rigid-body reference")
    xs, rs, vs, lams, diag = [], [], [], [], {"eps_pos": 0.0, "eps_vel": 0.0, "quat_norm": 0.0}
    e0 = None
    de = 0.0
    for k in range(len(times)):
        x, p, rot, v = _split(system, sol.y[:, k])
        _, lam = system.consistent_acceleration(rot, v, keep)
        xs.append(x); rs.append(rot); vs.append(v); lams.append(lam)
        diag["eps_pos"] = max(diag["eps_pos"], float(np.max(np.abs(system.phi(x, rot)), initial=0)))
        diag["eps_vel"] = max(diag["eps_vel"], float(np.max(np.abs(system.bmat(rot) @ v), initial=0)))
        diag["quat_norm"] = max(diag["quat_norm"], float(np.max(np.abs(np.linalg.norm(p, axis=1) - 1))))
        e = system.energy(x, v)
        e0 = e if e0 is None else e0
        de = max(de, abs(e - e0) / max(abs(e0), 1e-300))
    diag["energy_drift"] = de
    diag["rhs_calls"] = int(sol.nfev)
    return np.array(xs), np.array(rs), np.array(vs), np.array(lams), diag


def ida_reference(system, x0, rot0, v0, times, rtol=1e-12, atol=None, cache_dir=False, error_estimate=False,
                  rows=None):
    """The IDA reference (module docstring).  cache_dir as in :func:`pyint.reference.solve`
    (False: no cache; None: the default reference cache).  ``diag`` has IDA's statistics,
    the dummy selections, max |Phi| and |B V| at the outputs, the quaternion-norm drift
    and the energy drift; with error_estimate=True also ``diag["error_estimate"]``: the
    largest estimated error over the outputs of the quaternion model's q = (x_i, p_i) and
    v = q' (pyint.reference's estimate: the difference from a solution at rtol/10).
    rows: as :func:`reference`'s (a redundant system runs on its independent rows)."""
    from . import solve
    from ..models.rigid_quaternion import QuaternionRigidBodies

    nb = system.nb
    keep = _kept_rows(system, rot0, rows)
    # redundant joints: the quaternion model of the independent rows the start picks (the kernels' choice)
    model = QuaternionRigidBodies(system, rows=keep if len(keep) < system.m else None)
    q0, w0 = model.from_lie(x0, rot0, v0)
    res = solve(model, np.asarray(times, dtype=float), q0, w0, rtol=rtol, atol=atol,
                cache_dir=cache_dir, error_estimate=error_estimate)
    xs, rs, vs = [], [], []
    diag = {"eps_pos": 0.0, "eps_vel": 0.0, "quat_norm": 0.0}
    for q, w in zip(res.q, res.v):
        x, rot, v = model.to_lie(q, w)
        xs.append(x); rs.append(rot); vs.append(v)
        diag["eps_pos"] = max(diag["eps_pos"], float(np.max(np.abs(system.phi(x, rot)), initial=0)))
        diag["eps_vel"] = max(diag["eps_vel"], float(np.max(np.abs(system.bmat(rot) @ v), initial=0)))
        norms = [np.linalg.norm(q[7 * i + 3:7 * i + 7]) for i in range(nb)]
        diag["quat_norm"] = max(diag["quat_norm"], float(np.max(np.abs(np.array(norms) - 1))))
    e = np.array([system.energy(x, v) for x, v in zip(xs, vs)])
    diag["energy_drift"] = float(np.max(np.abs(e - e[0])) / max(abs(e[0]), 1e-300))
    diag["stats"] = dict(res.stats)
    diag["selections"] = res.extra.get("selections")
    diag["form"] = res.form
    diag["rtol"] = rtol
    if error_estimate:
        diag["error_estimate"] = {k: float(np.max(res.error_estimate[k], initial=0.0)) for k in ("q", "v")}
    return np.array(xs), np.array(rs), np.array(vs), model.joint_multipliers(res.lam), diag
