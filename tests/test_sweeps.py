"""Sweeps at scale (issue 28): batches written by whoever runs them into the case store, resume after a
killed client or worker with at most the batches in flight executed twice, a lost scheduler that marks
nothing failed, checks before the first case, and a cache key on the code that computes a case."""
import contextlib
import dataclasses
import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
import xarray as xr

from pyint.cli import main
from pyint.study import Study, run_study
from pyint.study.cache import (CaseStore, code_fingerprint, pack_cases, read_shard, unpack_cases,
                               write_shard)
from pyint.study.datasets import load_netcdf, write_netcdf

import _studies

TESTS = Path(__file__).resolve().parent
N = len(_studies.COUNTED.grid["k"])      # 40 cases
BATCH = 3


def comparable(ds):
    ds = ds.drop_vars([v for v in ("cpu_time",) if v in ds])
    ds.attrs = {k: v for k, v in ds.attrs.items() if k != "created"}
    return ds


def _executions(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The counted sweep run at once in this process: the file every interrupted run must give."""
    run = run_study(_studies.COUNTED, out=tmp_path_factory.mktemp("whole"), workers=1, batch_size=BATCH,
                    figures=False, verbose=False)
    return load_netcdf(run.path)


def _wait_for_cases(out, n, ended, timeout=60.0):
    """Poll until ``n`` cases of the counted study are stored in ``out``; ``ended()`` is None while the
    sweep runs, else why it ended (the wait then fails with it), and so is a wait past ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while len(_studies.stored_cases(out, "counted")) < n:
        why = ended()
        assert why is None, f"the sweep ended before {n} cases were stored: {why}"
        assert time.monotonic() < deadline, f"{n} cases not stored within {timeout:g} s"
        time.sleep(0.02)


def _kill_client_midway(tmp_path, out, log, options):
    """Start the counted sweep in a subprocess (``options``: of run_study), SIGKILL it (its whole process
    group) once a third of the cases are stored; returns the number of cases stored then."""
    script = (f"import sys; sys.path.insert(0, {str(TESTS)!r}); import _studies; from pyint.study import run_study; "
              f"run_study(_studies.COUNTED, out={str(out)!r}, batch_size={BATCH}, figures=False, {options})")
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path, start_new_session=True,
                            env={**os.environ, "PYINT_TEST_CASE_LOG": str(log)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    workers = []
    try:
        _wait_for_cases(out, N // 3, lambda: None if proc.poll() is None else proc.stderr.read())
        workers = psutil.Process(proc.pid).children()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
    psutil.wait_procs(workers, timeout=30)   # dead, or zombies: nothing of theirs is written any more
    return len(_studies.stored_cases(out, "counted"))


def test_sigkill_of_the_client_then_resume_runs_each_case_once_but_the_batches_in_flight(
        tmp_path, monkeypatch, uninterrupted):
    out, log = tmp_path / "out", tmp_path / "executed.log"
    stored = _kill_client_midway(tmp_path, out, log, "workers=2")
    assert N // 3 <= stored < N
    assert not (out / "counted.nc").exists()
    monkeypatch.setenv("PYINT_TEST_CASE_LOG", str(log))
    run = run_study(_studies.COUNTED, out=out, workers=2, batch_size=BATCH, figures=False, verbose=False)
    assert run.n_cached == stored and run.n_run == N - stored
    # two workers, two batches in flight each: at most 4 batches of 3 cases were lost with the client
    executed = _executions(log)
    assert N <= executed <= N + 2 * 2 * BATCH, executed
    xr.testing.assert_identical(comparable(load_netcdf(run.path)), comparable(uninterrupted))
    assert not list(out.rglob("*.tmp-*"))


def test_sigkill_of_a_worker_reruns_only_its_batches_and_gives_the_same_file(tmp_path, monkeypatch, uninterrupted):
    out, log = tmp_path / "out", tmp_path / "executed.log"
    monkeypatch.setenv("PYINT_TEST_CASE_LOG", str(log))
    outcome = {}
    before = {p.pid for p in psutil.Process().children()}

    def sweep():
        outcome["run"] = run_study(_studies.COUNTED, out=out, workers=2, batch_size=BATCH, figures=False,
                                   verbose=False)
    thread = threading.Thread(target=sweep)
    thread.start()
    _wait_for_cases(out, N // 3, lambda: None if thread.is_alive() else "its thread returned")
    workers = [p for p in psutil.Process().children() if p.pid not in before and p.is_running()]
    assert workers
    workers[0].kill()                     # as the OOM killer would
    thread.join(120)
    assert not thread.is_alive()
    run = outcome["run"]
    assert run.n_failed == 0 and run.n_run == N
    executed = _executions(log)
    assert N <= executed <= N + 2 * 2 * BATCH, executed   # the batches in flight when the pool broke
    xr.testing.assert_identical(comparable(load_netcdf(run.path)), comparable(uninterrupted))


@pytest.fixture
def threaded_cluster():
    """A Dask cluster of two single-thread workers inside this process (the test's modules import)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://",
                                  dashboard_address=None) as cluster:
        yield cluster


def test_dask_sigkill_of_the_client_then_resume_gives_the_same_file(tmp_path, monkeypatch, threaded_cluster,
                                                                    uninterrupted):
    out, log = tmp_path / "out", tmp_path / "executed.log"
    monkeypatch.setenv("PYINT_TEST_CASE_LOG", str(log))   # read by the worker threads of this process
    address = threaded_cluster.scheduler_address
    stored = _kill_client_midway(tmp_path, out, log, f"scheduler={address!r}")
    assert N // 3 <= stored < N
    time.sleep(0.5)  # the batches the workers were running finish and write their shards
    run = run_study(_studies.COUNTED, out=out, scheduler=address, batch_size=BATCH, figures=False, verbose=False)
    assert run.n_cached >= stored and run.n_cached + run.n_run == N
    executed = _executions(log)
    assert N <= executed <= N + 2 * 2 * BATCH, executed
    xr.testing.assert_identical(comparable(load_netcdf(run.path)), comparable(uninterrupted))


def test_ctrl_c_stops_a_dask_sweep_at_once_and_a_rerun_finishes_it(tmp_path, monkeypatch, threaded_cluster):
    out, log = tmp_path / "out", tmp_path / "executed.log"
    monkeypatch.setenv("PYINT_TEST_CASE_LOG", str(log))
    address = threaded_cluster.scheduler_address
    call = (f"run_study(_studies.COUNTED, out={str(out)!r}, scheduler={address!r}, batch_size={BATCH}, "
            f"grid={{'delay': [0.2]}}, figures=False, progress=False)")
    script = (f"import signal; signal.signal(signal.SIGINT, signal.default_int_handler); import sys; "
              f"sys.path.insert(0, {str(TESTS)!r}); import _studies; from pyint.study import run_study\n"
              f"try: {call}\nexcept KeyboardInterrupt: sys.exit(130)")
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_cases(out, 2 * BATCH, lambda: None if proc.poll() is None else proc.communicate())
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)   # the study process only: the workers are this process's threads
        _, stderr = proc.communicate(timeout=60)   # a hang detector, not a timing test
        print(f"Ctrl-C -> exit in {time.monotonic() - t0:.2f} s")
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == 130, stderr
    assert "interrupted:" in stderr and "run again to finish" in stderr
    assert not (out / "counted.nc").exists()
    deadline = time.monotonic() + 30   # the batches running on the workers finish and write their shards
    while list(out.rglob("*.tmp-*")):
        assert time.monotonic() < deadline, "a shard's temporary was left behind"
        time.sleep(0.05)
    run = run_study(_studies.COUNTED, out=out, scheduler=address, batch_size=BATCH, grid={"delay": [0.2]},
                    figures=False, verbose=False)
    assert run.n_cached >= 2 * BATCH and run.n_cached + run.n_run == N and run.n_failed == 0
    assert N <= _executions(log) <= N + 2 * 2 * BATCH


def test_a_lost_scheduler_marks_no_case_failed_and_a_rerun_finishes(tmp_path, uninterrupted):
    distributed = pytest.importorskip("distributed")
    import dask
    out = tmp_path / "out"
    outcome = {}
    slow = Study(name="counted", description=_studies.COUNTED.description, grid=_studies.COUNTED.grid,
                 fixed={"delay": 0.05}, run_case=_studies.counted_case, meta=_studies.COUNTED.meta)
    # the workers give up on the lost scheduler after 2 s, not 30 (the cluster then closes at once)
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://",
                                     dashboard_address=None) as cluster:
        def sweep():
            try:
                run_study(slow, out=out, scheduler=cluster.scheduler_address, batch_size=BATCH, figures=False,
                          verbose=False)
            except Exception as exc:  # noqa: BLE001 - what the test looks at
                outcome["error"] = exc
        thread = threading.Thread(target=sweep)
        thread.start()
        _wait_for_cases(out, N // 4, lambda: None if thread.is_alive() else "its thread returned")
        cluster.sync(cluster.scheduler.close)  # the scheduler goes away
        thread.join(60)
        assert not thread.is_alive(), "the run did not notice the lost scheduler"
    assert isinstance(outcome.get("error"), RuntimeError), outcome
    assert "scheduler" in str(outcome["error"])
    store = CaseStore(out / ".cache" / "counted").open()
    statuses = [s for name in store.names
                for s in read_shard(store.shards / name)["case_status"].values.tolist()]
    assert statuses and set(statuses) == {"ok"}       # nothing unfinished became "failed"
    stored = len(_studies.stored_cases(out, "counted"))
    assert stored < N
    run = run_study(slow, out=out, workers=1, figures=False, verbose=False)
    assert run.n_run == N - stored and run.n_failed == 0
    xr.testing.assert_identical(comparable(load_netcdf(run.path)), comparable(uninterrupted))


# -- the store -----------------------------------------------------------------------------------------
def _odd_case():
    ds = xr.Dataset({"y": (("time", "coord"), np.arange(6.0).reshape(3, 2), {"units": "m", "long_name": "y"}),
                     "flag": ((), np.int8(1), {"units": "1", "long_name": "flag"}),
                     "n": ((), np.int64(7), {"units": "1", "long_name": "n"}),
                     "names": ("coord", np.array(["a", "bb"]), {"units": "", "long_name": "names"}),
                     "empty": ("none", np.zeros(0), {"units": "1", "long_name": "nothing"}),
                     "status": ((), "ok"), "message": ((), "")},
                    coords={"time": ("time", [0.0, 0.5, 1.0], {"units": "s", "long_name": "t"}),
                            "coord": ["x", "y"], "coord_units": ("coord", ["m", "rad"])},
                    attrs={"rho": 0.5, "tags": [1, 2], "exact": True})
    return ds


def test_a_shard_gives_back_each_case_as_its_own_netcdf_file_would(tmp_path):
    a, b = _odd_case(), xr.Dataset({"status": ((), "failed"), "message": ((), "ValueError: no")})
    name, keys, status = write_shard(tmp_path, [("k" * 24, {"h": 0.1}, a), ("j" * 24, {"h": 0.2}, b)])
    assert keys == ["k" * 24, "j" * 24] and status == ["ok", "failed"]
    back = list(unpack_cases(read_shard(tmp_path / name)))
    assert [k for k, _, _ in back] == keys and back[0][1] == '{"h": 0.1}'
    for (_, _, got), want in zip(back, (a, b)):
        xr.testing.assert_identical(got, load_netcdf(write_netcdf(want, tmp_path / "one.nc")))
    assert pack_cases([]).sizes.get("case", 0) == 0


def test_scalar_cases_read_light_combine_as_the_datasets_do(tmp_path):
    """combine_cases on a shard's scalar-only cases read as ScalarCase gives what the Datasets give."""
    from pyint.study.combine import combine_cases
    scalar = [xr.Dataset({"error": ((), float(k), {"units": "m", "long_name": "e"}),
                          "n": ((), np.int64(k), {"units": "1", "long_name": "n"}),
                          "status": ((), "ok" if k != 2 else "diverged"), "message": ((), "" if k != 2 else "h")},
                         coords={"tag": ((), "x", {"units": "", "long_name": "tag"})}, attrs={"rho": 0.5})
              for k in range(4)]
    cases = scalar + [_odd_case(), xr.Dataset({"status": ((), "failed"), "message": ((), "boom")})]
    name, _, _ = write_shard(tmp_path, [(f"{i:024d}", {"i": i}, ds) for i, ds in enumerate(cases)])
    shard = read_shard(tmp_path / name)
    light = [ds for _, _, ds in unpack_cases(shard, light=True)]
    full = [ds for _, _, ds in unpack_cases(shard)]
    assert sum(type(ds).__name__ == "ScalarCase" for ds in light) == 5     # the failed case too
    grid = {"i": list(range(len(cases)))}
    a = combine_cases(grid, lambda: (((i,), ds) for i, ds in enumerate(light)))
    b = combine_cases(grid, [((i,), ds) for i, ds in enumerate(full)])
    xr.testing.assert_identical(a, b)
    assert list(a["status"].values) == ["ok", "ok", "diverged", "ok", "ok", "failed"]
    assert a["n"].dtype == np.float64 and list(a["n"].values[:5]) == [0, 1, 2, 3, 7] and np.isnan(a["n"].values[5])
    xr.testing.assert_identical(light[0].dataset(), full[0])


def test_a_prepared_case_is_what_assign_gives_and_text_is_shared_in_the_study_file():
    """_prepare_case adds status/message through xarray's fast constructor: the same Dataset as
    ``assign`` (a case with dimensions, coordinates, attributes); combine keeps one str per text."""
    from pyint.study.combine import combine_cases
    from pyint.study.workers import _add_scalars, _prepare_case
    base = _odd_case().drop_vars(["status", "message"])
    extra = {"status": ((), "ok"), "message": ((), "")}
    xr.testing.assert_identical(_add_scalars(base, extra), base.assign(extra))
    assert list(_add_scalars(base, extra).data_vars)[-2:] == ["status", "message"]
    assert "status" not in base                               # the caller's dataset is not changed
    prepared = _prepare_case(base, {"h": 0.1}, {})
    assert prepared["status"].item() == "ok" and prepared["message"].item() == ""
    cases = [((i,), xr.Dataset({"status": ((), np.array("ok").item() + ""), "message": ((), "")}))
             for i in range(3)]
    out = combine_cases({"i": [0, 1, 2]}, cases)
    assert len({id(v) for v in out["status"].values}) == 1


def test_the_index_is_rebuilt_from_the_shards_when_a_kill_cut_it(tmp_path):
    store = CaseStore(tmp_path).open()
    for i in range(3):
        store.record(*write_shard(store.shards, [(f"{i:024d}", {"i": i}, _odd_case())]))
    lines = store.index.read_text().splitlines()
    store.index.write_text(lines[0] + "\n" + lines[1][:20])   # the last line lost, the one before cut
    again = CaseStore(tmp_path).open()
    shard, ok = again.lookup(np.array([f"{i:024d}" for i in range(4)], dtype="S24"))
    assert (shard[:3] >= 0).all() and shard[3] == -1 and ok[:3].all()
    assert len(again.index.read_text().splitlines()) == 3       # the two lost lines written again (and one cut)


# -- the study file, written by blocks ------------------------------------------------------------------------
def _file_description(path) -> dict:
    """What a NetCDF file is, beyond its data: every variable's dimensions, dtype, filters, chunking and
    attributes (netCDF4), its xarray encoding, the dimensions and global attributes ("created" aside)."""
    import netCDF4
    nc = netCDF4.Dataset(path)
    try:
        out = {"dims": [(d, len(x)) for d, x in nc.dimensions.items()],
               "attrs": {k: repr(nc.getncattr(k)) for k in nc.ncattrs() if k != "created"}}
        for name, var in nc.variables.items():   # repr: NaN fill values compare equal
            out[name] = repr((var.dimensions, var.dtype, var.filters(), var.chunking(),
                              {k: var.getncattr(k) for k in var.ncattrs()}))
    finally:
        nc.close()
    with xr.open_dataset(path, engine="netcdf4") as ds:
        out["encoding"] = repr({name: {k: v for k, v in ds[name].encoding.items() if k != "source"}
                                for name in ds.variables})
    return out


def _assert_same_file(a, b):
    """The same data, coordinates, attributes ("created" aside) and encodings."""
    xr.testing.assert_identical(comparable(load_netcdf(a)),
                                comparable(load_netcdf(b)))
    assert _file_description(a) == _file_description(b)


def _labelled_case(labels, value, flag):
    """A case with an outer-joined labelled dimension, text on it, a non-index coordinate that differs
    between cases, a scalar text coordinate, an int8, a bool and attributes."""
    return xr.Dataset({"e": ("coord", np.arange(len(labels), dtype=float) + value, {"units": "m", "long_name": "e"}),
                       "names": ("coord", np.array([x * 2 for x in labels]), {"units": "", "long_name": "n"}),
                       "flag": ((), np.int8(flag), {"units": "1", "long_name": "f"}),
                       "yes": ((), bool(flag), {"units": "1", "long_name": "b"}),
                       "i32": ("k2", np.arange(2, dtype=np.int32), {"units": "1", "long_name": "i"}),
                       "status": ((), "ok"), "message": ((), f"m{value}")},
                      coords={"coord": ("coord", labels, {"units": "", "long_name": "c"}),
                              "cu": ("coord", [x.upper() for x in labels], {"units": "", "long_name": "cu"}),
                              "tag": ((), "x", {"units": "", "long_name": "tag"})},
                      attrs={"rho": value})


def test_the_study_file_written_by_blocks_is_the_file_combined_in_memory(tmp_path, monkeypatch):
    """run_study writes the file from the store block by block; the same study with a post() (identity)
    combines in memory and writes with to_netcdf, from the same cached cases: the same file.  Two cases
    per block and two blocks kept: blocks are written, evicted and read back (the skipped cases come first)."""
    from pyint.study import combine
    monkeypatch.setattr(combine, "_cases_per_block", lambda layout: 2)
    io = []
    real_io = combine._FileBlocks._io
    monkeypatch.setattr(combine._FileBlocks, "_io",
                        lambda self, k, arrays, write: (io.append(write), real_io(self, k, arrays, write)))
    study = dataclasses.replace(_studies.ROLLING, where=lambda p: not (p["method"] == "a" and p["h"] == 0.05))
    run = run_study(study, out=tmp_path / "out", workers=1, figures=False, verbose=False)
    assert run.n_failed == 3 and run.post_error is None      # method b, rho_inf 0.5: Newton did not converge
    assert io.count(True) >= 6 and io.count(False) >= 1     # 12 cases, 6 blocks; one was read back
    blocks = tmp_path / "blocks.nc"
    os.replace(run.path, blocks)
    io.clear()
    in_memory = run_study(dataclasses.replace(study, post=lambda ds: ds), out=tmp_path / "out", workers=1,
                          figures=False, verbose=False)
    assert in_memory.n_run == 0 and not io                     # every case cached; nothing written by blocks
    _assert_same_file(blocks, in_memory.path)
    ds = load_netcdf(blocks)
    assert ds["q"].dims == ("method", "rho_inf", "h", "sample", "coord")
    assert (ds["status"] == "skipped").sum() == 2 and np.isnan(ds["q"].sel({"method": "a", "h": 0.05})).all()
    assert int(ds.attrs["n_failed"]) == 3


def test_write_combined_gives_the_file_of_combine_cases_in_any_order(tmp_path, monkeypatch):
    """Outer joins, text, integers with gaps (floats), int8, bool, differing case attributes, a non-index
    coordinate: the cases in a shuffled order through blocks of 3 cases (blocks met again are read back)."""
    from pyint.study import combine
    grid = {"p": [0.1, 0.2, 0.3, 0.4], "q": ["u", "v", "w"]}
    labels = [["x", "y"], ["y", "z"], ["x"], ["x", "y", "z"]]
    cases = [((i, j), _labelled_case(labels[(i + j) % 4], i + 0.5 * j, (i * j) % 2)) for i in range(4) for j in range(3)]
    cases[4] = ((1, 1), xr.Dataset({"status": ((), "failed"), "message": ((), "boom")}))
    order = np.random.default_rng(28).permutation(len(cases))
    shuffled = [cases[i] for i in order]
    want = write_netcdf(combine.combine_cases(grid, cases), tmp_path / "memory.nc")
    per_case = sum(math.prod(v.shape) * v.dtype.itemsize for v in combine._layout(grid, cases).variables.values())
    monkeypatch.setattr(combine, "BLOCK_BYTES", 3 * per_case)
    got = combine.write_combined(grid, shuffled, tmp_path / "blocks.nc")
    _assert_same_file(want, got)
    ds = load_netcdf(got)
    assert ds["flag"].dtype == np.float64 and np.isnan(ds["flag"].sel(p=0.2, q="v"))    # a gap: float
    assert ds["i32"].dtype == np.float64 and list(ds["coord"].values) == ["x", "y", "z"]
    assert str(ds["names"].sel(p=0.1, q="u", coord="z").values) == ""
    assert json.loads(str(ds["case_attrs"].sel(p=0.4, q="w").values)) == {"rho": 4.0}
    # every case writes every cell: the int8 stays int8, the bool is stored as xarray stores a bool
    full = [((i,), _labelled_case(["x"], i, i % 2)) for i in range(5)]
    _assert_same_file(write_netcdf(combine.combine_cases({"k": list(range(5))}, full), tmp_path / "m2.nc"),
                      combine.write_combined({"k": list(range(5))}, full[::-1], tmp_path / "b2.nc"))
    assert load_netcdf(tmp_path / "b2.nc")["flag"].dtype == np.int8


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_an_interrupted_write_of_the_study_file_leaves_no_file(tmp_path, monkeypatch, error):
    """Ctrl-C (or an error) while the blocks are written: the temporary file is removed, a file already at
    the path is left as it was."""
    from pyint.study import combine
    monkeypatch.setattr(combine, "BLOCK_BYTES", 1)
    grid = {"k": list(range(20))}
    cases = [((i,), xr.Dataset({"x": ((), float(i)), "status": ((), "ok"), "message": ((), "")})) for i in range(20)]
    passes = []

    def parts():
        passes.append(0)
        for n, case in enumerate(cases):
            if len(passes) == 2 and n == 15:      # the second pass, blocks already in the file
                raise error("stop")
            yield case
    path = tmp_path / "study.nc"
    old = write_netcdf(xr.Dataset({"old": ("i", [1.0, 2.0])}), path).read_bytes()
    with pytest.raises(error):
        combine.write_combined(grid, parts, path)
    assert path.read_bytes() == old and sorted(p.name for p in tmp_path.iterdir()) == ["study.nc"]


# -- checks before the first case ----------------------------------------------------------------------
def test_a_grid_parameter_without_units_is_refused_before_any_case_runs(tmp_path, monkeypatch, capsys):
    log = tmp_path / "executed.log"
    monkeypatch.setenv("PYINT_TEST_CASE_LOG", str(log))
    no_units = Study(name="counted", description="d", grid={"k": [1, 2]}, fixed={"delay": 0.0},
                     run_case=_studies.counted_case)
    with pytest.raises(ValueError, match=r"grid parameters \['k'\] have no units"):
        run_study(no_units, out=tmp_path, workers=1, figures=False, verbose=False)
    assert _executions(log) == 0 and not (tmp_path / ".cache").exists()
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(ValueError, match="is a file"):
        run_study(_studies.COUNTED, out=tmp_path / "file", workers=1, figures=False, verbose=False)
    (tmp_path / "out" / "selftest.nc").mkdir(parents=True)
    assert main(["study", "run", "selftest", "--quick", "--out", str(tmp_path / "out"), "--workers", "1"]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert _executions(log) == 0


# -- the cache key ----------------------------------------------------------------------------------------
STUDY_MODULE = '''
import xarray as xr
from pyint.study import Study

SCALE = 2.0

def helper(h):
    return SCALE * h

def unrelated():
    return 1

def run_case(p):
    return xr.Dataset({"error": ((), helper(p["h"]), {"units": "m"})})

STUDY = Study(name="keyed", description="DESCRIPTION", grid={"h": [0.1]}, run_case=run_case, meta=META)
'''


def _fingerprint(tmp_path, text, n=[0]):  # noqa: B006 - a counter for fresh module names
    n[0] += 1
    path = tmp_path / f"keyed_{n[0]}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
        return code_fingerprint(module.STUDY)
    finally:
        del sys.modules[path.stem]


def test_the_cache_key_covers_run_case_and_what_it_calls_not_meta_or_description(tmp_path):
    base = STUDY_MODULE.replace("META", "{}")

    def key(text):   # the module name aside (each copy gets its own)
        return _fingerprint(tmp_path, text)

    k0 = key(base)
    assert key(base) == k0
    assert key(base.replace("meta={}", 'meta={"x": ("m", "an x")}')) == k0         # meta
    assert key(base.replace("DESCRIPTION", "another description")) == k0            # description
    assert key(base.replace("return 1", "return 2")) == k0                          # code run_case never calls
    assert key(base.replace("return SCALE * h", "return SCALE * h * h")) != k0      # a helper it calls
    assert key(base.replace("SCALE = 2.0", "SCALE = 3.0")) != k0                    # a constant the helper reads
