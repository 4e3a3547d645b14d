"""JSON schema of the metrics document (what ``cganalysis metrics`` writes).

It pins the keys the tables and figures read and the ranges promised: percentages in
[0, 100], loss and CE rates in [0, 1], the fairness ratio in [-1, 1], Jain's index in
[0, 1]. Utilisation is in [0, 1] for a correct capacity; above 1 it is kept (with a warning
in the document) because it says the capacity given is wrong.
"""

from __future__ import annotations

from typing import Any

from cganalysis.errors import SchemaError

_num = {"type": ["number", "null"]}
_pct = {"type": ["number", "null"], "minimum": 0, "maximum": 100}
_ratio = {"type": ["number", "null"], "minimum": 0, "maximum": 1}
_nonneg = {"type": ["number", "null"], "minimum": 0}
_count = {"type": ["integer", "null"], "minimum": 0}
_status = {"enum": ["reached", "never", "not_applicable"]}

ROLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "packets",
        "delay_mean_ms",
        "delay_std_ms",
        "delay_var_ms2",
        "pct_delay_over_10ms",
        "pct_delay_over_20ms",
        "pct_delay_over_50ms",
        "pct_delay_over_100ms",
        "bitrate_mean_mbps",
        "bitrate_q1_mbps",
        "bitrate_median_mbps",
        "bitrate_q3_mbps",
        "loss_rate",
        "utilisation",
    ],
    "properties": {
        "packets": _count,
        "bytes": _count,
        "delay_count": _count,
        "packets_lost": _count,
        "packets_loss_known": _count,
        "loss_rate": _ratio,
        "ce_rate": _ratio,
        "frames_delivered": _count,
        "frames_incomplete": _count,
        "frame_rate_fps": _nonneg,
        "utilisation": _nonneg,
    },
    "patternProperties": {
        r"^pct_delay_over_.*ms$": _pct,
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
        "utilisation_total",
        "fairness_ratio",
        "jain_index",
        "response_time_s",
        "recovery_time_s",
        "response_status",
        "recovery_status",
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
        "utilisation_total": {"type": "number", "minimum": 0},
        "fairness_ratio": {"type": ["number", "null"], "minimum": -1, "maximum": 1},
        "jain_index": _ratio,
        "response_time_s": _nonneg,
        "recovery_time_s": _nonneg,
        "response_status": _status,
        "recovery_status": _status,
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
        "flags": {"type": "array", "items": {"type": "string"}},
    },
}


def validate_metrics(doc: dict[str, Any], where: str = "metrics document") -> None:
    """Raises :class:`SchemaError` naming the first key that breaks the schema."""
    import jsonschema  # imported here: it takes seconds, and most commands never validate

    validator = jsonschema.Draft202012Validator(METRICS_JSON_SCHEMA)
    err = next(iter(sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))), None)
    if err is not None:
        key = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        raise SchemaError(f"{where}: key {key}: {err.message}")
