"""The configuration space (R^3 x SO(3))^nb of :class:`pyint.models.rigid_bodies.RigidBodySystem`:
a start checked (rotations, Phi = 0, B V = 0) or projected onto the constraints, the residuals of a
trajectory (Fortran, fortran/core/rigid_body.f90) and states interpolated on the group between
accepted steps.  Functions of a ``system`` (a RigidBodySystem): its items, never its class.
"""
from __future__ import annotations

import numpy as np

from .. import _fortran
from .. import _validate as V


#: Tolerance for "R is a rotation" on input.
ROTATION_TOL = 1e-10
#: The failures of an output's interpolation and re-imposition beyond 1 (a singular B M^-1 B^T or index-1
#: matrix) and 4 (the projection onto Phi = 0 did not converge): fortran/core/dense_output.f90
#: DENSE_AMBIGUOUS_ROTATION, fortran/core/rigid_body.f90 PROJECT_INCONSISTENT_POSITION, _VELOCITY.
DENSE_AMBIGUOUS_ROTATION, PROJECT_INCONSISTENT_POSITION, PROJECT_INCONSISTENT_VELOCITY = 22, 23, 24


def lie_residuals(system, x, rot, v, a):
    """Per-sample |Phi|, |B V|, |B A + Bdot V|, max_i |R_i^T R_i - I|_F and energy (Fortran).

    x (nt, nb, 3), rot (nt, nb, 3, 3), v and a (nt, 6 nb).  Returns (res (nt, 4), energy (nt,)).
    """
    ipar, rpar = system.fortran_params()
    nt = len(x)
    res = np.zeros((4, nt), order="F")
    energy = np.zeros(nt)
    if nt:
        ierr = _fortran.rigid_residuals(
            ipar, rpar, np.asfortranarray(np.transpose(x, (2, 1, 0))),
            np.asfortranarray(np.transpose(rot, (2, 3, 1, 0))),
            np.asfortranarray(np.asarray(v, dtype=float).T), np.asfortranarray(np.asarray(a, dtype=float).T),
            res, energy)
        if ierr != 0:
            raise RuntimeError(f"rigid_residuals failed (ierr={ierr})")
    return res.T.copy(), energy


def as_configuration(system, q0):
    """(x (nb, 3), R (nb, 3, 3)) from a tuple (x, R) or the flat q (12 per body); checked."""
    nb = system.nb
    if isinstance(q0, tuple) and len(q0) == 2:
        x = V.as_vector(np.ravel(np.asarray(q0[0], dtype=float)), 3 * nb, "x0").reshape(nb, 3)
        rot = np.asarray(q0[1])
        if rot.shape not in ((nb, 3, 3),) + (((3, 3),) if nb == 1 else ()):
            raise ValueError(f"R0 must have shape ({nb}, 3, 3), got {rot.shape}")
        rot = V.as_vector(rot.ravel(), 9 * nb, "R0").reshape(nb, 3, 3)
    else:
        x, rot = system.unpack(V.as_vector(q0, 12 * nb, "q0"))
    for i in range(nb):
        err = np.linalg.norm(rot[i].T @ rot[i] - np.eye(3))
        if err > ROTATION_TOL or np.linalg.det(rot[i]) <= 0:
            raise ValueError(f"R0 of body {i} is not a rotation matrix: |R^T R - I|_F = {err:.3e}, "
                             f"det = {np.linalg.det(rot[i]):.6g}")
    return x, rot


def _rank_nearby(system, x, rot, bm, keep):
    """rank(B) at a configuration near (x, R) on the kept rows' Phi = 0: (x, R) moved on the group by
    1e-3 max(1, max|x|) along a fixed direction orthogonal to the kept rows (B[keep]), then
    projected back onto their Phi = 0 by Gauss-Newton; the twin of the kernels' check
    (fortran/core/rigid_body.f90 rigid_drop_redundant_rows, after fortran/core/reduced_model.f90)."""
    from scipy.linalg import qr

    nv, r = system.nv, len(keep)
    if r >= nv:
        return r
    qm, _ = qr(bm[keep].T)
    w = np.sin(1.7 * np.arange(r + 1, nv + 1)) + 0.5
    d = qm[:, r:] @ w
    scale = max(1.0, float(np.max(np.abs(x))))
    x1, r1 = system.advance(x, rot, 1e-3 * scale * d / np.max(np.abs(d)))
    for _ in range(30):
        phi = system.phi(x1, r1)[keep]
        if np.max(np.abs(phi)) <= 1e-14 * scale:
            break
        bk = system.bmat(r1)[keep]
        x1, r1 = system.advance(x1, r1, -bk.T @ np.linalg.solve(bk @ bk.T, phi))
    b1 = system.bmat(r1)
    return len(V.independent_rows(b1))


