"""Faults and hostile input (issue 15): the study runner, the CLI, model parameters and size limits.

Each test fails on ca04593: a stale study cache after run_case is edited, silent model parameters,
orphaned workers, Ctrl-C that waits for the cases, a raw traceback when every case fails, an
empty `pyint plot`, stale temporaries, a repeated --grid, study scripts that do nothing, C-int
overflows and unannounced huge allocations.
"""
import contextlib
import inspect
import math
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import psutil
import pytest
import xarray as xr

from pyint import _validate as V
from pyint.cli import get_study, main
from pyint.study.datasets import load_netcdf
from pyint.study import run_study, study_main
from pyint.studies.selftest import STUDY as SELFTEST

import _studies

TESTS = Path(__file__).resolve().parent
STUDY_SCRIPTS = sorted(p for p in (TESTS.parent / "studies").glob("*.py") if not p.name.startswith("_"))


def _cache_files(out, name):
    return sorted(_studies.stored_cases(out, name))


def _gone(pid):
    """True when the process has exited (a zombie waiting for its reaper counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_until(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _kill_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# -- item 2: the study cache is keyed on the study's code -------------------------------------------
USER_STUDY = '''
import sys
import xarray as xr
from pyint.study import Study, run_study

def run_case(p):
    return xr.Dataset({"error": ((), VALUE * p["h"], {"units": "m"})})

VALUE = 1.0
STUDY = Study(name="user_demo", description="a user's study script", grid={"h": [0.1, 0.2]}, run_case=run_case)

if __name__ == "__main__":
    run = run_study(STUDY, out=sys.argv[1], workers=1, figures=False)
    print(run.n_run, run.n_cached, float(run.dataset["error"].sel(h=0.2)))
'''


def test_study_cache_is_recomputed_after_run_case_is_edited(tmp_path):
    script = tmp_path / "user_demo.py"

    def run():
        out = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        n_run, n_cached, value = out.stdout.split()
        return int(n_run), int(n_cached), float(value)

    script.write_text(USER_STUDY)
    assert run() == (2, 0, 0.2)
    assert run() == (0, 2, 0.2)                        # unchanged code: both cases cached
    script.write_text(USER_STUDY.replace('VALUE * p["h"]', 'VALUE * p["h"] ** 2'))
    n_run, n_cached, value = run()                     # run_case edited: same name, version, parameters
    assert (n_run, n_cached) == (2, 0) and value == pytest.approx(0.04)
    script.write_text(USER_STUDY.replace('VALUE * p["h"]', 'VALUE * p["h"] ** 2').replace("VALUE = 1.0",
                                                                                          "VALUE = 3.0"))
    n_run, n_cached, value = run()                     # a module constant run_case reads: recomputed too
    assert (n_run, n_cached) == (2, 0) and value == pytest.approx(0.12)


# -- item 4: every built-in model validates its parameters ------------------------------------------
def _model_factories():
    from pyint.models import BUILTIN_MODELS, NaturalSystem
    from pyint.models.rigid_bodies import Body, PointJoint, RigidBodySystem

    def natural_system(mass=1.0, gravity=9.81, stiffness=2.0):
        s = NaturalSystem(dim=2, gravity=(0.0, -gravity))
        b = s.add_body(mass, pi=(0.1, 0.01))
        s.spring(s.ground, (0.0, 0.0), b, (0.0, 0.0), stiffness=stiffness)
        s.set_pose(b, (0.5, 0.0), 0.0)
        return s.build()

    def rigid_bodies(mass=1.0, gravity=9.81):
        return RigidBodySystem([Body(mass, (1.0, 2.0, 3.0))], [PointJoint(0, (0.0, 0.0, -0.5))],
                               gravity=(0.0, 0.0, -gravity))

    factories = {cls.__name__: cls for name, cls in BUILTIN_MODELS.items() if name != "natural_system"}
    factories.update(NaturalModel=natural_system, RigidBodySystem=rigid_bodies,
                     two_link_manipulator=RigidBodySystem.two_link_manipulator,
                     heavy_top=RigidBodySystem.heavy_top)
    return factories


def _numeric_parameters(factory):
    sig = inspect.signature(factory)
    return [(name, p.default) for name, p in sig.parameters.items()
            if isinstance(p.default, (int, float)) and not isinstance(p.default, bool)]


@pytest.mark.parametrize("name", sorted(_model_factories()))
def test_every_builtin_model_refuses_nan_inf_and_fractional_counts(name):
    factory = _model_factories()[name]
    params = _numeric_parameters(factory)
    assert params, f"{name}: no numeric parameter found"
    factory()  # the defaults are valid
    for pname, default in params:
        for bad in (math.nan, math.inf, -math.inf):
            with pytest.raises((TypeError, ValueError) if isinstance(default, int) else ValueError, match=pname):
                factory(**{pname: bad})
        if isinstance(default, int):
            with pytest.raises((TypeError, ValueError), match=pname):
                factory(**{pname: default + 0.7})


def test_pendulum_chain_is_not_truncated_and_array_parameters_are_checked():
    from pyint.models import PendulumChain
    with pytest.raises(TypeError, match="n_links must be an integer, got 2.7"):
        PendulumChain(n_links=2.7)
    with pytest.raises(ValueError, match="mass"):
        PendulumChain(2, mass=[1.0, math.nan])
    with pytest.raises(ValueError, match="length"):
        PendulumChain(2, length=[1.0, -1.0])
    assert PendulumChain(np.int64(3)).n == 6


# -- item 6: workers die with the study process; Ctrl-C stops a run at once, losing nothing -----------
def _start_sweep(tmp_path, extra=""):
    # a terminal's Python: SIGINT raises KeyboardInterrupt, also when this test runs with SIGINT
    # ignored (a background job inherits SIG_IGN, and Python then keeps it ignored)
    script = (f"import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
              f"import sys; sys.path.insert(0, {str(TESTS)!r}); import _studies; from pyint.cli import main; "
              f"from pyint.study import run_study; {extra}")
    return subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _workers_of(proc, n):
    parent = psutil.Process(proc.pid)
    _wait_until(lambda: len(parent.children()) >= n or proc.poll() is not None, 60, "the workers did not start")
    assert proc.poll() is None, proc.communicate()
    return [p.pid for p in parent.children()]


@contextlib.contextmanager
def _sleepy_sweep(tmp_path, options, catch_interrupt=False):
    """(the study process running _studies.SLEEPY with two workers and ``options``, its output folder,
    the workers' pids); on leaving, the workers and the process are killed and reaped -- the workers
    first: an orphaned worker holds the pipes open.  ``catch_interrupt``: Ctrl-C exits with status 130."""
    out = tmp_path / "out"
    call = f"run_study(_studies.SLEEPY, out={str(out)!r}, workers=2, figures=False, {options})"
    proc = _start_sweep(tmp_path, f"\ntry: {call}\nexcept KeyboardInterrupt: sys.exit(130)" if catch_interrupt
                        else call)
    workers = []
    try:
        workers.extend(_workers_of(proc, 2))
        yield proc, out, workers
    finally:
        _kill_all(workers)
        proc.kill()
        proc.communicate()


def test_workers_die_when_the_study_process_is_killed(tmp_path):
    with _sleepy_sweep(tmp_path, "grid={'n_quick': [0]}") as (proc, out, workers):
        assert len(workers) == 2
        time.sleep(1.0)  # both workers inside their blocking case
        os.kill(proc.pid, signal.SIGKILL)  # the parent only, as the OOM killer or `kill -9` would
        proc.wait()
        _wait_until(lambda: all(_gone(pid) for pid in workers), 10,
                    f"workers {[p for p in workers if not _gone(p)]} outlived their killed parent")
    assert not list(out.glob("*.nc*")) and not list((out / ".cache" / "sleepy").rglob("*.tmp-*"))


def test_ctrl_c_stops_a_study_run_at_once_keeps_finished_cases_and_leaves_no_orphan(tmp_path):
    with _sleepy_sweep(tmp_path, "progress=False", catch_interrupt=True) as (proc, out, workers):
        # the three quick cases finish, then both workers block in a case that ignores SIGINT
        _wait_until(lambda: len(_cache_files(out, "sleepy")) >= 3 or proc.poll() is not None, 60,
                    "the quick cases did not finish")
        time.sleep(1.0)
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole foreground process group
        try:
            stdout, stderr = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("Ctrl-C did not stop the run within 60 s (the blocking cases take 120 s)")
        seconds = time.monotonic() - t0
    # measured 0.3 s here; 60 s would already be a hang (a blocking case runs 120 s)
    print(f"Ctrl-C -> exit in {seconds:.2f} s")
    assert proc.returncode == 130, stderr
    assert "interrupted: 3 of 6 cases are cached" in stderr, stderr
    _wait_until(lambda: all(_gone(pid) for pid in workers), 10, "a worker outlived the interrupted run")
    from pyint.study.cache import read_shard, unpack_cases
    cached = [ds for shard in sorted((out / ".cache" / "sleepy" / "shards").glob("*.nc"))
              for _, _, ds in unpack_cases(read_shard(shard))]
    assert len(cached) == 3
    assert sorted(int(ds["error"]) for ds in cached) == [0, 1, 2]
    assert not (out / "sleepy.nc").exists()
    assert not list(out.rglob("*.tmp-*"))


# -- item 10: a sweep whose every case fails ---------------------------------------------------------
def test_a_sweep_whose_every_case_fails_writes_its_cases_and_shows_their_messages(tmp_path, capsys):
    status = main(["study", "run", "selftest", "--quick", "--grid", "method=bogus", "--out", str(tmp_path),
                   "--workers", "1", "--no-figures"])
    out, err = capsys.readouterr()
    assert status == 1
    assert "2 of 2 cases did not end ok" in out
    assert out.count("ValueError: unknown method 'bogus'; known: ['euler', 'midpoint', 'rk4']") >= 2, out
    assert err.strip().splitlines()[-1].startswith("pyint: error: study selftest: 2 of 2 cases failed"), err
    ds = load_netcdf(tmp_path / "selftest.nc")
    assert (ds["status"] == "failed").all() and int(ds.attrs["n_failed"]) == 2
    assert "post() was not applied" in ds.attrs["post_error"]


def test_a_sweep_with_some_failures_exits_nonzero_with_the_table(tmp_path, capsys):
    status = main(["study", "run", "selftest", "--quick", "--grid", "h=0.04,0.3", "--out", str(tmp_path),
                   "--workers", "1", "--no-figures"])
    out, err = capsys.readouterr()
    assert status == 1
    assert "3 of 6 cases did not end ok" in out and "does not divide T" in out
    assert "pyint: error: study selftest: 3 of 6 cases failed" in err.strip().splitlines()[-1]
    ds = load_netcdf(tmp_path / "selftest.nc")
    assert (ds["status"].sel(h=0.04) == "ok").all()
    assert "order" in ds  # post ran: the ok cases give it (NaN where they cannot)


def test_a_status_a_case_returns_itself_is_listed_but_is_not_an_error(tmp_path, capsys):
    status = study_main(_studies.SOFT, ["--out", str(tmp_path), "--workers", "1", "--no-figures"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "1 of 2 cases did not end ok" in out and "the method diverged at t = 0.5" in out
    assert "pyint: error" not in err


# -- item 11: pyint plot on a file that is not a study's --------------------------------------------------
def test_plot_refuses_a_netcdf_file_that_is_not_a_study(tmp_path, capsys):
    path = tmp_path / "other.nc"
    xr.Dataset({"x": ("t", np.arange(3.0))}).to_netcdf(path)
    assert main(["plot", str(path)]) != 0
    err = capsys.readouterr().err
    assert "is not a study's file" in err and "'study'" in err
    assert not (tmp_path / "other").exists() or not list((tmp_path / "other").iterdir())


# -- item 12: stale temporaries, a repeated --grid -----------------------------------------------------
def _dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_stale_temporaries_of_dead_writers_are_removed_at_the_next_write(tmp_path):
    dead, alive = _dead_pid(), os.getppid()
    stale = tmp_path / f"selftest.nc.tmp-{dead}"
    live = tmp_path / f"selftest.nc.tmp-{alive}"
    other = tmp_path / f"other.nc.tmp-{dead}"
    for p in (stale, live, other):
        p.write_bytes(b"half a file")
    run_study(SELFTEST, out=tmp_path, quick=True, workers=1, figures=False, verbose=False)
    assert not stale.exists()          # its writer is dead: removed
    assert live.exists()               # its writer may still be writing: kept
    assert other.exists()              # another file's: left to its own next write
    assert (tmp_path / "selftest.nc").is_file()


def test_a_grid_parameter_given_twice_is_an_error(tmp_path, capsys):
    with pytest.raises(ValueError, match="given twice"):
        SELFTEST.parse_overrides(["h=0.1", "h=0.2"])
    assert main(["study", "run", "selftest", "--grid", "h=0.1", "--grid", "h=0.2", "--out", str(tmp_path)]) == 2
    assert "--grid h=... is given twice" in capsys.readouterr().err
    assert not (tmp_path / "selftest.nc").exists()


# -- item 13a: every study script runs its sweep --------------------------------------------------------
@pytest.mark.parametrize("script", STUDY_SCRIPTS, ids=lambda p: p.stem)
def test_every_study_script_runs_its_sweep_as_pyint_study_run_does(script, tmp_path):
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, str(script), "--quick", "--out", str(out), "--no-figures"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    path = out / f"{script.stem}.nc"
    assert path.is_file(), f"{script.name} wrote nothing: {sorted(p.name for p in out.glob('*'))}"
    with xr.open_dataset(path) as ds:
        assert int(ds.attrs["n_cases"]) >= 1 and ds.attrs["study"] == script.stem and int(ds.attrs["quick"]) == 1
    # the same sweep as `pyint study run NAME --quick`: every case is found in the script's cache
    same = run_study(get_study(script.stem), out=out, quick=True, workers=1, figures=False, verbose=False)
    assert (same.n_run, same.n_cached) == (0, same.n_cases - int((same.dataset["status"] == "skipped").sum()))


def test_python_m_runs_a_study_module(tmp_path):
    run = subprocess.run([sys.executable, "-m", "pyint.studies.triple_pendulum_symplectic", "--quick",
                          "--out", str(tmp_path), "--no-figures", "--grid", "method=baumgarte_rk4"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    with xr.open_dataset(tmp_path / "triple_pendulum_symplectic.nc") as ds:
        assert list(ds["method"].values) == ["baumgarte_rk4"]


# -- item 13: C-int limits and empty models ------------------------------------------------------------
def _pendulum():
    from pyint.models import PendulumChain
    m = PendulumChain(1)
    return (m, *m.initial_state())


def test_step_count_every_and_model_size_limits_are_named():
    import pyint.methods  # noqa: F401 - registers the methods
    from pyint.integrator import METHODS
    from pyint.models import Model
    from pyint.models.rigid_bodies import RigidBodySystem

    m, q0, v0 = _pendulum()
    method = METHODS["genalpha"]()
    with pytest.raises(ValueError, match=r"every must be <= 2\*\*31 - 1"):
        method.integrate(m, q0, v0, 1.0, 0.5, every=2**31)
    with pytest.raises(ValueError, match=r"2147483648 steps exceeds the kernels' limit of 2\*\*31 - 1"):
        method.integrate(m, q0, v0, 2.0**31 * 2.0**-20, 2.0**-20, every=2**30)

    class Empty(Model):
        name = "empty"
        n = 0

        def mass(self, q):
            return np.zeros((0, 0))

        def force(self, t, q, v):
            return np.zeros(0)

    with pytest.raises(ValueError, match="n = 0 coordinates; an integrator needs at least 1"):
        METHODS["rk4_index1"]().integrate(Empty(), [], [], 1.0, 0.5)

    top = RigidBodySystem.heavy_top()
    x, r, v = np.array([[0.0, 0.0, 0.5]]), np.eye(3)[None], np.zeros(6)
    lie = METHODS["lie_genalpha"]()
    with pytest.raises(ValueError, match=r"every must be <= 2\*\*31 - 1"):
        lie.integrate(top, (x, r), v, 1.0, 0.5, every=2**31)
    with pytest.raises(ValueError, match=r"exceeds the kernels' limit of 2\*\*31 - 1"):
        lie.integrate(top, (x, r), v, 2.0**31 * 2.0**-20, 2.0**-20, every=2**30)


# -- item 14: the output size is checked before anything is allocated -------------------------------------
def test_output_larger_than_the_limit_is_refused_before_allocating_and_names_every(monkeypatch):
    import pyint.methods  # noqa: F401
    from pyint.integrator import METHODS
    from pyint.models.rigid_bodies import RigidBodySystem

    m, q0, v0 = _pendulum()
    # 1e5 steps x (t, q, v, a: 1 + 3*2, lambda: 1, the driver's residuals 5 and energy 1) x 8 B = 11.2 MB
    # > a 1 MB limit
    monkeypatch.setenv("PYINT_MAX_OUTPUT_BYTES", str(10**6))
    with pytest.raises(ValueError, match=r"100000 steps with every=1 .* PYINT_MAX_OUTPUT_BYTES") as err:
        METHODS["rk4_index1"]().integrate(m, q0, v0, 1.0, 1e-5)
    # 1e6 B / 112 B = 8928 samples: every = 12 keeps 8334, plus the final state (12 does not divide 1e5)
    assert "every >= 12 fits" in str(err.value)
    res = METHODS["rk4_index1"]().integrate(m, q0, v0, 1.0, 1e-5, every=12)
    assert len(res.t) == 8335 and res.t[-1] == pytest.approx(1.0)

    top = RigidBodySystem.heavy_top()
    x, r, v = np.array([[0.0, 0.0, 0.5]]), np.eye(3)[None], np.zeros(6)
    with pytest.raises(ValueError, match="every=1"):
        METHODS["lie_genalpha"]().integrate(top, (x, r), v, 1.0, 1e-5)
    with pytest.raises(ValueError, match="every=1"):
        METHODS["genalpha"]().integrate_batch([m, m], [q0, q0], [v0, v0], 1.0, 1e-5)
    monkeypatch.setenv("PYINT_MAX_OUTPUT_BYTES", "lots")
    with pytest.raises(ValueError, match="PYINT_MAX_OUTPUT_BYTES must be an integer"):
        METHODS["rk4_index1"]().integrate(m, q0, v0, 1.0, 1e-5)
    monkeypatch.delenv("PYINT_MAX_OUTPUT_BYTES")

    # the case: 1e7 steps with every = 1 (1120 MB here: 14 values per sample) is announced before
    # the allocation; as an error (filter) it stops the run before anything is allocated or computed
    assert V.MAX_OUTPUT_BYTES == 2 * 1024**3 and V.WARN_OUTPUT_BYTES < 1120e6 < V.MAX_OUTPUT_BYTES
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        with pytest.raises(ResourceWarning, match=r"10000000 steps with every=1 .* 1068 MiB"):
            METHODS["rk4_index1"]().integrate(m, q0, v0, 1.0, 1e-7)
    # 1e8 steps: 11.2 GB, above the default 2 GiB limit
    with pytest.raises(ValueError, match="above the limit of 2048 MiB"):
        METHODS["rk4_index1"]().integrate(m, q0, v0, 10.0, 1e-7)
    # variable steps: buffers for max_steps accepted steps, whose pages stay untouched until a step is
    # written: no warning at 1068 MiB of them (10^7 steps), still the limit above 2 GiB (10^8 steps)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        res = METHODS["rk4_index1"]().integrate(m, q0, v0, 1.0, rtol=1e-6, max_steps=10_000_000)
    assert res.status == "ok" and res.stats["accepted"] < 1000
    with pytest.raises(ValueError, match="lower max_steps"):
        METHODS["rk4_index1"]().integrate(m, q0, v0, 1.0, rtol=1e-6, max_steps=100_000_000)
