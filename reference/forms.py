"""Index-1 (and stabilized index-2) first-order forms F(t, y, y') = 0 of a constrained model.

Every form is built automatically from the items of :class:`pyint.models.Model`
(no hand-written reduction for any model).  The model is

    q' = v,   M(q) v' = f(t, q, v) - G^T lam_h - A^T lam_n,
    g(t, q) = 0,   A(t, q) v + b(t, q) = 0,

with the acceleration-level constraints G a + hol_gamma = 0, A a + nh_gamma = 0.
A form object knows its unknowns y, which components are algebraic (for IDA's
``algebraic_vars_idx``), its residual and its Jacobian dF/dy + cj dF/dy', how
to build consistent (y, y') from (t, q, v, a, lam), and how to read q, v, a,
lam back.  The forms and the choice of dummy derivatives are documented in
``pyint.reference`` (the package docstring).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg

from ..models.base import fd_jacobian

#: A swap in the dummy selection is made while it grows |det C_S| by more than this factor.
_SWAP_GAIN = 1.01


def select_columns(c):
    r"""Columns :math:`S` of the :math:`m \times n` matrix ``c`` (full row rank) whose block :math:`C[:, S]` is best conditioned.

    QR with column pivoting gives a first choice; it is then improved by
    single swaps until no swap grows :math:`\lvert\det C[:, S]\rvert` by more than 1 %: a
    locally maximal-volume block, for which every entry of :math:`C[:, S]^{-1} C` is at
    most ~1 in magnitude (see :func:`selection_quality`).

    Parameters
    ----------
    c : ndarray, shape (m, n)
        A constraint Jacobian of full row rank (:math:`m \le n`).

    Returns
    -------
    ndarray of int, shape (m,)
        The sorted column indices S.

    Examples
    --------
    >>> import numpy as np
    >>> from pyint.reference import select_columns, selection_quality
    >>> c = np.array([[1.0, 1e-3, 0.0], [0.0, 1.0, 2.0]])
    >>> s = select_columns(c)
    >>> s.tolist(), bool(selection_quality(c, s) <= 1.01)
    ([0, 2], True)
    """
    m, n = c.shape
    if m == 0:
        return np.zeros(0, dtype=int)
    _, piv = scipy.linalg.qr(c, mode="r", pivoting=True)
    s = np.array(piv[:m])
    for _ in range(4 * n * m):
        b = np.linalg.solve(c[:, s], c)
        i, j = np.unravel_index(np.argmax(np.abs(b)), b.shape)
        if abs(b[i, j]) <= _SWAP_GAIN:
            break
        s[i] = j  # the swap multiplies |det c[:, s]| by |b[i, j]| > 1
    return np.sort(s)


def selection_quality(c, s):
    r""":math:`\max \lvert C[:, S]^{-1} C\rvert`: ~1 right after :func:`select_columns`, infinite when :math:`C[:, S]` is singular.

    An entry :math:`b_{ij} > 1` says that swapping column :math:`s_i` for column :math:`j` would grow
    :math:`\lvert\det C[:, S]\rvert` by the factor :math:`b_{ij}`: the measure is invariant to the scaling
    of the constraint rows.

    Parameters
    ----------
    c : ndarray, shape (m, n)
        The constraint Jacobian.
    s : sequence of int
        m column indices (:func:`select_columns`).

    Returns
    -------
    float
        ``max |c[:, S]^-1 c|`` (inf when c[:, S] is singular; 1 for m = 0).

    Examples
    --------
    >>> import numpy as np
    >>> from pyint.reference.forms import select_columns, selection_quality
    >>> c = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0]])
    >>> s = select_columns(c)
    >>> float(selection_quality(c, s)) <= 1.0 + 1e-12
    True
    """
    if c.shape[0] == 0:
        return 1.0
    try:
        b = np.linalg.solve(c[:, s], c)
    except np.linalg.LinAlgError:
        return np.inf
    val = float(np.max(np.abs(b)))
    return val if np.isfinite(val) else np.inf


class _Form:
    """Common machinery: sizes, model items at a state, the dynamics rows."""

    name = "form"
    description = ""
    reselects = False
    #: whether IDACalcIC may check the initial values (it needs index 1)
    index1 = True
    #: Absolute tolerance of the components outside the error test in IDA's Newton test (None:
    #: atol, as q and v).  The acceleration- and force-level unknowns of the index-1 and GGL
    #: forms (lam, GGL's mu) get 1: a Newton change d of such an unknown moves v only by
    #: ~d / cj, so its tolerance would have to scale with IDA's leading coefficient cj ~ 1/h
    #: (Hairer and Wanner scale index-2 variables by h in radau5 for this reason), and IDA's
    #: tolerances cannot change during a run (IDASVtolerances after the first step leaves the
    #: error-weight function without its data in SUNDIALS 6: a crash).  With atol there
    #: instead (rtol |a|), the predicted accelerations, which carry cj times the Newton error of
    #: the stored velocities, started every step ~cj |v| / |a| tolerances away: at small steps
    #: IDA's four Newton iterations no longer sufficed and the steps collapsed (3-link chain,
    #: dummy-derivative form as it then was, rtol 1e-11: from 6e-4 to 4e-7 at t = 0.4893,
    #: 17 730 steps, 4 107 failed attempts; under some OpenBLAS kernels only).  The
    #: dummy-derivative form has no such unknowns (:class:`DummyDerivative`).
    newton_atol_excluded = 1.0

    def __init__(self, model):
        self.model = model
        self.n, self.mh, self.mn = model.n, model.n_hol, model.n_nonhol
        self.m = self.mh + self.mn

    # -- model items ------------------------------------------------------------
    def _constraint_matrices(self, t, q):
        n, mh, mn = self.n, self.mh, self.mn
        gq = np.asarray(self.model.hol_jac(t, q), dtype=float).reshape(mh, n) if mh else np.zeros((0, n))
        an = np.asarray(self.model.nh_A(t, q), dtype=float).reshape(mn, n) if mn else np.zeros((0, n))
        return gq, an

    def _velocity_constraints(self, t, q, v, gq, an):
        """G v + g_t and A v + b."""
        mh, mn = self.mh, self.mn
        hv = gq @ v + np.asarray(self.model.hol_t(t, q), dtype=float).reshape(mh) if mh else np.zeros(0)
        nv = an @ v + np.asarray(self.model.nh_b(t, q), dtype=float).reshape(mn) if mn else np.zeros(0)
        return hv, nv

    def _acceleration_constraints(self, t, q, v, a, gq=None, an=None):
        """G a + hol_gamma and A a + nh_gamma."""
        mh, mn = self.mh, self.mn
        if gq is None:
            gq, an = self._constraint_matrices(t, q)
        ha = gq @ a + np.asarray(self.model.hol_gamma(t, q, v), dtype=float).reshape(mh) if mh else np.zeros(0)
        na = an @ a + np.asarray(self.model.nh_gamma(t, q, v), dtype=float).reshape(mn) if mn else np.zeros(0)
        return ha, na

    def _dynamics(self, t, q, v, a, lam, gq, an):
        """M(q) a - f + G^T lam_h + A^T lam_n."""
        mh = self.mh
        return (np.asarray(self.model.mass(q), dtype=float) @ a
                - np.asarray(self.model.force(t, q, v), dtype=float)
                + gq.T @ lam[:mh] + an.T @ lam[mh:])

    def _dynamics_jac(self, t, q, v, a, lam):
        """d/dq and d/dv of M(q) a - f + G^T lam_h + A^T lam_n; and M."""
        model, mh, mn = self.model, self.mh, self.mn
        mass = np.asarray(model.mass(q), dtype=float)
        fq, fv = model.force_jac(t, q, v)
        dq = np.asarray(model.mass_dq(q, a), dtype=float) - np.asarray(fq, dtype=float)
        if mh:
            dq = dq + np.asarray(model.hol_gtl_q(t, q, lam[:mh]), dtype=float)
        if mn:
            dq = dq + np.asarray(model.nh_atl_q(t, q, lam[mh:]), dtype=float)
        return dq, -np.asarray(fv, dtype=float), mass

    def _acceleration_constraints_jac(self, t, q, v, a):
        """d/dq and d/dv of [G a + hol_gamma; A a + nh_gamma] (central differences)."""
        def at_q(x):
            return np.concatenate(self._acceleration_constraints(t, x, v, a))

        def at_v(x):
            return np.concatenate(self._acceleration_constraints(t, q, x, a))

        return (fd_jacobian(at_q, q).reshape(self.m, self.n),
                fd_jacobian(at_v, v).reshape(self.m, self.n))

    def _velocity_constraints_q(self, t, q, v):
        """d/dq of [G v + g_t; A v + b]."""
        model, n, mh, mn = self.model, self.n, self.mh, self.mn
        parts = []
        if mh:
            parts.append(np.asarray(model.hol_vel_q(t, q, v), dtype=float).reshape(mh, n))
        if mn:
            parts.append(np.asarray(model.nh_vel_q(t, q, v), dtype=float).reshape(mn, n))
        return np.vstack(parts) if parts else np.zeros((0, n))

    # -- interface ----------------------------------------------------------------
    def select(self, t, q):
        """Choose the dummy derivatives at (t, q) (forms without dummies: nothing)."""

    def selection_quality(self, t, q):
        return 1.0

    def selection(self):
        return {}

    def complete(self, t, q, v):
        """(q, v) with the algebraic components re-solved from the form's equations (here: none)."""
        return q, v

    @property
    def ids(self):
        """1.0 for a differential component of y, 0.0 for an algebraic one."""
        ids = np.ones(self.size)
        ids[self.algebraic_idx] = 0.0
        return ids

    @property
    def error_excluded_idx(self):
        """Components left out of IDA's local error test: everything but q and v."""
        return np.arange(2 * self.n, self.size)

    def constraint_levels(self, t, q, v, a):
        """Max-norm residuals (position, velocity, acceleration) of all constraints at a state."""
        gq, an = self._constraint_matrices(t, q)
        pos = np.asarray(self.model.hol(t, q), dtype=float) if self.mh else np.zeros(0)
        vel = np.concatenate(self._velocity_constraints(t, q, v, gq, an))
        acc = np.concatenate(self._acceleration_constraints(t, q, v, a, gq, an))
        return tuple(float(np.max(np.abs(x), initial=0.0)) for x in (pos, vel, acc))


