"""The method registry: every registered method by name (:data:`METHODS`, what the shared tests,
``integrate_batch`` and the studies enumerate) and the decorator that fills it."""
from __future__ import annotations

from . import _fortran

#: Every registered method by name: ``METHODS["genalpha"]`` is :class:`GeneralizedAlpha` (the
#: name is the ``method`` of results and datasets); every registered method is in the shared test list.
METHODS: dict[str, type] = {}


def register(cls):
    """Add ``cls`` to :data:`METHODS` under ``cls.name`` (a class decorator).  Refused with a
    ValueError: a name another class holds, and a ``KERNEL`` that is no stepper of pyint's Fortran
    library (no stepper for its id in seam/seam.toml)."""
    if not isinstance(cls.name, str) or not cls.name:
        raise ValueError(f"{cls.__qualname__}: a method needs a name (the class attribute 'name')")
    if METHODS.get(cls.name, cls) is not cls:
        held = METHODS[cls.name]
        raise ValueError(f"{cls.__qualname__}: the method name {cls.name!r} is taken by "
                         f"{held.__module__}.{held.__qualname__}")
    if isinstance(cls.KERNEL, bool) or not isinstance(cls.KERNEL, int) or not _fortran.method_known(cls.KERNEL):
        raise ValueError(f"{cls.__qualname__}: KERNEL = {cls.KERNEL} is no stepper of pyint's Fortran "
                         "library (seam/seam.toml describes no method with that id)")
    METHODS[cls.name] = cls
    return cls
