import os

import numpy as np
import pytest

import pyint
from pyint.models import BUILTIN_MODELS


def pytest_report_header(config):
    import os
    return (f"pyint {pyint.__version__} from {pyint.__file__}; "
            f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(auto-detected)')}")


#: Modules whose tests are numerically sensitive (orders, agreement with references,
#: coefficients, invariants, twin models): ./dev.sh test runs them a second time under
#: another OpenBLAS kernel (marker "numerics"), since NumPy/SciPy round differently there.
NUMERIC_MODULES = {
    "test_methods", "test_reference", "test_lie_ida_reference", "test_block", "test_genalpha",
    "test_symplectic", "test_galerkin", "test_liegroup", "test_natural", "test_builtin_models",
    "test_structured", "test_models", "test_symbolic", "test_newton", "test_convergence",
    "test_reference_estimate", "test_callback_bundle", "test_symbolic_property", "test_adaptive",
    "test_mechanics_bridge", "test_symbolic_nonsmooth",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.stem in NUMERIC_MODULES:
            item.add_marker(pytest.mark.numerics)


def builtin_examples():
    """One representative instance of every built-in model (the shared model list)."""
    return [cls.example() if hasattr(cls, "example") else cls() for cls in BUILTIN_MODELS.values()]


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)


@pytest.fixture(scope="module")
def fresh_model_cache(tmp_path_factory):
    """SymbolicModel compilations of one test module go to a fresh cache directory
    (PYINT_MODEL_CACHE), not the user's ~/.cache/pyint/models."""
    old = os.environ.get("PYINT_MODEL_CACHE")
    os.environ["PYINT_MODEL_CACHE"] = str(tmp_path_factory.mktemp("model_cache"))
    yield
    if old is None:
        del os.environ["PYINT_MODEL_CACHE"]
    else:
        os.environ["PYINT_MODEL_CACHE"] = old
