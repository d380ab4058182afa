"""The study runner: local processes == Dask == in-process, cache and resume, failures, combining."""
import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from pyint.study import Study, cache, run_study, runner
from pyint.study.combine import combine_cases
from pyint.study.datasets import load_netcdf
from pyint.study.runner import Progress
from pyint.studies.selftest import STUDY as SELFTEST, METHODS

import _studies

TESTS = Path(__file__).resolve().parent
FAILING_H = 0.3  # does not divide T = 2: the selftest case raises ValueError (bad parameters)
GRID = {"h": [0.04, 0.02, 0.01, 0.005, FAILING_H]}  # 3 methods x 5 h = 15 cases, 3 failing


def comparable(ds):
    """The dataset without what legitimately differs between runs: CPU times and the creation date."""
    ds = ds.drop_vars([v for v in ("cpu_time",) if v in ds])
    ds.attrs = {k: v for k, v in ds.attrs.items() if k != "created"}
    return ds


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as c:
        yield c


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """The selftest sweep on two local worker processes."""
    return run_study(SELFTEST, out=tmp_path_factory.mktemp("local"), grid=GRID, workers=2,
                     figures=False, progress=False)


def test_dask_cluster_gives_the_same_dataset_as_local_processes(local_run, cluster, tmp_path):
    run = run_study(SELFTEST, out=tmp_path, grid=GRID, scheduler=cluster.scheduler_address,
                    figures=False, progress=False)
    assert run.n_cases == 15 and run.n_run == 15 and run.n_failed == 3
    assert dict(run.dataset.sizes)["method"] == 3 and dict(run.dataset.sizes)["h"] == 5
    a, b = comparable(load_netcdf(local_run.path)), comparable(load_netcdf(run.path))
    xr.testing.assert_identical(a, b)
    assert np.isfinite(run.dataset["cpu_time"].sel(h=0.005)).all()


def test_failed_case_is_recorded_and_the_others_are_complete(local_run):
    ds = load_netcdf(local_run.path)
    status = ds["status"].to_series()
    assert (status.xs(FAILING_H, level="h") == "failed").all()
    assert (status.drop(FAILING_H, level="h") == "ok").all()
    msg = str(ds["message"].sel({"method": "rk4", "h": FAILING_H}).values)  # sel(method=...) is not a dim
    assert msg.startswith("ValueError: h=0.3 does not divide T=2.0")
    ok = ds.drop_sel(h=FAILING_H)
    for name in ("error", "eps_pos", "eps_vel", "eps_acc", "energy_drift", "cpu_time", "n_steps"):
        assert np.isfinite(ok[name]).all(), name
        assert np.isnan(ds[name].sel(h=FAILING_H)).all(), name
    assert (ok["message"] == "").all()
    # the time series of a complete case reach T, padded with NaN only after its end
    t = ok["time"].sel({"method": "euler", "h": 0.04}).values
    assert t[0] == 0 and np.nanmax(t) == pytest.approx(2.0) and np.isfinite(t).sum() == 51


def test_measured_orders_of_the_selftest_methods(local_run):
    """Orders 1, 2, 4 fitted over four halvings of h (failed cases left out)."""
    order = load_netcdf(local_run.path)["order"]
    for name, (_, p) in METHODS.items():
        measured = float(order.sel({"method": name}))
        assert abs(measured - p) < 0.15, (name, measured)


