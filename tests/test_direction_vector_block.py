"""The seed-003 study through the runner: cases, the combined file, its tables and figures (small grid)."""
import numpy as np
import xarray as xr

from pyint.study.datasets import check_conventions
from pyint.study import run_study
from pyint.studies import direction_vector_block as study


def test_small_grid_through_the_runner(tmp_path):
    grid = {"method": ["block_legendre", "rk4_index1"], "formulation": ["dae", "ode"], "h": [0.02, 0.01, 0.0075],
            "T": [1.0]}
    run = run_study(study.STUDY, out=tmp_path, grid=grid, workers=1, verbose=False)
    ds = xr.open_dataset(run.path)
    assert check_conventions(ds) == []
    assert run.n_cases == 12 and int((ds["status"] == "skipped").sum()) == 4    # h = 0.0075 is no order step
    e = ds["error"].sel({"method": "block_legendre", "formulation": "dae", "T": 1.0}).values
    assert np.all(np.isfinite(e[:2])) and e[0] > 20 * e[1]                    # order 5: 2^5 = 32
    acc = ds["eps_acc"].sel({"method": "block_legendre", "formulation": "dae"}).values
    assert np.nanmax(acc) <= 1e-12
    assert np.isnan(ds["eps_acc"].sel({"formulation": "ode"}).values).all()   # eq. (14) has no constraints
    text = study.summary(ds)
    assert "Table 1" in text and "Table 6" in text and "Imaginary-axis stability" in text
    assert {p.name for p in run.figures} >= {"order_dae.png", "stability_imaginary_axis.png"}
    ds.close()


def test_kept_cases():
    keep = study.keep_case
    assert keep({"method": "block_uniform_rk", "formulation": "dae", "h": 0.01, "T": 100.0})
    assert not keep({"method": "block_uniform_rk", "formulation": "ode", "h": 0.01, "T": 100.0})
    assert keep({"method": "rk4_index1", "formulation": "dae", "h": 0.04, "T": 10.0})
    assert not keep({"method": "rk4_index1", "formulation": "dae", "h": 0.00125, "T": 10.0})
    assert keep({"method": "block_legendre", "formulation": "dae", "h": 0.01, "T": 50.0})
    assert not keep({"method": "block_legendre", "formulation": "dae", "h": 0.005, "T": 50.0})
