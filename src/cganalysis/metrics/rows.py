"""Metrics documents flattened into tables: one row per run, one row per run and role.

These are what the tables and the heatmaps group and pivot; their layouts are the
METRICS_RUNS and METRICS_ROLES schemas of the metric registry
(:mod:`cganalysis.metrics.registry`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from cganalysis.metrics.registry import METRICS_ROLES, METRICS_RUNS, RUN_METRICS
from cganalysis.schemas import RUN_KEYS, check_schema

#: Phase name of the analysis window in METRICS_ROLES (the others come from the documents).
WINDOW_PHASE = "window"


def capacity_label(doc: Mapping[str, Any]) -> float | None:
    """The capacity a run is filed under: configured (the condition's name), else used."""
    cap = doc["inputs"]["capacity"]
    value = cap.get("configured_mbps") or cap.get("mbps")
    return None if value is None else float(value)


def _labels(doc: Mapping[str, Any]) -> dict[str, Any]:
    run = doc.get("run", {})
    queue = run.get("queue")
    rep = run.get("repetition")
    return {
        "run_id": run.get("run_id"),
        "campaign": run.get("campaign"),
        "qdisc": run.get("qdisc"),
        "cca": run.get("cca"),
        "system": run.get("system"),
        "queue": None if queue is None else str(queue),
        "repetition": None if rep is None else int(rep),
        "capacity_mbps": capacity_label(doc),
    }


def run_rows(docs: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    rows = [
        {
            **_labels(doc),
            "capacity_used_mbps": doc["inputs"]["capacity"]["mbps"],
            "capacity_source": doc["inputs"]["capacity"]["source"],
            **{m.key: doc[m.key] for m in RUN_METRICS if m.column},
            "flags": "; ".join(doc.get("flags") or ()),
        }
        for doc in docs
    ]
    return check_schema(
        pl.DataFrame(rows, schema=dict(METRICS_RUNS), orient="row"), METRICS_RUNS, "METRICS_RUNS"
    )


def role_rows(docs: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    """Every role of every phase of every run; metric columns as in METRICS_ROLES."""
    metric_cols = [c for c in METRICS_ROLES if c not in (*RUN_KEYS, "phase", "role")]
    rows = []
    for doc in docs:
        labels = _labels(doc)
        phases = {WINDOW_PHASE: doc["roles"]}
        phases.update({k: v["roles"] for k, v in doc.get("phases", {}).items()})
        for phase, roles in phases.items():
            for role, values in roles.items():
                row = {**labels, "phase": phase, "role": role}
                row.update({c: values.get(c) for c in metric_cols})
                rows.append(row)
    return check_schema(
        pl.DataFrame(rows, schema=dict(METRICS_ROLES), orient="row"),
        METRICS_ROLES,
        "METRICS_ROLES",
    )
