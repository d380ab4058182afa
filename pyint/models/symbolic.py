"""A model from SymPy expressions, compiled to Fortran: user models at built-in speed.

::

    import sympy as sp
    from pyint.models import SymbolicModel
    x, y, vx, vy, m, l, g = sp.symbols("x y vx vy m l g")
    model = SymbolicModel([x, y], [vx, vy], mass=sp.diag(m, m), potential=m * g * y,
                          hol=[(x**2 + y**2 - l**2) / 2], params={m: 1.0, l: 1.0, g: 9.81})

Every item of the model interface (pyint/models/base.py: mass, (M a)_q, f,
f_q, f_v, g, G, g_t, (G v + g_t)_q, hol_gamma, (G^T lam)_q, A, b,
(A v + b)_q, nh_gamma, (A^T lam)_q, energy) is derived exactly by SymPy
differentiation, with common subexpressions eliminated (sympy.cse), and serves
twice:

* as NumPy functions (sympy.lambdify): the Python path and the callback backend
  until the library below is loaded; from then on (a Fortran run, pyint.reference,
  or :meth:`compiled_ipar`) the Python items call the compiled routine through
  ctypes, so pyint.reference's residuals come from the same compiled items;
* as Fortran source, one ``bind(C)`` routine ``eval(req, t, q, v, w, rpar, out)``
  compiled once with gfortran into a shared library.  The kernels call that
  routine through procedure pointers (fortran/core/compiled_model.f90), so the
  whole time loop stays in Fortran, and the Newton matrix is assembled from
  each item's structural nonzeros.

Parameters (``params``) are runtime inputs (``rpar``): :meth:`with_params`
returns the same model with other values and never recompiles.

The cache.  A compiled library lives in ``$PYINT_MODEL_CACHE`` (default
``~/.cache/pyint/models``) as ``<key>.so`` next to its source ``<key>.f90``;
the key is a hash of the generated source, the compiler's version and the flags
(so the same model written with other symbol names shares one library).  Files
are written to a temporary name and renamed, so a concurrent process never sees
half a file; a library that does not carry its key (stale or corrupt) is rebuilt.
``<input key>.json`` maps a hash of the model's expressions to the library's
key and sparsity patterns: a model loaded from the cache is not derived again
(its NumPy items are derived on first use).
The compiler is ``$PYINT_FC`` or ``$FC`` or ``gfortran``.
"""
from __future__ import annotations

import ctypes
import hashlib
import inspect
import json
import os
import subprocess
import tempfile
import threading

import numpy as np

from .base import CALLBACK_REQUESTS, Model

#: model_id of a compiled model in the Fortran API (fortran/core/compiled_model.f90).
COMPILED_MODEL_ID = 1000
#: Matrix items, in the order of their sparsity patterns in ipar (MAT_REQ there).
MATRIX_ITEMS = ("mass", "mass_dq", "force", "hol", "hol_jac", "hol_t", "hol_jac_t", "hol_tt", "hol_vel_q", "hol_gamma",
          "hol_gtl_q", "nh_A", "nh_b", "nh_vel_q", "nh_dt", "nh_gamma", "nh_atl_q", "energy")
#: Model's argument names -> SymbolicModel._eval's (a, lam: the vector w of the contractions).
_EVAL_ARGUMENT = {"t": "t", "q": "q", "v": "v", "a": "w", "lam": "w"}


def _item_method(name):
    """``SymbolicModel.<name>``: its item evaluated, with the arguments of ``Model.<name>``."""
    signature = inspect.signature(getattr(Model, name))
    keys = [_EVAL_ARGUMENT[k] for k in list(signature.parameters)[1:]]

    def item(self, *args, **kwargs):
        return self._eval(name, **dict(zip(keys, args)), **{_EVAL_ARGUMENT[k]: x for k, x in kwargs.items()})
    item.__name__, item.__qualname__, item.__signature__ = name, f"SymbolicModel.{name}", signature
    item.__doc__ = f"The item {name} of the model's expressions (compiled once the library is loaded)."
    return item


for _name in _ITEMS:
    setattr(SymbolicModel, _name, _item_method(_name))
