"""Adding a method, as the README's checklist "Adding a method" says: the template stepper
fortran/explicit_euler.f90 (explicit Euler on the index-1 form), its [[method]] table in
seam/seam.toml (id, stepper file, options, stats: the build generates its dispatch and named
slots, and compiles the file), the Python class below and one registration.  Nothing else is
touched (test_the_method_lives_in_three_places): the registered class then runs through integrate_batch, the shared tests' own functions
(tests/test_methods.py, tests/test_driver.py: measured order by pyint.convergence, the constraint
levels it claims, batch = integrate bit for bit, the per-step maxima), the IDA reference, and a
user's own study script run as ``python script.py``.

The class is not in pyint's METHODS: it is registered here for each test and removed after it (a
first-order method that drifts off the constraints is a template, not a method to ship), as a user
registers a method of their own.
"""
import ast
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pyint.methods  # noqa: F401  (registers the library's methods)
from pyint.convergence import measured_orders
from pyint.integrator import METHODS, Integrator, register
from pyint.options import Options, method_id, stat_names
from pyint.problems import PROBLEMS
from pyint.study.datasets import check_conventions, load_netcdf

import test_driver as shared_driver     # the shared tests, called as functions on the new method
import test_methods as shared_methods


class ExplicitEulerIndex1(Integrator):
    """Explicit Euler on the index-1 form: q += h v, v += h a(t, q, v) (the template method)."""

    name = "explicit_euler_index1"
    order = 1
    order_source = ("explicit Euler (Hairer, Norsett, Wanner, Solving ODEs I, II.1) on the index-1 ODE of "
                    "seed 003 eq. (7); lam is a function of (q, v, t)")
    supports = frozenset({"holonomic", "nonholonomic"})
    keeps = {"holonomic": frozenset({"acceleration"}), "nonholonomic": frozenset({"acceleration"})}
    KERNEL = method_id("explicit_euler")   # fortran/explicit_euler.f90
    STATS = stat_names("explicit_euler")

    def kernel_options(self, model):
        return Options("explicit_euler").pack(project=0)   # plain steps (index1_stepper_init)


NAME = ExplicitEulerIndex1.name
VECTOR_PROBLEMS = shared_methods.VECTOR_PROBLEMS
BATCH_PROBLEMS = [p for p in VECTOR_PROBLEMS if PROBLEMS[p].kinds and PROBLEMS[p].model.fortran_name is not None]


@pytest.fixture
def euler():
    """The one registration (and its removal, so that no other test module sees the class)."""
    assert NAME not in METHODS     # pyint does not ship it: this test is what adds it
    register(ExplicitEulerIndex1)
    try:
        yield METHODS[NAME]
    finally:
        del METHODS[NAME]


def test_registration_is_all_it_takes(euler):
    assert euler is ExplicitEulerIndex1
    shared_methods.test_claimed_orders_cite_their_source(NAME)
    accepted = {p for p in PROBLEMS if euler.accepts(PROBLEMS[p].model)}
    assert accepted == set(VECTOR_PROBLEMS), accepted
    r = euler().integrate(PROBLEMS["chain2"].model, *PROBLEMS["chain2"].initial_state, 0.1, 0.01)
    assert r.status == "ok" and r.stats["index1_solves"] == 11 and r.stats["steps"] == 10, r.stats


def _fortran_code(text):
    """Fortran source without its comments (a `!` outside a string ends the code of a line; the
    sources keep `!` out of their strings)."""
    return "\n".join(line.partition("!")[0] for line in text.splitlines())


def _python_code_words(text):
    """The names, attributes and non-docstring strings of a Python source (comments and
    docstrings may mention the template)."""
    tree = ast.parse(text)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            yield n.id
        elif isinstance(n, ast.Attribute):
            yield n.attr
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            yield n.value


def test_the_method_lives_in_three_places():
    """The template is named in its description table, its stepper file and this class only: no
    dispatch, build list or id table elsewhere is kept by hand."""
    root = Path(__file__).resolve().parents[1]
    pattern = re.compile(r"explicit_euler|euler_stepper")
    named = [str(p.relative_to(root)) for p in (root / "fortran").rglob("*.f90")
             if p.name != "explicit_euler.f90" and pattern.search(_fortran_code(p.read_text()))]
    named += ["meson.build"] * bool(pattern.search((root / "meson.build").read_text()))
    named += [str(p.relative_to(root)) for p in (root / "pyint").rglob("*.py")
              if any(pattern.search(w) for w in _python_code_words(p.read_text()))]
    assert named == [], named
    assert 'stepper = "fortran/explicit_euler.f90"' in (root / "seam" / "seam.toml").read_text()


def test_a_registration_that_cannot_work_is_refused_by_name():
    """The two slips of a newcomer: a KERNEL no method of seam/seam.toml has (else every run
    stops with 'the Fortran kernel rejected its input'), and a name another class holds (else the
    library's method is silently replaced)."""
    class NoStepper(ExplicitEulerIndex1):
        name = "no_stepper"
        KERNEL = 99
    with pytest.raises(ValueError, match="KERNEL = 99 is no stepper .*seam/seam.toml"):
        register(NoStepper)

    class Clash(ExplicitEulerIndex1):
        name = "rk4_index1"
    with pytest.raises(ValueError, match="'rk4_index1' is taken by pyint.methods.rk4_index1.RK4Index1"):
        register(Clash)
    assert "no_stepper" not in METHODS and METHODS["rk4_index1"].__name__ == "RK4Index1"
    assert register(METHODS["rk4_index1"]) is METHODS["rk4_index1"]    # the same class again: no change


