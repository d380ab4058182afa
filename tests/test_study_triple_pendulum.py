"""The seed-002 study module: one small case end to end (dataset conventions, file, figures)."""
import numpy as np
import xarray as xr

from pyint.studies import triple_pendulum_symplectic as study


def test_small_case_file_and_figures(tmp_path):
    cases = [study.run_case({"method": m, "t_long": 24.0, "every_long": 2, "n_h": 2})
             for m in ("rattle", "baumgarte_rk4")]
    ds = xr.concat(cases, dim="method", data_vars="all", combine_attrs="drop_conflicts")
    path = tmp_path / "tp.nc"
    study.write_netcdf(ds, path)
    assert not list(tmp_path.glob("*.tmp-*"))
    with xr.open_dataset(path) as back:
        for name, var in back.data_vars.items():
            assert "long_name" in var.attrs, name
            if var.dtype.kind == "f":
                assert "units" in var.attrs, name
        r = back.sel({"method": "rattle"})
        b = back.sel({"method": "baumgarte_rk4"})
        assert float(r.eps_pos) <= 1e-13 and float(r.eps_vel) <= 1e-13
        assert 2.7e-2 <= float(r.energy_error_max) <= 3.1e-2
        assert float(b.eps_pos) >= 1e-6
        assert back.sizes["time"] == 501 and back.sizes["time_long"] == 101 and back.sizes["h"] == 2
        assert np.all(np.isfinite(back.error_q.values))
        text = study.summary(back)
    assert "rattle" in text and "baumgarte_rk4" in text
    pngs = study.figures(path, tmp_path / "fig")
    assert len(pngs) == 5 and all(p.stat().st_size > 10_000 for p in pngs)
