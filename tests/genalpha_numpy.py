"""Generalized-alpha in plain NumPy: the same step as fortran/genalpha.f90, written
to be read.  It is the oracle of the Fortran kernel in the tests
(tests/test_genalpha.py), the NumPy baseline of the benchmarks (bench/run.py
puts tests/ on its path) and the step of the variable-step prototype
(tests/adaptive_numpy.py); not part of the library: use
:class:`pyint.methods.genalpha.GeneralizedAlpha` for real work.

One step (:func:`alpha_step`) takes its own h, so a caller may change the step
between steps; both formulations of fortran/genalpha.f90 (``form="paper"``,
seed 000's M_{n+1} a_{n+1} + am/(1-am) M_n a_n = c F_{n+1} + af/(1-am) F_n, and
``form="arnold_bruls"``, M(q_{n+1}) w_{n+1} = F_{n+1} with
(1-am) a_{n+1} + am a_n = (1-af) w_{n+1} + af w_n), index 3 or the stabilized
index-2 variant (``stabilized=True``; it changes the holonomic rows only): q_{n+1}
gets the extra term beta h^2 G(q_n)^T mu and G(q_{n+1}) v_{n+1} + g_t = 0 is solved
with g = 0 (the vector form of fortran/lie_genalpha.f90's variant 1), or alpha-RATTLE
(``rattle=True``, seed 000 section 3, nonholonomic rows only): the multipliers leave the
alpha-weighted equation (f instead of F) and move q and v through R_1/2 = -M^-1 A^T at
q_n + h/2 v_n: q_{n+1} += h^2/2 R_1/2 lam, v_{n+1} += h R_1/2 lam.
"""
from __future__ import annotations

import numpy as np

from pyint.methods.genalpha import alpha_parameters


class NewtonFailure(RuntimeError):
    """The step's Newton iteration did not converge (an adaptive caller rejects the step)."""


def alpha_constants(rho_inf):
    """alpha_parameters(rho_inf) plus c, k, d of the step equation and delta = am - af
    (a_n approximates qddot(t_n + delta h): Arnold, Bruls 2007)."""
    p = dict(alpha_parameters(rho_inf))
    am, af = p["alpha_m"], p["alpha_f"]
    p.update(c=(1 - af) / (1 - am), k=am / (1 - am), d=af / (1 - am), delta=am - af)
    return p


def total_force(model, t, q, v, lam):
    """F = f - G^T lam_h - A^T lam_n."""
    mh, mn = model.n_hol, model.n_nonhol
    ftot = model.force(t, q, v).copy()
    if mh:
        ftot -= model.hol_jac(t, q).T @ lam[:mh]
    if mn:
        ftot -= model.nh_A(t, q).T @ lam[mh:mh + mn]
    return ftot


def start_history(model, p, t0, q0, v0, a0, lam0, form="paper", rattle=False):
    """The history term of step 1 for the consistent start a0 = qddot(0) (w_0 = a_0):
    paper form k M_0 a_0 - d F_0; Arnold-Bruls d w_0 - k a_0.  alpha-RATTLE (``rattle``): a0 the
    start of its a (w_0 = a_0), paper form k M_0 a_0 - d f_0."""
    if form == "arnold_bruls":
        return p["d"] * a0 - p["k"] * a0
    if rattle:
        return p["k"] * model.mass(q0) @ a0 - p["d"] * model.force(t0, q0, v0)
    return p["k"] * model.mass(q0) @ a0 - p["d"] * total_force(model, t0, q0, v0, lam0)


def rattle_operator(model, t, q):
    """alpha-RATTLE's R = -M(q)^-1 A(t, q)^T (seed 000 section 3: R_1/2 at t_n + h/2, q_n + h/2 v_n)."""
    return -np.linalg.solve(model.mass(q), model.nh_A(t, q).T)


