"""Each file format has one schema, checked where the file is written and where it is read:
what a writer makes, its reader accepts; a bad file is one line naming the file and the key.
(The emulator's EMU.json: tests/integration/test_emulator_config.py, which needs cga-emu.)"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from cganalysis.errors import ConfigError, SchemaError
from cganalysis.experiment.config import parse_run
from cganalysis.metrics.io import read_meta, read_metrics, write_metrics
from cganalysis.testbed.bedfile import load_testbed_file
from tests.conftest import FIXTURES, REPO

TESTBEDS = sorted((REPO / "configs" / "testbeds").glob("*.yaml"))


def _one_line(err: pytest.ExceptionInfo[Exception]) -> str:
    text = str(err.value)
    assert "\n" not in text, text
    return text


# --- meta.json --------------------------------------------------------------------------


def test_a_meta_json_the_runner_wrote_passes_its_readers_schema() -> None:
    """The committed run's meta.json was written (and checked) by the runner."""
    meta = read_meta(FIXTURES / "dualpoint" / "meta.json")
    assert meta["roles"] and meta["analysis"]["window_s"]


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"analysis": {}}, "analysis.window_s"),
        ({"roles": {}}, "roles"),
        ({"capacity_mbps": -1}, "capacity_mbps"),
        ({"labels": {"link": [1]}}, "labels.link"),
    ],
)
def test_a_bad_meta_json_is_one_line_naming_file_and_key(
    tmp_path: Path, change: dict[str, Any], key: str
) -> None:
    meta = json.loads((FIXTURES / "dualpoint" / "meta.json").read_text())
    path = tmp_path / "meta.json"
    path.write_text(json.dumps({**meta, **change}))
    with pytest.raises(ConfigError) as err:
        read_meta(path)
    line = _one_line(err)
    assert str(path) in line and f"key {key}:" in line and "docs/metrics.md" in line


# --- metrics JSON -----------------------------------------------------------------------


def test_the_metrics_writer_refuses_what_its_reader_would(tmp_path: Path) -> None:
    doc = {"schema_version": 1, "roles": {}, "inputs": {}}
    path = tmp_path / "m.json"
    with pytest.raises(SchemaError) as err:
        write_metrics(doc, path)
    assert str(path) in _one_line(err) and not path.exists()
    path.write_text(json.dumps(doc))
    with pytest.raises(SchemaError) as err:
        read_metrics([path])
    line = _one_line(err)
    assert str(path) in line and "key " in line


# --- testbed files ----------------------------------------------------------------------


@pytest.mark.parametrize("path", TESTBEDS, ids=lambda p: p.name)
def test_shipped_testbed_files_pass_the_one_reader(path: Path) -> None:
    bed = load_testbed_file(path)
    assert bed.backend == yaml.safe_load(path.read_text())["backend"]


@pytest.mark.parametrize(
    ("doc", "key"),
    [
        ({}, "backend"),
        ({"backend": "kvm"}, "backend"),
        ({"backend": "netns", "nmae": "x"}, "nmae"),
        ({"backend": "netns", "name": "a b"}, "name"),
        ({"backend": "vm", "vm": {"cpus": 0}}, "vm.cpus"),
    ],
)
def test_a_bad_testbed_file_is_one_line_naming_file_and_key(
    tmp_path: Path, doc: dict[str, Any], key: str
) -> None:
    path = tmp_path / "bed.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError) as err:
        load_testbed_file(path)
    line = _one_line(err)
    assert str(path) in line and key in line


def test_a_run_naming_a_bad_ssh_testbed_file_is_refused_when_the_run_is_read(
    tmp_path: Path,
) -> None:
    """The ssh backend's keys are checked when the run is parsed, not when it starts."""
    lab = yaml.safe_load((REPO / "configs" / "testbeds" / "lab-example.yaml").read_text())
    bad = copy.deepcopy(lab)
    bad["hosts"]["router"]["in_dev"] = "eth1;reboot"
    (tmp_path / "lab.yaml").write_text(yaml.safe_dump(bad))
    run = yaml.safe_load((REPO / "configs" / "runs" / "quick-pfifo.yaml").read_text())
    run["testbed"] = "lab.yaml"
    with pytest.raises(ConfigError) as err:
        parse_run(run, "run.yaml", tmp_path)
    line = _one_line(err)
    assert "lab.yaml" in line and "hosts.router.in_dev" in line
    (tmp_path / "lab.yaml").write_text(yaml.safe_dump(lab))
    assert parse_run(run, "run.yaml", tmp_path).testbed.kind == "ssh"


