"""Dense output of a variable-step run: the samples at t_eval.

The driver's run interpolates and re-imposes them in the same call (fortran/core/dense_output.f90,
as RADAU5's CONTR5 serves SOLOUT: Hairer, Wanner, Solving ODEs II, IV.8), rigid bodies on their Lie
group too (DENSE_LIE: interpolated in the algebra, re-imposed on the joints); :func:`dense_result`
puts its packed outputs into the Result.  :func:`impose_constraints` re-imposes given states in one
query.
"""
from __future__ import annotations

import numpy as np

from . import _control
from ._result_builder import model_residuals
from ._status import STATUS_INTERRUPTED
from .errors import Interrupted
from .options import DENSE_MODES
# the re-imposition's failures on the group beyond model.f90's impose_constraints (1, 2, 4)
from .models.rigid_states import DENSE_AMBIGUOUS_ROTATION, PROJECT_INCONSISTENT_POSITION, \
    PROJECT_INCONSISTENT_VELOCITY

#: The dense modes of the driver (fortran/core/dense_output.f90; seam/seam.toml): none, cubic Hermite
#: in (q, v), cubic with v from (v, a) (a = qddot), quintic Hermite in (q, v, a), rigid bodies on the
#: Lie group.
DENSE_NONE, DENSE_CUBIC, DENSE_CUBIC_QDDOT, DENSE_QUINTIC, DENSE_LIE = (
    DENSE_MODES[d] for d in ("none", "cubic", "cubic_qddot", "quintic", "lie"))


def dense_mode(method):
    """The driver's dense mode for ``method``: its DENSE_MODE when it fixes one
    (the Lie-group methods: DENSE_LIE), else from its ACCELERATION_IS_QDDOT and OUTPUT_QUINTIC."""
    if method.DENSE_MODE is not None:
        return method.DENSE_MODE
    if method.ACCELERATION_IS_QDDOT:
        return DENSE_QUINTIC if method.OUTPUT_QUINTIC else DENSE_CUBIC_QDDOT
    return DENSE_CUBIC


def dense_buffer(nq, nv, nl, nres, t_eval, nb=None):
    """The driver's packed outputs at t_eval: [q (nq), v, a (nv), lam (nl), residuals (nres), energy] per time."""
    shape = (nq + 2 * nv + nl + nres + 1, max(len(t_eval), 1)) + (() if nb is None else (nb,))
    return np.zeros(shape, order="F")


def dense_result(result, t_eval, dense, failed, k, run):
    """``result`` (the accepted steps of a successful run, or the samples the outputs needed where
    they did not all fit in memory) with its samples replaced by the driver's outputs at t_eval (``dense``, :func:`dense_buffer`); the accepted steps' end times go to
    extra["steps_t"].  ``failed``, ``k``: the re-imposition's status and the output it stopped at.
    A model with its own residual columns (``sample_residuals``: rigid bodies) names the driver's."""
    if failed:
        raise_output_failure(failed, k, t_eval, run, result)
    nq, nv, nl = result.q.shape[1], result.v.shape[1], result.lam.shape[1]
    d = dense.T
    res = d[:, nq + 2 * nv + nl:-1].copy()
    columns = getattr(result.model, "sample_residuals", None)
    res, extra = columns(res) if columns is not None else (res, {})
    if len(result.t) != len(result.h) + 1:
        # the driver kept only the samples the outputs needed (drive_adaptive's thin): the steps' end
        # times from the steps, summed as the driver sums them (t0 + the elapsed time; the last step
        # ends at t_end)
        steps_t = np.concatenate([result.t[:1], result.t[0] + np.cumsum(result.h)])
        steps_t[-1] = result.t[-1]
        extra["steps_t"] = steps_t
    return _with_samples(result, t_eval, d[:, :nq].copy(), d[:, nq:nq + nv].copy(), d[:, nq + nv:nq + 2 * nv].copy(),
                         d[:, nq + 2 * nv:nq + 2 * nv + nl].copy(), res, d[:, -1].copy(), extra)


