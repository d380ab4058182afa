"""The pyint command: info, study list/run, plot; figures that a fresh process redraws identically."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from pyint.cli import main
from pyint.datasets import check_conventions, load_netcdf
from pyint.runner import run_study, studies

PYINT = Path(sys.executable).parent / "pyint"  # the console script pip installed beside this Python
FIGURES = {"trajectories.png", "constraint_violation.png", "energy_error.png", "error_vs_h.png",
           "violation_vs_h.png", "work_precision.png"}


def test_info_lists_kernels_models_and_studies(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "compiled kernels (pyint._fortran): " in out and "model_eval" in out and "model_lookup" in out
    assert "pendulum_chain (PendulumChain)" in out
    assert main(["study", "list"]) == 0
    assert "selftest" in capsys.readouterr().out


def test_bad_command_lines_give_clear_errors(capsys):
    assert main(["study", "run", "no_such_study"]) == 2
    assert "no study named 'no_such_study'" in capsys.readouterr().err
    assert main(["study", "run", "selftest", "--grid", "h=0.1", "--all"]) == 2
    assert main(["study", "run", "selftest", "--workers", "2", "--scheduler", "tcp://x:1"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["plot", "/nonexistent/file.nc"]) == 2
    assert "no such NetCDF file" in capsys.readouterr().err


def test_study_run_writes_data_and_figures_that_a_fresh_process_redraws(tmp_path):
    run = subprocess.run([str(PYINT), "study", "run", "selftest", "--quick", "--out", str(tmp_path),
                          "--grid", "h=0.04,0.02,0.01"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "[selftest] 9 cases: 0 cached, 9 to run" in run.stderr
    assert "\r" not in run.stderr  # no progress line when stderr is not a terminal
    assert "rk4       0.01  ok" in run.stdout  # the summary table
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


@pytest.mark.parametrize("name", sorted(studies()))
def test_every_registered_study_runs_quick(name, tmp_path):
    """Registering a study enrols it: its quick grid runs, follows the conventions and draws figures."""
    run = run_study(name, out=tmp_path, quick=True, verbose=False)
    ds = load_netcdf(run.path)
    assert check_conventions(ds) == []
    assert (ds["status"] == "ok").any(), "no case of the quick grid ended ok"
    assert run.figure_error is None and run.figures
