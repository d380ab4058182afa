"""The seed-003 study: a case, the combined file, its tables and figures (small grid)."""
import numpy as np
import xarray as xr

from pyint.studies import direction_vector_block as study


def test_cases_combine_and_redraw_from_file(tmp_path):
    grid = {"method": ["block_legendre", "rk4_index1"], "formulation": ["dae", "ode"], "h": [0.0075], "T": [1.0]}
    assert list(study._cases(grid)) == []          # h = 0.0075 is not an order-study step
    grid["h"] = [0.02, 0.01]
    cases = list(study._cases(grid))
    assert len(cases) == 8                         # 2 methods x 2 formulations x 2 steps
    results = [(p, study.run_case(p)) for p in cases]
    ds = study.add_derived(study._combine(results, grid))
    path = tmp_path / "dvb.nc"
    ds.to_netcdf(path)
    back = xr.open_dataset(path)
    for name, var in back.variables.items():
        assert "units" in var.attrs and "long_name" in var.attrs, name
    e = back["error"].sel({"method": "block_legendre", "formulation": "dae", "T": 1.0}).values
    assert np.all(np.isfinite(e)) and e[0] > 20 * e[1]                  # order 5: 2^5 = 32
    acc = back["eps_acc"].sel({"method": "block_legendre", "formulation": "dae"}).values
    assert np.nanmax(acc) <= 1e-12
    assert np.isnan(back["eps_acc"].sel({"formulation": "ode"}).values).all()   # no constraints in (14)
    assert str(back["status"].sel({"method": "rk4_index1", "formulation": "dae", "h": 0.02, "T": 1.0}).values) == "ok"
    text = study.summary(back)
    assert "Table 1" in text and "Table 6" in text and "Imaginary-axis stability" in text
    pngs = study.figures(path, tmp_path / "figs")
    assert {p.name for p in pngs} == {"order_dae.png", "stability_imaginary_axis.png"}   # no T = 10 cases here
    assert all(p.stat().st_size > 1000 for p in pngs)
    back.close()


def test_kept_cases():
    keep = study.keep_case
    assert keep({"method": "block_uniform_rk", "formulation": "dae", "h": 0.01, "T": 100.0})
    assert not keep({"method": "block_uniform_rk", "formulation": "ode", "h": 0.01, "T": 100.0})
    assert keep({"method": "rk4_index1", "formulation": "dae", "h": 0.04, "T": 10.0})
    assert not keep({"method": "rk4_index1", "formulation": "dae", "h": 0.00125, "T": 10.0})
    assert keep({"method": "block_legendre", "formulation": "dae", "h": 0.01, "T": 50.0})
    assert not keep({"method": "block_legendre", "formulation": "dae", "h": 0.005, "T": 50.0})
