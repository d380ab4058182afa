"""Validation of model parameters: one clear error naming the bad one.

Thin names over :mod:`pyint._validate` (the one validator of pyint), in the
order (name, value) the model constructors read best in.
"""
from __future__ import annotations

import numpy as np

from .. import _validate as V


def real(name, value):
    """``value`` as a finite float, or ValueError (TypeError if not a number) naming ``name``."""
    return V.as_real(value, name)


def positive(name, value):
    """``value`` as a finite float > 0, or ValueError naming ``name``."""
    return V.as_real(value, name, positive=True)


def nonnegative(name, value):
    """``value`` as a finite float >= 0, or ValueError naming ``name``."""
    return V.as_real(value, name, lo=0.0)


def integer(name, value, minimum=1):
    """``value`` as an int >= ``minimum`` (2.7 or "3" are refused, not truncated), naming ``name``."""
    return V.as_int(value, name, minimum=minimum)


def positive_array(name, value, n):
    """``value`` (a scalar or n values) as n finite floats > 0, or ValueError naming ``name``."""
    arr = np.asarray(value)
    if arr.ndim == 0:
        arr = np.full(n, positive(name, arr))
    arr = V.as_vector(arr, n, name)
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be > 0, got {arr.tolist()}")
    return arr


def vector(name, value, n):
    """``value`` as n finite floats, or ValueError naming ``name``."""
    if np.shape(value) != (n,):
        raise ValueError(f"{name} must be a finite vector of length {n}, got {value!r}")
    return V.as_vector(value, n, name)
