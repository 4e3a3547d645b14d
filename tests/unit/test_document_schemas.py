"""The metrics document and meta.json: typed records whose JSON schema is derived from them.

Every published document validates and reads back into its record, which writes the same
bytes again (meta.json: the same keys and values; older runners wrote a campaign's keys
last); a wrong type, an unknown key or a missing one is refused; and a field added to a
record is a key of the schema (the schema is derived, not written by hand).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cganalysis.cli import main
from cganalysis.dataset.reader import published_datasets
from cganalysis.errors import ConfigError, SchemaError
from cganalysis.jsoncheck import check_document
from cganalysis.jsonrecord import from_json, json_schema, to_json
from cganalysis.metrics.docschema import METRICS_JSON_SCHEMA, validate_metrics
from cganalysis.metrics.document import MetricsDocument
from cganalysis.metrics.runmeta import META_SCHEMA, RunMeta, validate_meta
from tests.conftest import REPO

DATASETS = published_datasets(REPO)
METRICS = sorted(p for d in DATASETS for p in (d / "metrics").glob("*.json"))
METAS = sorted(p for d in DATASETS for p in (d / "meta").glob("*.json"))


def _dump(doc: Any) -> str:
    """As cganalysis.io.write_json writes a document."""
    return json.dumps(doc, indent=2, default=str) + "\n"


def test_every_published_document_is_checked() -> None:
    assert len(METRICS) == len(METAS) >= 200


def test_published_metrics_validate_and_read_back_byte_for_byte() -> None:
    for path in METRICS:
        text = path.read_text(encoding="utf-8")
        doc = json.loads(text)
        validate_metrics(doc, str(path))
        record = from_json(MetricsDocument, doc)
        assert isinstance(record, MetricsDocument)
        assert _dump(to_json(record)) == text, path


def test_published_metas_validate_and_read_back() -> None:
    for path in METAS:
        doc = json.loads(path.read_text(encoding="utf-8"))
        validate_meta(doc, str(path))
        record = from_json(RunMeta, doc)
        assert isinstance(record, RunMeta) and record.analysis.window_s
        assert to_json(record) == doc, path


@pytest.fixture(scope="module")
def published() -> tuple[dict[str, Any], dict[str, Any]]:
    metrics = json.loads(METRICS[0].read_text(encoding="utf-8"))
    meta = json.loads((METRICS[0].parents[1] / "meta" / METRICS[0].name).read_text("utf-8"))
    return metrics, meta


def _mutated(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``doc`` with the key at dotted ``path`` set to ``value`` (``...`` deletes it)."""
    out = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node = out
    for key in parents:
        node = node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return out


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("roles.cg.packets", "many", "roles.cg.packets"),  # a wrong type
        ("inputs.bin_s", 0, "inputs.bin_s"),  # out of range
        ("fairness.jain_index", 1.5, "fairness.jain_index"),
        ("response_status", "late", "response_status"),  # not one of the statuses
        ("marker", "x", "(top level)"),  # an unknown key
        ("inputs.capacity.mbps_used", 20.0, "inputs.capacity"),
        ("roles.cg.delay_mean_s", 0.01, "roles.cg"),  # not a registry key
        ("roles.cg.delay_mean_ms", ..., "roles.cg.delay_mean_ms"),  # a missing key
        ("inputs.capacity.mbps", ..., "inputs.capacity.mbps"),
        ("phases.with_competitor.window_s", ..., "phases.with_competitor.window_s"),
    ],
)
def test_a_broken_metrics_document_is_refused(
    published: tuple[dict[str, Any], dict[str, Any]], path: str, value: Any, named: str
) -> None:
    validate_metrics(published[0])
    with pytest.raises(SchemaError, match=re.escape(f"key {named}:")):
        validate_metrics(_mutated(published[0], path, value))


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("roles", {}, "roles"),  # no role
        ("start_ns", "now", "start_ns"),
        ("capacity_mbps", None, "capacity_mbps"),  # absent or a number, never null
        ("analysis.window_s", [0], "analysis.window_s"),
        ("analysis.bin", 0.5, "analysis"),  # an unknown key (bin_s is the key)
        # A step's rate is rate_mbps: the missing key is named.
        ("schedule_detail.steps", [{"t_s": 1, "rate": 2}], "schedule_detail.steps.0.rate_mbps"),
        ("analysis", ..., "analysis"),  # a missing key
        ("hosts_of_elsewhere", {"a": 1}, None),  # another writer's provenance: ignored
    ],
)
def test_a_broken_meta_is_refused(
    published: tuple[dict[str, Any], dict[str, Any]], path: str, value: Any, named: str | None
) -> None:
    validate_meta(published[1], "meta.json")
    if named is None:
        validate_meta(_mutated(published[1], path, value), "meta.json")
        return
    with pytest.raises(ConfigError, match=re.escape(f"key {named}")):
        validate_meta(_mutated(published[1], path, value), "meta.json")


def test_a_field_added_to_a_record_is_in_its_schema(
    published: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    @dataclass(frozen=True, kw_only=True)
    class Extended(MetricsDocument):
        queue_peak_packets: int

    schema = json_schema(Extended, "metrics document")
    assert schema["properties"]["queue_peak_packets"] == {"type": "integer"}
    assert "queue_peak_packets" in schema["required"]
    assert "queue_peak_packets" not in METRICS_JSON_SCHEMA["properties"]
    assert {**METRICS_JSON_SCHEMA["properties"], "queue_peak_packets": {"type": "integer"}} == (
        schema["properties"]
    )
    # The published document, without the new key, no longer passes.
    with pytest.raises(SchemaError, match="key queue_peak_packets:"):
        check_document(published[0], schema, "metrics", error=SchemaError)


@pytest.mark.parametrize(
    ("which", "schema"), [("metrics", METRICS_JSON_SCHEMA), ("meta", META_SCHEMA)]
)
def test_the_command_prints_the_derived_schema(
    which: str, schema: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schema", which]) == 0
    assert json.loads(capsys.readouterr().out) == schema


def test_the_fixture_meta_of_another_writer_validates() -> None:
    """tests/fixtures/dualpoint was captured by an earlier script: its provenance keys are
    not the runner's, and the metrics ignore them."""
    path = Path(REPO / "tests" / "fixtures" / "dualpoint" / "meta.json")
    validate_meta(json.loads(path.read_text(encoding="utf-8")), str(path))