def newton_matrix(model, p, t1, h, q1, v1, av, l1, g0t=None, rh=None):
    """alpha_step's Newton matrix at the iterate (q1, v1, av, l1) (av: the vector M multiplies), dense:
    rows (dynamics; g / (beta h^2); (A v + b) / h; with g0t = beta h^2 G(q_n)^T, the stabilized
    variant's (G v + g_t) / (gamma h)), columns (a, lam_h, lam_n, mu); rh: alpha-RATTLE's R_1/2."""
    beta, gamma, c = p["beta"], p["gamma"], p["c"]
    n, mh, mn = model.n, model.n_hol, model.n_nonhol
    ns = 0 if g0t is None else mh
    rattle = rh is not None
    nx = n + mh + mn + ns
    sh = beta * h * h
    mq = model.mass(q1)
    fq, fv = model.force_jac(t1, q1, v1)
    dq = model.mass_dq(q1, av) - c * fq
    jac = np.zeros((nx, nx))
    if mh:
        dq += c * model.hol_gtl_q(t1, q1, l1[:mh])
        gq = model.hol_jac(t1, q1)
        jac[:n, n:n + mh] = c * gq.T
        jac[n:n + mh, :n] = gq
    if mn:
        dq += c * model.nh_atl_q(t1, q1, l1[mh:])
        an = model.nh_A(t1, q1)
        jac[:n, n + mh:n + mh + mn] = c * an.T
        jac[n + mh:n + mh + mn, :n] = beta * h * model.nh_vel_q(t1, q1, v1) + gamma * an
    jac[:n, :n] = mq + sh * dq - gamma * h * c * fv
    if rattle:     # the multipliers act through R_1/2 (fortran/genalpha.f90 rattle_jacobian)
        dq = model.mass_dq(q1, av) - c * fq
        an = model.nh_A(t1, q1)
        pn = model.nh_vel_q(t1, q1, v1)
        jac[:n, :n] = mq + sh * dq - gamma * h * c * fv
        jac[:n, n:] = (0.5 * h * h * dq - h * c * fv) @ rh
        jac[n:, :n] = beta * h * pn + gamma * an
        jac[n:, n:] = (0.5 * h * pn + an) @ rh
    if ns:
        gvq = model.hol_vel_q(t1, q1, v1)
        jac[:n, n + mh + mn:] = dq @ g0t
        jac[n:n + mh, n + mh + mn:] = gq @ g0t / sh
        jac[n + mh + mn:, :n] = (beta * h / gamma) * gvq + gq
        jac[n + mh + mn:, n + mh + mn:] = gvq @ g0t / (gamma * h)
        if mn:
            jac[n + mh:n + mh + mn, n + mh + mn:] = model.nh_vel_q(t1, q1, v1) @ g0t / h
    return jac


