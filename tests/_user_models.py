"""Models as a user writes them in Python (no Fortran twin: every item calls Python), for the tests
that run them in a subprocess (tests/test_faults.py, tests/test_faults_round3.py import this with
tests/ as the working directory)."""
import numpy as np

from pyint.models import Model


class Pendulum(Model):
    """A unit point mass on a rod of length 1 in Cartesian q = (x, y), g = 9.81 along -y."""

    name, n, n_hol = "pendulum", 2, 1

    def mass(self, q):
        return np.eye(2)

    def force(self, t, q, v):
        return np.array([0.0, -9.81])

    def hol(self, t, q):
        return np.array([0.5 * (q @ q - 1.0)])