def test_killed_sweep_resumes_with_only_the_missing_cases(tmp_path, capsys):
    out = tmp_path / "killed"
    script = (f"import sys; sys.path.insert(0, {str(TESTS)!r}); import _studies; from pyint.study import run_study; "
              f"run_study(_studies.SLOW, out={str(out)!r}, workers=2, figures=False)")
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    try:
        while len(_studies.stored_cases(out, "slowtest")) < 4:
            assert proc.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, "no cases finished within 60 s"
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    first = _studies.stored_cases(out, "slowtest")
    assert 4 <= len(first) < 12, len(first)
    assert not (out / "slowtest.nc").exists()

    capsys.readouterr()
    run = run_study(_studies.SLOW, out=out, workers=1, figures=False, progress=False)  # in this process
    log = capsys.readouterr().err
    assert f"12 cases: {len(first)} cached, {12 - len(first)} to run" in log
    assert (run.n_cached, run.n_run) == (len(first), 12 - len(first))
    after = _studies.stored_cases(out, "slowtest")
    assert len(after) == 12
    assert all(after[key] == stamp for key, stamp in first.items())  # written shards not rewritten
    assert not list((out / ".cache" / "slowtest").rglob("*.tmp-*"))

    # killed subprocess pool + this process == one uninterrupted pool run
    whole = run_study(_studies.SLOW, out=tmp_path / "whole", workers=2, figures=False, progress=False)
    xr.testing.assert_identical(comparable(load_netcdf(run.path)), comparable(load_netcdf(whole.path)))

    again = run_study(_studies.SLOW, out=out, workers=1, figures=False, progress=False)
    assert (again.n_cached, again.n_run) == (12, 0)


def test_extended_grid_runs_only_the_new_cases(tmp_path):
    study = _studies.toy_study()
    first = run_study(study, out=tmp_path, workers=1, figures=False, verbose=False)
    assert (first.n_run, first.n_cached) == (6, 0)
    more = run_study(study, out=tmp_path, grid={"h": [0.1, 0.05, 0.025]}, workers=1, figures=False, verbose=False)
    assert (more.n_run, more.n_cached) == (3, 6)
    assert list(more.dataset["h"].values) == [0.1, 0.05, 0.025]


def test_case_that_kills_its_worker_is_recorded_as_crashed(tmp_path):
    run = run_study(_studies.toy_study(crash_k=1.0), out=tmp_path, workers=2, figures=False, verbose=False)
    status = run.dataset["status"]
    assert (status.sel(k=1.0) == "crashed").all()
    assert (status.sel(k=[0.5, 2.0]) == "ok").all()
    assert "worker process died" in str(run.dataset["message"].sel(k=1.0, h=0.1).values)
    assert np.isfinite(run.dataset["error"].sel(k=[0.5, 2.0])).all()


def test_misbehaving_cases_fail_with_a_message(tmp_path):
    run = run_study(_studies.toy_study(nounits_k=0.5, notds_k=2.0), out=tmp_path, workers=1, figures=False,
                    verbose=False)
    msg = run.dataset["message"]
    assert "mystery" in str(msg.sel(k=0.5, h=0.1).values) and "units" in str(msg.sel(k=0.5, h=0.1).values)
    assert str(msg.sel(k=2.0, h=0.05).values).startswith("TypeError: run_case returned dict")
    assert (run.dataset["status"].sel(k=1.0) == "ok").all() and run.n_failed == 4
    # explicit Euler on y' = -k y: error ~ (k^2 T e^{-kT}/2) h, so halving h halves it
    err = run.dataset["error"].sel(k=1.0)
    assert float(err.sel(h=0.1) / err.sel(h=0.05)) == pytest.approx(2.0, rel=0.1)


def test_rerun_failed_recomputes_only_failed_cases(tmp_path):
    study = _studies.toy_study(notds_k=2.0)
    run_study(study, out=tmp_path, workers=1, figures=False, verbose=False)
    again = run_study(study, out=tmp_path, workers=1, rerun_failed=True, figures=False, verbose=False)
    assert (again.n_run, again.n_cached) == (2, 4)


def test_the_reported_time_includes_the_figures(tmp_path, capsys):
    """run.seconds (the "done in" line, ./dev.sh studies' total) is the whole run's, figures included:
    they can cost more than the cases (seed 002)."""
    import dataclasses
    pause = 0.3

    def figures(path, outdir):
        time.sleep(pause)         # sleep() waits at least this long
        return []
    study = dataclasses.replace(_studies.toy_study(), figures=figures)
    run = run_study(study, out=tmp_path, workers=1)
    assert run.seconds >= run.figure_seconds >= pause
    assert re.search(r"done in \d\d:\d\d \(figures \d\d:\d\d\)", capsys.readouterr().err)


