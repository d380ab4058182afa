"""pyint: integrators for constrained multibody systems, with Fortran kernels.

The layers, each importing only those below it:

* :mod:`pyint.models` -- the systems (one :class:`~pyint.models.Model` interface, built-in
  models with Fortran twins, rigid bodies on SO(3), natural coordinates, symbolic models);
* :mod:`pyint.methods` -- the integrators, one module per method family
  (``pyint/methods/<family>.py`` wraps ``fortran/<family>.f90``), the Lie-group ones in
  :mod:`pyint.methods.lie`; importing :mod:`pyint.methods` registers them all (``METHODS``);
* :mod:`pyint.reference` -- reference solutions independent of the methods (SUNDIALS IDA,
  DOP853 on the index-1 form, the quaternion form of rigid bodies);
* :mod:`pyint.study` -- parameter sweeps: declaration, execution, cache, combining, datasets,
  figures; :mod:`pyint.cli` (the ``pyint`` command) on top finds the studies.

The classes a user needs are importable from here: ``from pyint import GeneralizedAlpha, PendulumChain``.
"""
from importlib.metadata import version as _version, PackageNotFoundError

try:
    __version__ = _version("pyint")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0+unknown"

try:
    from . import _fortran  # noqa: F401  (the compiled kernels exist only in the installed package)
except ImportError as _exc:
    import os as _os
    _here = _os.path.dirname(_os.path.abspath(__file__))
    if _os.path.exists(_os.path.join(_here, "..", "meson.build")):   # a checkout's source tree
        raise ImportError(
            f"pyint was imported from the source tree {_here}, which has no compiled kernels "
            "(pyint._fortran exists only in the installed package): install pyint with ./dev.sh setup "
            "and run Python from another directory than the checkout's root (or with python -P, which "
            "leaves the current directory off sys.path)") from _exc
    raise ImportError(f"pyint's compiled kernels (pyint._fortran) cannot be imported from {_here}: {_exc}; "
                      "rebuild and reinstall pyint (./dev.sh setup)") from _exc
from .errors import (IntegrationError, Interrupted, LapackError, NewtonConvergenceError, NonFiniteError,
                     SingularMatrixError, SingularPositionError, StepTooLargeError)
from .integrator import Integrator
from .methods import METHODS
from .methods.baumgarte import BaumgarteRK4
from .methods.block import BlockMethod
from .methods.galerkin import GalerkinLobatto
from .methods.genalpha import AlphaRattle, GeneralizedAlpha
from .methods.lie.backward import LieDAE1, LieDAE2, LieDAE3, LieDAES
from .methods.lie.genalpha import LieGeneralizedAlpha, LieGeneralizedAlphaStab2
from .methods.rk4_index1 import RK4Index1
from .methods.symplectic import ExplicitMidpointComposition, LobattoIIIAB, Rattle, SymplecticComposition
from .models import (BUILTIN_MODELS, AnharmonicChain, ChaplyginSleigh, DrivenPendulum, Model, NaturalModel,
                     NaturalSystem, PendulumChain, QuaternionRigidBodies, Skate, Snakeboard, SnakeboardCoupled,
                     SymbolicModel, TwoLinkAngles, two_link_manipulator)
from .results import Result

__all__ = ["IntegrationError", "Interrupted", "LapackError", "NewtonConvergenceError", "NonFiniteError",
           "SingularMatrixError", "SingularPositionError", "StepTooLargeError", "Integrator", "METHODS", "BaumgarteRK4", "BlockMethod", "GalerkinLobatto",
           "AlphaRattle", "GeneralizedAlpha", "LieDAE1", "LieDAE2", "LieDAE3", "LieDAES", "LieGeneralizedAlpha",
           "LieGeneralizedAlphaStab2", "RK4Index1", "ExplicitMidpointComposition", "LobattoIIIAB", "Rattle",
           "SymplecticComposition", "BUILTIN_MODELS", "AnharmonicChain", "ChaplyginSleigh", "DrivenPendulum",
           "Model", "NaturalModel", "NaturalSystem", "PendulumChain", "QuaternionRigidBodies", "Skate", "Snakeboard",
           "SnakeboardCoupled", "SymbolicModel", "TwoLinkAngles", "two_link_manipulator", "Result"]
