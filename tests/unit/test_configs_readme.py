"""configs/README.md documents every key of every configuration file, and only keys that are
read: a key added to a parser or schema without a row there fails here, and so does a row
that no parser reads.

The keys a parser reads are taken from the parser itself: every ``Section`` records the keys
it was asked about (``Section._seen``, the set its ``finish`` uses to refuse unknown keys),
so the run, campaign and testbed parsers are run on every file under configs/ and on a few
examples that take the branches no shipped file takes, and the keys of each ``Section``
they made are collected with its path. The workflow's configuration and the plotting style
have JSON schemas, whose properties are walked."""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cganalysis.experiment.campaign import load_campaign
from cganalysis.experiment.config import parse_run
from cganalysis.report.style import SCHEMA as PLOTTING_SCHEMA
from cganalysis.testbed.bedfile import load_testbed_file
from cganalysis.testbed.spec import qdisc, qdisc_kinds
from cganalysis.testbed.spec.validate import Section
from tests.conftest import REPO

CONFIGS = REPO / "configs"
DOC = CONFIGS / "README.md"

#: Where a queue discipline's mapping sits in a run file; its keys are documented once,
#: relative to the mapping ("Queue disciplines").
QDISC_AT = re.compile(r"^bottleneck\.(?:reverse\.)?qdisc(?:\.classes\[\]\.leaf)?\.(.+)$")
#: ``Section`` methods that read a key named by their first argument.
READERS = frozenset(
    {"has", "raw", "sub", "opt_sub", "number", "opt_number", "integer", "opt_integer",
     "boolean", "opt_boolean", "string", "opt_string", "choice", "items"}
)  # fmt: skip


# --- what the README documents ----------------------------------------------------------


def _tables(heading: str) -> list[list[list[str]]]:
    """The tables of the README's section whose heading contains ``heading``: rows of cells,
    the header row first."""
    text = DOC.read_text(encoding="utf-8")
    sections = [s for s in text.split("\n## ") if heading in s.split("\n", 1)[0]]
    assert len(sections) == 1, f"configs/README.md: no one section headed {heading!r}"
    tables: list[list[list[str]]] = []
    rows: list[list[str]] = []
    for line in [*sections[0].splitlines(), ""]:
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        elif rows:
            tables.append(rows)
            rows = []
    return tables


def _keys(heading: str, prefix: str = "") -> set[str]:
    """The first column of the section's ``| key |`` tables."""
    keys = set()
    for table in _tables(heading):
        if table[0][0] == "key":
            for row in table[1:]:
                code = re.fullmatch(r"`([^`]+)`", row[0])
                assert code, f"configs/README.md ({heading}): not one key in `{row[0]}`"
                keys.add(prefix + code.group(1))
    assert keys, f"configs/README.md ({heading}): no key table"
    return keys


def _qdisc_parameters() -> dict[str, set[str]]:
    """kind -> parameters, from the "Queue disciplines" section's ``| kind | parameter |``
    table."""
    out: dict[str, set[str]] = {}
    for table in _tables("Queue disciplines"):
        if table[0][:2] == ["kind", "parameter"]:
            for row in table[1:]:
                out.setdefault(row[0].strip("`"), set()).add(row[1].strip("`"))
    assert out, "configs/README.md: no | kind | parameter | table"
    return out


def _pattern(key: str) -> re.Pattern[str]:
    """A documented key as a pattern: ``<name>`` is any one path component, ``{a,b}`` either."""
    parts = re.split(r"(<[^>]+>|\{[^}]+\})", key)
    out = ""
    for part in parts:
        if part.startswith("<"):
            out += r"[^.]+"
        elif part.startswith("{"):
            out += "(?:" + "|".join(re.escape(p) for p in part[1:-1].split(",")) + ")"
        else:
            out += re.escape(part)
    return re.compile(out)


def _compare(
    what: str, documented: set[str], read: set[str], also: frozenset[str] = frozenset()
) -> None:
    """Every key read is documented and every documented key is read; ``also`` documents
    keys that another test checks are read."""
    patterns = {d: _pattern(d) for d in documented}
    known = [*patterns.values(), *map(_pattern, also)]
    undocumented = sorted(k for k in read if not any(p.fullmatch(k) for p in known))
    unread = sorted(d for d, p in patterns.items() if not any(p.fullmatch(k) for k in read))
    assert not undocumented, f"{what}: keys read but not in configs/README.md: {undocumented}"
    assert not unread, f"{what}: keys in configs/README.md that nothing reads: {unread}"


# --- what the parsers read --------------------------------------------------------------


@pytest.fixture
def sections(monkeypatch: pytest.MonkeyPatch) -> list[Section]:
    """Every ``Section`` made while the test runs (the parsers run unchanged)."""
    made: list[Section] = []
    init = Section.__init__

    def recording(self: Section, data: Any, where: str, path: str = "") -> None:
        init(self, data, where, path)
        made.append(self)

    monkeypatch.setattr(Section, "__init__", recording)
    return made


