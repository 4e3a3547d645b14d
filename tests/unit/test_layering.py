"""The package's layers import downwards only, and no module imports itself back through
others. Checked on the source, so an import inside a function counts too.

- ``testbed`` (hosts, bottlenecks, locks) knows nothing of ``experiment`` (runs,
  campaigns), which builds on it;
- ``metrics`` (numbers from packet tables) knows nothing of ``report`` (tables, figures),
  which builds on it;
- ``matching`` (packet tables from captures) knows nothing of ``metrics``;
- inside ``testbed``, ``spec`` (configuration) knows nothing of ``rendering`` (commands),
  and neither knows the subpackages that act on hosts (``backends``, ``dataplane``,
  ``measure``);
- the import graph of ``cganalysis`` has no cycle. Two kinds of import are not edges: one
  under ``if TYPE_CHECKING:`` (never run), and a package's ``__init__.py`` re-exporting
  its modules on first use (``__getattr__``), which every module of the package would
  otherwise import back.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "cganalysis"


def _tree(path: Path) -> ast.Module:
    """The module's syntax tree without its ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    return tree


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            # `from cganalysis import experiment` names the package as an alias.
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (``from a import b`` is ``a.b`` where
    that is a module, else ``a``)."""
    paths = {_module_name(p, package): p for p in sorted(package.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        if path.name == "__init__.py":
            graph[name] = set()
            continue
        edges = set()
        for imported in _imports(path):
            target = imported
            while target and target not in paths:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


#: Inside the testbed: configuration, then commands, then what acts on hosts.
_TESTBED_ACTING = ("testbed.backends", "testbed.dataplane", "testbed.measure")


@pytest.mark.parametrize(
    ("lower", "upper"),
    [
        ("testbed", "experiment"),
        ("metrics", "report"),
        ("matching", "metrics"),
        *(("testbed.spec", u) for u in ("testbed.rendering", *_TESTBED_ACTING)),
        *(("testbed.rendering", u) for u in _TESTBED_ACTING),
    ],
)
def test_a_lower_layer_never_imports_an_upper_one(lower: str, upper: str) -> None:
    banned = f"cganalysis.{upper}"
    offenders = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in sorted(PACKAGE.joinpath(*lower.split(".")).rglob("*.py"))
        for name in _imports(path)
        if name == banned or name.startswith(banned + ".")
    }
    assert not offenders, sorted(offenders)


def test_the_package_has_no_import_cycle() -> None:
    cycles = _cycles(_graph(PACKAGE))
    assert not cycles, "modules that import each other: " + "; ".join(
        " <-> ".join(c) for c in cycles
    )


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from cganalysis import experiment\n")
    assert "cganalysis.experiment" in _imports(source)


def test_the_cycle_check_finds_a_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    pkg = tmp_path / "cganalysis"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cganalysis.b import g\n")
    (pkg / "b.py").write_text("def g():\n    from cganalysis import a\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cganalysis import a\n"
    )
    assert _cycles(_graph(pkg)) == [["cganalysis.a", "cganalysis.b"]]