def impose_constraints(model, t, q, v, backend="auto", result=None):
    """(q, v, a, lam) at the times t (nt,) from states (nt, n) near the constraints: q projected onto
    g = 0 (M-orthogonal Gauss-Newton, max |g| <= 1e-13), v onto G v + g_t = 0, A v + b = 0
    (M-orthogonal), a and lam from the index-1 system: one Fortran call for all samples through the
    model's Fortran twin, compiled library or callback (fortran/core/model.f90: impose_constraints).
    A model item's exception is raised again; a failure raises IntegrationError naming the sample's
    time, Ctrl-C Interrupted, each carrying ``result`` (the steps the outputs come from)."""
    from .models._fortran_model import QueryFailed, model_query
    n, nl, nt = model.n, model.n_hol + model.n_nonhol, len(t)
    shapes = [(n, nt), (n, nt), (n, nt), (nl, nt)]
    x = [np.asarray(t, dtype=float), np.asarray(q).T, np.asarray(v).T]
    with _control.kernel_run() as run:
        try:
            *out, _ = model_query(model, "outputs", x, [*shapes, (1,)], [nt, 0], backend)   # solver 0: auto
            failed = None
        except QueryFailed as exc:
            failed, k = exc.ierr, int(exc.out[-1]) if exc.out is not None else 0
    if run.error is not None:
        raise run.error
    if failed is not None:
        raise_output_failure(failed, k, t, run, result)
    return tuple(o.T.copy() for o in out)


def raise_output_failure(failed, k, t, run, result):
    """The exception of outputs at t_eval whose re-imposition stopped at output k (1-based) with
    status ``failed`` (fortran/core/dense_output.f90: impose_samples): Interrupted (Ctrl-C) or an
    IntegrationError naming the output, its time and the cause; each carries ``result``."""
    from .errors import IntegrationError
    nt = len(t)
    where = f" at t = {t[k - 1]:.6g} (output {k} of {nt})" if 1 <= k <= nt else ""
    if run.interrupted or failed == STATUS_INTERRUPTED:
        raise Interrupted(f"interrupted while re-imposing the constraints at the outputs (t_eval){where}",
                          result=result)
    why = {1: "the index-1 matrix [M C^T; C 0] (or the projection's C M^-1 C^T) is singular",
           2: "no linear solver could be set up", 4: "the projection onto g = 0 did not converge",
           DENSE_AMBIGUOUS_ROTATION: "the rotation of a body in the accepted step holding it is ambiguous (its log "
                                     "and h (Omega_n + Omega_n+1) / 2 differ by more than pi/2): lower h_max",
           PROJECT_INCONSISTENT_POSITION: "inconsistent joints: the rows that depend on the kept ones stay violated "
                                          "at the position level",
           PROJECT_INCONSISTENT_VELOCITY: "inconsistent joints: the rows that depend on the kept ones stay violated "
                                          "at the velocity level"}.get(failed, f"status {failed}")
    raise IntegrationError(f"re-imposing the constraints at the outputs (t_eval) failed{where}: {why}",
                           result=result)





def replace_samples(result, t_eval, q, v, a, lam, backend):
    """``result`` with its samples (the accepted steps) replaced by the outputs (q, v, a, lam) at t_eval,
    their residuals and energy measured (:func:`_with_samples`)."""
    res, energy, extra = model_residuals(result.model, t_eval, q, v, a, backend)
    return _with_samples(result, t_eval, q, v, a, lam, res, energy, extra)


def _with_samples(result, t_eval, q, v, a, lam, res, energy, extra):
    """``result`` with the samples at t_eval in place of the accepted steps, whose end times go to
    extra["steps_t"] (with ``extra``, what else the model measured per output)."""
    result.extra["steps_t"] = result.t.copy()
    result.extra.update(extra)
    result.t, result.q, result.v, result.a, result.lam, result.residual = t_eval.copy(), q, v, a, lam, res
    result.energy = energy if result.model.has_energy else None
    return result
