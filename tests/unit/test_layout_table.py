"""The layout table (docs/layout.md, linked from the README) names every folder of the
repository's top level, every package of ``src/cganalysis`` and every module at its top, and
nothing that is not there."""

from __future__ import annotations

import re
import subprocess
from pathlib import PurePosixPath

from tests.conftest import REPO

LAYOUT = REPO / "docs" / "layout.md"


def _layout_names() -> set[str]:
    """Paths in the first column of the layout table; a name after the first of a cell is
    relative to the first one's folder (`src/cganalysis/capture/`, `matching/`)."""
    names: set[str] = set()
    for row in LAYOUT.read_text(encoding="utf-8").splitlines():
        if not row.startswith("| `"):
            continue
        cell = row.split(" | ", 1)[0]
        tokens = [t.rstrip("/") for t in re.findall(r"`([^`]+)`", cell)]
        base = PurePosixPath(tokens[0]).parent
        names.add(tokens[0])
        for token in tokens[1:]:
            top = token.split("/")[0]
            names.add(token if (REPO / top).exists() else str(base / token))
    return names


def _tracked() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    return out.splitlines()


def test_every_top_level_folder_package_and_module_is_in_the_layout() -> None:
    names = _layout_names()
    tracked = _tracked()
    folders = {p.split("/")[0] for p in tracked if "/" in p}
    packages = {
        "/".join(p.split("/")[:3])
        for p in tracked
        if p.startswith("src/cganalysis/") and p.count("/") >= 3
    }
    modules = {
        p
        for p in tracked
        if p.startswith("src/cganalysis/") and p.count("/") == 2 and p.endswith(".py")
    } - {"src/cganalysis/__init__.py"}

    def listed(path: str) -> bool:
        # A folder is listed by itself or by a file in it (`.ci/run`).
        return path in names or any(n.startswith(path + "/") for n in names)

    missing = sorted(p for p in folders | packages | modules if not listed(p))
    assert not missing, f"docs/layout.md's table lacks: {', '.join(missing)}"


def test_the_layout_names_only_what_exists() -> None:
    gone = sorted(n for n in _layout_names() if not (REPO / n).exists())
    assert not gone, f"docs/layout.md's table names what is not there: {', '.join(gone)}"
