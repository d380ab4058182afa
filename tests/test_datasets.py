"""Dataset conventions (checked on a written file in a fresh reader), atomic writes, metric helpers."""
import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import pyint
from pyint.study import datasets
from pyint.study.datasets import (attr_value, check_conventions, load_netcdf, measured_order,
                                  remove_stale_temporaries, trajectory_dataset, write_netcdf)
from pyint.models import PendulumChain
from pyint.study import run_study
from pyint.studies.selftest import STUDY as SELFTEST, exact_position


@pytest.fixture(scope="module")
def quick_file(tmp_path_factory):
    return run_study(SELFTEST, out=tmp_path_factory.mktemp("quick"), quick=True, workers=1, figures=False,
                     verbose=False).path


def test_written_file_follows_the_conventions(quick_file):
    with xr.open_dataset(quick_file) as ds:  # a fresh reader: nothing from the writer's memory
        assert check_conventions(ds) == []
        assert set(ds.dims) == {"method", "h", "sample", "coord", "constraint_level"}
        assert ds["q"].dims == ("method", "h", "sample", "coord")
        assert ds["violation"].dims == ("method", "h", "sample", "constraint_level")
        assert list(ds["constraint_level"].values) == ["position", "velocity", "acceleration"]
        assert ds["time"].attrs["units"] == "s" and ds["h"].attrs["units"] == "s"
        assert ds["cpu_time"].attrs["units"] == "s" and ds["error"].attrs["units"] == "m"
        assert ds["eps_pos"].attrs["units"] == "m^2"  # g = (x^2 + y^2 - l^2)/2
        for name in ds.variables:
            assert ds[name].attrs["long_name"], name
        a = ds.attrs
        assert a["pyint_version"] == pyint.__version__ and a["study"] == "selftest"
        assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?|unknown", a["git_commit"])
        assert dt.datetime.fromisoformat(a["created"]).tzinfo is not None
        assert a["T"] == 1.0 and a["quick"] == 1 and a["n_cases"] == 6 and a["n_failed"] == 0
        assert json.loads(a["grid"]) == {"method": ["euler", "midpoint", "rk4"], "h": [0.04, 0.02]}
        assert json.loads(a["grid_dims"]) == ["method", "h"]
        assert set(ds["status"].values.ravel()) == {"ok"}


def test_select_case_gives_one_case_on_its_time_axis(quick_file):
    ds = load_netcdf(quick_file)
    case = datasets.select_case(ds, method="rk4", h=0.02)
    assert case["q"].dims == ("time", "coord") and case.sizes["time"] == 51  # T = 1, h = 0.02
    assert float(case["time"][-1]) == pytest.approx(1.0) and np.isfinite(case["q"]).all()
    with pytest.raises(ValueError, match=r"\['rho'\] are not dimensions"):
        datasets.select_case(ds, rho=0.5)


def test_check_conventions_finds_what_is_missing():
    ds = xr.Dataset({"x": ("time", [1.0, 2.0], {"units": "m"})}, coords={"time": [0.0, 1.0]},
                    attrs={"pyint_version": "0", "git_commit": "unknown", "created": "now", "opts": [1, 2]})
    problems = check_conventions(ds)
    assert "variable 'x' has no long_name" in problems
    assert "variable 'time' has no units" in problems
    assert "attribute 'study' is missing" in problems
    assert "attribute 'opts' is a list, not a scalar or string" in problems
    assert check_conventions(datasets.annotate(ds.assign_attrs(study="s", opts="[1, 2]"),
                                               {"x": ("m", "position")})) == []


def test_attribute_values_flatten_to_scalars_or_json():
    assert attr_value(True) == 1 and attr_value(np.float64(0.5)) == 0.5 and attr_value("a") == "a"
    assert attr_value(None) == "null"
    assert attr_value({"b": [1, 2], "a": np.int32(3)}) == '{"a": 3, "b": [1, 2]}'
    assert attr_value((0.1, "x")) == '[0.1, "x"]'
    with pytest.raises(ValueError, match="clashes"):
        datasets.provenance("s", {"created": 1})