# --- the examples the docs show ---------------------------------------------------------


def _doc_examples() -> list[tuple[str, Any]]:
    found = []
    for page in sorted((REPO / "docs").glob("*.md")):
        for i, block in enumerate(re.findall(r"```ya?ml\n(.*?)```", page.read_text(), re.S)):
            found.append((f"{page.name}[{i}]", yaml.safe_load(block)))
    return found


@pytest.mark.parametrize(
    ("where", "doc"), _doc_examples(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_the_docs_examples_pass_their_formats_schema(where: str, doc: Any, tmp_path: Path) -> None:
    """A run file (or a run's section), a testbed file, the workflow's configuration: each
    example is read by the code that reads such files; campaigns show placeholders."""
    from cganalysis.jsoncheck import check_document
    from cganalysis.testbed.bedfile import parse_testbed_file

    runs = REPO / "configs" / "runs"
    if "schedule" in doc:
        parse_run(doc, where, runs)
    elif "backend" in doc:
        parse_testbed_file(doc, where)
    elif set(doc) <= {"cg", "competitor", "bottleneck", "propagation", "capture"}:
        run = {**yaml.safe_load((runs / "quick-pfifo.yaml").read_text()), **doc}
        parse_run(run, where, runs)
    elif "experiments" in doc:
        schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
        check_document({"campaigns": ["example"], **doc}, schema, where)
    else:
        assert "campaign" in doc, f"{where}: an example of no known format: {sorted(doc)}"


def test_validating_imports_no_format_library() -> None:
    """jsonschema imports the format libraries it finds (rfc3987_syntax builds 38 lark
    grammars, seconds per process; isoduration pulls in arrow); the project checks no
    formats, so they are left out while it imports, and can still be imported after."""
    import importlib.util
    import subprocess
    import sys

    from cganalysis.jsoncheck import _FORMAT_LIBRARIES

    installed = [m for m in _FORMAT_LIBRARIES if importlib.util.find_spec(m) is not None]
    assert "isoduration" in installed, "the dev environment has jsonschema's format extras"
    code = (
        "import sys\n"
        "from cganalysis.errors import ConfigError\n"
        "from cganalysis.jsoncheck import check_document\n"
        "schema = {'type': 'object', 'required': ['a']}\n"
        "check_document({'a': 1}, schema, 'x')\n"
        "try:\n"
        "    check_document({}, schema, 'x')\n"
        "except ConfigError as e:\n"
        "    print(e)\n"
        f"print(sorted(m for m in {installed!r} if m in sys.modules))\n"
        "import isoduration\n"
        "print(isoduration.__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "x: key a: 'a' is a required property",
        "[]",
        "isoduration",
    ]


def test_validating_from_two_threads_at_once_imports_jsonschema_once() -> None:
    """The metrics of a campaign's runs may be computed two at a time: the first two
    validations, at once in a fresh process, both see a whole jsonschema module."""
    import subprocess
    import sys

    code = (
        "import threading\n"
        "from cganalysis.jsoncheck import check_document\n"
        "schema = {'type': 'object', 'required': ['a']}\n"
        "errors = []\n"
        "def check():\n"
        "    try:\n"
        "        check_document({'a': 1}, schema, 'x')\n"
        "    except Exception as e:\n"
        "        errors.append(repr(e))\n"
        "threads = [threading.Thread(target=check) for _ in range(4)]\n"
        "for t in threads: t.start()\n"
        "for t in threads: t.join()\n"
        "print(errors)\n"
    )
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert out.stdout.splitlines() == ["[]"]
