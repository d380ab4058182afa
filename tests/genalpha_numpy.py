"""Generalized-alpha in plain NumPy: the same step as fortran/genalpha.f90, written
to be read.  It is the oracle of the Fortran kernel in the tests
(tests/test_genalpha.py) and the NumPy baseline of the benchmarks (bench/run.py
puts tests/ on its path); not part of the library: use
:class:`pyint.methods.genalpha.GeneralizedAlpha` for real work.
"""
from __future__ import annotations

import numpy as np

from pyint.methods.genalpha import alpha_parameters


def genalpha_numpy(model, q0, v0, h, nsteps, rho_inf=0.9, tol=1e-10, maxit=25, t0=0.0):
    """Integrate with generalized-alpha (exact (M a)_q, consistent start).

    Returns (t, q, v, a, lam) arrays, time-major, every step.
    """
    p = alpha_parameters(rho_inf)
    am, af, beta, gamma = p["alpha_m"], p["alpha_f"], p["beta"], p["gamma"]
    c, k, d = (1 - af) / (1 - am), am / (1 - am), af / (1 - am)
    n, mh, mn = model.n, model.n_hol, model.n_nonhol
    nx = n + mh + mn
    q, v = np.array(q0, dtype=float), np.array(v0, dtype=float)
    a, lh, ln = model.consistent_acceleration(t0, q, v)
    lam = np.concatenate([lh, ln])

    def total_force(t, q, v, lam):
        f = model.force(t, q, v)
        ftot = f.copy()
        if mh:
            ftot -= model.hol_jac(t, q).T @ lam[:mh]
        if mn:
            ftot -= model.nh_A(t, q).T @ lam[mh:]
        return ftot

    hist = k * model.mass(q) @ a - d * total_force(t0, q, v, lam)
    out = [(t0, q.copy(), v.copy(), a.copy(), lam.copy())]
    sh = beta * h * h
    for step in range(1, nsteps + 1):
        t1 = t0 + step * h
        qp = q + h * v + h * h * (0.5 - beta) * a
        vp = v + h * (1 - gamma) * a
        x = np.concatenate([a, lam])
        converged = False
        for it in range(maxit + 1):
            a1, l1 = x[:n], x[n:]
            q1, v1 = qp + sh * a1, vp + gamma * h * a1
            mq = model.mass(q1)
            ftot = total_force(t1, q1, v1, l1)
            e = np.zeros(nx)
            e[:n] = mq @ a1 + hist - c * ftot
            if mh:
                e[n:n + mh] = model.hol(t1, q1) / sh
            if mn:
                e[n + mh:] = (model.nh_A(t1, q1) @ v1 + model.nh_b(t1, q1)) / h
            if converged:
                break
            if it == maxit:
                raise RuntimeError(f"Newton did not converge at step {step} (t = {t1})")
            fq, fv = model.force_jac(t1, q1, v1)
            dq = model.mass_dq(q1, a1) - c * fq
            jac = np.zeros((nx, nx))
            if mh:
                dq += c * model.hol_gtl_q(t1, q1, l1[:mh])
                gq = model.hol_jac(t1, q1)
                jac[:n, n:n + mh] = c * gq.T
                jac[n:n + mh, :n] = gq
            if mn:
                dq += c * model.nh_atl_q(t1, q1, l1[mh:])
                an = model.nh_A(t1, q1)
                jac[:n, n + mh:] = c * an.T
                jac[n + mh:, :n] = beta * h * model.nh_vel_q(t1, q1, v1) + gamma * an
            jac[:n, :n] = mq + sh * dq - gamma * h * c * fv
            dx = np.linalg.solve(jac, -e)
            x = x + dx
            converged = (np.all(np.abs(dx[:n]) * sh <= tol * (1 + np.abs(q1)))
                         and np.all(np.abs(dx[n:]) * sh <= tol * (1 + sh * np.abs(x[n:]))))
        a, lam = x[:n], x[n:]
        q, v = q1, v1
        hist = k * mq @ a - d * ftot
        out.append((t1, q.copy(), v.copy(), a.copy(), lam.copy()))
    return tuple(np.array(z) for z in zip(*out))