# -- atomic writes --------------------------------------------------------------------------------
def _crash_inside_write(monkeypatch, only=""):
    """Make Dataset.to_netcdf (of files whose name starts with ``only``) write, cut the file in half
    and fail, as a crash in the middle of writing would."""
    real = xr.Dataset.to_netcdf

    def half_then_fail(self, path=None, *args, **kwargs):
        real(self, path, *args, **kwargs)
        if not os.path.basename(path).startswith(only):
            return None
        size = os.path.getsize(path)
        with open(path, "r+b") as fh:
            fh.truncate(size // 2)
        raise OSError("simulated crash while writing")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", half_then_fail)


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "out.nc"
    old = xr.Dataset({"x": ("i", np.arange(5.0))})
    write_netcdf(old, path)
    before = path.read_bytes()
    _crash_inside_write(monkeypatch)
    with pytest.raises(OSError, match="simulated crash"):
        write_netcdf(xr.Dataset({"x": ("i", np.arange(1000.0))}), path)
    with pytest.raises(OSError, match="simulated crash"):
        write_netcdf(old, tmp_path / "new.nc")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.nc"]
    monkeypatch.undo()
    xr.testing.assert_identical(load_netcdf(path), old)


def test_study_file_survives_a_crash_while_writing_and_the_rerun_finishes(tmp_path, monkeypatch):
    old = run_study(SELFTEST, out=tmp_path, quick=True, workers=1, figures=False, verbose=False)
    before = old.path.read_bytes()
    _crash_inside_write(monkeypatch, only="selftest.nc")  # the combined file, not the cached cases
    more = {"h": [0.04, 0.02, 0.01]}
    with pytest.raises(OSError, match="simulated crash"):
        run_study(SELFTEST, out=tmp_path, quick=True, grid=more, workers=1, figures=False, verbose=False)
    assert old.path.read_bytes() == before
    assert not list(tmp_path.rglob("*.tmp-*"))
    monkeypatch.undo()
    run = run_study(SELFTEST, out=tmp_path, quick=True, grid=more, workers=1, figures=False, verbose=False)
    assert (run.n_run, run.n_cached) == (0, 9)  # the new cases were cached before the crash
    assert load_netcdf(run.path)["error"].notnull().all() and load_netcdf(run.path).sizes["h"] == 3


def test_stale_temporaries_of_dead_writers_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    (tmp_path / f"a.nc.tmp-{dead}").write_bytes(b"half")
    (tmp_path / f"b.nc.tmp-{os.getpid()}").write_bytes(b"being written")
    assert remove_stale_temporaries(tmp_path) == 1
    assert [p.name for p in tmp_path.iterdir()] == [f"b.nc.tmp-{os.getpid()}"]


# -- helpers studies use --------------------------------------------------------------------------------
def test_measured_order_is_the_log_log_slope():
    h = np.array([0.1, 0.05, 0.025, 0.0125])
    err = xr.DataArray(np.stack([3 * h**2, 0.5 * h**4]), dims=("method", "h"), coords={"h": h})
    np.testing.assert_allclose(measured_order(err, "h").values, [2.0, 4.0], rtol=1e-12)
    err[0, 1] = np.nan  # a failed case is left out of the fit
    assert float(measured_order(err, "h")[0]) == pytest.approx(2.0, rel=1e-12)


def test_trajectory_dataset_on_the_exact_pendulum():
    """The closed-form motion keeps both constraint levels and the energy; a stretched one does not."""
    model = PendulumChain(1)
    t = np.linspace(0, 2, 201)
    q = exact_position(t, 1.0, 1.0, 9.81)
    dt_ = 1e-6  # velocities by central differences of the closed form: tangent to the circle to ~1e-10
    v = (exact_position(t + dt_, 1.0, 1.0, 9.81) - exact_position(t - dt_, 1.0, 1.0, 9.81)) / (2 * dt_)
    ds = trajectory_dataset(model, t, q, v)
    assert float(ds["eps_pos"]) < 1e-14 and float(ds["eps_vel"]) < 1e-8
    assert float(ds["energy_drift"]) < 1e-8
    assert "eps_acc" not in ds and np.isnan(ds["violation"].sel(constraint_level="acceleration")).all()
    stretched = trajectory_dataset(model, t, 1.01 * q, v)
    assert float(stretched["eps_pos"]) == pytest.approx((1.01**2 - 1) / 2, rel=1e-12)
    assert stretched["q"].attrs["units"] == "m" and list(stretched["coord"].values) == ["x1", "y1"]
    with pytest.raises(ValueError, match=r"q must have shape \(201, 2\)"):
        trajectory_dataset(model, t, q[:-1], v)


def test_docs_describe_every_standard_name():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "datasets.md").read_text()
    missing = [name for name in datasets.STANDARD if f"`{name}`" not in doc]
    assert not missing, f"docs/datasets.md does not describe {missing}"


