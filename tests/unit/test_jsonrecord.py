"""Typed JSON records: the schema is derived from the fields, the document keeps their order."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal

import pytest

from cganalysis.errors import SchemaError
from cganalysis.jsoncheck import check_document
from cganalysis.jsonrecord import (
    Json,
    absent,
    from_json,
    json_schema,
    optional,
    schema_of,
    spread,
    to_json,
)


@dataclass(frozen=True)
class Level:
    mean_mbps: Annotated[float, Json({"minimum": 0})]
    span_s: tuple[float, float | None]


@dataclass(frozen=True, kw_only=True)
class Doc:
    """A document of every kind of field."""

    version: Literal[1]
    name: str
    tags: Mapping[str, str | int] = spread()
    levels: list[Level]
    best: Level | None
    kind: Literal["a", "b"] | None = absent("only for kinds")
    note: str | None = optional()


DOC = Doc(
    version=1,
    name="r01",
    tags={"qdisc": "htb", "rep": 2},
    levels=[Level(1.5, (0.0, None))],
    best=None,
)


def test_a_record_is_written_in_field_order_with_its_spread_keys_in_place() -> None:
    text = json.dumps(to_json(DOC))
    assert text == (
        '{"version": 1, "name": "r01", "qdisc": "htb", "rep": 2, '
        '"levels": [{"mean_mbps": 1.5, "span_s": [0.0, null]}], "best": null, "note": null}'
    )
    # None of an absent() field leaves its key out; of an optional() one, writes null.
    assert "kind" not in to_json(DOC)
    assert to_json(replace(DOC, kind="a"))["kind"] == "a"


def test_the_schema_follows_the_types() -> None:
    schema = json_schema(Doc, "doc")
    props = schema["properties"]
    assert schema["required"] == ["version", "name", "levels", "best"]
    assert schema["description"] == "A document of every kind of field."
    assert props["version"] == {"const": 1}
    assert props["kind"] == {"enum": ["a", "b"], "description": "only for kinds"}
    assert props["note"] == {"type": ["string", "null"]}
    assert props["levels"]["items"]["properties"]["mean_mbps"] == {"type": "number", "minimum": 0}
    assert props["levels"]["items"]["properties"]["span_s"] == {
        "type": "array",
        "prefixItems": [{"type": "number"}, {"type": ["number", "null"]}],
        "minItems": 2,
        "maxItems": 2,
    }
    assert props["best"]["type"] == ["object", "null"]
    # Undeclared keys: those of the spread field's value type, and no other.
    assert schema["additionalProperties"] == {"type": ["string", "integer"]}
    assert schema_of(Level)["additionalProperties"] is False


def test_documents_are_checked_against_the_derived_schema() -> None:
    schema = json_schema(Doc, "doc")
    good = to_json(DOC)
    check_document(good, schema, "doc", error=SchemaError)
    for bad, key in (
        ({**good, "levels": [{"mean_mbps": -1.0, "span_s": [0, 1]}]}, "levels.0.mean_mbps"),
        ({**good, "levels": [{"mean_mbps": 1.0, "span_s": [0, 1], "x": 1}]}, "levels.0"),
        ({k: v for k, v in good.items() if k != "best"}, "best"),
        ({**good, "kind": None}, "kind"),
        ({**good, "extra": {"a": 1}}, "extra"),
    ):
        with pytest.raises(SchemaError, match=f"key {key}"):
            check_document(bad, schema, "doc", error=SchemaError)


def test_a_document_reads_back_into_its_record() -> None:
    back = from_json(Doc, json.loads(json.dumps(to_json(DOC))))
    assert back == DOC
    assert isinstance(back.levels[0], Level) and back.levels[0].span_s == (0.0, None)


def test_an_undeclared_type_is_refused() -> None:
    with pytest.raises(TypeError, match="no JSON schema"):
        schema_of(set[int])


def test_any_is_anything() -> None:
    assert schema_of(dict[str, Any]) == {"type": "object", "additionalProperties": {}}
