"""JSON schemas of a run's two documents: ``meta.json`` and the metrics JSON, declared once.

Each is checked by the code that writes it and by every reader, with
:func:`cganalysis.jsoncheck.check_document`:

- ``meta.json`` (:data:`META_SCHEMA`): the keys of a run's metadata the metrics read
  (others are provenance, and ignored); written by :mod:`cganalysis.experiment.meta`, read
  by :mod:`cganalysis.metrics.spec`, the run API and the dataset export. Keys are
  documented in docs/metrics.md.
- the metrics JSON (:data:`METRICS_JSON_SCHEMA`, what ``cganalysis metrics`` writes): it
  pins the keys the tables and figures read and the ranges promised: percentages in
  [0, 100], loss and CE rates in [0, 1], the fairness ratio in [-1, 1], Jain's index in
  [0, 1]. Utilisation is in [0, 1] for a correct capacity; above 1 it is kept (with a
  warning in the document) because it says the capacity given is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cganalysis.errors import ConfigError, SchemaError
from cganalysis.jsoncheck import check_document
from cganalysis.metrics.registry import JSON_OF_KIND, ROLE_METRICS, RUN_METRICS

_num = {"type": ["number", "null"]}
_nonneg = JSON_OF_KIND["nonneg"]

#: A role's block: its keys, ranges and which are required come from the metric registry;
#: the patterns admit the keys of other delay thresholds or quantiles (a run's own).
ROLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [m.key for m in ROLE_METRICS if m.required],
    "properties": {m.key: JSON_OF_KIND[m.kind] for m in ROLE_METRICS},
    "patternProperties": {
        r"^pct_delay_over_.*ms$": JSON_OF_KIND["pct"],
        r"^delay_.*_ms2?$": _nonneg,
        r"^bitrate_.*_mbps$": _nonneg,
        r"^jitter_.*_ms$": _nonneg,
    },
}

METRICS_JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": [
        "schema_version",
        "run",
        "inputs",
        "roles",
        *(m.key for m in RUN_METRICS if m.required),
        "events",
        "phases",
        "warnings",
    ],
    "properties": {
        "schema_version": {"const": 1},
        "run": {"type": "object"},
        "inputs": {
            "type": "object",
            "required": [
                "mode",
                "capacity",
                "window_s",
                "window_effective_s",
                "bin_s",
                "rules",
                "schedule",
            ],
            "properties": {
                "mode": {"enum": ["dual", "single"]},
                "capacity": {
                    "type": "object",
                    "required": ["source", "mbps"],
                    "properties": {
                        "source": {"enum": ["configured", "measured", "trace"]},
                        "mbps": {"type": "number", "minimum": 0},
                    },
                },
                "bin_s": {"type": "number", "exclusiveMinimum": 0},
            },
        },
        "roles": {
            "type": "object",
            "required": ["cg", "competitor"],
            "additionalProperties": ROLE_SCHEMA,
        },
        **{m.key: JSON_OF_KIND[m.kind] for m in RUN_METRICS},
        # Always a number: the sum over the roles (0 without a delivered packet).
        "utilisation_total": {"type": "number", "minimum": 0},
        "events": {"type": "array"},
        "phases": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["window_s", "roles"],
                "properties": {"roles": {"type": "object", "additionalProperties": ROLE_SCHEMA}},
            },
        },
        "warnings": {"type": "array", "items": {"type": "string"}},
        "flow_starts": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["role", "scheduled_s", "first_packet_s", "allowed_s", "ok"],
                "properties": {
                    "scheduled_s": {"type": "number"},
                    "first_packet_s": _num,
                    "late_s": _num,
                    "allowed_s": {"type": "number", "minimum": 0},
                    "ok": {"type": "boolean"},
                },
            },
        },
        "flags": {"type": "array", "items": {"type": "string"}},
    },
}


def validate_metrics(doc: Mapping[str, Any], where: str = "metrics document") -> None:
    """Raises :class:`SchemaError` naming the first key that breaks the schema."""
    check_document(doc, METRICS_JSON_SCHEMA, where, error=SchemaError)


#: JSON schema of the keys of a run's meta.json that the metrics read (others are ignored).
META_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["roles", "analysis"],
    "properties": {
        "run_id": {"type": "string"},
        "campaign": {"type": "string"},
        "qdisc": {"type": "string"},
        "cca": {"type": "string"},
        "system": {"type": "string"},
        "repetition": {"type": "integer", "minimum": 0},
        "queue": {"type": ["string", "number"]},
        "labels": {"type": "object", "additionalProperties": {"type": ["string", "number"]}},
        "start_ns": {"type": "integer"},
        "capacity_mbps": {"type": "number", "exclusiveMinimum": 0},
        "capacity_measured_mbps": {"type": "number", "exclusiveMinimum": 0},
        "capacity_trace": {"type": "string"},
        "capacity_trace_scale": {"type": "number", "exclusiveMinimum": 0},
        "capacity_trace_offset_s": {"type": "number"},
        "capacity_trace_bytes_per_opportunity": {"type": "integer", "minimum": 1},
        "roles": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "oneOf": [
                    {"type": "string"},
                    {"type": "array", "items": {"type": "string"}, "minItems": 1},
                ]
            },
        },
        "schedule": {"$ref": "#/$defs/steps"},
        "schedule_detail": {
            "type": "object",
            "properties": {
                "cg_start_s": {"type": "number", "minimum": 0},
                "cg_stop_s": {"type": ["number", "null"], "minimum": 0},
                "duration_s": {"type": "number", "exclusiveMinimum": 0},
                "time_scale": {"type": "number", "exclusiveMinimum": 0},
                "steps": {"$ref": "#/$defs/steps"},
            },
        },
        "analysis": {
            "type": "object",
            "required": ["window_s"],
            "properties": {
                "window_s": {"$ref": "#/$defs/window"},
                "fairness_window_s": {"$ref": "#/$defs/window"},
                "bin_s": {"type": "number", "exclusiveMinimum": 0},
                "bitrate_point": {"enum": ["egress", "ingress"]},
                "direction": {"enum": ["dominant", "all"]},
                "capacity_source": {"enum": ["measured", "configured"]},
                "delay_thresholds_ms": {
                    "type": "array",
                    "items": {"type": "number", "minimum": 0},
                    "minItems": 1,
                },
                "response": {
                    "type": "object",
                    "properties": {
                        "before_s": {"type": "number", "exclusiveMinimum": 0},
                        "settle_s": {"type": "number", "exclusiveMinimum": 0},
                        "smooth_s": {"type": "number", "minimum": 0},
                    },
                    "additionalProperties": False,
                },
            },
            "additionalProperties": False,
        },
    },
    "$defs": {
        "steps": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["t_s", "rate_mbps"],
                "properties": {
                    "t_s": {"type": "number"},
                    "rate_mbps": {"type": ["number", "null"], "minimum": 0},
                },
            },
        },
        "window": {
            "type": "array",
            "prefixItems": [{"type": "number"}, {"type": ["number", "null"]}],
            "minItems": 2,
            "maxItems": 2,
        },
    },
}


def validate_meta(meta: Mapping[str, Any], where: str) -> None:
    """Checks a run's metadata against META_SCHEMA: where it is written, and where it is read."""
    check_document(
        meta,
        META_SCHEMA,
        where,
        error=ConfigError,
        hint="the keys are documented in docs/metrics.md",
    )
