"""The metric registry is the one list of a metrics document's values: the computation
produces exactly its keys, the schema checks them, the table rows carry them, and
docs/metrics.md lists them in its order."""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from cganalysis.metrics.compute import run_metrics
from cganalysis.metrics.docschema import METRICS_JSON_SCHEMA
from cganalysis.metrics.document import ROLE_SCHEMA
from cganalysis.metrics.registry import (
    JSON_OF_KIND,
    METRICS_ROLES,
    METRICS_RUNS,
    ROLE_METRICS,
    RUN_METRICS,
)
from cganalysis.metrics.roles import parse_rules
from cganalysis.metrics.rows import role_rows, run_rows
from cganalysis.metrics.runfacts import Window, choose_capacity, facts_from_values
from cganalysis.metrics.steps import Step
from tests.conftest import REPO
from tests.unit.synthetic import T0_NS, cbr, table

DOC = (REPO / "docs" / "metrics.md").read_text(encoding="utf-8")


def _doc_row(first_cell: str) -> list[str]:
    """The backticked names of the row of docs/metrics.md's document table, after its
    first cell."""
    row = next(ln for ln in DOC.splitlines() if ln.startswith(f"| {first_cell} |"))
    return re.findall(r"`([^`]+)`", row.split(" | ", 1)[1])


def test_the_docs_list_the_registry_in_its_order() -> None:
    assert _doc_row("`roles.<role>`") == [m.key for m in ROLE_METRICS]
    assert _doc_row("top level") == [m.key for m in RUN_METRICS]


def _document() -> dict[str, Any]:
    """CG at 5 Mbit/s for 20 s, TCP at 10 Mbit/s from 5 s (one packet in 50 lost)."""
    cg = cbr(5, 0, 20, flow_id=0, sport=30001, dport=30002, delay_ms=2.0)
    lost = [i % 50 == 0 for i in range(15 * 1000)]
    tcp = cbr(10, 5, 20, flow_id=1, proto=6, sport=5201, dport=50000, delay_ms=8.0, lost=lost)
    facts = facts_from_values(
        capacity=choose_capacity(50.0, None, None),
        window=Window(0, 20),
        rules=parse_rules(["cg=udp:30002", "competitor=tcp"]),
        t0_ns=T0_NS,
        schedule=(Step(5, 10),),
    )
    return run_metrics(table(cg, tcp), facts)


def test_the_computation_gives_exactly_the_registered_keys() -> None:
    doc = _document()
    roles = doc["roles"]
    for role in ("cg", "competitor"):
        assert list(roles[role]) == [m.key for m in ROLE_METRICS], role
    assert {m.key for m in RUN_METRICS} <= set(doc)


def test_the_schema_and_the_table_rows_derive_from_the_registry() -> None:
    assert ROLE_SCHEMA["required"] == [m.key for m in ROLE_METRICS if m.required]
    assert set(ROLE_SCHEMA["properties"]) == {m.key for m in ROLE_METRICS}
    assert {m.key for m in RUN_METRICS} <= set(METRICS_JSON_SCHEMA["properties"])
    # The document's record declares the top-level metrics with their kind's range (the
    # total utilisation is a sum, never null).
    for m in RUN_METRICS:
        if m.key != "utilisation_total":
            assert METRICS_JSON_SCHEMA["properties"][m.key] == JSON_OF_KIND[m.kind], m.key
    assert [c for c in METRICS_ROLES if c in {m.key for m in ROLE_METRICS}] == [
        m.key for m in ROLE_METRICS if m.column
    ]
    doc = _document()
    runs, roles = run_rows([doc]), role_rows([doc])
    assert runs.columns == list(METRICS_RUNS) and roles.columns == list(METRICS_ROLES)
    cg = roles.filter(pl.col("role") == "cg").row(0, named=True)
    assert cg["packets"] == doc["roles"]["cg"]["packets"] > 0
