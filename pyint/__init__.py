"""pyint: integrators for constrained multibody systems, with Fortran kernels.

Every method has one Fortran kernel (``fortran/<method>.f90``) and one Python
class (``pyint/<method>.py``) of the same name; see the README's method table.
"""
from importlib.metadata import version as _version, PackageNotFoundError

try:
    __version__ = _version("pyint")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0+unknown"

from . import _fortran  # noqa: F401  (fails loudly if the kernels were not built)
