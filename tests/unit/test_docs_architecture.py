"""docs/architecture.md names only what is there: every path of its diagram and recipes
exists where it says (from the repository's root or from ``src/cganalysis``), and every
package its paragraph on layers names is a package of ``cganalysis`` or of its testbed.
(tests/unit/test_docs_references.py checks bare file names anywhere; a path here must hold
exactly, so that a moved folder leaves no recipe behind.)"""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO

PAGE = REPO / "docs" / "architecture.md"
TEXT = PAGE.read_text(encoding="utf-8")
PACKAGE = REPO / "src" / "cganalysis"
#: Where a run's files go: made by runs, not in the tree.
OUTPUTS = ("data/", "results/")
#: A path: parts joined by "/" (or one part and "/", a folder), each a name, a glob or a
#: <placeholder>.
PART = r"(?:[\w.*-]+|<\w+>)"
PATH = re.compile(rf"(?<![\w<>./*-])({PART}(?:(?:/{PART})+/?|/))")
#: What a placeholder stands for when its path is checked.
EXAMPLES = {"<type>": "netns", "KIND": "pie"}


def _paths() -> list[str]:
    found = {m.group(1) for m in PATH.finditer(TEXT)}
    return sorted(
        p.rstrip(".")
        for p in found
        if not p.startswith(OUTPUTS) and "://" not in p and not p.startswith("<")
    )


def _exists(path: str) -> bool:
    for placeholder, example in EXAMPLES.items():
        path = path.replace(placeholder, example)
    return any(any(root.glob(path)) for root in (REPO, PACKAGE))


def test_the_page_names_paths() -> None:
    # The extraction works: the diagram's and the recipes' paths are found.
    paths = _paths()
    assert "experiment/build.py" in paths and "src/cganalysis/testbed/<type>/" in paths
    assert "testbed/shared/delays.py" in paths and "tests/golden/tc/KIND.txt" in paths


@pytest.mark.parametrize("path", _paths())
def test_every_path_exists(path: str) -> None:
    assert _exists(path), f"docs/architecture.md names {path}, which is not in the tree"


def _layers_paragraph() -> str:
    start = TEXT.index("The package's layers import downwards")
    return TEXT[start : TEXT.index("\n\n", start)]


def test_every_package_the_layers_name_is_one() -> None:
    names = set(re.findall(r"`(\w+)`", _layers_paragraph()))
    assert {"testbed", "spec", "shared", "dataplane"} <= names
    missing = sorted(
        n for n in names if not any((root / n).is_dir() for root in (PACKAGE, PACKAGE / "testbed"))
    )
    assert not missing, f"the layers paragraph names packages that do not exist: {missing}"
