"""pyint.convergence: the one order fit (the shared order tests in test_methods.py use it)."""
import numpy as np

from pyint.convergence import fit_order


def test_fit_order_is_the_log_log_slope_and_leaves_out_what_cannot_be_fitted():
    h = 0.1 / 2.0 ** np.arange(5)
    err = np.column_stack([3 * h**2, 0.5 * h**4])
    np.testing.assert_allclose(fit_order(h, err), [2.0, 4.0], rtol=1e-12)
    e = 3 * h**2
    e[1], e[3] = np.nan, 0.0                       # a failed run and an exact one: left out
    assert abs(fit_order(h, e) - 2.0) <= 1e-12
    e = 3 * h**2
    e[-2:] = 1e-20                                 # below the floor: left out
    assert abs(fit_order(h, e, floor=1e-15) - 2.0) <= 1e-12
    assert np.isnan(fit_order(h, e, floor=1e-15, min_points=4))
    assert np.isnan(fit_order(h, [1.0, 0.0, np.inf, -1.0, np.nan]))
