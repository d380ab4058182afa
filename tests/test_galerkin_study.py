"""The seed-004 study: cases are datasets with units, the combined file redraws the figures."""
import json

import numpy as np
import xarray as xr

from pyint.study import run_study
from pyint.studies import galerkin_nonholonomic as study


def test_cases_combine_write_and_redraw(tmp_path):
    runs = ("skate_long", "sb_locked_pi8_s1", "sb_locked_pi8_s1_spec")
    cases = {run: study.run_case({"run": run, "short": True}) for run in runs}
    d = cases["skate_long"]
    assert float(d["run_T"]) == study.QUICK_T and str(d["status"].values) == "ok"
    assert float(d["eps_vel"]) <= 1e-15 * float(d["state_scale"])
    assert np.nanmax(np.abs(d["energy_error"])) < 1e-4            # s = 3, eta = 1/8: ~3e-5
    run = run_study(study.STUDY, out=tmp_path, grid={"run": list(runs)}, quick=True, workers=1,
                    figures=False, verbose=False)
    path = run.path
    ds = xr.open_dataset(path)
    assert json.loads(ds.attrs["runs"])["skate_long"]["s"] == study.RUNS["skate_long"]["s"]
    assert np.array_equal(ds["energy_error"].sel(run="skate_long").dropna("sample").values,
                          d["energy_error"].values)
    for name, var in {**ds.data_vars, **ds.coords}.items():
        assert "units" in var.attrs and "long_name" in var.attrs, name
    assert list(ds["run"].values) == list(runs)
    assert list(ds["run_variant"].values) == ["reduced", "reduced", "spec"]
    # locked steering, s = 1, eta = 1/2, T = 40: "reduced" stays on a circle (O(eta^2) radius error),
    # "spec" leaves it (spurious reversals)
    dev = np.abs(ds["circle_deviation"]).max("sample")
    assert float(dev.sel(run="sb_locked_pi8_s1")) < 0.2 < float(dev.sel(run="sb_locked_pi8_s1_spec"))
    pngs = study.figures(path, tmp_path / "fig")
    assert {p.name for p in pngs} == {"fig2_skate_long.png", "fig3b_locked_steering.png", "fig4_constraints_s1.png"}
    assert all(p.stat().st_size > 10_000 for p in pngs)
    assert "sb_locked_pi8_s1" in study.summary(ds)
    ds.close()


def test_fitted_slopes_ignore_round_off():
    etas = 2.0 ** -np.arange(1, 6)
    err = np.array([etas ** 4, np.maximum(etas ** 8, 1e-14)])
    slope, npts = study.fitted_slopes(etas, err)
    assert abs(slope[0] - 4) < 1e-12 and npts[0] == 5
    assert abs(slope[1] - 8) < 1e-12 and npts[1] == 4      # 2^-40 < 1e-12 is dropped
