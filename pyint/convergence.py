"""Measured convergence orders: the one order fit of pyint, used by the tests and the studies.

* :func:`fit_order` -- the least-squares slope of log(error) against log(h), the errors that
  are not finite or not above a floor (zero by default) left out;
* :func:`measured_orders` -- the error table of a method on a problem of
  :mod:`pyint.problems` over a sequence of halved step sizes, with its window rule for
  methods of order > 2 (see there), and the fitted slopes;
  the errors of each run are the problem's own (:meth:`pyint.problems.Problem.errors`: q, v,
  lam on R^n; x, R through the log map and V on a Lie group).

A method's claimed order is its class attribute ``order`` (and ``lambda_order``), with the
reference for the claim in ``order_source``.
"""
from __future__ import annotations

import numpy as np

from .errors import IntegrationError

#: q and v errors below ERROR_FLOOR * max(1, max|reference|) are not used to fit an order:
#: the references are accurate to ~3e-14 relative (ode_reference vs. a converged order-5
#: run at h / 512), so a fitted error is >= 30x that.
ERROR_FLOOR = 1e-12


def fit_order(h, err, floor=0.0, min_points=2):
    """Least-squares slope of log(err) against log(h).

    Errors that are not finite or not above ``floor`` are left out; fewer than
    ``min_points`` remaining give NaN.  A 2-D ``err`` (one row per h) gives one slope per
    column.
    """
    h = np.asarray(h, dtype=float)
    err = np.asarray(err, dtype=float)
    if err.ndim == 2:
        return np.array([fit_order(h, err[:, j], floor, min_points) for j in range(err.shape[1])])
    ok = np.isfinite(err) & (err > floor)
    if ok.sum() < max(2, min_points):
        return np.nan
    return np.polyfit(np.log(h[ok]), np.log(err[ok]), 1)[0]


def measured_orders(method, problem, halvings=None):
    """Slopes of log(error) against log(h) over halvings + 1 step sizes, and the errors.

    Returns (slopes, errs): errs has one row per step size and one column per component of
    ``problem.errors`` (``problem.error_names``: (q, v, lam), or (x, R, V) on a Lie group).

    Second-order methods: problem.h0 and four halvings.  A method of order p
    > 2 gains 2^(4p) (1e6 for p = 5) over four halvings: more than lies between
    its asymptotic regime and the reference's accuracy, and not at the same h
    on every problem.  So its window is three halvings among dt, dt/2, ...,
    dt/512 (dt = the sample spacing): the finest run whose q and v errors all
    stay above the floor (a step size the method fails at is in no window)."""
    if halvings is None:
        halvings = 4 if method.order <= 2 else 3
    q0, v0 = problem.initial_state
    dt = problem.t_end / problem.n_samples
    if method.order <= 2:
        hs = problem.h0 / 2.0 ** np.arange(halvings + 1)
    else:
        hs = dt / 2.0 ** np.arange(halvings + 7)     # dt ... dt / 512
    errs = []
    for h in hs:
        try:
            r = method.integrate(problem.model, q0, v0, problem.t_end, h, every=int(round(dt / h)))
        except IntegrationError:
            if method.order <= 2:
                raise
            errs.append([np.nan] * 3)      # too coarse for this method: not in any window
            continue
        errs.append(problem.errors(r))
    errs = np.array(errs)
    if method.order > 2:      # the finest window of halvings + 1 steps above the floor
        qr, vr, _ = problem.reference
        floors = [ERROR_FLOOR * max(1.0, np.max(np.abs(ref))) for ref in (qr, vr)]
        above = [i for i in range(len(hs) - halvings)
                 if all(np.all(errs[i:i + halvings + 1, j] >= floors[j]) for j in range(2))]
        w = slice(above[-1] if above else 0, (above[-1] if above else 0) + halvings + 1)
        hs, errs = hs[w], errs[w]
    return fit_order(hs, errs), errs
