"""Validation of model parameters: one clear ValueError naming the bad one."""
from __future__ import annotations

import numpy as np


def real(name, value):
    """``value`` as a finite float, or ValueError naming ``name``."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {value!r}") from None
    if not np.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    return x


def positive(name, value):
    """``value`` as a finite float > 0, or ValueError naming ``name``."""
    x = real(name, value)
    if x <= 0:
        raise ValueError(f"{name} must be > 0, got {x}")
    return x


def nonnegative(name, value):
    """``value`` as a finite float >= 0, or ValueError naming ``name``."""
    x = real(name, value)
    if x < 0:
        raise ValueError(f"{name} must be >= 0, got {x}")
    return x