# -- one trajectory schema: Result.to_xarray is the only producer --------------------------------
CORE = {"q", "v", "a", "lam", "violation", "eps_pos", "eps_vel", "eps_acc", "energy", "energy_error",
        "energy_drift"}


def _variable_problems(ds):
    return [p for p in check_conventions(ds) if not p.startswith("attribute")]   # provenance: the runner's


def _trajectories():
    import pyint.methods  # noqa: F401  (registers every method)
    from pyint import reference
    from pyint.integrator import METHODS
    from pyint.problems import PROBLEMS
    chain, top = PROBLEMS["chain2"], PROBLEMS["heavy_top"]
    q0, v0 = chain.initial_state
    yield "genalpha", METHODS["genalpha"]().integrate(chain.model, q0, v0, 0.2, 0.01, every=5).to_xarray()
    yield "ida", reference.solve(chain.model, [0.0, 0.1, 0.2], q0, v0, rtol=1e-8, cache_dir=False).to_xarray()
    tq, tv = top.initial_state
    yield "lie_genalpha", METHODS["lie_genalpha"]().integrate(top.model, tq, tv, 0.1, 0.01).to_xarray()
    model = PendulumChain(1)
    t = np.linspace(0, 1, 11)
    q = exact_position(t, 1.0, 1.0, 9.81)
    yield "given", trajectory_dataset(model, t, q, np.zeros_like(q), a=np.zeros_like(q), lam=np.zeros((11, 1)))


@pytest.mark.parametrize("name,ds", list(_trajectories()), ids=lambda x: x if isinstance(x, str) else "")
def test_every_trajectory_producer_writes_the_one_schema(name, ds):
    """An integrator's Result, an IDA reference, a Lie-group result and a trajectory computed outside
    pyint all come out of Result.to_xarray: the same names on the same dimensions, every variable with
    units and long_name (on ca04593: four producers, 'residual' vs 'violation', 'multiplier' vs
    'constraint', and Result.to_xarray failed the study schema)."""
    assert CORE <= set(ds.variables), (name, sorted(CORE - set(ds.variables)))
    assert _variable_problems(ds) == [], name
    assert ds["violation"].dims == ("time", "constraint_level") and ds["lam"].dims == ("time", "multiplier")
    assert list(ds["constraint_level"].values) == ["position", "velocity", "acceleration"]
    # the run maxima: over the samples, and over every step where the method tracks it (never less)
    for i, key in enumerate(("eps_pos", "eps_vel", "eps_acc")):
        assert float(ds[key]) >= float(ds["violation"].isel(constraint_level=i).max()), (name, key)
    assert "residual" not in ds


