"""Models: one interface (:class:`Model`) consumed by every integrator and by the IDA reference.

Built-in models have a NumPy implementation here and a Fortran twin in
``fortran/models/`` (same name), so a whole trajectory runs in Fortran.
"""
from .base import Model, CALLBACK_REQUESTS, fd_jacobian
from .anharmonic_chain import AnharmonicChain
from .pendulum_chain import PendulumChain

#: Built-in models by name (the Fortran twin has the same ``fortran_name``).
BUILTIN_MODELS = {
    "anharmonic_chain": AnharmonicChain,
    "pendulum_chain": PendulumChain,
}

__all__ = ["Model", "CALLBACK_REQUESTS", "fd_jacobian", "BUILTIN_MODELS", "PendulumChain"]
