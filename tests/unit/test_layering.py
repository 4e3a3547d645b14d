"""The package's layers import downwards only: ``testbed`` (hosts, bottlenecks, locks) knows
nothing of ``experiment`` (runs, campaigns), which builds on it. Checked on the source, so
an import inside a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "cganalysis"


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            # `from cganalysis import experiment` names the package as an alias.
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_testbed_never_imports_experiment() -> None:
    offenders = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in sorted((PACKAGE / "testbed").glob("*.py"))
        for name in _imports(path)
        if name == "cganalysis.experiment" or name.startswith("cganalysis.experiment.")
    }
    assert not offenders, sorted(offenders)


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from cganalysis import experiment\n")
    assert "cganalysis.experiment" in _imports(source)
