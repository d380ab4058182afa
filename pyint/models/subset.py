"""A model seen through a subset of its constraint rows: the Python side of a redundant mechanism.

The kernels run a redundant mechanism on an independent subset of its constraint rows
(fortran/core/reduced_model.f90, which explains the choice); the reference layer
(pyint.reference) and Python's own index-1 solves use this twin of it: every item is the
base model's, the constraint items restricted to the kept rows ``rows`` (indices into
[g; A], holonomic first), the multiplier arguments of (G^T lam)_q and (A^T lam)_q scattered
back into every row (zero on the dropped ones).  It has no Fortran twin: the kernels reduce
a model themselves.
"""
from __future__ import annotations

import numpy as np

from .base import Model


class ConstraintSubset(Model):
    """``base`` through its constraint rows ``rows`` (sorted indices into [g; A])."""

    fortran_name = None

    def __init__(self, base, rows):
        rows = np.asarray(rows, dtype=int)
        self.base, self.rows = base, rows
        self.hol_rows = rows[rows < base.n_hol]
        self.nh_rows = rows[rows >= base.n_hol] - base.n_hol
        self.name = base.name
        self.n, self.n_hol, self.n_nonhol = base.n, self.hol_rows.size, self.nh_rows.size
        self.coord_names, self.coord_units = base.names(), base.units()
        self.constant_mass, self.scleronomic = base.constant_mass, base.scleronomic
        self.conservative = base.conservative
        self.callback_bundle = getattr(base, "callback_bundle", True)

    @property
    def has_energy(self):
        return self.base.has_energy

    def describe(self):
        return self.base.describe()

    def _lam_h(self, lam):
        full = np.zeros(self.base.n_hol)
        full[self.hol_rows] = lam
        return full

    def _lam_n(self, lam):
        full = np.zeros(self.base.n_nonhol)
        full[self.nh_rows] = lam
        return full

    # the items that do not involve the constraints: the base's
    def mass(self, q):
        return self.base.mass(q)

    def force(self, t, q, v):
        return self.base.force(t, q, v)

    def energy(self, t, q, v):
        return self.base.energy(t, q, v)

    def mass_dq(self, q, a):
        return self.base.mass_dq(q, a)

    def mass_dqq(self, q, a, w):
        return self.base.mass_dqq(q, a, w)

    def force_jac(self, t, q, v):
        return self.base.force_jac(t, q, v)

    # holonomic rows
    def hol(self, t, q):
        return np.asarray(self.base.hol(t, q), dtype=float).reshape(-1)[self.hol_rows]

    def hol_jac(self, t, q):
        return np.asarray(self.base.hol_jac(t, q), dtype=float).reshape(self.base.n_hol, self.n)[self.hol_rows]

    def hol_t(self, t, q):
        return np.asarray(self.base.hol_t(t, q), dtype=float).reshape(-1)[self.hol_rows]

    def hol_vel(self, t, q, v):
        return np.asarray(self.base.hol_vel(t, q, v), dtype=float).reshape(-1)[self.hol_rows]

    def hol_vel_q(self, t, q, v):
        return np.asarray(self.base.hol_vel_q(t, q, v), dtype=float).reshape(self.base.n_hol, self.n)[self.hol_rows]

    def hol_gamma(self, t, q, v):
        return np.asarray(self.base.hol_gamma(t, q, v), dtype=float).reshape(-1)[self.hol_rows]

    def hol_gtl_q(self, t, q, lam):
        return self.base.hol_gtl_q(t, q, self._lam_h(lam))

    # nonholonomic rows
    def nh_A(self, t, q):
        return np.asarray(self.base.nh_A(t, q), dtype=float).reshape(self.base.n_nonhol, self.n)[self.nh_rows]

    def nh_b(self, t, q):
        return np.asarray(self.base.nh_b(t, q), dtype=float).reshape(-1)[self.nh_rows]

    def nh_vel(self, t, q, v):
        return np.asarray(self.base.nh_vel(t, q, v), dtype=float).reshape(-1)[self.nh_rows]

    def nh_vel_q(self, t, q, v):
        return np.asarray(self.base.nh_vel_q(t, q, v), dtype=float).reshape(self.base.n_nonhol, self.n)[self.nh_rows]

    def nh_gamma(self, t, q, v):
        return np.asarray(self.base.nh_gamma(t, q, v), dtype=float).reshape(-1)[self.nh_rows]

    def nh_atl_q(self, t, q, lam):
        return self.base.nh_atl_q(t, q, self._lam_n(lam))

    def full_multipliers(self, lam):
        """lam of the kept rows (..., n_kept) scattered into every row (..., base rows), zero elsewhere."""
        lam = np.asarray(lam, dtype=float)
        full = np.zeros(lam.shape[:-1] + (self.base.n_hol + self.base.n_nonhol,))
        full[..., self.rows] = lam
        return full


def independent_subset(model, t, q):
    """``model`` itself when [G; A] at (t, q) has full row rank, else a :class:`ConstraintSubset`
    through the rows that the kernels keep (pyint._validate.independent_rows)."""
    from .. import _validate as V
    c = V.constraint_matrix(model, t, q)
    rows = V.independent_rows(c)
    return model if rows.size == c.shape[0] else ConstraintSubset(model, rows)
