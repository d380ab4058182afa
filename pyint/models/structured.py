"""Structured linear algebra of the kernels (fortran/core/newton_matrix.f90).

The Newton matrix of an implicit step is assembled through the model's
structured hooks (``fortran/core/model.f90``: ``add_qq``, ``add_hol_jac``, ...),
its pattern recorded once per trajectory, and factored by one of

* ``"dense"``  LAPACK LU of the full matrix;
* ``"banded"`` LAPACK band LU after a reverse Cuthill-McKee ordering;
* ``"sparse"`` SuiteSparse KLU (fill-reducing ordering once, refactorization per call);

``"auto"`` picks KLU when pyint was built with it (dense LU for a matrix of
more than 40 unknowns with over 30 % nonzeros), else banded when its flop
count is below half the dense one, else dense.  This module holds the names, the
availability check, the O(nnz) consistent acceleration of built-in models,
and a COO solve used by the tests.
"""
from __future__ import annotations

import numpy as np

from .. import _fortran
from ._fortran_model import QueryFailed, model_query

#: Solver names and their codes in the kernels.
LINEAR_SOLVERS = {"auto": 0, "dense": 1, "banded": 2, "sparse": 3}
SOLVER_NAMES = {v: k for k, v in LINEAR_SOLVERS.items()}


def sparse_solver_available():
    """True when pyint was built with SuiteSparse KLU (linear_solver="sparse")."""
    return bool(_fortran.sparse_solver_available())


def check_linear_solver(name):
    """Validate a ``linear_solver`` option; returns its kernel code."""
    if name not in LINEAR_SOLVERS:
        raise ValueError(f"linear_solver must be one of {sorted(LINEAR_SOLVERS)}, got {name!r}")
    if name == "sparse" and not sparse_solver_available():
        raise ValueError("linear_solver='sparse' needs SuiteSparse KLU, which this build of pyint lacks "
                         "(install libsuitesparse-dev and rebuild)")
    return LINEAR_SOLVERS[name]


def consistent_acceleration(model, t, q, v, backend="auto", linear_solver="auto"):
    """(a, lam_h, lam_n) at (t, q, v) from the index-1 system, solved in Fortran.

    For a built-in model the system is assembled through its structured hooks
    (O(nnz) for the pendulum chain, where ``Model.consistent_acceleration``
    forms and factors the dense (n + m)^2 matrix).  Other models use
    ``model.consistent_acceleration``.
    """
    if model.fortran_name is None or backend == "callback":
        return model.consistent_acceleration(t, q, v)
    mh, mn = model.n_hol, model.n_nonhol
    try:
        a, lh, ln = model_query(model, "consistent_acceleration", [t, q, v], [(model.n,), (mh,), (mn,)],
                                [check_linear_solver(linear_solver)], backend)
    except QueryFailed as e:
        if e.ierr != 1:
            raise
        raise ValueError(f"the index-1 system of {model.name!r} is singular at t={t}: "
                         "redundant or degenerate constraints") from None
    return a, lh, ln


def solve_coo(nx, rows, cols, vals, b, linear_solver="auto"):
    """Solve A x = b, A given in coordinate form (0-based, duplicates add up),
    with one of the kernels' solvers.  Returns (x, info) with info a dict:
    solver used, band (kl, ku) after RCM, pattern nnz.  For tests and checks."""
    rows = np.asarray(rows, dtype=np.int32) + 1
    cols = np.asarray(cols, dtype=np.int32) + 1
    x = np.array(b, dtype=float)
    if x.shape != (nx,):
        raise ValueError(f"b must have shape ({nx},), got {x.shape}")
    info = _fortran.newton_matrix_solve(rows, cols, np.asarray(vals, dtype=float),
                                        check_linear_solver(linear_solver), x)
    if info[0] == 1:
        raise np.linalg.LinAlgError("singular matrix")
    if info[0] != 0:
        raise RuntimeError(f"newton_matrix_solve failed (info={info.tolist()})")
    return x, {"linear_solver": SOLVER_NAMES[int(info[1])], "band_lower": int(info[2]),
               "band_upper": int(info[3]), "nnz": int(info[4])}
