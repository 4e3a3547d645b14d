"""The docs and the docstrings name only what exists: modules and their attributes
(``cganalysis.x.y``), files and folders of the repository, functions called in code spans,
and the options of ``cganalysis`` commands. A rename that leaves a page behind fails here."""

from __future__ import annotations

import argparse
import ast
import importlib
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

from cganalysis.cli import COMMANDS, build_parser
from tests.conftest import REPO

PAGES = [REPO / "README.md", REPO / "configs" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SOURCES = sorted((REPO / "src" / "cganalysis").rglob("*.py"))

MODULE = re.compile(r"\bcganalysis(?:\.[A-Za-z_]\w*)+")
#: Paths inside the repository; data/raw, data/processed and results/ are made by runs.
PATH = re.compile(
    r"(?<![\w./-])((?:src|docs|configs|workflow|scripts|tests|native|benchmarks|notebooks"
    r"|profiles|\.ci|data/traces)/[\w./*<>{}-]*)"
)
SOURCE_FILE = re.compile(r"(?<![\w/.-])(\w+\.(?:py|rs|smk|sh))\b")
#: A function called in a code span: snake_case names only (with an underscore), which
#: leaves out the C library's and Python's (`sendto()`, `max()`) that pages name too.
CALL = re.compile(r"`(?:[\w.]+\.)?([a-z]+_[a-z_\d]*)\(")
#: Files a page shows as examples of what a researcher writes.
EXAMPLE_FILES = frozenset(
    {"configs/testbeds/lab.yaml", "configs/testbeds/lab-a.yaml", "configs/testbeds/lab-b.yaml"}
)
PLACEHOLDER = re.compile(r"[*<>{}]|\b[A-Z][A-Z0-9_]+\b")


def _tracked() -> list[str]:
    """What git tracks, and what it would (new files not yet committed)."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [p for p in out.splitlines() if (REPO / p).exists()]


@cache
def _names() -> tuple[frozenset[str], frozenset[str]]:
    """(every tracked path and folder, every tracked file name)."""
    paths: set[str] = set()
    for p in _tracked():
        paths.add(p)
        paths.update(str(parent) for parent in Path(p).parents)
    return frozenset(paths), frozenset(Path(p).name for p in paths)


def _docstrings_and_comments(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    parts = [
        doc
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and (doc := ast.get_docstring(node))
    ]
    parts += [line.split("#", 1)[1] for line in text.splitlines() if "#" in line]
    return "\n".join(parts)


def _texts() -> dict[str, str]:
    texts = {str(p.relative_to(REPO)): p.read_text(encoding="utf-8") for p in PAGES}
    texts.update({str(p.relative_to(REPO)): _docstrings_and_comments(p) for p in SOURCES})
    return texts


TEXTS = _texts()


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _path_exists(ref: str) -> bool:
    paths, _ = _names()
    ref = ref.rstrip(".,:;)")
    fixed = PLACEHOLDER.split(ref)[0]
    if fixed != ref:  # a pattern: its fixed folder must exist
        fixed = fixed.rsplit("/", 1)[0]
    return fixed.rstrip("/") in paths or (REPO / fixed).exists() or ref in EXAMPLE_FILES


@cache
def _defined_names() -> frozenset[str]:
    """Functions and classes defined in the package, the tests' support and the workflow."""
    names: set[str] = set()
    roots = [REPO / "src", REPO / "tests" / "support", REPO / "workflow", REPO / "benchmarks"]
    for root in roots:
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
                    names.add(node.name)
    for rules in (REPO / "workflow").rglob("*.smk"):
        names.update(re.findall(r"^def (\w+)\(", rules.read_text(encoding="utf-8"), re.M))
    return frozenset(names)


@pytest.mark.parametrize("where", sorted(TEXTS))
def test_named_modules_paths_and_functions_exist(where: str) -> None:
    text = TEXTS[where]
    _, files = _names()
    stale = [f"module {m}" for m in sorted(set(MODULE.findall(text))) if not _resolves(m)]
    stale += [f"path {p}" for p in sorted(set(PATH.findall(text))) if not _path_exists(p)]
    stale += [f"file {f}" for f in sorted(set(SOURCE_FILE.findall(text))) if f not in files]
    if where.endswith(".md"):
        known = _defined_names()
        stale += [f"function {c}()" for c in sorted(set(CALL.findall(text))) if c not in known]
    assert not stale, f"{where} names what does not exist: {', '.join(stale)}"


def _options(parser: argparse.ArgumentParser, words: list[str]) -> set[str]:
    """The options of the (sub)command ``words`` leads to; all of a group's sub-commands
    when the line does not name one."""
    opts = {o for a in parser._actions for o in a.option_strings}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = [w for w in words if w in action.choices]
            subs = [action.choices[chosen[0]]] if chosen else list(action.choices.values())
            for sub in subs:
                opts |= _options(sub, words[words.index(chosen[0]) + 1 :] if chosen else [])
    return opts


COMMAND_LINE = re.compile(r"\bcganalysis ((?:" + "|".join(COMMANDS) + r")\b[^`|;&\n]*)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_cganalysis_options_in_the_docs_exist(page: Path) -> None:
    parser = build_parser()
    unknown = []
    for line in COMMAND_LINE.findall(page.read_text(encoding="utf-8")):
        words = line.split()
        opts = _options(parser, words)
        unknown += [
            f"cganalysis {words[0]} {flag}"
            for flag in re.findall(r"(?<![\w-])--?[a-z][\w-]*", line)
            if flag.split("=")[0] not in opts
        ]
    assert not unknown, f"{page.name}: options no parser has: {', '.join(sorted(set(unknown)))}"


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_lead_to_files(page: Path) -> None:
    """``[text](target)`` links between pages resolve from the page's folder."""
    targets = [t for t in LINK.findall(page.read_text(encoding="utf-8")) if "://" not in t]
    broken = sorted({t for t in targets if not (page.parent / t).exists()})
    assert not broken, f"{page.relative_to(REPO)}: links lead nowhere: {', '.join(broken)}"


#: A measurement place instead of the property measured: "this machine", "this host",
#: "this 2-vCPU VM". A reference page names the kernel feature or the host's property; a
#: figure names its machine by CPU and cores (docs/performance.md, "Machines").
MEASURING_PLACE = re.compile(r"\bthis\s+(?:\d-(?:v?CPU|core)\s+)?(?:machine|host|VM|CPU)\b", re.I)
CODE = re.compile(r"```.*?```|`[^`]*`", re.S)
DATED_HEADING = re.compile(r"^#+ .*\b\d{4}-\d{2}-\d{2}\b", re.M)
#: Where the dated runs and investigations live, as data, and the page that links them.
HISTORY = {"docs/performance.md": "benchmarks/results", "docs/results.md": "docs/reports"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_reference_pages_name_no_measuring_machine(page: Path) -> None:
    """Prose names the kernel feature or the host property, not "this machine" (code spans
    may quote a program's message)."""
    # Code spans become their line breaks, so that the line numbers stay the page's.
    text = CODE.sub(lambda m: "\n" * m.group().count("\n"), page.read_text(encoding="utf-8"))
    found = [
        f"line {text.count(chr(10), 0, m.start()) + 1}: {' '.join(m.group().split())!r}"
        for m in MEASURING_PLACE.finditer(text)
    ]
    assert not found, f"{page.relative_to(REPO)} names a measuring place: {', '.join(found)}"


def test_performance_page_holds_current_figures_only() -> None:
    """Dated runs are files of benchmarks/results/, not sections of the page."""
    text = (REPO / "docs" / "performance.md").read_text(encoding="utf-8")
    assert not DATED_HEADING.findall(text), DATED_HEADING.findall(text)


@pytest.mark.parametrize("page", sorted(HISTORY))
def test_history_is_linked_and_its_links_resolve(page: str) -> None:
    """The page links files of its history folder, each of which exists, and the history
    files' own links resolve."""
    folder = REPO / HISTORY[page]
    targets = [(REPO / page).parent / t for t in LINK.findall((REPO / page).read_text("utf-8"))]
    linked = [t.resolve() for t in targets if t.resolve().is_relative_to(folder.resolve())]
    assert linked, f"{page} links nothing in {HISTORY[page]}/"
    assert all(t.exists() for t in linked), [str(t) for t in linked if not t.exists()]
    history = sorted(folder.glob("*.md"))
    assert history, f"{HISTORY[page]}/ holds no dated files"
    broken = [
        f"{f.relative_to(REPO)} -> {t}"
        for f in history
        for t in LINK.findall(f.read_text(encoding="utf-8"))
        if "://" not in t and not (f.parent / t).exists()
    ]
    assert not broken, broken
