"""Tight reference solutions for rigid-body systems, independent of the Lie-group integrators.

The configuration is parametrized by unit quaternions p_i (R_i = R(p_i / |p_i|),
pdot_i = p_i (x) (0, Omega_i) / 2) and the equations of motion are used in
index-1 form: (Vdot, lam) from [M B^T; B 0] [Vdot; lam] = [Q; -Bdot V] at every
right-hand side (the NumPy twin's items).  SciPy's DOP853 integrates the
ODE for (x, p, V) at rtol = atol = 1e-13 by default.  Nothing is shared with
the integrators under test except the system definition (Phi, B, Bdot V, M, Q):
no exponential map, no tangent operator, no Newton, no Fortran.  Results are
compared in the integrators' coordinates: x, V and R (through log(R_ref^T R)).

The index-1 form does not keep Phi = 0 and B V = 0 exactly; at these
tolerances they drift by ~1e-12 over the spans used (``reference`` reports
the drift so the caller can check).

To switch to SUNDIALS IDA later (pyint.reference, dummy-derivative form): it
consumes vector models, so a quaternion RigidBodySystem wrapper (q = (x, p),
v = V with qdot = G(p) V, the norm constraints |p_i| = 1 added) is needed.
"""
from __future__ import annotations

import numpy as np

from .so3 import quat_rate, quat_to_rot, rot_to_quat


def _split(system, y):
    nb = system.nb
    x = y[:3 * nb].reshape(nb, 3)
    p = y[3 * nb:7 * nb].reshape(nb, 4)
    v = y[7 * nb:]
    rot = np.stack([quat_to_rot(p[i]) for i in range(nb)])
    return x, p, rot, v


def reference(system, x0, rot0, v0, times, rtol=1e-13, atol=1e-13):
    """x (nt, nb, 3), R (nt, nb, 3, 3), V (nt, 6 nb), lam (nt, m) at ``times`` (t0 = times[0]),
    and a dict of diagnostics: max |Phi|, |B V|, quaternion-norm drift, energy drift, rhs calls."""
    from scipy.integrate import solve_ivp

    nb = system.nb
    times = np.asarray(times, dtype=float)
    p0 = np.concatenate([rot_to_quat(r) for r in np.asarray(rot0).reshape(nb, 3, 3)])
    y0 = np.concatenate([np.ravel(x0), p0, v0])

    def rhs(t, y):
        x, p, rot, v = _split(system, y)
        acc, _ = system.consistent_acceleration(rot, v)
        pdot = np.concatenate([quat_rate(p[i], v[6 * i + 3:6 * i + 6]) for i in range(nb)])
        vel = np.concatenate([v[6 * i:6 * i + 3] for i in range(nb)])
        return np.concatenate([vel, pdot, acc])

    sol = solve_ivp(rhs, (times[0], times[-1]), y0, method="DOP853", rtol=rtol, atol=atol,
                    t_eval=times)
    if not sol.success:
        raise RuntimeError(f"rigid-body reference failed: {sol.message}")
    xs, rs, vs, lams, diag = [], [], [], [], {"eps_pos": 0.0, "eps_vel": 0.0, "quat_norm": 0.0}
    e0 = None
    de = 0.0
    for k in range(len(times)):
        x, p, rot, v = _split(system, sol.y[:, k])
        _, lam = system.consistent_acceleration(rot, v)
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
