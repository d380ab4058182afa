"""The layout of the installed package: pyint's modules import each other without cycles."""
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


def import_graph() -> dict[str, set[str]]:
    mods = _modules(Path(pyint.__file__).parent)
    return {name: _imports(name, path, set(mods)) for name, path in mods.items()}


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
    assert "pyint.plotting" in graph["pyint.cli"]        # from .plotting import ... inside cmd_plot
    assert "pyint" in graph["pyint.runner"]              # from . import __version__ inside cache_key
    assert {"pyint.models._params", "pyint.models.base"} <= graph["pyint.models.skate"]  # relative, in a subpackage
    assert "pyint.runner" in graph["pyint.studies.selftest"]  # absolute


def test_no_import_cycle_among_pyint_modules():
    """Layers import downwards only (cli on top owning discovery, runner, plotting, datasets below):
    every import counts, module-level and inside functions."""
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)