def alpha_step(model, p, t0, h, q, v, a, lam, hist, tol=1e-10, maxit=25, form="paper", stabilized=False,
               mu=None, rattle=False):
    """One step t0 -> t0 + h from (q, v, a, lam, hist) by Newton's method.

    lam = (lam_h, lam_n); with ``stabilized`` the unknowns are (a, lam, mu).
    Returns (q1, v1, a1, lam1, hist1, mu1, w1): w1 the physical acceleration
    M(q1)^{-1} F_{n+1} (Arnold-Bruls form; None for the paper form).
    Raises NewtonFailure."""
    am, beta, gamma, c, k, d = (p[s] for s in ("alpha_m", "beta", "gamma", "c", "k", "d"))
    n, mh, mn = model.n, model.n_hol, model.n_nonhol
    ns = mh if stabilized else 0          # nonholonomic rows are index 2 already: nothing to add
    nx = n + mh + mn + ns
    t1 = t0 + h
    sh = beta * h * h
    qp = q + h * v + h * h * (0.5 - beta) * a
    vp = v + h * (1 - gamma) * a
    if rattle:
        assert mh == 0, "alpha-RATTLE is written for nonholonomic constraints"
        rh = rattle_operator(model, t0 + 0.5 * h, q + 0.5 * h * v)
    if ns:
        g0t = model.hol_jac(t0, q).T * sh               # q1 = qp + sh a1 + sh G(q_n)^T mu
        mu = np.zeros(mh) if mu is None else mu
        x = np.concatenate([a, lam, mu])
    else:
        x = np.concatenate([a, lam])
    converged = False
    for it in range(maxit + 1):
        a1, l1 = x[:n], x[n:n + mh + mn]
        q1, v1 = qp + sh * a1, vp + gamma * h * a1
        if ns:
            q1 = q1 + g0t @ x[n + mh + mn:]
        if rattle:
            q1, v1 = q1 + 0.5 * h * h * rh @ l1, v1 + h * rh @ l1
        av = a1 - hist if form == "arnold_bruls" else a1
        mq = model.mass(q1)
        ftot = model.force(t1, q1, v1) if rattle else total_force(model, t1, q1, v1, l1)
        e = np.zeros(nx)
        e[:n] = mq @ av - c * ftot
        if form != "arnold_bruls":
            e[:n] += hist
        if mh:
            e[n:n + mh] = model.hol(t1, q1) / sh
        if mn:
            e[n + mh:n + mh + mn] = (model.nh_A(t1, q1) @ v1 + model.nh_b(t1, q1)) / h
        if ns:
            e[n + mh + mn:] = model.hol_vel(t1, q1, v1) / (gamma * h)
        if converged:
            break
        if it == maxit or not np.all(np.isfinite(e)):
            raise NewtonFailure(f"Newton did not converge at t = {t1} (h = {h})")
        jac = newton_matrix(model, p, t1, h, q1, v1, av, l1, g0t if ns else None, rh if rattle else None)
        dx = np.linalg.solve(jac, -e)
        x = x + dx
        converged = (np.all(np.abs(dx[:n]) * sh <= tol * (1 + np.abs(q1)))
                     and np.all(np.abs(dx[n:n + mh + mn]) * sh <= tol * (1 + sh * np.abs(x[n:n + mh + mn])))
                     and (not ns or np.all(np.abs(g0t @ dx[n + mh + mn:]) <= tol * (1 + np.abs(q1)))))
    a1, lam1 = x[:n], x[n:n + mh + mn]
    if form == "arnold_bruls":
        w1 = (a1 - hist) / c                               # c w_{n+1} = a_{n+1} - ahist
        hist1 = d * w1 - k * a1
    else:
        w1 = None
        hist1 = k * mq @ a1 - d * ftot
    return q1, v1, a1, lam1, hist1, (x[n + mh + mn:] if ns else None), w1


def genalpha_numpy(model, q0, v0, h, nsteps, rho_inf=0.9, tol=1e-10, maxit=25, t0=0.0):
    """Integrate with generalized-alpha (paper form, exact (M a)_q, consistent start).

    Returns (t, q, v, a, lam) arrays, time-major, every step.
    """
    p = alpha_constants(rho_inf)
    q, v = np.array(q0, dtype=float), np.array(v0, dtype=float)
    a, lh, ln = model.consistent_acceleration(t0, q, v)
    lam = np.concatenate([lh, ln])
    hist = start_history(model, p, t0, q, v, a, lam)
    out = [(t0, q.copy(), v.copy(), a.copy(), lam.copy())]
    for step in range(1, nsteps + 1):
        t1 = t0 + step * h
        try:
            q, v, a, lam, hist, _, _ = alpha_step(model, p, t1 - h, h, q, v, a, lam, hist, tol, maxit)
        except NewtonFailure:
            raise RuntimeError(f"Newton did not converge at step {step} (t = {t1})") from None
        out.append((t1, q.copy(), v.copy(), a.copy(), lam.copy()))
    return tuple(np.array(z) for z in zip(*out))
