"""The ODE reference: SciPy's DOP853 on the index-1 form of a model (the accelerations and
multipliers from the KKT system at every right-hand side), for short spans where the index-1 form
drifts off the constraints only at the tolerance level."""
from __future__ import annotations

import numpy as np

from ..errors import Interrupted


def dop853(rhs, span, y0, rtol, atol, t_eval, what):
    """SciPy's DOP853 (``solve_ivp``) from ``y0`` over ``span``, outputs at ``t_eval``; Ctrl-C
    (a KeyboardInterrupt from wherever it lands in SciPy's Python loop) is raised as
    :class:`pyint.errors.Interrupted` naming ``what``, as from every reference solve (IDA's:
    :mod:`.ida`); a failed integration is a RuntimeError naming it."""
    from scipy.integrate import solve_ivp

    try:
        sol = solve_ivp(rhs, span, y0, method="DOP853", rtol=rtol, atol=atol, t_eval=t_eval)
    except Interrupted:
        raise
    except KeyboardInterrupt:
        raise Interrupted(f"{what} interrupted (Ctrl-C) during DOP853 over [{span[0]:.10g}, {span[1]:.10g}]; "
                          "no outputs are kept") from None
    if not sol.success:
        raise RuntimeError(f"{what} failed: {sol.message}")
    return sol


def ode_reference(model, q0, v0, times, rtol=2.5e-14, atol=1e-15):
    """Tight reference at ``times``: SciPy DOP853 on the index-1 ODE form
    (a from the KKT system at every right-hand side).  The index-1 form drifts
    off the constraints only at the tolerance level over these short spans.
    rtol = 2.5e-14 (SciPy's smallest is 100 eps) gives errors ~3e-14, about 5x
    below rtol = atol = 1e-13: room for the order-4 and -5 methods' errors.
    Returns (q, v, lam), each (len(times), dim)."""
    n = model.n
    times = np.atleast_1d(np.asarray(times, dtype=float))

    def rhs(t, y):
        a, _, _ = model.consistent_acceleration(t, y[:n], y[n:])
        return np.concatenate([y[n:], a])

    sol = dop853(rhs, (0.0, times[-1]), np.concatenate([q0, v0]), rtol, atol, times, "the reference integration")
    q, v = sol.y[:n].T, sol.y[n:].T
    lam = []
    for t, qk, vk in zip(times, q, v):
        _, lh, ln = model.consistent_acceleration(t, qk, vk)
        lam.append(np.concatenate([lh, ln]))
    return q, v, np.array(lam)
