"""The variable-step Lie-group generalized-alpha (stabilized index 2) of
docs/adaptive_steps.md section 8, in NumPy: one step of the method (Newton with a
finite-difference matrix: a prototype, not the kernel's exact Jacobian) and its local
error estimates, written to be read against fortran/lie_genalpha.f90.  Not part of the
library.

The method (Arnold, Bruls, Cardona, Numer. Math. 129 (2015); fortran/lie_genalpha.f90):
    (1 - am) a_{n+1} + am a_n = (1 - af) W + af Vdot_n
    V_{n+1} = V_n + h (1 - gamma) a_n + h gamma a_{n+1}
    psi = h V_n + h^2 (1/2 - beta) a_n + h^2 beta a_{n+1} + beta h^2 B(q_n)^T mu
    q_{n+1} = q_n o exp(psi)
    M W + B(q_{n+1})^T lam = Q(V_{n+1}),  Phi(q_{n+1}) = 0,  B(q_{n+1}) V_{n+1} = 0.
"""
from __future__ import annotations

import numpy as np

from pyint.models.so3 import cross


def lie_error_constants(p):
    """C_q, C_v, c2 of docs/adaptive_steps.md eqs. (6)-(8) (the a and V recursions are the vector ones)."""
    am, af, beta, gamma = (p[s] for s in ("alpha_m", "alpha_f", "beta", "gamma"))
    dl = am - af
    c2 = (1 - af) / 2 - (1 - am) * (0.5 + dl)
    return {"c2": c2, "Cq": beta + dl / 2 - 1 / 6, "Cv": c2 + gamma / 2 + gamma * dl - 1 / 6}


def lie_alpha_step(system, p, h, x, rot, v, w, a, lam0, tol=1e-13, maxit=30):
    """One stabilized index-2 step from (x, R, V_n, Vdot_n = w, a_n): (x1, R1, V1, W, a1, lam, mu)."""
    am, af, beta, gamma = p["alpha_m"], p["alpha_f"], p["beta"], p["gamma"]
    nv, m = system.nv, system.m
    mm = system.mass_matrix()
    b0 = system.bmat(rot)

    def parts(z):
        wd, lam, mu = z[:nv], z[nv:nv + m], z[nv + m:]
        a1 = ((1 - af) * wd + af * w - am * a) / (1 - am)
        v1 = v + h * (1 - gamma) * a + h * gamma * a1
        psi = h * v + h * h * (0.5 - beta) * a + h * h * beta * a1 + beta * h * h * b0.T @ mu
        x1, r1 = system.advance(x, rot, psi)
        return wd, lam, mu, a1, v1, x1, r1

    def res(z):
        wd, lam, mu, a1, v1, x1, r1 = parts(z)
        b1 = system.bmat(r1)
        return np.concatenate([mm @ wd + b1.T @ lam - system.force(v1), system.phi(x1, r1) / (beta * h * h),
                               b1 @ v1 / (gamma * h)])

    z = np.concatenate([w, lam0, np.zeros(m)])
    for _ in range(maxit):
        r = res(z)
        jac = np.empty((z.size, z.size))
        for j in range(z.size):
            e = 1e-7 * max(1.0, abs(z[j]))
            zp, zm = z.copy(), z.copy()
            zp[j] += e
            zm[j] -= e
            jac[:, j] = (res(zp) - res(zm)) / (2 * e)
        dz = np.linalg.solve(jac, -r)
        z = z + dz
        if np.max(np.abs(dz) * h) <= tol * (1 + np.max(np.abs(z))):
            break
    else:
        raise RuntimeError("lie_alpha_step: Newton did not converge")
    wd, lam, mu, a1, v1, x1, r1 = parts(z)
    return x1, r1, v1, wd, a1, lam, mu


