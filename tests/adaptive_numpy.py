"""Variable-step generalized-alpha with a local error estimate and a PI step
controller: the NumPy prototype of issue 18, written to be read and ported.
The derivation is docs/adaptive_steps.md; the step itself is tests/genalpha_numpy.py's
alpha_step (seed 000, section 2).  Not part of the library.

Split as the Fortran driver will be: a *stepper* (:class:`AlphaStepper`) owns the
method's state and offers ``attempt(h)`` (one trial step: the new state and its
local error estimate, or a NewtonFailure) and ``accept(trial)``; the *driver*
(:func:`integrate_adaptive`) owns the step-size controller, rejections, the outputs
at t_eval (the stepper's interpolation, then the position and velocity constraint
levels re-imposed) and the statistics.  :class:`RK4Stepper` is a second stepper
(index-1 RK4 with the FSAL embedded order-3 estimate) on the same driver.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from genalpha_numpy import NewtonFailure, alpha_constants, alpha_step, rattle_operator, start_history
from pyint import _validate as V


def alpha_error_constants(p):
    """Local error constants of generalized-alpha (docs/adaptive_steps.md, eqs. (6)-(8)):
    q: h^3 C_q qdddot, v: h^3 C_v q''''; with delta = am - af the shift of a_n,
    c2 the h^2 term of a_n - qddot(t_n):  c2 = (1-af)/2 - (1-am)(1/2 + delta),
    C_q = beta + delta/2 - 1/6,  C_v = c2 + gamma/2 + gamma delta - 1/6."""
    am, af, beta, gamma, dl = (p[s] for s in ("alpha_m", "alpha_f", "beta", "gamma", "delta"))
    c2 = (1 - af) / 2 - (1 - am) * (0.5 + dl)
    return {"c2": c2, "Cq": beta + dl / 2 - 1 / 6, "Cv": c2 + gamma / 2 + gamma * dl - 1 / 6}


def tangent_projector(model, t, q, along=None, level="velocity"):
    """P = I - D (C D)^-1 C: removes from an error vector the part the constraint rows fix,
    which they move along the columns of D.  level "velocity": C = [G; A] (v's error);
    "position": C = G (q's error: nonholonomic rows do not fix positions).  D = M^-1 C^T
    (default: the multipliers' direction) or ``along`` (the stabilized variant's G(q_n)^T,
    the direction mu moves q in).  P d = d for every d with C d = 0."""
    c = V.constraint_matrix(model, t, q)
    if level == "position":
        c = c[:model.n_hol]
    n = model.n
    if c.shape[0] == 0:
        return np.eye(n)
    d = np.linalg.solve(model.mass(q), c.T) if along is None else along
    return np.eye(n) - d @ np.linalg.solve(c @ d, c)


@dataclass
class AlphaState:
    t: float
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray            # algorithmic acceleration; approximates qddot(t + offset)
    lam: np.ndarray
    hist: np.ndarray         # history term consistent with a
    mu: np.ndarray | None
    offset: float = 0.0                 # a approximates qddot(t + offset) (0 at the consistent start)
    a_start: np.ndarray | None = None   # the (corrected) a the step into this state started from
    s_start: float | None = None        # the time that a_start approximates qddot at
    r_hist: tuple = ()                  # alpha-RATTLE: the last two (time, constraint acceleration r)


@dataclass
class Trial:
    h: float
    state: object
    err_q: np.ndarray
    err_v: np.ndarray | None


class AlphaStepper:
    """Generalized-alpha on a variable step sequence (docs/adaptive_steps.md section 1).

    a_n approximates qddot(t_n + o_n); the offset o_n is tracked (eq. (3)).
    correct=True shifts a_n before a step of size h_n to the offset delta h_n the
    step's order conditions assume (eq. (4)):
        a_n* = a_n + (delta h_n - o_n) (a_n - a_{n-1}*) / (t_n + o_n - t_{n-1} - o_{n-1}*)
    and the history term with it (this also removes the consistent start's offset 0);
    correct=False is the plain recursion (first order in v on a random step sequence).
    stabilized=True (the default: index 3 collapses under step control, section 1.6)
    adds mu and the velocity rows of the holonomic constraints.  The estimates (eqs. (9), (10)) are projected onto
    the constraints' tangent space at q_{n+1} along the direction the step's constraint
    rows move q and v in (eq. (11)).  order = 2; the estimate is O(h^3) (estimate_power)
    and is controlled per equal share of the steps by default (per_unit_step None; eq. (12),
    docs/adaptive_steps.md section 5.1).
    rattle=True: alpha-RATTLE (section 1.8): a approximates the free acceleration M^-1 f (its start),
    the estimates gain the midpoint rule's errors of the constraint correction R_1/2 (eq. (11a))."""

    order, estimate_power, per_unit_step = 2, 3, None

    def __init__(self, model, q0, v0, t0=0.0, rho_inf=0.9, form="arnold_bruls", stabilized=True, correct=True,
                 tol=1e-10, maxit=25, rattle=False):
        self.model, self.form, self.stabilized, self.correct, self.rattle = model, form, stabilized, correct, rattle
        self.tol, self.maxit = tol, maxit
        self.p = alpha_constants(rho_inf)
        self.const = alpha_error_constants(self.p)
        q, v = np.array(q0, dtype=float), np.array(v0, dtype=float)
        a, lh, ln = model.consistent_acceleration(t0, q, v)
        lam = np.concatenate([lh, ln])
        r_hist = ()
        if rattle:      # a approximates u = M^-1 f; r = qddot - u at t0 starts r's differences
            u = np.linalg.solve(model.mass(q), model.force(t0, q, v))
            r_hist, a = ((t0, a - u),), u
        hist = start_history(model, self.p, t0, q, v, a, lam, form, rattle)
        self.state = AlphaState(t0, q, v, a, lam, hist, np.zeros(model.n_hol) if stabilized else None,
                                r_hist=r_hist)

    def shifted_start(self, h):
        """(a_n*, hist*, offset*) for a step of size h from the current state (eq. (4)):
        a_n* approximates qddot(t_n + delta h)."""
        s, p = self.state, self.p
        target = p["delta"] * h
        if not self.correct or s.a_start is None or target == s.offset:
            return s.a, s.hist, s.offset
        wdot = (s.a - s.a_start) / (s.t + s.offset - s.s_start)
        da = (target - s.offset) * wdot
        if self.form == "arnold_bruls":
            return s.a + da, s.hist - p["k"] * da, target        # ahist = d w_n - k a_n
        return s.a + da, s.hist + p["k"] * self.model.mass(s.q) @ da, target   # hist = k M_n a_n - d F_n

    def attempt(self, h):
        s, p, m = self.state, self.p, self.model
        a0, hist0, off0 = self.shifted_start(h)
        q1, v1, a1, lam1, hist1, mu1, _ = alpha_step(m, p, s.t, h, s.q, s.v, a0, s.lam, hist0, self.tol,
                                                     self.maxit, self.form, self.stabilized, s.mu, self.rattle)
        t1 = s.t + h
        off1 = (p["delta"] * h - p["alpha_m"] * off0) / (1 - p["alpha_m"])    # eq. (3)
        # divided differences of a over the times it approximates qddot at (eqs. (9), (10))
        s_n, s_1 = s.t + off0, t1 + off1
        d1 = (a1 - a0) / (s_1 - s_n)
        err_q = h ** 3 * self.const["Cq"] * d1
        err_v = None
        if s.a_start is not None:
            d0 = (a0 - s.a_start) / (s_n - s.s_start)
            err_v = h ** 3 * self.const["Cv"] * 2 * (d1 - d0) / (s_1 - s.s_start)
        r_hist = s.r_hist
        if self.rattle:     # eq. (11a): the midpoint rule's errors of R_1/2 lam, R_1/2's offset
            mid = s.t + 0.5 * h
            rh, rbar = rattle_operator(m, mid, s.q + 0.5 * h * s.v), rattle_operator(m, mid, 0.5 * (s.q + q1))
            r = 0.5 * (rh + rbar) @ lam1
            (m1, r1), = s.r_hist[-1:]
            dr = (r - r1) / (mid - m1)
            err_q = err_q + h ** 3 / 12 * dr
            if len(s.r_hist) < 2:
                err_v = None
            elif err_v is not None:
                m2, r2 = s.r_hist[0]
                err_v = (err_v - h ** 3 / 24 * 2 * (dr - (r1 - r2) / (m1 - m2)) / (mid - m2)
                         - 0.5 * h * (rbar - rh) @ lam1)
            r_hist = (s.r_hist[-1], (mid, r))
        if self.stabilized and m.n_hol:     # the position rows correct q along G(q_n)^T mu (eq. (1))
            err_q = tangent_projector(m, t1, q1, along=m.hol_jac(s.t, s.q).T, level="position") @ err_q
        else:
            err_q = tangent_projector(m, t1, q1, level="position") @ err_q
        if err_v is not None:
            err_v = tangent_projector(m, t1, q1) @ err_v
        new = AlphaState(t1, q1, v1, a1, lam1, hist1, mu1, off1, a_start=a0, s_start=s_n, r_hist=r_hist)
        return Trial(h, new, err_q, err_v)

    def accept(self, trial):
        self.state = trial.state

    @staticmethod
    def interpolate(s0, s1, t):
        """Cubic Hermite through (q, v) at both ends of the step; v its derivative (O(h^4) in q,
        O(h^3) in v: below the method's local errors)."""
        h = s1.t - s0.t
        th = (t - s0.t) / h
        h00, h10, h01, h11 = 2 * th**3 - 3 * th**2 + 1, th**3 - 2 * th**2 + th, -2 * th**3 + 3 * th**2, th**3 - th**2
        d00, d10, d01, d11 = 6 * th**2 - 6 * th, 3 * th**2 - 4 * th + 1, -6 * th**2 + 6 * th, 3 * th**2 - 2 * th
        q = h00 * s0.q + h10 * h * s0.v + h01 * s1.q + h11 * h * s1.v
        v = (d00 * s0.q + d10 * h * s0.v + d01 * s1.q + d11 * h * s1.v) / h
        return q, v


class RK4Stepper:
    """Classical RK4 on the index-1 form with the FSAL embedded third-order solution
    b^ = (1/6, 1/3, 1/3, 0, 1/6) (k5 = f(y_{n+1}), the next step's k1):
    err = y4 - y3 = h/6 (k4 - k5), O(h^4) (docs/adaptive_steps.md section 2).
    Local extrapolation: the order-4 solution is kept; the estimate is that of the
    order-3 one (O(h^4): estimate_power), controlled per step, so the global error of
    the order-4 solution, ~ h^4 ~ tol, is proportional to the tolerance."""

    order, estimate_power, per_unit_step = 4, 4, False

    def __init__(self, model, q0, v0, t0=0.0):
        self.model = model
        y = np.concatenate([q0, v0]).astype(float)
        self.state = _RKState(t0, y, self.f(t0, y))

    def f(self, t, y):
        n = self.model.n
        a, _, _ = self.model.consistent_acceleration(t, y[:n], y[n:])
        return np.concatenate([y[n:], a])

    def attempt(self, h):
        s = self.state
        k1 = s.f
        k2 = self.f(s.t + h / 2, s.y + h / 2 * k1)
        k3 = self.f(s.t + h / 2, s.y + h / 2 * k2)
        k4 = self.f(s.t + h, s.y + h * k3)
        y1 = s.y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        k5 = self.f(s.t + h, y1)
        e = h / 6 * (k4 - k5)
        n = self.model.n
        return Trial(h, _RKState(s.t + h, y1, k5), e[:n], e[n:])

    def accept(self, trial):
        self.state = trial.state

    @staticmethod
    def interpolate(s0, s1, t):
        n = s0.y.size // 2
        h = s1.t - s0.t
        th = (t - s0.t) / h
        h00, h10, h01, h11 = 2 * th**3 - 3 * th**2 + 1, th**3 - 2 * th**2 + th, -2 * th**3 + 3 * th**2, th**3 - th**2
        d00, d10, d01, d11 = 6 * th**2 - 6 * th, 3 * th**2 - 4 * th + 1, -6 * th**2 + 6 * th, 3 * th**2 - 2 * th
        y = h00 * s0.y + h10 * h * s0.f + h01 * s1.y + h11 * h * s1.f
        return y[:n], y[n:]


@dataclass
class _RKState:
    t: float
    y: np.ndarray
    f: np.ndarray

    @property
    def q(self):
        return self.y[:self.y.size // 2]

    @property
    def v(self):
        return self.y[self.y.size // 2:]


@dataclass
class AdaptiveResult:
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    lam: np.ndarray
    h: np.ndarray                         # accepted steps
    step_t: np.ndarray                    # their end times
    constraint_q: np.ndarray              # max |g| after every accepted step
    constraint_v: np.ndarray              # max |G v + g_t|, |A v + b| after every accepted step
    stats: dict = field(default_factory=dict)


def error_norm(trial, s0, s1, rtol, atol, span, per_unit_step=True, nsteps=None):
    """The RMS of the estimate over q and v, each component scaled by
    atol + rtol max(|y_n|, |y_{n+1}|); per unit step (docs/adaptive_steps.md eq. (12)) it is
    multiplied by span / h: a step is accepted when its local error is at most the tolerance
    times h / span, so the global error of a method whose estimate is that of the solution
    it advances is proportional to the tolerance.  per_unit_step None: per equal share, times
    nsteps (the steps the run is expected to take: section 5.1): the local error at most
    tol / nsteps, the same sum with the steps where the Hoelder bound puts them."""
    parts = [trial.err_q / (atol + rtol * np.maximum(np.abs(s0.q), np.abs(s1.q)))]
    if trial.err_v is not None:
        parts.append(trial.err_v / (atol + rtol * np.maximum(np.abs(s0.v), np.abs(s1.v))))
    e = np.concatenate(parts)
    if per_unit_step is None:
        return float(np.sqrt(np.mean(e * e))) * nsteps
    return float(np.sqrt(np.mean(e * e))) * (span / trial.h if per_unit_step else 1.0)


def initial_step(model, q0, v0, t0, rtol, atol, order, span):
    """Hairer, Norsett, Wanner, Solving ODEs I, II.4 (starting step size) on q' = v, v' = a(q, v)."""
    n = model.n
    y0 = np.concatenate([q0, v0])
    sc = atol + rtol * np.abs(y0)
    a0 = model.consistent_acceleration(t0, q0, v0)[0]
    f0 = np.concatenate([v0, a0])
    d0, d1 = np.sqrt(np.mean((y0 / sc) ** 2)), np.sqrt(np.mean((f0 / sc) ** 2))
    h0 = 1e-6 if min(d0, d1) < 1e-5 else 0.01 * d0 / d1
    y1 = y0 + h0 * f0
    f1 = np.concatenate([y1[n:], model.consistent_acceleration(t0 + h0, y1[:n], y1[n:])[0]])
    d2 = np.sqrt(np.mean(((f1 - f0) / sc) ** 2)) / h0
    h1 = max(1e-6, h0 * 1e-3) if max(d1, d2) <= 1e-15 else (0.01 / max(d1, d2)) ** (1.0 / (order + 1))
    return min(100 * h0, h1, span)


def integrate_adaptive(stepper, t_end, rtol, atol=None, h0=None, h_min=None, h_max=None, t_eval=None,
                       safety=0.9, fac_min=0.2, fac_max=2.0, max_steps=200_000, per_unit_step=None):
    """The driver: PI step control (Gustafsson; Hairer, Wanner, Solving ODEs II, IV.2):
        h_new = h * clip(safety * err_n^(-0.7/k) * err_{n-1}^(0.4/k), fac_min, fac_max),
    k = the exponent of err ~ h^k (the estimate's power, less 1 per unit step); per_unit_step:
    default the stepper's, None per equal share (docs/adaptive_steps.md sections 4, 5.1 for when
    per step pays); after a rejection
    the next step may not grow; a Newton failure rejects and quarters h.  Outputs at
    t_eval (default: every accepted step) by the stepper's interpolation, then
    re-imposed: q onto g = 0, v onto G v + g_t = 0, A v + b = 0 (M-orthogonal
    projections, as pyint.reference does), lam from the index-1 system there."""
    model = stepper.model
    s = stepper.state
    t0 = s.t
    span = t_end - t0
    atol = rtol if atol is None else atol
    h_max = span if h_max is None else h_max
    h_min = 1e-12 * span if h_min is None else h_min
    h = initial_step(model, s.q, s.v, t0, rtol, atol, stepper.order, span) if h0 is None else h0
    h = min(max(h, h_min), h_max)
    t_eval = None if t_eval is None else np.asarray(t_eval, dtype=float)
    out_t, out_q, out_v = [], [], []
    hs, ts, cq, cv = [], [], [], []
    stats = {"accepted": 0, "rejected": 0, "newton_failures": 0}
    pus = stepper.per_unit_step if per_unit_step is None else per_unit_step
    err_prev, just_rejected, k = 1.0, False, stepper.estimate_power - (1 if pus is True else 0)
    ie = ie0 = 0
    start, first_partial = s, False
    while s.t < t_end:
        if len(hs) + stats["rejected"] + stats["newton_failures"] > max_steps:
            raise RuntimeError(f"more than {max_steps} steps at t = {s.t}")
        if s.t + 1.1 * h >= t_end:
            h = t_end - s.t
        try:
            trial = stepper.attempt(h)
        except NewtonFailure:
            stats["newton_failures"] += 1
            h *= 0.25
            just_rejected = True
            if h < h_min:
                raise RuntimeError(f"step size below h_min = {h_min} at t = {s.t} (Newton failures)") from None
            continue
        s1 = trial.state
        err = error_norm(trial, s, s1, rtol, atol, span, pus, (len(hs) + 1) * span / (s.t + h - t0))
        if not np.isfinite(err):
            err = 1e10
        if err > 1.0 and len(hs) == 1 and first_partial:
            # the first step had no v estimate (eq. (10) needs a_{n-1}); the second step's
            # estimate covers it too: if it fails, the first step is taken again, shorter
            stats["rejected"] += 1
            h = hs.pop() * max(fac_min, safety * err ** (-1.0 / k))
            del ts[:], cq[:], cv[:], out_t[ie0:], out_q[ie0:], out_v[ie0:]
            ie = ie0
            stepper.state = s = start
            just_rejected = True
            if h < h_min:
                raise RuntimeError(f"step size below h_min = {h_min} at t = {s.t} (error test)")
            continue
        if err > 1.0:
            stats["rejected"] += 1
            h *= max(fac_min, safety * err ** (-1.0 / k))
            just_rejected = True
            if h < h_min:
                raise RuntimeError(f"step size below h_min = {h_min} at t = {s.t} (error test)")
            continue
        stepper.accept(trial)
        if not hs:
            first_partial = trial.err_v is None
        hs.append(h)
        ts.append(s1.t)
        g = model.hol(s1.t, s1.q) if model.n_hol else np.zeros(0)
        cq.append(np.max(np.abs(g), initial=0.0))
        c = np.concatenate([np.atleast_1d(model.hol_vel(s1.t, s1.q, s1.v)) if model.n_hol else np.zeros(0),
                            np.atleast_1d(model.nh_vel(s1.t, s1.q, s1.v)) if model.n_nonhol else np.zeros(0)])
        cv.append(np.max(np.abs(c), initial=0.0))
        while t_eval is not None and ie < t_eval.size and t_eval[ie] <= s1.t * (1 + 1e-15):
            out_t.append(t_eval[ie])
            qi, vi = stepper.interpolate(s, s1, t_eval[ie])
            out_q.append(qi)
            out_v.append(vi)
            ie += 1
        if t_eval is None:
            out_t.append(s1.t)
            out_q.append(s1.q.copy())
            out_v.append(s1.v.copy())
        fac = safety * max(err, 1e-10) ** (-0.7 / k) * max(err_prev, 1e-10) ** (0.4 / k)
        fac = min(1.0 if just_rejected else fac_max, max(fac_min, fac))
        err_prev, just_rejected = max(err, 1e-4), False
        h = min(h * fac, h_max)
        s = s1
    stats["accepted"] = len(hs)
    lam = []
    for i, (ti, qi, vi) in enumerate(zip(out_t, out_q, out_v)):
        if model.n_hol:
            qi = V.project_position(model, ti, qi)
        vi = V.project_velocity(model, ti, qi, vi)
        out_q[i], out_v[i] = qi, vi
        _, lh, ln = model.consistent_acceleration(ti, qi, vi)
        lam.append(np.concatenate([lh, ln]))
    return AdaptiveResult(np.array(out_t), np.array(out_q), np.array(out_v), np.array(lam), np.array(hs),
                          np.array(ts), np.array(cq), np.array(cv), stats)


def integrate_on_steps(stepper, steps):
    """Take the given steps (no control); returns the final state and the estimates."""
    ests = []
    for h in steps:
        trial = stepper.attempt(h)
        stepper.accept(trial)
        ests.append((trial.err_q, trial.err_v))
    return stepper.state, ests


# -- block methods (seed 003 section 2): the error estimate ------------------------------

def block_error_constants(scheme):
    """Per node k (docs/adaptive_steps.md section 3), with p = scheme.degree:
    E_k, the block's local error constant (the residual of eq. (9) on t^(p+1)/(p+1)!):
    Y_k - y = -E_k h^(p+1) y^(p+1); and the predictor P, the Lagrange extrapolation of
    degree p through the last p + 1 of the previous two blocks' nodes (W: r x 2r, zero
    columns for the nodes left out), whose error P_k - y = -pi_k h^(p+1) y^(p+1) is of the
    same order.  Milne's device: est_k = -E_k / (pi_k - E_k) (Y_k - P_k) = Y_k - y + O(h^(p+2)).
    Returns (E, pi, factor, W)."""
    c, A, U, p, r = scheme.c, scheme.A, scheme.U, scheme.degree, scheme.r
    e = (c ** (p + 1) / math.factorial(p + 1) - A @ (c ** p) / math.factorial(p)
         - U @ ((c - 1) ** (p + 1)) / math.factorial(p + 1))
    x = np.concatenate([c - 2, c - 1])[2 * r - (p + 1):]
    W = np.zeros((r, 2 * r))
    for j in range(x.size):
        lj = np.ones(r)
        for m in range(x.size):
            if m != j:
                lj *= (c - x[m]) / (x[j] - x[m])
        W[:, 2 * r - (p + 1) + j] = lj
    pi = np.array([np.prod(ck - x) for ck in c]) / math.factorial(p + 1)
    return e, pi, -e / (pi - e), W


def block_step(model, scheme, t, h, qold, zold, tol=1e-15, maxit=200):
    """One block of eq. (9) on the index-1 form (q' = z, z' = a(t, q, z)) from the last two
    blocks' node values (rows of qold, zold, 2r each, oldest first; the new block starts at
    t), solved by fixed-point iteration (non-stiff problems at small h only: a prototype of
    the estimate, not of the kernel's Newton).  Returns (q, z, est_q, est_z)."""
    _, _, factor, W = block_error_constants(scheme)
    A, U, c, r = scheme.A, scheme.U, scheme.c, scheme.r
    q, z = scheme.extrapolation(2) @ qold, scheme.extrapolation(2) @ zold    # Newton's start
    uq, uz = U @ qold[r:], U @ zold[r:]
    for _ in range(maxit):
        a = np.array([model.consistent_acceleration(t + ck * h, qk, zk)[0] for ck, qk, zk in zip(c, q, z)])
        z1 = h * A @ a + uz
        q1 = h * A @ z1 + uq
        d = max(np.max(np.abs(q1 - q)), np.max(np.abs(z1 - z)))
        q, z = q1, z1
        if d <= tol * (1 + max(np.max(np.abs(q)), np.max(np.abs(z)))):
            return q, z, factor[:, None] * (q - W @ qold), factor[:, None] * (z - W @ zold)
    raise RuntimeError("block fixed-point iteration did not converge")