def test_where_skips_cases(tmp_path):
    study = _studies.toy_study(where=lambda p: not (p["k"] == 2.0 and p["h"] == 0.1))
    run = run_study(study, out=tmp_path, workers=1, figures=False, verbose=False)
    assert run.n_run == 5 and str(run.dataset["status"].sel(k=2.0, h=0.1).values) == "skipped"
    assert run.n_failed == 0 and np.isnan(float(run.dataset["error"].sel(k=2.0, h=0.1)))


# -- declaration and parameters -----------------------------------------------------------
def test_study_declaration_errors():
    ok = dict(name="s", description="d", grid={"h": [0.1]}, run_case=_studies.toy_case)
    with pytest.raises(TypeError, match="str, int or float"):
        Study(**{**ok, "grid": {"h": [True]}})
    with pytest.raises(ValueError, match="repeated"):
        Study(**{**ok, "grid": {"h": [0.1, 0.1]}})
    with pytest.raises(ValueError, match="reserved"):
        Study(**{**ok, "grid": {"time": [0.1]}})
    with pytest.raises(ValueError, match="both grid and fixed"):
        Study(**{**ok, "fixed": {"h": 1.0}})
    with pytest.raises(ValueError, match="quick_grid names 'x'"):
        Study(**{**ok, "quick_grid": {"x": [1]}})
    with pytest.raises(ValueError, match="not finite"):
        Study(**{**ok, "grid": {"h": [float("nan")]}})
    with pytest.raises(TypeError, match="mixes text and numbers"):
        Study(**{**ok, "grid": {"h": [0.1, "a"]}})


def test_overrides_typed_like_the_defaults_and_fixed_parameters_become_dimensions():
    over = SELFTEST.parse_overrides(["h=0.1,0.05", "T=1,3", "method=rk4"])
    assert over == {"h": [0.1, 0.05], "T": [1.0, 3.0], "method": ["rk4"]}
    grid, fixed = SELFTEST.resolve(over)
    assert list(grid) == ["method", "h", "T"] and "T" not in fixed
    grid, fixed = SELFTEST.resolve({"T": [5.0]}, quick=True)
    assert fixed["T"] == 5.0 and grid["h"] == [0.04, 0.02]
    with pytest.raises(ValueError, match="no parameter 'bogus'"):
        SELFTEST.parse_overrides(["bogus=1"])
    with pytest.raises(ValueError, match="not a number"):
        SELFTEST.parse_overrides(["h=fast"])
    with pytest.raises(ValueError, match="key=v1,v2"):
        SELFTEST.parse_overrides(["h"])
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        run_study(SELFTEST, workers=0)


def test_cache_key_depends_on_parameters_study_version_and_pyint_version(monkeypatch):
    import pyint
    p = {"h": 0.1, "method": "rk4"}
    key = cache.cache_key(SELFTEST, p)
    assert key == cache.cache_key(SELFTEST, {"method": "rk4", "h": 0.1})
    assert key != cache.cache_key(SELFTEST, {**p, "h": 0.2})
    assert key != cache.cache_key(_studies.toy_study(), p)
    monkeypatch.setattr(pyint, "__version__", "99.0")
    assert key != cache.cache_key(SELFTEST, p)


def test_cache_key_depends_on_the_compiled_kernels(monkeypatch):
    """Another build of the kernels is another case (a rebuild keeps pyint's version: its cached cases came
    back as the new build's); this build's fingerprint is the extension's bytes, the same at every call."""
    p = {"h": 0.1, "method": "rk4"}
    assert len(cache.kernels_fingerprint()) == 24
    key = cache.cache_key(SELFTEST, p)
    monkeypatch.setattr(cache, "kernels_fingerprint", lambda: "another build")
    assert key != cache.cache_key(SELFTEST, p)


