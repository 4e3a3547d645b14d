"""The registry of metrics: every value of a metrics document's role block and top level,
declared once, with its kind (range and unit) and whether the tables need it.

From it derive: the role block's computation, family by family
(:mod:`cganalysis.metrics.rolestats`), the document's JSON schema
(:mod:`cganalysis.metrics.document`), the table rows' columns (:data:`METRICS_ROLES`,
:data:`METRICS_RUNS`, filled by :mod:`cganalysis.metrics.rows`) and the list in
docs/metrics.md, section 6 (a test compares them). Adding a metric: docs/architecture.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import polars as pl

from cganalysis.metrics.delay import (
    DEFAULT_DELAY_THRESHOLDS_MS,
    QUANTILES,
    quantile_key,
    threshold_key,
)
from cganalysis.schemas import RUN_KEYS, Schema

Kind = Literal["count", "pct", "ratio", "signed_ratio", "nonneg", "status", "text"]

#: Each kind's JSON schema (null: the value does not apply) and table column type.
JSON_OF_KIND: dict[Kind, dict[str, Any]] = {
    "count": {"type": ["integer", "null"], "minimum": 0},
    "pct": {"type": ["number", "null"], "minimum": 0, "maximum": 100},
    "ratio": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
    "signed_ratio": {"type": ["number", "null"], "minimum": -1, "maximum": 1},
    "nonneg": {"type": ["number", "null"], "minimum": 0},
    "status": {"enum": ["reached", "never", "not_applicable"]},
    "text": {"type": ["string", "null"]},
}
DTYPE_OF_KIND: dict[Kind, Any] = {
    "count": pl.Int64,
    "pct": pl.Float64,
    "ratio": pl.Float64,
    "signed_ratio": pl.Float64,
    "nonneg": pl.Float64,
    "status": pl.String,
    "text": pl.String,
}


@dataclass(frozen=True)
class Metric:
    key: str
    kind: Kind
    #: The function that computes it with its family (rolestats.FAMILIES; run level:
    #: compute.py).
    family: str
    #: The tables read it: every document must carry it.
    required: bool = False
    #: A column of the table rows (METRICS_ROLES / METRICS_RUNS).
    column: bool = True


def _delay() -> tuple[Metric, ...]:
    # The quantiles and the default thresholds (delay.py): the tables' columns. A run with
    # other thresholds gets other pct_ keys, which the schema's patterns admit.
    return (
        Metric("delay_count", "count", "delay"),
        Metric("delay_mean_ms", "nonneg", "delay", required=True),
        # Not the paper's (it states a per-packet mean): the delay a random instant sees.
        Metric("delay_time_mean_ms", "nonneg", "delay"),
        Metric("delay_std_ms", "nonneg", "delay", required=True),
        Metric("delay_var_ms2", "nonneg", "delay", required=True),
        Metric("delay_min_ms", "nonneg", "delay"),
        *(Metric(f"delay_{quantile_key(q)}_ms", "nonneg", "delay") for q in QUANTILES),
        Metric("delay_max_ms", "nonneg", "delay"),
        *(
            Metric(threshold_key(t), "pct", "delay", required=True)
            for t in DEFAULT_DELAY_THRESHOLDS_MS
        ),
    )


#: A role's block (``roles.<role>``, and each phase's), in the document's order.
ROLE_METRICS: tuple[Metric, ...] = (
    Metric("packets", "count", "volume", required=True),
    Metric("bytes", "count", "volume"),
    *_delay(),
    Metric("bitrate_mean_mbps", "nonneg", "bitrate", required=True),
    Metric("bitrate_std_mbps", "nonneg", "bitrate"),
    Metric("bitrate_q1_mbps", "nonneg", "bitrate", required=True),
    Metric("bitrate_median_mbps", "nonneg", "bitrate", required=True),
    Metric("bitrate_q3_mbps", "nonneg", "bitrate", required=True),
    # TMA states no level for its bitrates; ours are IP-level (IP total length), these the
    # transport payload's (docs/metrics.md 3.2).
    Metric("bitrate_payload_mean_mbps", "nonneg", "payload"),
    Metric("offered_mean_mbps", "nonneg", "volume"),
    Metric("loss_rate", "ratio", "loss", required=True),
    Metric("packets_lost", "count", "loss"),
    Metric("packets_loss_known", "count", "loss"),
    Metric("loss_source", "text", "loss", column=False),
    Metric("ce_rate", "ratio", "ecn"),
    Metric("jitter_mean_ms", "nonneg", "jitter"),
    Metric("jitter_last_ms", "nonneg", "jitter"),
    Metric("frames_delivered", "count", "frames"),
    Metric("frames_incomplete", "count", "frames"),
    Metric("frame_rate_fps", "nonneg", "frames"),
    Metric("utilisation", "nonneg", "utilisation", required=True),
    Metric("utilisation_payload", "nonneg", "payload"),
)

#: The document's top-level metrics, one row per run in the tables.
RUN_METRICS: tuple[Metric, ...] = (
    # Utilisation is in [0, 1] for a correct capacity; above 1 it is kept (with a warning)
    # because it says the capacity given is wrong.
    Metric("utilisation_total", "nonneg", "utilisation", required=True),
    Metric("fairness_ratio", "signed_ratio", "fairness", required=True),
    Metric("jain_index", "ratio", "fairness", required=True),
    Metric("response_time_s", "nonneg", "response", required=True),
    Metric("response_status", "status", "response", required=True),
    Metric("recovery_time_s", "nonneg", "response", required=True),
    Metric("recovery_status", "status", "response", required=True),
)

#: One row per run: the labels, the capacity used, the top-level metrics, the flags
#: (``metrics.rows.run_rows``).
METRICS_RUNS: Schema = {
    **RUN_KEYS,
    "capacity_used_mbps": pl.Float64,  # what utilisation and fairness divided by
    "capacity_source": pl.String,  # configured, measured or trace
    **{m.key: DTYPE_OF_KIND[m.kind] for m in RUN_METRICS if m.column},
    "flags": pl.String,  # the metrics' flags (meta.json's + late flows) by "; ", "" if none
}

#: One row per run, phase and role (``metrics.rows.role_rows``).
METRICS_ROLES: Schema = {
    **RUN_KEYS,
    "phase": pl.String,  # window, before_competitor, with_competitor
    "role": pl.String,  # cg, competitor, other
    **{m.key: DTYPE_OF_KIND[m.kind] for m in ROLE_METRICS if m.column},
}