class AccelerationIndex1(_Form):
    """y = (q, v, lam): q' = v, M v' = f - C^T lam, G v' + hol_gamma = 0, A v' + nh_gamma = 0."""

    name = "index1"
    description = ("acceleration-level index-1 form: y = (q, v, lam); only the acceleration-level "
                   "constraints are imposed, position and velocity constraints drift")

    def __init__(self, model):
        super().__init__(model)
        n, m = self.n, self.m
        self.size = 2 * n + m
        self.algebraic_idx = np.arange(2 * n, 2 * n + m)

    def initial(self, t, q, v, a, lam):
        return np.concatenate([q, v, lam]), np.concatenate([v, a, np.zeros(self.m)])

    def unpack(self, y, yp):
        n = self.n
        return y[:n], y[n:2 * n], yp[n:2 * n], y[2 * n:], {}

    def residual(self, t, y, yp, r):
        n = self.n
        q, v, lam = y[:n], y[n:2 * n], y[2 * n:]
        a = yp[n:2 * n]
        gq, an = self._constraint_matrices(t, q)
        r[:n] = yp[:n] - v
        r[n:2 * n] = self._dynamics(t, q, v, a, lam, gq, an)
        r[2 * n:] = np.concatenate(self._acceleration_constraints(t, q, v, a, gq, an))

    def jacobian(self, t, y, yp, cj, jac):
        n = self.n
        q, v, lam = y[:n], y[n:2 * n], y[2 * n:]
        a = yp[n:2 * n]
        gq, an = self._constraint_matrices(t, q)
        c = np.vstack([gq, an])
        dq, dv, mass = self._dynamics_jac(t, q, v, a, lam)
        cq, cv = self._acceleration_constraints_jac(t, q, v, a)
        jac[:] = 0.0
        i_n = np.eye(n)
        jac[:n, :n] = cj * i_n
        jac[:n, n:2 * n] = -i_n
        jac[n:2 * n, :n] = dq
        jac[n:2 * n, n:2 * n] = dv + cj * mass
        jac[n:2 * n, 2 * n:] = c.T
        jac[2 * n:, :n] = cq
        jac[2 * n:, n:2 * n] = cv + cj * c