def _inconsistent(system, what, resid, keep, tol):
    """ValueError naming the joint rows that depend on the kept ones and stay violated (resid)."""
    dropped = np.setdiff1d(np.arange(system.m), keep)
    bad = [int(i) for i in dropped if abs(resid[i]) > tol]
    listed = "; ".join(f"{system.row_name(i)} = {resid[i]:.3e}" for i in bad[:6]) + (" ..." if len(bad) > 6 else "")
    return ValueError(f"inconsistent joints: with the independent rows imposed, the {what} rows that depend on "
                      f"them are not satisfied ({listed}; tolerance {tol:.1e}); no state near the start satisfies "
                      "every joint: check the joints' geometry (two joints that disagree on a length or an axis)")


def consistent_rigid_state(system, x, rot, v, project=False, tol=V.CONSISTENCY_TOL, maxit=50, where="initial",
                           t=None, keep=None):
    """Check (or with project=True enforce) Phi = 0 and B V = 0; raise ValueError naming the level
    (``where``: which state, in the messages; ``t``: its time).  tol = 0 with project=True: always project.

    The projections are M-orthogonal: Gauss-Newton steps
    q <- q o exp(-M^-1 B^T (B M^-1 B^T)^-1 Phi) and V <- V - M^-1 B^T (B M^-1 B^T)^-1 B V, through
    the independent rows of B (``keep``, default :meth:`RigidBodySystem.independent_rows` at the
    given R; the rows of redundant joints that depend on them follow; violated ones are named:
    inconsistent joints).  A rank-deficient B is redundancy only if its rank is the same at a
    nearby configuration (:func:`_rank_nearby`, as the kernels check it): a higher rank there is a
    start at a singular position (the mechanism's mobility jumps), refused (ValueError naming t
    and both ranks).  Interpolated states (``keep`` given) skip that check.
    """
    if system.m == 0:
        return x, rot, v
    minv = np.linalg.inv(system.mass_matrix())
    bm = system.bmat(rot)
    at = "" if t is None else f" (t = {float(t)!r})"
    if keep is None:
        keep = system.independent_rows(rot, bm)
        if len(keep) < system.m:
            r1 = _rank_nearby(system, x, rot, bm, keep) if len(keep) else 0
            if r1 != len(keep) or not len(keep):
                raise ValueError(
                    f"the constraint Jacobian B is singular at the {where} configuration{at}: rank {len(keep)} of "
                    f"its {system.m} joint rows, and rank {r1} at a nearby configuration: a start at a singular "
                    "position (where the mechanism's mobility jumps), not redundant joints (whose rank is the same "
                    "nearby), or degenerate joints; start away from the singular position")
    keep = np.asarray(keep, dtype=int)

    def correction(r, resid):
        bk = system.bmat(r)[keep]
        mbt = minv @ bk.T
        return mbt @ np.linalg.solve(bk @ mbt, resid[keep])

    scale_q = max(1.0, float(np.max(np.abs(x))))
    err = float(np.max(np.abs(system.phi(x, rot))))
    if err > tol * scale_q:
        if not project:
            raise ValueError(f"the {where} configuration violates the joints: max|Phi| = {err:.3e} "
                             f"> {tol * scale_q:.1e}; pass project=True to project it onto Phi = 0")
        for it in range(maxit):
            phi = system.phi(x, rot)
            if np.max(np.abs(phi[keep])) <= 1e-14 * scale_q and (it or tol > 0):     # tol = 0: one step at least
                break
            x, rot = system.advance(x, rot, -correction(rot, phi))
        else:
            raise ValueError(f"could not project the {where} configuration onto Phi = 0 "
                             f"(|Phi| = {np.max(np.abs(system.phi(x, rot))):.3e})")
        phi = system.phi(x, rot)
        if np.max(np.abs(phi)) > max(tol, V.CONSISTENCY_TOL) * scale_q:
            raise _inconsistent(system, "position", phi, keep, max(tol, V.CONSISTENCY_TOL) * scale_q)
    scale_v = max(1.0, float(np.max(np.abs(v))))
    err = float(np.max(np.abs(system.bmat(rot) @ v)))
    if err > tol * scale_v:
        if not project:
            raise ValueError(f"the {where} velocity violates the joints: max|B V| = {err:.3e} "
                             f"> {tol * scale_v:.1e}; pass project=True to project it onto B V = 0")
        v = v - correction(rot, system.bmat(rot) @ v)
        bv = system.bmat(rot) @ v
        if np.max(np.abs(bv)) > max(tol, V.CONSISTENCY_TOL) * scale_v:
            raise _inconsistent(system, "velocity", bv, keep, max(tol, V.CONSISTENCY_TOL) * scale_v)
    return x, rot, v


