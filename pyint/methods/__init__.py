"""Every integrator of pyint, by name: importing this package registers them all.

One module per method family (``pyint/methods/<family>.py``, wrapping
``fortran/<family>.f90``); the Lie-group methods in :mod:`pyint.methods.lie`.
``METHODS`` maps the registry name to the class; the shared tests
(tests/test_methods.py) run every entry.  Add one import line per method
module below.
"""
from ..integrator import METHODS  # noqa: F401

from . import genalpha  # noqa: F401  generalized-alpha, alpha-RATTLE (seed 000)
from . import galerkin  # noqa: F401  Galerkin-Lobatto variational integrator, s = 1..4 registered (seed 004)
from . import lie  # noqa: F401  Lie-group methods: backward differences (seed 001), generalized-alpha
from . import symplectic  # noqa: F401  seed-002 composition (Gauss-Legendre), RATTLE, Lobatto IIIA-IIIB
from . import baumgarte  # noqa: F401  Baumgarte-stabilized RK4 (seed 002 baseline)
from . import rk4_index1  # noqa: F401  classical RK4 on the index-1 form (seed 003 baseline)
from . import block  # noqa: F401  multistep block methods (seed 003)
