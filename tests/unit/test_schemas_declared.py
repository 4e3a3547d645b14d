"""Every table column is declared once with a type, a description and the unit its name
implies; the datasheet shows exactly those records."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl
import pytest

from cganalysis import schemas
from cganalysis.dataset.columns import describe


def _schema_constants() -> dict[str, Mapping[str, object]]:
    return {
        name: value
        for name, value in vars(schemas).items()
        if name.isupper() and isinstance(value, Mapping) and name not in ("SHARED", "TABLES")
    }


def test_every_schema_constant_is_a_declared_table_and_back() -> None:
    constants = _schema_constants()
    assert set(constants) == set(schemas.TABLES)
    for name, schema in constants.items():
        assert [c.name for c in schemas.TABLES[name]] == list(schema)
        assert [c.dtype for c in schemas.TABLES[name]] == list(schema.values())


@pytest.mark.parametrize("table", sorted(schemas.TABLES))
def test_every_column_says_what_it_is(table: str) -> None:
    for column in schemas.TABLES[table]:
        assert column.description.strip(), f"{table}.{column.name}: no description"
        assert "\n" not in column.description


def test_units_come_from_the_names() -> None:
    assert schemas.unit_of("delay_ms") == "ms"
    assert schemas.unit_of("queue_delay_ms2") == "ms^2"
    assert schemas.unit_of("target_bps") == "bit/s"
    assert schemas.unit_of("rate_mbps") == "Mbit/s"
    assert schemas.unit_of("packets") == ""
    # A time column of a float type is in seconds, of an integer type in ns: the names agree.
    for columns in schemas.TABLES.values():
        for c in columns:
            if c.name.endswith("_ns"):
                assert c.dtype == pl.Int64, c.name


def test_a_table_description_wins_over_the_shared_one() -> None:
    capture = {c.name: c for c in schemas.TABLES["CAPTURE"]}
    assert capture["t_ns"].description.startswith("capture timestamp")
    assert schemas.SHARED["t_ns"] != capture["t_ns"].description
    egress_only = {c.name: c for c in schemas.TABLES["EGRESS_ONLY"]}
    assert egress_only["t_ns"] == capture["t_ns"]  # declared once, reused
    assert describe("PACKETS") == list(schemas.TABLES["PACKETS"])
