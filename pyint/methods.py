"""Every integrator of pyint, by name: importing this module registers them all.

``METHODS`` maps the registry name to the class; the shared tests
(tests/test_methods.py) run every entry.  Add one import line per method
module below.
"""
from .integrator import METHODS  # noqa: F401

from . import genalpha  # noqa: F401  generalized-alpha, alpha-RATTLE (seed 000)
from . import rk4_index1  # noqa: F401  classical RK4 on the index-1 form (seed 003 baseline)
from . import block  # noqa: F401  multistep block methods (seed 003)
