"""Golden outputs: what every method computes on every shared problem, and every study's ``--quick``
dataset, recorded before the architecture moves of issue 16 (one driver, one schema, one layout) and
checked by tests/test_golden.py.  A move must not change a number: the comparison is 1e-13 relative to
each array's size (bit for bit in practice: the Fortran kernels are built for x86-64-v2, without FMA,
against the reference LAPACK, so no CPU or BLAS kernel changes them).

Both run in a child process under one OpenBLAS kernel (STUDY_ENV): the problems' consistent initial
states, the IDA/DOP853 references and the NumPy start-up computations then round the same way on any
machine (under another kernel a Newton contraction rate of the block methods differs in its 10th digit).

Record (only for a change that is meant to change numbers, said in the commit):
    python tests/golden_outputs.py            # writes tests/golden/methods.json and tests/golden/studies/*.nc
A new method's cases (every recorded case and the study datasets left as they are):
    python tests/golden_outputs.py --add
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
# Every x86-64 CPU runs OpenBLAS's Sandybridge kernel; one BLAS thread; the studies get a fresh reference cache.
STUDY_ENV = {"OPENBLAS_CORETYPE": "Sandybridge", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
RESULT_FIELDS = ("q", "v", "lam", "x", "R", "V")


def method_cases():
    """(case id, method class, problem) for every registered method on every shared problem it supports."""
    import pyint.methods  # noqa: F401  (registers every method)
    from pyint.integrator import METHODS
    from pyint.problems import PROBLEMS
    for mname, cls in sorted(METHODS.items()):
        for pname, prob in sorted(PROBLEMS.items()):
            if cls.accepts(prob.model):
                yield f"{mname}-{pname}", cls, prob


def method_output(cls, prob):
    """Final sample and numeric stats of one run over the problem's t_end at its h0."""
    q0, v0 = prob.initial_state
    r = cls().integrate(prob.model, q0, v0, prob.t_end, prob.h0)
    out = {f: np.asarray(getattr(r, f))[-1].tolist() for f in RESULT_FIELDS if getattr(r, f, None) is not None}
    out["stats"] = {k: float(v) for k, v in sorted(r.stats.items())
                    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)}
    return out


def run_method_cases(out_file):
    """Every method case, computed in a child process under STUDY_ENV, as {case id: output}."""
    subprocess.run([sys.executable, __file__, "--methods", str(out_file)], env={**os.environ, **STUDY_ENV},
                   check=True, capture_output=True, cwd=pathlib.Path(out_file).parent)
    return json.loads(pathlib.Path(out_file).read_text())


def run_quick_studies(out_dir):
    """Every study's ``--quick`` dataset (the smoke-test study included) into out_dir; returns the paths."""
    out_dir = pathlib.Path(out_dir)
    env = {**os.environ, **STUDY_ENV, "PYINT_REFERENCE_CACHE": str(out_dir / "reference-cache")}
    exe = pathlib.Path(sys.executable).with_name("pyint")
    for names in (["--all"], ["selftest"]):
        subprocess.run([str(exe), "study", "run", *names, "--quick", "--no-figures", "--workers", "1",
                        "--out", str(out_dir)], env=env, check=True, capture_output=True, cwd=out_dir)
    return sorted(out_dir.glob("*.nc"))


def record(add_only=False):
    with tempfile.TemporaryDirectory() as tmp:
        cases = run_method_cases(pathlib.Path(tmp) / "methods.json")
    if add_only:   # keep every recorded case; add the cases nobody recorded yet
        old = json.loads((GOLDEN / "methods.json").read_text())
        new = sorted(set(cases) - set(old))
        cases = {**old, **{cid: cases[cid] for cid in new}}
        print(f"added {len(new)} method cases: {', '.join(new) or 'none'}")
    (GOLDEN / "methods.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")
    if add_only:
        return
    studies = GOLDEN / "studies"
    studies.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for path in run_quick_studies(tmp):
            (studies / path.name).write_bytes(path.read_bytes())
    print(f"{len(cases)} method cases, {len(list(studies.glob('*.nc')))} study datasets -> {GOLDEN}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--methods"]:
        cases = {cid: method_output(cls, prob) for cid, cls, prob in method_cases()}
        pathlib.Path(sys.argv[2]).write_text(json.dumps(cases))
    else:
        record(add_only=sys.argv[1:2] == ["--add"])