def _read(made: list[Section], keep: Callable[[str], bool] = lambda _: True) -> set[str]:
    """The keys the sections whose file (``where``) passes ``keep`` were asked about, as
    paths with list indices left out (``classes[].leaf``)."""
    keys = set()
    for sec in made:
        if keep(sec.where):
            keys |= {re.sub(r"\[\d+\]", "[]", sec.key(name)) for name in sec._seen}
    return keys


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _example_runs() -> Iterator[dict[str, Any]]:
    """Runs that take the branches no shipped run file takes: a custom schedule with the
    CG stream's span and windows, a reverse bottleneck."""
    base = _yaml(CONFIGS / "runs" / "quick-htb.yaml")
    full = copy.deepcopy(base)
    full["schedule"].update(cg={"start_s": 1, "stop_s": 20}, fairness_window_s=[10, 18])
    full["bottleneck"]["reverse"] = {"rate_mbit": 8, "qdisc": {"kind": "pfifo", "limit": 10}}
    yield full


def test_run_file_keys(sections: list[Section]) -> None:
    for path in sorted((CONFIGS / "runs").glob("*.yaml")):
        parse_run(_yaml(path), str(path), path.parent)
    for i, run in enumerate(_example_runs()):
        parse_run(run, f"example run {i}", CONFIGS / "runs")
    for path in sorted((CONFIGS / "campaigns").glob("*.yaml")):
        load_campaign(path)  # parses every run of the campaign
    runs = (str(CONFIGS / "runs"), "example run")
    # A campaign's runs are read as "<campaign file> (run <run id>)".
    read = _read(sections, lambda where: where.startswith(runs) or "(run " in where)
    # A discipline's keys are documented relative to its mapping; each kind's parameters
    # are checked kind by kind (test_every_queue_discipline_parameter).
    read = {f"qdisc.{m.group(1)}" if (m := QDISC_AT.match(k)) else k for k in read}
    parameters = {f"qdisc.{p}" for params in _qdisc_parameters().values() for p in params}
    documented = _keys("Run files") | _keys("Queue disciplines", "qdisc.")
    _compare("run files", documented, read, frozenset(parameters))


def test_every_queue_discipline_parameter(sections: list[Section]) -> None:
    """Each kind's parameters, as its parser asks for them (``limit_bdp`` is asked of every
    kind and documented apart)."""
    read: dict[str, set[str]] = {}
    for kind in qdisc_kinds.ALL_KINDS:
        if kind == "htb":
            continue  # its keys are in the key table (default, classes)
        sections.clear()
        qdisc.parse_leaf(Section({"kind": kind}, "test"), None)
        read[kind] = _read(sections) - {"kind", "limit_bdp"}
    assert _qdisc_parameters() == read


def test_campaign_keys(sections: list[Section]) -> None:
    paths = sorted((CONFIGS / "campaigns").glob("*.yaml"))
    for path in paths:
        load_campaign(path)
    read = _read(sections, lambda where: where in {str(p) for p in paths})
    _compare("campaigns", _keys("Campaigns"), read)


def test_testbed_file_keys(sections: list[Section]) -> None:
    for path in sorted((CONFIGS / "testbeds").glob("*.yaml")):
        load_testbed_file(path)
    _compare("testbed files", _keys("Testbed files"), _read(sections))


def _schema_keys(schema: dict[str, Any], prefix: str = "") -> set[str]:
    """Every property path of a JSON schema; a mapping of free names (``additionalProperties``
    a schema) is ``<>``."""
    keys: set[str] = set()
    children = dict(schema.get("properties", {}))
    if isinstance(schema.get("additionalProperties"), dict):
        children["<>"] = schema["additionalProperties"]
    for name, sub in children.items():
        keys.add(prefix + name)
        keys |= _schema_keys(sub, f"{prefix}{name}.")
    return keys


def test_workflow_configuration_keys() -> None:
    schema = _yaml(REPO / "workflow" / "schemas" / "config.schema.yaml")
    _compare("configs/config.yaml", _keys("configs/config.yaml"), _schema_keys(schema))


def test_plotting_style_keys() -> None:
    _compare("configs/plotting.yaml", _keys("configs/plotting.yaml"), _schema_keys(PLOTTING_SCHEMA))


def test_every_key_a_parser_names_is_documented() -> None:
    """Keys read only on a branch no file above takes are still caught by name: every
    literal key a parser module passes to a ``Section`` reader (``sec.number("rate_mbit",
    ...)``) is the last part of a documented key."""
    documented = set()
    for heading in ("Run files", "Queue disciplines", "Campaigns", "Testbed files"):
        for key in _keys(heading):
            last = re.sub(r"\[\]", "", re.split(r"\.(?![^{]*\})", key)[-1])
            documented |= set(last.strip("{}").split(","))
    documented |= {p for params in _qdisc_parameters().values() for p in params}
    named: dict[str, str] = {}
    for path in sorted((REPO / "src" / "cganalysis").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "validate import" not in text or "Section" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in READERS
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                named.setdefault(node.args[0].value, str(path.relative_to(REPO)))
    missing = sorted(f"{key} ({where})" for key, where in named.items() if key not in documented)
    assert not missing, f"keys the parsers read that configs/README.md lacks: {missing}"
