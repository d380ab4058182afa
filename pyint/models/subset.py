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

import inspect

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

    def _scatter(self, family, lam):
        """The multipliers of the kept rows of ``family`` ("hol" or "nh") in every row of the base's."""
        full = np.zeros(self.base.n_hol if family == "hol" else self.base.n_nonhol)
        full[self.hol_rows if family == "hol" else self.nh_rows] = lam
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

    def full_multipliers(self, lam):
        """lam of the kept rows (..., n_kept) scattered into every row (..., base rows), zero elsewhere."""
        lam = np.asarray(lam, dtype=float)
        full = np.zeros(lam.shape[:-1] + (self.base.n_hol + self.base.n_nonhol,))
        full[..., self.rows] = lam
        return full


#: The base's constraint items restricted to the kept rows: name -> (family, form), the form
#: "vector" (the kept entries), "matrix" (the kept rows of a matrix with n columns) or "lam" (the
#: item of the multipliers scattered back into every row of the family, zero on the dropped ones).
_ROW_ITEMS = {"hol": ("hol", "vector"), "hol_jac": ("hol", "matrix"), "hol_t": ("hol", "vector"),
              "hol_vel": ("hol", "vector"), "hol_vel_q": ("hol", "matrix"), "hol_gamma": ("hol", "vector"),
              "hol_gtl_q": ("hol", "lam"), "nh_A": ("nh", "matrix"), "nh_b": ("nh", "vector"),
              "nh_vel": ("nh", "vector"), "nh_vel_q": ("nh", "matrix"), "nh_gamma": ("nh", "vector"),
              "nh_atl_q": ("nh", "lam")}


def _row_item(name, family, form):
    """``ConstraintSubset.<name>``: the base's item on the kept rows, with ``Model.<name>``'s signature."""
    def item(self, t, q, *args):
        base_item = getattr(self.base, name)
        if form == "lam":
            return base_item(t, q, *args[:-1], self._scatter(family, args[-1]))
        x = np.asarray(base_item(t, q, *args), dtype=float)
        rows = self.hol_rows if family == "hol" else self.nh_rows
        if form == "vector":
            return x.reshape(-1)[rows]
        return x.reshape(self.base.n_hol if family == "hol" else self.base.n_nonhol, self.n)[rows]
    item.__name__, item.__qualname__ = name, f"ConstraintSubset.{name}"
    item.__signature__ = inspect.signature(getattr(Model, name))
    return item


for _name, (_family, _form) in _ROW_ITEMS.items():
    setattr(ConstraintSubset, _name, _row_item(_name, _family, _form))


def independent_subset(model, t, q):
    """``model`` itself when [G; A] at (t, q) has full row rank, else a :class:`ConstraintSubset`
    through the rows that the kernels keep (pyint._validate.independent_rows)."""
    from .. import _validate as V
    c = V.constraint_matrix(model, t, q)
    rows = V.independent_rows(c)
    return model if rows.size == c.shape[0] else ConstraintSubset(model, rows)