def test_lie_group_result_is_a_result_whose_x_r_v_are_views_of_q_and_v():
    """One Result: x, R (and V) of rigid bodies are views of q and v through the model's hook, and the
    dataset adds them through the model's one hook (dataset_variables)."""
    import pyint.methods  # noqa: F401
    from pyint.integrator import METHODS
    from pyint.problems import PROBLEMS
    from pyint.results import Result
    top = PROBLEMS["heavy_top"]
    r = METHODS["lie_dae3"]().integrate(top.model, *top.initial_state, 0.05, 0.01)
    assert type(r) is Result
    assert np.shares_memory(r.x, r.q) and np.shares_memory(r.R, r.q) and r.V is r.v
    x, rot = top.model.unpack(r.q[-1])
    np.testing.assert_array_equal(r.x[-1], x)
    np.testing.assert_array_equal(r.R[-1], rot)
    ds = r.to_xarray()
    assert ds["x"].dims == ("time", "body", "axis") and ds["R"].dims == ("time", "body", "row", "col")
    assert ds["v"].dims == ("time", "velocity") and ds.sizes["velocity"] == 6
    with pytest.raises(AttributeError, match="no attribute 'x'"):
        METHODS["genalpha"]().integrate(PendulumChain(1), *PendulumChain(1).initial_state([1.0]), 0.02, 0.01).x


def test_schema_check_names_what_breaks_the_trajectory_schema():
    """The runner's one check (annotate(strict=True), check_conventions) rejects a trajectory variable
    on the wrong dimensions, levels in another order, a run maximum on a time axis, the old 'residual'."""
    t = np.arange(3.0)
    bad = xr.Dataset(coords={"time": t, "constraint_level": ["velocity", "position", "acceleration"]})
    bad["violation"] = (("constraint_level", "time"), np.zeros((3, 3)))
    bad["residual"] = (("time", "constraint_level"), np.zeros((3, 3)))
    bad["eps_pos"] = ("time", np.zeros(3))
    bad["q"] = (("time",), np.zeros(3))
    problems = datasets.trajectory_schema_problems(bad)
    assert any("'violation' has dimensions" in p for p in problems)
    assert any("constraint_level is ['velocity'" in p for p in problems)
    assert any("'eps_pos' is a maximum over the run" in p for p in problems)
    assert any("'residual'" in p for p in problems)
    assert any("'q' has dimensions" in p for p in problems)
    with pytest.raises(ValueError, match="not pyint's trajectory schema"):
        datasets.annotate(bad, {"residual": ("1", "x")}, strict=True)


def test_result_to_dataframe_holds_every_time_series_by_component():
    """Result.to_dataframe: a row per sample, a column per component of each time series of
    to_xarray (the same values, exactly), units per column, maxima and attributes in attrs."""
    chain = PendulumChain(n_links=2)
    q0, v0 = chain.initial_state([0.3, 1.0])
    res = pyint.methods.METHODS["genalpha"]().integrate(chain, q0, v0, 0.2, 0.01, every=5)
    df = res.to_dataframe()
    names = list(chain.names())
    assert list(df.index) == list(res.t) and df.index.name == "time"
    np.testing.assert_array_equal(df[[f"q[{n}]" for n in names]].to_numpy(), res.q)
    np.testing.assert_array_equal(df[[f"v[{n}]" for n in names]].to_numpy(), res.v)
    np.testing.assert_array_equal(df["lam[hol2]"].to_numpy(), res.lam[:, 1])
    np.testing.assert_array_equal(df["violation[position]"].to_numpy(), res.level_residuals[:, 0])
    np.testing.assert_array_equal(df["energy"].to_numpy(), res.energy)
    assert df.attrs["units"]["energy"] == "J" and df.attrs["units"][f"q[{names[0]}]"] == "m"
    assert df.attrs["eps_pos"] == res.eps_pos and df.attrs["method"] == "genalpha" and df.attrs["status"] == "ok"