class GGL(_Form):
    """Gear-Gupta-Leimkuhler stabilized index-2 form, y = (q, v, lam, mu).

    M(q)(q' - v) + G^T mu = 0,  M v' = f - G^T lam_h - A^T lam_n,
    g = 0,  G v + g_t = 0,  A v + b = 0.
    """

    name = "ggl"
    description = ("stabilized index-2 (Gear-Gupta-Leimkuhler) form: y = (q, v, lam, mu) with "
                   "M (q' - v) + G^T mu = 0; position and velocity constraints imposed; "
                   "lam and mu excluded from the error test")
    index1 = False

    def __init__(self, model):
        super().__init__(model)
        n, m, mh = self.n, self.m, self.mh
        self.size = 2 * n + m + mh
        self.algebraic_idx = np.arange(2 * n, 2 * n + m + mh)

    def initial(self, t, q, v, a, lam):
        return np.concatenate([q, v, lam, np.zeros(self.mh)]), np.concatenate([v, a, np.zeros(self.m + self.mh)])

    def unpack(self, y, yp):
        n, m = self.n, self.m
        return y[:n], y[n:2 * n], yp[n:2 * n], y[2 * n:2 * n + m], {"mu": y[2 * n + m:]}

    def residual(self, t, y, yp, r):
        n, m, mh = self.n, self.m, self.mh
        q, v, lam, mu = y[:n], y[n:2 * n], y[2 * n:2 * n + m], y[2 * n + m:]
        gq, an = self._constraint_matrices(t, q)
        mass = np.asarray(self.model.mass(q), dtype=float)
        r[:n] = mass @ (yp[:n] - v) + gq.T @ mu
        r[n:2 * n] = self._dynamics(t, q, v, yp[n:2 * n], lam, gq, an)
        k = 2 * n
        if mh:
            r[k:k + mh] = np.asarray(self.model.hol(t, q), dtype=float).reshape(mh)
            k += mh
        hv, nv = self._velocity_constraints(t, q, v, gq, an)
        r[k:] = np.concatenate([hv, nv])

    def jacobian(self, t, y, yp, cj, jac):
        n, m, mh = self.n, self.m, self.mh
        q, v, lam, mu = y[:n], y[n:2 * n], y[2 * n:2 * n + m], y[2 * n + m:]
        qd = yp[:n]
        gq, an = self._constraint_matrices(t, q)
        c = np.vstack([gq, an])
        dq, dv, mass = self._dynamics_jac(t, q, v, yp[n:2 * n], lam)
        jac[:] = 0.0
        kq = np.asarray(self.model.mass_dq(q, qd - v), dtype=float)
        if mh:
            kq = kq + np.asarray(self.model.hol_gtl_q(t, q, mu), dtype=float)
        jac[:n, :n] = kq + cj * mass
        jac[:n, n:2 * n] = -mass
        jac[:n, 2 * n + m:] = gq.T
        jac[n:2 * n, :n] = dq
        jac[n:2 * n, n:2 * n] = dv + cj * mass
        jac[n:2 * n, 2 * n:2 * n + m] = c.T
        k = 2 * n
        jac[k:k + mh, :n] = gq
        k += mh
        jac[k:k + m, :n] = self._velocity_constraints_q(t, q, v)
        jac[k:k + m, n:2 * n] = c


