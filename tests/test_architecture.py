"""The layout of the installed package: pyint's modules import each other without cycles, and the
layers (models < methods < reference < study < cli) import downwards only."""
import ast
from pathlib import Path

import pyint


def _modules(root: Path) -> dict[str, Path]:
    """Every module of the installed package: dotted name -> file."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The pyint modules that module ``name`` imports anywhere (module level, in functions, under
    ``if TYPE_CHECKING``), relative imports resolved; ``from a import b`` counts ``a.b`` when that
    is a module, else ``a``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [f"{mod}.{alias.name}" if f"{mod}.{alias.name}" in known else mod for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # import a.b.c of a non-module attribute: its module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _extensions(root: Path) -> set[str]:
    """The compiled modules of the installed package (``pyint._fortran``): leaves of the graph."""
    return {".".join(path.relative_to(root.parent).parent.parts + (path.name.partition(".")[0],))
            for path in root.rglob("*.so")}


def import_graph() -> dict[str, set[str]]:
    root = Path(pyint.__file__).parent
    mods = _modules(root)
    known = set(mods) | _extensions(root)
    return {name: _imports(name, path, known) for name, path in mods.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as [a, b, ..., a], or None (depth-first search, three colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_cycle_finder_finds_a_cycle_and_accepts_a_dag():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_import_graph_sees_function_level_and_relative_imports():
    graph = import_graph()
    assert len(graph) > 30 and "pyint.studies" in graph and "pyint.models.base" in graph
    assert "pyint.study.plotting" in graph["pyint.cli"]        # from .study.plotting import ... inside cmd_plot
    assert "pyint" in graph["pyint.study.cache"]               # from .. import __version__ inside cache_key
    assert {"pyint.models._params", "pyint.models.base"} <= graph["pyint.models.skate"]  # relative, in a subpackage
    assert "pyint.integrator" in graph["pyint.methods.lie.backward"]  # three dots
    assert "pyint.study" in graph["pyint.studies.selftest"]    # absolute
    assert "pyint.models.so3" in graph["pyint.problems"]       # inside a function (LieProblem.errors)
    assert "pyint._fortran" in graph["pyint._control"]          # the compiled module, not the package


def test_no_import_cycle_among_pyint_modules():
    """Layers import downwards only (cli on top owning discovery, the study package below):
    every import counts, module-level and inside functions."""
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


#: The modules Integrator's responsibilities live in (pyint/integrator.py imports them).
INTEGRATOR_PARTS = ("pyint._registry", "pyint._driver", "pyint._result_builder", "pyint._dense", "pyint._docfrag")
#: Each layer and what it may not import (anything above it).
FORBIDDEN = {
    ("pyint.models",): ("pyint.methods", "pyint.integrator", "pyint.results", "pyint.batch", "pyint.reference",
                        "pyint.problems", "pyint.convergence", "pyint.study", "pyint.studies", "pyint.cli"),
    ("pyint.methods", "pyint.integrator", "pyint.results", "pyint.batch"): (
        "pyint.reference", "pyint.problems", "pyint.study", "pyint.studies", "pyint.cli"),
    # the integrator's parts (the registry, the one driver call site, the result builder, the dense
    # output, the docstring fragments) sit below the Integrator class and the methods
    INTEGRATOR_PARTS: ("pyint.integrator", "pyint.methods", "pyint.batch", "pyint.reference", "pyint.problems",
                       "pyint.study", "pyint.studies", "pyint.cli"),
    ("pyint.reference",): ("pyint.methods", "pyint.problems", "pyint.study", "pyint.studies", "pyint.cli"),
    ("pyint.problems", "pyint.convergence", "pyint.invariants"): ("pyint.study", "pyint.studies", "pyint.cli"),
    ("pyint.study",): ("pyint.studies", "pyint.cli"),
    ("pyint.studies",): ("pyint.cli",),
}


def layering_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import ``a -> b`` of ``graph`` that goes up a layer (:data:`FORBIDDEN`); the package
    ``pyint`` itself (its re-exports) counts as the top of the methods layer."""
    bad = []
    for layer, above in FORBIDDEN.items():
        for name, targets in graph.items():
            if not _within(name, layer):
                continue
            for target in sorted(targets):
                if _within(target, above) or (target == "pyint" and layer == ("pyint.models",)):
                    bad.append(f"{name} -> {target}")
    return bad


def test_the_layering_check_finds_an_upward_import():
    graph = {"pyint.models.base": {"pyint.study.runner"}, "pyint.methods.genalpha": {"pyint.models.base"},
             "pyint.study.runner": {"pyint.methods.genalpha"}, "pyint.methods.lie.backward": {"pyint.cli"}}
    assert layering_violations(graph) == ["pyint.models.base -> pyint.study.runner",
                                          "pyint.methods.lie.backward -> pyint.cli"]


def test_models_and_methods_never_import_the_study_layer_or_the_cli():
    """models < methods < reference < study < cli: each layer imports only layers below it."""
    graph = import_graph()
    assert {"pyint.methods", "pyint.methods.lie", "pyint.study", "pyint.reference.ode", "pyint.reference.lie",
            *INTEGRATOR_PARTS} <= set(graph)
    assert layering_violations(graph) == []


