import numpy as np
import pytest

import pyint
from pyint.models import BUILTIN_MODELS


def pytest_report_header(config):
    return f"pyint {pyint.__version__} from {pyint.__file__}"


def builtin_examples():
    """One representative instance of every built-in model (the shared model list)."""
    return [cls.example() if hasattr(cls, "example") else cls() for cls in BUILTIN_MODELS.values()]


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)