def interpolated_states(system, t, q, v, a, t_eval, keep=None):
    """The states (q, V, Vdot, lam) at the times t_eval (nondecreasing) between the samples (t, q, V,
    a = Vdot) of a run (the accepted steps of a variable-step one), in Fortran: the dense output of a
    Lie-group run at t_eval (fortran/core/dense_output.f90: lie_dense_outputs, lie_hermite_state), on
    given samples.  On the step [t_n, t_n + h] holding each time, theta = (t - t_n) / h: x by cubic
    Hermite in (x, xdot = v world); R_i = R_n,i expm(psi(theta)), psi the cubic Hermite in the algebra
    with psi(0) = 0, psi(1) = log(R_n,i^T R_n+1,i) (the branch nearest h (Omega_n + Omega_n+1) / 2: a
    step may turn beyond pi), psi'(0) = h Omega_n, psi'(1) = h dexp^-1_psi(1) Omega_n+1; V by cubic
    Hermite in (V, Vdot): O(h^4) in x, R and V against exact samples.  Then projected as a start is
    (M-orthogonal, onto Phi = 0 on the group and B V = 0, at least one Gauss-Newton step), Vdot and lam
    from the index-1 system; ``keep``: the joint rows the run kept (a redundant system; default every
    row).  ValueError: a step whose rotation is ambiguous (its log farther than pi/2 from the
    trapezoidal rule's), or a projection that fails."""
    nb, m = system.nb, system.m
    t, t_eval = np.asarray(t, dtype=float), np.asarray(t_eval, dtype=float)
    red = np.ones(max(m, 1), dtype=np.int32)                 # 1: a joint row left out
    red[np.arange(m) if keep is None else np.asarray(keep, dtype=int)] = 0
    ipar, rpar = system.fortran_params()
    nq, nv = 12 * nb, system.nv
    dense = np.zeros((nq + 2 * nv + m + 5, len(t_eval)), order="F")
    samples = (np.asfortranarray(np.asarray(x, dtype=float).T) for x in (q, v, a))
    info, kfail, body, kstep = _fortran.rigid_outputs(ipar, rpar, red, t, *samples, t_eval, dense)
    if info:
        at = f"the interpolated (t = {float(t_eval[kfail - 1])!r})" if kfail >= 1 else "an interpolated"
        why = {DENSE_AMBIGUOUS_ROTATION: (
                   f"body {body}: the rotation of the step [{float(t[kstep - 1])!r}, {float(t[kstep])!r}] is "
                   "ambiguous (its log and h (Omega_n + Omega_n+1) / 2 differ by more than pi/2): no output "
                   "interpolated in it; lower h_max"),
               1: f"could not project {at} state: B M^-1 B^T or the index-1 matrix is singular",
               4: f"could not project {at} configuration onto Phi = 0",
               PROJECT_INCONSISTENT_POSITION: (f"inconsistent joints: the rows of {at} configuration that depend on "
                                               "the kept ones stay violated"),
               PROJECT_INCONSISTENT_VELOCITY: (f"inconsistent joints: the rows of {at} velocity that depend on the "
                                               "kept ones stay violated")}
        raise ValueError(why.get(int(info), f"interpolated_states failed (status {int(info)})"))
    d = dense.T
    return (d[:, :nq].copy(), d[:, nq:nq + nv].copy(), d[:, nq + nv:nq + 2 * nv].copy(),
            d[:, nq + 2 * nv:nq + 2 * nv + m].copy())
