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