#: Inside a layer, modules split by responsibility import downwards too: the pieces below never
#: import the module they were split from (or the part above them).
FORBIDDEN_WITHIN = {
    ("pyint.models.symbolic_build",): ("pyint.models.symbolic", "pyint.models.symbolic_mechanics"),
    ("pyint.models.symbolic_mechanics",): ("pyint.models.symbolic",),
    ("pyint.models.rigid_states",): ("pyint.models.rigid_bodies",),
    ("pyint.models.natural",): ("pyint.models.natural_mechanisms",),
    ("pyint.study.workers",): ("pyint.study.runner",),
}
#: Models written as examples (SymPy needed): the library never imports them, only tests and bench do.
EXAMPLE_MODULES = ("pyint.models.symbolic_examples", "pyint.models.sympy_tutorials")


def inner_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import ``a -> b`` of ``graph`` against :data:`FORBIDDEN_WITHIN`, and every import of an
    example module (:data:`EXAMPLE_MODULES`) by a module of the package."""
    bad = [f"{name} -> {target}" for layer, above in FORBIDDEN_WITHIN.items() for name, targets in graph.items()
           if _within(name, layer) for target in sorted(targets) if _within(target, above)]
    bad += [f"{name} -> {target}" for name, targets in graph.items() for target in sorted(targets)
            if target in EXAMPLE_MODULES and target != name]
    return bad


def test_the_inner_check_finds_an_upward_import_and_an_example_import():
    graph = {"pyint.study.workers": {"pyint.study.runner", "pyint.study.cache"},
             "pyint.models.symbolic_build": {"pyint.models.base"},
             "pyint.models.natural": {"pyint.models.sympy_tutorials"}}
    assert inner_violations(graph) == ["pyint.study.workers -> pyint.study.runner",
                                       "pyint.models.natural -> pyint.models.sympy_tutorials"]


def test_modules_split_by_responsibility_import_downwards():
    """symbolic (derivation) > symbolic_mechanics (the bridge) > symbolic_build (code, compiler, cache);
    rigid_bodies > rigid_states; natural_mechanisms > natural; runner > workers; and no library module
    imports the example models."""
    graph = import_graph()
    split = {m for layer in FORBIDDEN_WITHIN for m in layer} | set(EXAMPLE_MODULES)
    assert split | {"pyint.models.symbolic", "pyint.models.rigid_bodies", "pyint.models.natural_mechanisms",
                    "pyint.study.runner"} <= set(graph)
    assert {"pyint.models.symbolic_build", "pyint.models.symbolic_mechanics"} <= graph["pyint.models.symbolic"]
    assert "pyint.models.rigid_states" in graph["pyint.models.rigid_bodies"]
    assert "pyint.models.natural" in graph["pyint.models.natural_mechanisms"]
    assert "pyint.study.workers" in graph["pyint.study.runner"]
    assert inner_violations(graph) == []
    assert layering_violations(graph) == []


#: Hand-written modules of the package may have 700 lines at most (split by responsibility past that).
MAX_LINES = 700
GENERATED = {"pyint._seam", "pyint._build_info"}


def test_no_hand_written_module_is_over_700_lines():
    root = Path(pyint.__file__).parent
    over = {name: len(path.read_text().splitlines()) for name, path in _modules(root).items()
            if name not in GENERATED and len(path.read_text().splitlines()) > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines: {over}"


def _bench_imports_from_tests(bench: Path, tests: Path) -> list[str]:
    """Every import in bench/*.py of a module of tests/ (by its name, absolute imports), and every
    bench file that names the tests directory (a sys.path entry)."""
    test_modules = {p.stem for p in tests.glob("*.py")}
    bad = []
    for path in sorted(bench.glob("*.py")):
        text = path.read_text()
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            bad += [f"{path.name}: import {n}" for n in names if n.split(".")[0] in test_modules]
        if '"tests"' in text or "'tests'" in text:
            bad.append(f"{path.name}: names the tests directory")
    return bad


def test_bench_imports_nothing_from_tests(tmp_path):
    """The benchmarks depend on the package, not on the test tree (and the check sees an import)."""
    root = Path(__file__).resolve().parents[1]
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "run.py").write_text("import os\nfrom genalpha_numpy import genalpha_numpy\n")
    assert _bench_imports_from_tests(tmp_path / "bench", root / "tests") == ["run.py: import genalpha_numpy"]
    assert _bench_imports_from_tests(root / "bench", root / "tests") == []


def test_names_moved_by_the_split_still_import_and_warn():
    """A public name that moved to a new module stays importable from the old one for one release,
    with a DeprecationWarning naming the new home; the names the old module still uses are plain imports."""
    import importlib
    import warnings
    for old, new, name in (("pyint.study.runner", "pyint.study.workers", "MAX_BATCH"),
                           ("pyint.models.natural", "pyint.models.natural_mechanisms", "two_link_manipulator"),
                           ("pyint.models.natural", "pyint.models.natural_mechanisms", "parallelogram")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = getattr(importlib.import_module(old), name)
        assert value is getattr(importlib.import_module(new), name)
        assert [w.category for w in caught] == [DeprecationWarning] and new in str(caught[0].message)
    from pyint.models.rigid_bodies import interpolated_states
    from pyint.models.symbolic import SymbolicModelError, cache_dir, compiler
    from pyint.models.symbolic_build import SymbolicModelError as moved
    from pyint.study.runner import failed_case
    assert moved is SymbolicModelError and callable(cache_dir) and callable(compiler)
    assert callable(interpolated_states) and callable(failed_case)
