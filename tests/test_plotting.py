"""Figures from files on a layout harder than the selftest's: three grid dims, mixed coordinate units,
no position level, a failed series."""
import numpy as np
import pytest
from matplotlib.image import imread

from pyint.study.datasets import load_netcdf
from pyint.study.plotting import _level_units, axis_label, plot_file
from pyint.study import run_study

import _studies


@pytest.fixture(scope="module")
def rolling(tmp_path_factory):
    return run_study(_studies.ROLLING, out=tmp_path_factory.mktemp("rolling"), workers=1, figures=False,
                     verbose=False).path


def test_generic_figures_of_a_three_parameter_study(rolling, tmp_path):
    paths = plot_file(rolling, tmp_path)
    assert sorted(p.name for p in paths) == ["constraint_violation.png", "energy_error.png", "error_vs_h.png",
                                             "trajectories.png", "violation_vs_h.png", "work_precision.png"]
    # the position level is NaN everywhere: two panels (velocity, acceleration), not three
    one_panel = imread(tmp_path / "energy_error.png").shape[1]
    assert imread(tmp_path / "constraint_violation.png").shape[1] < 1.5 * one_panel


def test_axis_labels_carry_the_units_of_the_file(rolling):
    ds = load_netcdf(rolling)
    assert axis_label(ds, "time") == "t [s]"
    assert axis_label(ds, "error") == "error [m]"
    assert axis_label(ds, "cpu_time") == "CPU time [s]"
    assert axis_label(ds, "q", short="theta", units="rad") == "theta [rad]"
    assert axis_label(ds, "eps_vel") == r"$\varepsilon(\dot\Phi)$ [g]/s"  # model units placeholder
    assert axis_label(ds, "energy_error") == r"$|\Delta H / H_0|$"  # dimensionless: no brackets
    assert axis_label(ds, "q", units="m^2") == "q [m$^{2}$]"
    assert _level_units("[g]/s^k", "acceleration") == "[g]/s^2" and _level_units("[g]/s^k", "position") == "[g]"


def test_failed_series_are_left_out_and_the_rest_fitted(rolling):
    ds = load_netcdf(rolling)
    assert (ds["status"].sel({"method": "b", "rho_inf": 0.5}) == "failed").all()
    assert str(ds["message"].sel({"method": "b", "rho_inf": 0.5, "h": 0.1}).values).startswith(
        "RuntimeError: Newton did not converge")
    assert np.isfinite(ds["error"].sel({"method": "a"})).all()
