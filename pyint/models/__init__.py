"""Models: one interface (:class:`Model`) consumed by every integrator and by the IDA reference.

Built-in models have a NumPy implementation here and a Fortran twin in
``fortran/models/`` (same name), so a whole trajectory runs in Fortran.  Also here: SO(3)
(:mod:`~pyint.models.so3`), rigid bodies on it (:mod:`~pyint.models.rigid_bodies`) and in unit
quaternions (:mod:`~pyint.models.rigid_quaternion`), natural coordinates
(:mod:`~pyint.models.natural`), the model argument block of every Fortran call
(:mod:`~pyint.models._fortran_model`) and the structured Newton-matrix solvers built on the
models' structured items (:mod:`~pyint.models.structured`).
"""
from .base import Model, CALLBACK_REQUESTS, fd_jacobian
from .anharmonic_chain import AnharmonicChain
from .pendulum_chain import PendulumChain
from .snakeboard import Snakeboard
from .snakeboard_coupled import SnakeboardCoupled
from .chaplygin_sleigh import ChaplyginSleigh
from .skate import Skate
from .driven_pendulum import DrivenPendulum
from .natural import NaturalModel, NaturalSystem
from .natural_mechanisms import parallelogram, two_link_manipulator
from .two_link_angles import TwoLinkAngles
from .symbolic import SymbolicModel, SymbolicModelError
from .rigid_quaternion import QuaternionRigidBodies  # rigid bodies in Euler parameters (the IDA reference of seed 001)

#: Built-in models by name (the Fortran twin has the same ``fortran_name``).
BUILTIN_MODELS = {
    "anharmonic_chain": AnharmonicChain,
    "pendulum_chain": PendulumChain,
    "snakeboard": Snakeboard,
    "snakeboard_coupled": SnakeboardCoupled,
    "chaplygin_sleigh": ChaplyginSleigh,
    "skate": Skate,
    "driven_pendulum": DrivenPendulum,
    "natural_system": NaturalModel,
    "two_link_angles": TwoLinkAngles,
}

__all__ = ["Model", "CALLBACK_REQUESTS", "fd_jacobian", "BUILTIN_MODELS", "AnharmonicChain", "PendulumChain"]
__all__ += ["Snakeboard", "SnakeboardCoupled", "ChaplyginSleigh", "Skate", "DrivenPendulum"]
__all__ += ["NaturalModel", "NaturalSystem", "parallelogram", "two_link_manipulator", "TwoLinkAngles", "QuaternionRigidBodies"]
__all__ += ["SymbolicModel", "SymbolicModelError"]
