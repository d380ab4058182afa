"""The pyint command: info, study list/run, plot; figures that a fresh process redraws identically."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from pyint.cli import get_study, main, studies
from pyint.study.datasets import check_conventions, load_netcdf
from pyint.study import run_study

PYINT = Path(sys.executable).parent / "pyint"  # the console script pip installed beside this Python
FIGURES = {"trajectories.png", "constraint_violation.png", "energy_error.png", "error_vs_h.png",
           "violation_vs_h.png", "work_precision.png"}


def test_bare_command_prints_a_short_usage(capsys):
    """Bare ``pyint`` names the commands in a few lines, not the compiled kernels (``pyint info`` does)."""
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "usage: pyint" in out and "pyint study run NAME" in out and "pyint info" in out
    assert "model_query" not in out and len(out.splitlines()) <= 15


def test_info_lists_kernels_models_and_studies(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "compiled kernels (pyint._fortran): " in out and "model_query" in out and "model_lookup" in out
    assert "pendulum_chain (PendulumChain)" in out
    assert main(["study", "list"]) == 0
    assert "selftest" in capsys.readouterr().out


def test_selftest_is_an_ordinary_study_marked_as_a_smoke_test():
    """studies/selftest.py (pyint.studies.selftest): found by name, listed as a smoke test, not in --all."""
    from pyint.study import Study
    from pyint.studies.selftest import STUDY
    assert STUDY.smoke and get_study("selftest") is STUDY
    assert "selftest" in studies(smoke=True) and "selftest" not in studies()
    assert not any(s.smoke for s in studies().values())
    with pytest.raises(TypeError, match="smoke must be True or False"):
        Study(name="x", description="d", grid={"h": [0.1]}, run_case=len, smoke="yes")


def test_bad_command_lines_give_clear_errors(capsys):
    assert main(["study", "run", "no_such_study"]) == 2
    assert "no study named 'no_such_study'" in capsys.readouterr().err
    assert main(["study", "run", "selftest", "--grid", "h=0.1", "--all"]) == 2
    assert main(["study", "run", "selftest", "--workers", "2", "--scheduler", "tcp://x:1"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["plot", "/nonexistent/file.nc"]) == 2
    assert "no such NetCDF file" in capsys.readouterr().err


def test_study_run_writes_data_and_figures_that_a_fresh_process_redraws(tmp_path):
    run = subprocess.run([str(PYINT), "study", "run", "selftest", "--quick", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "[selftest] 6 cases: 0 cached, 6 to run" in run.stderr
    assert "\r" not in run.stderr  # no progress line when stderr is not a terminal
    assert re.search(r"^rk4 +0\.02 +ok +\d", run.stdout, re.M), run.stdout  # the summary table
    nc = tmp_path / "selftest.nc"
    assert check_conventions(load_netcdf(nc)) == []
    first = {p.name: p for p in (tmp_path / "selftest").glob("*.png")}
    assert set(first) == FIGURES

    redraw = subprocess.run([str(PYINT), "plot", str(nc), "--out", str(tmp_path / "redraw")],
                            capture_output=True, text=True, timeout=300)
    assert redraw.returncode == 0, redraw.stderr
    second = {Path(line).name: Path(line) for line in redraw.stdout.split()}
    assert set(second) == FIGURES
    for name in FIGURES:
        a, b = imread(first[name]), imread(second[name])
        assert a.shape == b.shape and a.shape[0] > 300 and np.array_equal(a, b), name


def test_study_show_gives_parameters_with_units_sizes_and_the_cost_of_an_earlier_run(tmp_path, capsys):
    assert main(["study", "show", "selftest", "--out", str(tmp_path)]) == 0
    before = capsys.readouterr().out
    study = get_study("selftest")
    grid, _ = study.resolve()
    qgrid, _ = study.resolve(quick=True)
    n, nq = int(np.prod([len(v) for v in grid.values()])), int(np.prod([len(v) for v in qgrid.values()]))
    assert f"cases: {n} (--quick: {nq})" in before
    for key in grid:
        assert re.search(rf"^  {key}( \[[^]]+\])? .*: {len(grid[key])} values", before, re.M), before
    assert "expected time: unknown until a first run" in before
    run_study(study, out=tmp_path, quick=True, workers=1, figures=False, verbose=False)
    assert main(["study", "show", "selftest", "--out", str(tmp_path)]) == 0
    after = capsys.readouterr().out
    cpu = float(load_netcdf(tmp_path / "selftest.nc")["cpu_time"].sum())
    want = f"about {cpu / nq * n:.3g} s of CPU at the default size, {cpu:.3g} s --quick"
    assert want in after, after


@pytest.mark.parametrize("name", sorted(studies()))
def test_every_registered_study_runs_quick(name, tmp_path):
    """Registering a study enrols it: its quick grid runs, follows the conventions and draws figures."""
    run = run_study(get_study(name), out=tmp_path, quick=True, verbose=False)
    ds = load_netcdf(run.path)
    assert check_conventions(ds) == []
    assert (ds["status"] == "ok").any(), "no case of the quick grid ended ok"
    assert run.figure_error is None and run.figures


def test_every_study_module_imports_and_declares_a_study():
    """pyint.studies.<name> (names not starting with _) must import and define STUDY (the listing skips
    broken modules so that one does not stop the others; this test does not)."""
    import importlib
    import pkgutil

    import pyint.studies
    from pyint.study import Study
    for info in pkgutil.iter_modules(pyint.studies.__path__, "pyint.studies."):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        module = importlib.import_module(info.name)
        assert isinstance(getattr(module, "STUDY", None), Study), f"{info.name} defines no STUDY = Study(...)"


DEMO_STUDY = '''
import numpy as np
import xarray as xr
from pyint.study import Study

def run_case(p):
    return xr.Dataset({"error": ((), p["h"] ** 2, {"units": "m"})})

STUDY = Study(name="demo", description="a study found by discovery", grid={"h": [0.1, 0.05]}, run_case=run_case)
'''


def test_a_module_in_pyint_studies_is_discovered_listed_and_run(tmp_path, monkeypatch, capsys):
    import sys as _sys

    import pyint.studies
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "demo.py").write_text(DEMO_STUDY)
    (tmp_path / "pkg" / "_helper.py").write_text("raise ImportError('helpers are not studies')\n")
    monkeypatch.setattr(pyint.studies, "__path__", [*pyint.studies.__path__, str(tmp_path / "pkg")])
    monkeypatch.delitem(_sys.modules, "pyint.studies.demo", raising=False)
    assert "demo" in studies()
    assert main(["study", "list"]) == 0 and "demo" in capsys.readouterr().out
    # `run --all` on the demo package alone: with the built-in studies beside it, --all ran each of them
    # at its default size (15 CPU-minutes since iftomm_benchmarks, most of the suite's time); their runs
    # are test_every_registered_study_runs_quick's
    monkeypatch.setattr(pyint.studies, "__path__", [str(tmp_path / "pkg")])
    assert sorted(studies()) == ["demo"]
    assert main(["study", "run", "--all", "--out", str(tmp_path / "out"), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^0\.05 +ok +0\.0025$", out, re.M), out
    assert (tmp_path / "out" / "demo.nc").is_file() and (tmp_path / "out" / "demo" / "error_vs_h.png").is_file()


def test_python_m_pyint_is_the_pyint_command(tmp_path):
    """``python -m pyint ...`` runs the command as the console script does (there was no
    pyint/__main__.py: 'pyint' is a package and cannot be directly executed)."""
    for args in ([], ["study", "list"]):
        run = subprocess.run([sys.executable, "-m", "pyint", *args], cwd=tmp_path, capture_output=True, text=True,
                             timeout=300)
        script = subprocess.run([str(PYINT), *args], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0 == script.returncode, run.stderr[-2000:]
        assert run.stdout == script.stdout
    bad = subprocess.run([sys.executable, "-m", "pyint", "study", "run", "no_such_study"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "no study named 'no_such_study'" in bad.stderr


def test_import_from_the_checkout_root_says_what_to_do():
    """``import pyint`` from the checkout's root finds the source tree (no compiled kernels): an
    ImportError naming the cure, not f2py's "partially initialized module"."""
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", "import pyint"], cwd=root, capture_output=True, text=True)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: pyint was imported from the source tree"), proc.stderr
    assert "./dev.sh setup" in last and "python -P" in last and "partially initialized" not in last
    ok = subprocess.run([sys.executable, "-P", "-c", "import pyint"], cwd=root, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
