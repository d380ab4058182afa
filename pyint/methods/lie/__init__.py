"""The Lie-group methods: rigid bodies with configuration (x, R) in R^3 x SO(3) (seed 001);
importing this package registers them."""
from . import backward  # noqa: F401  Lie-group DAE1/DAE2/DAE3/DAES, backward differences (seed 001)
from . import genalpha  # noqa: F401  Lie-group generalized-alpha, index 3 and stabilized index 2