# -- combining ----------------------------------------------------------------------------------
def _case(t, value, n=3):
    return xr.Dataset({"y": ("time", np.full(len(t), value)), "count": ((), np.int64(n)),
                       "status": ((), "ok"), "message": ((), "")}, coords={"time": np.asarray(t, dtype=float)})


def test_combine_keeps_a_shared_time_axis_and_integer_types():
    grid = {"a": ["x", "y"]}
    ds = combine_cases(grid, [((0,), _case([0, 1, 2], 1.0)), ((1,), _case([0, 1, 2], 2.0))])
    assert ds["y"].dims == ("a", "time") and list(ds["time"].values) == [0, 1, 2]
    assert ds["count"].dtype == np.int64 and list(ds["a"].values) == ["x", "y"]


def test_combine_differing_time_grids_uses_sample_and_pads():
    grid = {"h": [1.0, 0.5], "m": ["b", "a"]}
    failed = runner.failed_case("failed", "boom")
    parts = [((0, 0), _case([0, 1], 1.0)), ((0, 1), _case([0, 1], 2.0)),
             ((1, 0), _case([0, 0.5, 1], 3.0)), ((1, 1), failed)]
    ds = combine_cases(grid, parts)
    assert ds["time"].dims == ("h", "m", "sample") and ds["y"].dims == ("h", "m", "sample")
    assert list(ds["m"].values) == ["b", "a"]  # declared order, not sorted
    np.testing.assert_array_equal(ds["time"].sel(h=1.0, m="b").values, [0, 1, np.nan])
    np.testing.assert_array_equal(ds["y"].sel(h=0.5, m="b").values, [3, 3, 3])
    assert np.isnan(ds["y"].sel(h=0.5, m="a").values).all()
    assert ds["count"].dtype == np.float64 and np.isnan(float(ds["count"].sel(h=0.5, m="a")))
    assert str(ds["message"].sel(h=0.5, m="a").values) == "boom" and str(ds["message"].sel(h=1.0, m="a").values) == ""


def test_combine_keeps_differing_case_attributes_as_json():
    a, b = _case([0], 1.0), _case([0], 2.0)
    a.attrs, b.attrs = {"rho": 0.5}, {"rho": 0.9}
    ds = combine_cases({"k": [1, 2]}, [((0,), a), ((1,), b)])
    assert "rho" not in ds.attrs and str(ds["case_attrs"].sel(k=2).values) == '{"rho": 0.9}'
    b.attrs = {"rho": 0.5}
    assert combine_cases({"k": [1, 2]}, [((0,), a), ((1,), b)]).attrs["rho"] == 0.5


# -- progress ------------------------------------------------------------------------------------------
class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_line_on_a_terminal_and_silence_elsewhere():
    tty = _Terminal()
    bar = Progress("demo", total=12, done=4, stream=tty)
    bar.update()
    bar.close()
    text = tty.getvalue()
    assert re.fullmatch(r"\r\[demo\] 5/12 cases, \d\d:\d\d elapsed, ~\d\d:\d\d left\s*\n", text), text
    pipe = io.StringIO()
    bar = Progress("demo", total=12, stream=pipe)
    bar.update(12)
    bar.close()
    assert pipe.getvalue() == ""


def test_study_main_is_the_runner_with_the_summary(tmp_path, capsys):
    """``python -m pyint.studies.<name>`` is ``pyint study run <name>``: the same file, the summary on stdout."""
    from pyint.study import study_main
    assert study_main(SELFTEST, ["--out", str(tmp_path), "--quick", "--workers", "1"]) == 0
    ds = xr.open_dataset(tmp_path / "selftest.nc")
    assert int(ds.attrs["n_failed"]) == 0 and int(ds.attrs["n_cases"]) == 6
    assert list(ds["h"].values) == [0.04, 0.02]
    ds.close()
    assert "rk4" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        study_main(SELFTEST, ["--workers"])
