"""Every integrator of pyint, by name: importing this module registers them all.

``METHODS`` maps the registry name to the class; the shared tests
(tests/test_methods.py) run every entry.  Add one import line per method
module below.
"""
from .integrator import METHODS  # noqa: F401

from . import genalpha  # noqa: F401  generalized-alpha, alpha-RATTLE (seed 000)
from . import galerkin  # noqa: F401  Galerkin-Lobatto variational integrator, s = 1..4 registered (seed 004)
from . import lie_backward  # noqa: F401  Lie-group DAE1/DAE2/DAE3/DAES, backward differences (seed 001)
from . import lie_genalpha  # noqa: F401  Lie-group generalized-alpha, index 3 and stabilized index 2
