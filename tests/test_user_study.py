"""A user's own study, written as the runner documents it, outside the package: run as a script, as
``pyint study run path/to/file.py``, through ``run_study(STUDY)``, and installed by another
distribution through the entry-point group ``pyint.studies``."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pyint.cli import ENTRY_POINT_GROUP, load_study_file
from pyint.study.datasets import check_conventions, load_netcdf
from pyint.methods.genalpha import GeneralizedAlpha
from pyint.models import PendulumChain
from pyint.study import run_study

PYINT = Path(sys.executable).parent / "pyint"  # the console script pip installed beside this Python

#: The documented pattern: STUDY = Study(...), run_case returns res.to_xarray(), study_main at the end.
MYCHAIN = '''
"""My study: a double pendulum with generalized-alpha, against h."""
from pyint.methods.genalpha import GeneralizedAlpha
from pyint.models import PendulumChain
from pyint.study import Study, study_main


def run_case(p):
    model = PendulumChain(n_links=2)
    q0, v0 = model.initial_state([1.0, 1.5])
    res = GeneralizedAlpha(rho_inf=p["rho_inf"]).integrate(model, q0, v0, t_end=p["T"], h=p["h"])
    return res.to_xarray()


STUDY = Study(name="mychain", description="my double pendulum, generalized-alpha against h",
              grid={"h": [0.01, 0.005]}, fixed={"T": 0.2, "rho_inf": 0.9}, run_case=run_case)

if __name__ == "__main__":
    raise SystemExit(study_main(STUDY))
'''


def _check_mychain(path):
    ds = load_netcdf(path)
    assert check_conventions(ds) == []
    assert list(ds["status"].values) == ["ok", "ok"] and list(ds["h"].values) == [0.01, 0.005]
    assert ds.sizes["multiplier"] == 2 and ds["lam"].dims[-1] == "multiplier"
    return ds


def test_result_to_xarray_gives_every_variable_and_coordinate_units_and_long_name():
    """The root of 'variables without units/long_name: multiplier' (pyint's own Result failed pyint's
    own study schema): every variable and coordinate it writes is annotated."""
    model = PendulumChain(n_links=2)
    q0, v0 = model.initial_state([1.0, 1.5])
    ds = GeneralizedAlpha().integrate(model, q0, v0, t_end=0.05, h=0.01).to_xarray()
    assert [p for p in check_conventions(ds) if p.startswith("variable")] == []
    assert {"multiplier", "coord", "constraint_level"} <= set(ds.coords)


def test_a_user_study_script_runs_as_a_script_through_the_cli_and_through_run_study(tmp_path):
    script = tmp_path / "mine" / "mychain.py"
    script.parent.mkdir()
    script.write_text(MYCHAIN)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # python mychain.py: local worker processes (the default), figures drawn
    run = subprocess.run([sys.executable, str(script), "--out", str(tmp_path / "a")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    first = _check_mychain(tmp_path / "a" / "mychain.nc")
    assert (tmp_path / "a" / "mychain" / "trajectories.png").is_file()
    # pyint study run path/to/mychain.py, from another directory
    run = subprocess.run([str(PYINT), "study", "run", str(script), "--out", str(tmp_path / "b"), "--no-figures"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "[mychain] 2 cases: 0 cached, 2 to run" in run.stderr
    second = _check_mychain(tmp_path / "b" / "mychain.nc")
    # run_study(STUDY) in this process, on the script's STUDY
    study = load_study_file(script)
    third = _check_mychain(run_study(study, out=tmp_path / "c", workers=1, figures=False, verbose=False).path)
    for ds in (second, third):  # deterministic: the same numbers every way
        assert np.array_equal(ds["q"].values, first["q"].values, equal_nan=True)


def test_a_study_installed_by_another_distribution_is_found_through_its_entry_point(tmp_path):
    site = tmp_path / "site"
    (site / "mypkg_studies").mkdir(parents=True)
    (site / "mypkg_studies" / "__init__.py").write_text("")
    (site / "mypkg_studies" / "mychain.py").write_text(MYCHAIN)
    info = site / "mypkg_studies-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mypkg-studies\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nmychain = mypkg_studies.mychain\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    listed = subprocess.run([str(PYINT), "study", "list"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300, env=env)
    assert listed.returncode == 0, listed.stderr
    assert any(line.split()[:1] == ["mychain"] and "my double pendulum" in line
               for line in listed.stdout.splitlines()), listed.stdout
    assert "cannot" not in listed.stderr, listed.stderr
    run = subprocess.run([str(PYINT), "study", "run", "mychain", "--out", str(tmp_path / "out"), "--no-figures"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    _check_mychain(tmp_path / "out" / "mychain.nc")


#: A variable-step study as a user writes it: the sweep over rtol, each case its Result.to_xarray().
MYRTOL = '''
"""My study: a double pendulum with variable steps, against rtol."""
import numpy as np
from pyint.methods.genalpha import GeneralizedAlpha
from pyint.models import PendulumChain
from pyint.study import Study, study_main


def run_case(p):
    model = PendulumChain(n_links=2)
    q0, v0 = model.initial_state([1.0, 1.5])
    res = GeneralizedAlpha().integrate(model, q0, v0, t_end=p["T"], rtol=p["rtol"], atol=p["atol"],
                                       t_eval=np.linspace(0.0, p["T"], 5))
    return res.to_xarray()


STUDY = Study(name="myrtol", description="my double pendulum, variable steps against rtol",
              grid={"rtol": [1e-4, 1e-6]}, fixed={"T": 0.2, "atol": 1e-6}, run_case=run_case)

if __name__ == "__main__":
    raise SystemExit(study_main(STUDY))
'''


def test_a_variable_step_study_sweeps_rtol_with_the_result_dataset(tmp_path):
    """A case returning a variable-step Result.to_xarray() holds the scalar variables rtol and atol (its
    stats): with rtol a grid parameter the case was refused as a clash of names (every case failed).  A
    scalar variable holding the case's own value of a parameter is that parameter; any other use of a
    parameter's name is still refused."""
    from pyint.study.workers import _prepare_case
    script = tmp_path / "myrtol.py"
    script.write_text(MYRTOL)
    study = load_study_file(script)
    ds = load_netcdf(run_study(study, out=tmp_path / "out", workers=1, figures=False, verbose=False).path)
    assert list(ds["status"].values) == ["ok", "ok"], ds["message"].values
    assert list(ds["rtol"].values) == [1e-4, 1e-6] and ds["q"].dims == ("rtol", "time", "coord")
    assert ds["accepted"].values[1] > ds["accepted"].values[0]
    case = study.run_case({"rtol": 1e-4, "T": 0.2, "atol": 1e-6})
    assert float(case["rtol"]) == 1e-4
    with pytest.raises(ValueError, match=r"uses parameter names \['rtol'\]"):
        _prepare_case(case, {"rtol": 1e-5, "T": 0.2, "atol": 1e-6}, {})      # a different value: a clash