@pytest.mark.numerics   # orders and references: rerun under a second BLAS kernel
def test_it_is_explicit_euler():
    """One step by hand from the kernel's own start: q1 = q0 + h v0, v1 = v0 + h a0, to the roundings
    of the update (one more if the compiler fuses it into a multiply-add)."""
    prob = PROBLEMS["chain2"]
    q0, v0 = prob.initial_state
    h = 0.01
    r = ExplicitEulerIndex1().integrate(prob.model, q0, v0, h, h)
    eps = np.finfo(float).eps
    for x1, x0, dx in ((r.q[1], r.q[0], r.v[0]), (r.v[1], r.v[0], r.a[0])):
        assert np.all(np.abs(x1 - (x0 + h * dx)) <= 2 * eps * (np.abs(x0) + np.abs(h * dx))), (x1, x0, dx)


@pytest.mark.parametrize("problem", BATCH_PROBLEMS)
def test_batch_and_step_maxima(euler, problem):
    """integrate_batch (two OpenMP threads) = integrate bit for bit, and the driver's maxima over every
    step: the shared tests of tests/test_driver.py."""
    shared_driver.test_integrate_batch_matches_integrate_bit_for_bit(NAME, problem)
    shared_driver.test_step_maxima_bound_the_sample_maxima(NAME, problem)


@pytest.mark.numerics   # orders and references: rerun under a second BLAS kernel
@pytest.mark.parametrize("problem", VECTOR_PROBLEMS)
def test_shared_order_and_constraint_levels(euler, problem):
    """The shared tests of tests/test_methods.py: the order measured by pyint.convergence (h0 and four
    halvings, the window of a method of order <= 2) is 1 within 0.2, and the acceleration level it
    claims stays at round-off."""
    shared_methods.test_convergence_order(euler, PROBLEMS[problem])
    shared_methods.test_claimed_constraint_levels_kept(euler, PROBLEMS[problem])


@pytest.mark.numerics   # orders and references: rerun under a second BLAS kernel
def test_the_shared_order_test_can_fail_on_it(euler):
    """The same shared test with a wrong claim (order 2) fails: the slope it measures is the method's."""
    class Claims2(ExplicitEulerIndex1):
        order = 2
    with pytest.raises(AssertionError):
        shared_methods.test_convergence_order(Claims2, PROBLEMS["driven_pendulum"])


@pytest.mark.numerics   # orders and references: rerun under a second BLAS kernel
@pytest.mark.parametrize("problem", VECTOR_PROBLEMS)
def test_agreement_with_ida_reference(euler, problem):
    """At h = h0 / 64 the trajectory is as far from the IDA reference as from the problem's own
    (the shared criterion, IDA_AGREEMENT), and that error is the first-order error the convergence
    table predicts: at most 2 C h, C = max e(h) / h over the table h0 ... h0 / 16 (e: the q error).
    e(h) / h settles as h shrinks: it changes by at most 2.1 % over the table's last halving
    (manipulator) and e(h0 / 64) / (C h0 / 64) measured at most 1.014 (manipulator) on every problem,
    a deviation of 1.4 % where the bound allows 100 % (margin 70); a method of order below 1, or an
    error that does not shrink with h, exceeds it."""
    prob = PROBLEMS[problem]
    _, errs = measured_orders(euler(), prob)
    hs = prob.h0 / 2.0 ** np.arange(len(errs))
    c = np.max(errs[:, 0] / hs)
    h = prob.h0 / 64
    err_ida, _ = shared_methods.check_ida_agreement(euler, prob, h)
    assert err_ida <= 2 * c * h, (err_ida, c * h)


#: A user's study script: the method class (this module's, verbatim), one registration, a study that
#: names it next to a library method, and the runner's documented ending.
SCRIPT = '''
"""My study: explicit Euler (my own method) against RK4 on a double pendulum."""
from pyint.integrator import METHODS, Integrator, register
from pyint.options import Options, method_id, stat_names
from pyint.models import PendulumChain
from pyint.study import Study, study_main


{cls}

register(ExplicitEulerIndex1)


def run_case(p):
    model = PendulumChain(n_links=2)
    q0, v0 = model.initial_state([1.0, 1.5])
    return METHODS[p["method"]]().integrate(model, q0, v0, t_end=p["T"], h=p["h"]).to_xarray()


STUDY = Study(name="myeuler", description="my explicit Euler against RK4",
              grid={{"method": ["explicit_euler_index1", "rk4_index1"]}}, fixed={{"T": 0.2, "h": 0.01}},
              run_case=run_case)

if __name__ == "__main__":
    raise SystemExit(study_main(STUDY))
'''


def test_a_user_study_script_runs_it_by_name(tmp_path):
    """``python myeuler.py`` in a directory outside the package: both cases ok, the NetCDF passes the
    schema check, and its explicit-Euler trajectory is this process's run of the class bit for bit."""
    script = tmp_path / "mine" / "myeuler.py"
    script.parent.mkdir()
    script.write_text(SCRIPT.format(cls=inspect.getsource(ExplicitEulerIndex1)))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, str(script), "--out", str(tmp_path / "out"), "--no-figures"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    ds = load_netcdf(tmp_path / "out" / "myeuler.nc")
    assert check_conventions(ds) == []
    assert list(ds["method"].values) == ["explicit_euler_index1", "rk4_index1"]
    assert list(ds["status"].values) == ["ok", "ok"]
    from pyint.models import PendulumChain
    model = PendulumChain(n_links=2)
    mine = ExplicitEulerIndex1().integrate(model, *model.initial_state([1.0, 1.5]), t_end=0.2, h=0.01)
    q = ds["q"].values      # (method, time, coord), the methods in the order asserted above
    np.testing.assert_array_equal(q[0], mine.q)
    assert not np.array_equal(q[0], q[1])