def lie_estimates(system, p, h, t0, off0, a0, a1, s_prev, a_prev, v0, w0, v1, w1, rot0, rot1, bracket=True):
    """The local error estimates of one step (docs/adaptive_steps.md eqs. (16)-(18)), projected:
    e_psi (6 nb, the algebra error of the increment, right-trivialized at q_{n+1}) and e_V (None
    without a_{n-1}*).  bracket=False leaves out the bracket term (to show what it is worth).  a0: the shifted a_n* the step started from (at s_n = t0 + off0), a_prev:
    a_{n-1}* at s_prev."""
    c = lie_error_constants(p)
    off1 = ((p["alpha_m"] - p["alpha_f"]) * h - p["alpha_m"] * off0) / (1 - p["alpha_m"])
    s_n, s_1 = t0 + off0, t0 + h + off1
    d1 = (a1 - a0) / (s_1 - s_n)
    e_psi = h ** 3 * c["Cq"] * d1
    for i in range(system.nb if bracket else 0):   # the bracket of the exact increment: -h^3/12 [V, Vdot] (so(3))
        k = slice(6 * i + 3, 6 * i + 6)
        e_psi[k] -= h ** 3 / 12 * 0.5 * (cross(v0[k], w0[k]) + cross(v1[k], w1[k]))
    e_v = None
    if a_prev is not None:
        e_v = h ** 3 * c["Cv"] * 2 * (d1 - (a0 - a_prev) / (s_n - s_prev)) / (s_1 - s_prev)
    b1 = system.bmat(rot1)
    if system.m:
        d = system.bmat(rot0).T
        e_psi = e_psi - d @ np.linalg.solve(b1 @ d, b1 @ e_psi)
        if e_v is not None:
            d = np.linalg.solve(system.mass_matrix(), b1.T)
            e_v = e_v - d @ np.linalg.solve(b1 @ d, b1 @ e_v)
    return e_psi, e_v, off1


def lie_tangent_projector(system, rot):
    """I - M^-1 B^T (B M^-1 B^T)^-1 B at R (B = B(R)): the part of an algebra vector the joints leave free."""
    n = system.nv
    if system.m == 0:
        return np.eye(n)
    b = system.bmat(rot)
    d = np.linalg.solve(system.mass_matrix(), b.T)
    return np.eye(n) - d @ np.linalg.solve(b @ d, b)


class LieAlphaReplay:
    """The variable-step stabilized method on a given step sequence, as fortran/lie_genalpha.f90
    runs it under the driver: the consistent start (a_0 = Vdot_0, o_0 = 0), the shift of a_n
    (docs/adaptive_steps.md eq. (4)) before every step after the first, the offset's recursion
    (3), the estimates (16)-(18) with err_q the estimate's effect on the packed q; ``norm`` the
    driver's eq. (12) for it."""

    def __init__(self, system, p, q0, v0, t0=0.0, tol=1e-13):
        self.s, self.p, self.tol = system, p, tol
        self.x, self.rot = system.unpack(q0)
        self.v = np.array(v0, dtype=float)
        self.w, self.lam = system.consistent_acceleration(self.rot, self.v)
        self.a = self.w.copy()
        self.t, self.off, self.a_start, self.s_start = t0, 0.0, None, None

    def step(self, h):
        """One step of size h; returns (err_q (12 nb), err_v or None, q_n, v_n, q_{n+1}, v_{n+1})."""
        from pyint.models.so3 import hat
        s, p = self.s, self.p
        delta = p["alpha_m"] - p["alpha_f"]
        a0, off0 = self.a, self.off
        if self.a_start is not None and delta * h != self.off:
            a0 = self.a + (delta * h - self.off) * (self.a - self.a_start) / (self.t + self.off - self.s_start)
            off0 = delta * h
        q_n, v_n = s.pack(self.x, self.rot), self.v
        x1, r1, v1, w1, a1, lam1, _ = lie_alpha_step(s, p, h, self.x, self.rot, self.v, self.w, a0, self.lam,
                                                     tol=self.tol)
        e_psi, e_v, off1 = lie_estimates(s, p, h, self.t, off0, a0, a1, self.s_start, self.a_start, self.v, self.w,
                                         v1, w1, self.rot, r1)
        err_q = s.pack(e_psi.reshape(s.nb, 6)[:, :3], np.stack([r1[i] @ hat(e_psi[6 * i + 3:6 * i + 6])
                                                                for i in range(s.nb)]))
        self.a_start, self.s_start = a0, self.t + off0
        self.x, self.rot, self.v, self.w, self.a, self.lam = x1, r1, v1, w1, a1, lam1
        self.t, self.off = self.t + h, off1
        return err_q, e_v, q_n, v_n, s.pack(x1, r1), v1

    @staticmethod
    def norm(err_q, err_v, q0, v0, q1, v1, rtol, atol, span, h):
        """docs/adaptive_steps.md eq. (12), per unit step."""
        parts = [err_q / (atol + rtol * np.maximum(np.abs(q0), np.abs(q1)))]
        if err_v is not None:
            parts.append(err_v / (atol + rtol * np.maximum(np.abs(v0), np.abs(v1))))
        e = np.concatenate(parts)
        return float(np.sqrt(np.mean(e * e))) * span / h
