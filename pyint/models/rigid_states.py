"""The configuration space (R^3 x SO(3))^nb of :class:`pyint.models.rigid_bodies.RigidBodySystem`:
a start's rotations checked, the tolerances of its levels and the words of the run's refusal (the run
checks Phi = 0, B V = 0 or projects onto them: fortran/core/lie_stepper.f90 lie_checked_start), the
residuals of a trajectory (Fortran, fortran/core/rigid_body.f90) and states interpolated on the group
between samples (Fortran, fortran/core/dense_output.f90).  Functions of a ``system`` (a
RigidBodySystem): its items, never its class.
"""
from __future__ import annotations

import numpy as np

from .. import _fortran
from .. import _validate as V
from .._status import STATUS_RANK_DEFICIENT
from ..options import RIGID_FAILURES


#: Tolerance for "R is a rotation" on input.
ROTATION_TOL = 1e-10
#: The failures of a projection onto the joints (fortran/core/rigid_body.f90 rigid_project: a singular
#: B M^-1 B^T or index-1 matrix, Gauss-Newton onto Phi = 0 did not converge, inconsistent joints at the
#: position or the velocity level) and of an output's interpolation (fortran/core/dense_output.f90);
#: named in seam/seam.toml.
PROJECT_SINGULAR, PROJECT_NOT_CONVERGED, PROJECT_INCONSISTENT_POSITION, PROJECT_INCONSISTENT_VELOCITY, \
    DENSE_AMBIGUOUS_ROTATION = (RIGID_FAILURES[k] for k in (
        "project_singular", "project_not_converged", "project_inconsistent_position",
        "project_inconsistent_velocity", "dense_ambiguous_rotation"))


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


def start_tolerances(x, v, project):
    """The tolerances of a start's levels for the run, (tol_q, tol_v, project): max|Phi| <= tol_q, max|B V|
    <= tol_v with tol = CONSISTENCY_TOL relative to max(1, max|x|) and max(1, max|V|) (the driver's grid;
    project: 1.0 to project the start onto the joints where a level exceeds its tolerance)."""
    scale = lambda y: max(1.0, float(np.max(np.abs(y), initial=0.0)))  # noqa: E731
    return V.CONSISTENCY_TOL * scale(x), V.CONSISTENCY_TOL * scale(v), 1.0 if project else 0.0


def start_violation(system, t0, start, tols):
    """The ValueError of a start the run refused, or None: the diagnostics ``start`` = [max|Phi|, max|B V|,
    code, a, b, c] of fortran/core/lie_stepper.f90 lie_checked_start (the rank test of the joint rows,
    then the levels checked against ``tols`` or projected onto the joints on the kept rows,
    M-orthogonally: fortran/core/rigid_body.f90 rigid_project) in words: a singular position (code
    STATUS_RANK_DEFICIENT: the ranks of B at the start and nearby, a, b), a level above its tolerance
    (code 0), a projection that failed (1: singular B M^-1 B^T; 4: Gauss-Newton did not converge), or
    inconsistent joints (the dependent rows of a redundant system left violated: a the first such row
    (1-based), b its residual, c their number)."""
    phi, bv, code = float(start[0]), float(start[1]), int(start[2])
    if code == STATUS_RANK_DEFICIENT:
        return ValueError(
            f"the constraint Jacobian B is singular at the initial configuration (t = {float(t0)!r}): rank "
            f"{int(start[3])} of its {system.m} joint rows, and rank {int(start[4])} at a nearby configuration: a "
            "start at a singular position (where the mechanism's mobility jumps), not redundant joints (whose rank "
            "is the same nearby), or degenerate joints; start away from the singular position")
    if code == 0:
        if not phi <= tols[0]:
            return ValueError(f"the initial configuration violates the joints: max|Phi| = {phi:.3e} > {tols[0]:.1e}; "
                              "pass project=True to project it onto Phi = 0")
        if not bv <= tols[1]:
            return ValueError(f"the initial velocity violates the joints: max|B V| = {bv:.3e} > {tols[1]:.1e}; "
                              "pass project=True to project it onto B V = 0")
        return None
    if code in (PROJECT_INCONSISTENT_POSITION, PROJECT_INCONSISTENT_VELOCITY):
        what, tol = ("position", tols[0]) if code == PROJECT_INCONSISTENT_POSITION else ("velocity", tols[1])
        more = int(start[5]) - 1
        listed = f"{system.row_name(int(start[3]) - 1)} = {float(start[4]):.3e}" + (f" and {more} more" if more else "")
        return ValueError(f"inconsistent joints: with the independent rows imposed, the {what} rows that depend on "
                          f"them are not satisfied ({listed}; tolerance {tol:.1e}); no state near the start satisfies "
                          "every joint: check the joints' geometry (two joints that disagree on a length or an axis)")
    why = {PROJECT_SINGULAR: "B M^-1 B^T of the independent rows is singular",
           PROJECT_NOT_CONVERGED: f"Gauss-Newton did not converge (|Phi| = {phi:.3e})"}.get(code, f"status {code}")
    return ValueError(f"could not project the initial configuration onto Phi = 0: {why}")


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
               PROJECT_SINGULAR: f"could not project {at} state: B M^-1 B^T or the index-1 matrix is singular",
               PROJECT_NOT_CONVERGED: f"could not project {at} configuration onto Phi = 0",
               PROJECT_INCONSISTENT_POSITION: (f"inconsistent joints: the rows of {at} configuration that depend on "
                                               "the kept ones stay violated"),
               PROJECT_INCONSISTENT_VELOCITY: (f"inconsistent joints: the rows of {at} velocity that depend on the "
                                               "kept ones stay violated")}
        raise ValueError(why.get(int(info), f"interpolated_states failed (status {int(info)})"))
    d = dense.T
    return (d[:, :nq].copy(), d[:, nq:nq + nv].copy(), d[:, nq + nv:nq + 2 * nv].copy(),
            d[:, nq + 2 * nv:nq + 2 * nv + m].copy())