class DummyDerivative(_Form):
    """Mattsson-Soderlind dummy derivatives: every constraint level kept, index 1.

    y = (q, v, dq, w): dq (n_hol) replaces q'[Sq], w' (n_hol + n_nonhol) replaces
    v'[Sv], with Sq, Sv chosen by :func:`select_columns` on G and on C = [G; A];
    the multipliers are eliminated with the selected block C_S = C[:, Sv]
    (z = -C_S^-T (M vd - f)[Sv], the value of lam).  Equations:

        q'[Fq] = v[Fq],  dq = v[Sq],
        (M vd - f + C^T z)[Fv] = 0,     vd = v' with vd[Sv] = w',
        g = 0,  G v + g_t = 0,  A v + b = 0,
        G vd + hol_gamma = 0,  A vd + nh_gamma = 0.

    Algebraic: q[Sq], v[Sv], dq.  w is a velocity-level dummy (w = v[Sv] on the
    exact solution; only w' enters the equations), so every unknown is a
    position or a velocity and one tolerance fits all of them (see the package
    docstring, "Tolerance proportionality").
    """

    name = "dummy_derivative"
    description = ("dummy-derivative index-1 form (Mattsson-Soderlind 1993): y = (q, v, dq, w); "
                   "position, velocity and acceleration constraints all imposed; the dummies "
                   "dq = q'[Sq], w' = v'[Sv] are chosen by pivoting on G and [G; A] and re-selected "
                   "when the selected block degrades; the multipliers are eliminated through the "
                   "selected block")
    reselects = True
    #: dq and w are velocities: IDA's Newton test holds them to rtol |x| + atol, as v.
    newton_atol_excluded = None

    def __init__(self, model):
        super().__init__(model)
        n, m, mh = self.n, self.m, self.mh
        self.size = 2 * n + m + mh
        self.i_dq = slice(2 * n, 2 * n + mh)
        self.i_w = slice(2 * n + mh, 2 * n + mh + m)
        self.sq = np.zeros(0, dtype=int)
        self.sv = np.zeros(0, dtype=int)
        self.fv = np.arange(n)

    def select(self, t, q):
        gq, an = self._constraint_matrices(t, q)
        self.sq = select_columns(gq)
        self.sv = select_columns(np.vstack([gq, an]))
        self.fv = np.setdiff1d(np.arange(self.n), self.sv)

    def selection_quality(self, t, q):
        gq, an = self._constraint_matrices(t, q)
        return max(selection_quality(gq, self.sq), selection_quality(np.vstack([gq, an]), self.sv))

    def selection(self):
        names = self.model.names()
        return {"q": [names[i] for i in self.sq], "v": [names[i] for i in self.sv]}

    @property
    def algebraic_idx(self):
        n = self.n
        return np.concatenate([self.sq, n + self.sv, np.arange(self.i_dq.start, self.i_dq.stop)]).astype(int)

    def complete(self, t, q, v):
        """Solve g = 0 for q[Sq] and the velocity constraints for v[Sv], given the other
        components, to round-off (IDA solves them only to its Newton tolerance)."""
        q, v = q.copy(), v.copy()
        if self.mh:
            for _ in range(8):
                gq, _ = self._constraint_matrices(t, q)
                dq = np.linalg.solve(gq[:, self.sq], np.asarray(self.model.hol(t, q), dtype=float))
                q[self.sq] -= dq
                if np.max(np.abs(dq)) <= 4 * np.finfo(float).eps * max(1.0, np.max(np.abs(q))):
                    break
        if self.m:
            gq, an = self._constraint_matrices(t, q)
            r = np.concatenate(self._velocity_constraints(t, q, v, gq, an))
            v[self.sv] -= np.linalg.solve(np.vstack([gq, an])[:, self.sv], r)
        return q, v

    def _derivatives(self, y, yp):
        """(qd, vd): y' with the dummies in place of the selected derivatives."""
        n = self.n
        qd = yp[:n].copy()
        qd[self.sq] = y[self.i_dq]
        vd = yp[n:2 * n].copy()
        vd[self.sv] = yp[self.i_w]
        return qd, vd

    def _multipliers(self, t, q, v, vd, c):
        """z = -C_S^-T (M vd - f)[Sv]: the multipliers that zero the Sv rows of the dynamics."""
        e = np.asarray(self.model.mass(q), dtype=float) @ vd - np.asarray(self.model.force(t, q, v), dtype=float)
        return np.linalg.solve(c[:, self.sv].T, -e[self.sv]) if self.m else np.zeros(0)

    def initial(self, t, q, v, a, lam):
        n = self.n
        y = np.concatenate([q, v, v[self.sq], v[self.sv]])
        yp = np.zeros(self.size)
        yp[:n] = v
        yp[n:2 * n] = a
        yp[self.i_dq] = a[self.sq]
        yp[self.i_w] = a[self.sv]
        return y, yp

    def unpack(self, y, yp):
        """q, v, v' (with the dummies), None (the multipliers are not unknowns here), {}."""
        n = self.n
        _, vd = self._derivatives(y, yp)
        return y[:n], y[n:2 * n], vd, None, {}

    def _point(self, t, y, yp):
        """What the residual and its Jacobian share at (t, y, y'): q, v, q', v' (with the dummies),
        the constraint matrices G, A, C = [G; A] and the eliminated multipliers z."""
        n = self.n
        q, v = y[:n], y[n:2 * n]
        qd, vd = self._derivatives(y, yp)
        gq, an = self._constraint_matrices(t, q)
        c = np.vstack([gq, an])
        return q, v, qd, vd, gq, an, c, self._multipliers(t, q, v, vd, c)

    def residual(self, t, y, yp, r):
        n, m, mh = self.n, self.m, self.mh
        q, v, qd, vd, gq, an, _, z = self._point(t, y, yp)
        r[:n] = qd - v
        k = 2 * n - m
        r[n:k] = self._dynamics(t, q, v, vd, z, gq, an)[self.fv]
        if mh:
            r[k:k + mh] = np.asarray(self.model.hol(t, q), dtype=float).reshape(mh)
            k += mh
        hv, nv = self._velocity_constraints(t, q, v, gq, an)
        ha, na = self._acceleration_constraints(t, q, v, vd, gq, an)
        r[k:] = np.concatenate([hv, nv, ha, na])

    def jacobian(self, t, y, yp, cj, jac):
        n, m, mh = self.n, self.m, self.mh
        q, v, _, vd, gq, _, c, z = self._point(t, y, yp)
        dq, dv, mass = self._dynamics_jac(t, q, v, vd, z)
        cq, cv = self._acceleration_constraints_jac(t, q, v, vd)
        jac[:] = 0.0
        fq = np.setdiff1d(np.arange(n), self.sq)
        fv, sv = self.fv, self.sv
        dq_cols = np.arange(self.i_dq.start, self.i_dq.stop)
        w_cols = np.arange(self.i_w.start, self.i_w.stop)
        # q' - v
        jac[fq, fq] = cj
        jac[self.sq, dq_cols] = 1.0
        jac[:n, n:2 * n] = -np.eye(n)
        # dynamics at fixed z, then z eliminated: rows Fv of (I - C^T C_S^-T [rows Sv])
        full = np.zeros((n, self.size))
        full[:, :n] = dq
        full[:, n:2 * n] = dv
        full[:, n + fv] += cj * mass[:, fv]
        full[:, w_cols] = cj * mass[:, sv]
        if m:
            full[fv] -= c[:, fv].T @ np.linalg.solve(c[:, sv].T, full[sv])
        k = 2 * n - m
        jac[n:k] = full[fv]
        # position and velocity constraints
        jac[k:k + mh, :n] = gq
        k += mh
        jac[k:k + m, :n] = self._velocity_constraints_q(t, q, v)
        jac[k:k + m, n:2 * n] = c
        k += m
        # acceleration constraints
        rows = slice(k, k + m)
        jac[rows, :n] = cq
        jac[rows, n:2 * n] = cv
        jac[rows, n + fv] += cj * c[:, fv]
        jac[rows, w_cols] = cj * c[:, sv]


#: The forms by name.
FORMS = {cls.name: cls for cls in (DummyDerivative, AccelerationIndex1, GGL)}
