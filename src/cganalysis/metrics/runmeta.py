"""A run's ``meta.json`` as a typed record, and its JSON schema derived from it.

The runner builds :class:`RunMeta` (:func:`cganalysis.experiment.meta.build_meta`) and
writes it with :func:`cganalysis.jsonrecord.to_json`; the metrics read it
(:func:`cganalysis.metrics.runfacts.facts_from_meta`), the run API and the dataset export too.
Each checks it against :data:`META_SCHEMA` (``cganalysis schema meta``), derived from these
types. Only ``roles`` and ``analysis`` are required: a capture made without the testbed
gets a meta.json written by hand (docs/metrics.md), with the keys the metrics read, and the
metrics ignore any other key (at the top level; below it, an undeclared key is an error).
The provenance (configuration, hosts, qdisc dumps, commands, files) is typed loosely: it is
recorded, never read back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from cganalysis.errors import ConfigError
from cganalysis.jsoncheck import check_document
from cganalysis.jsonrecord import Json, absent, json_schema, spread
from cganalysis.metrics.steps import Positive, ResponseSettings, Step

META_VERSION: Literal[1] = 1

NonNeg = Annotated[float, Json({"minimum": 0})]
#: ``[start_s, end_s]`` in seconds from t0; a null end: the end of the data.
WindowPair = tuple[float, float | None]
LabelValue = str | int | float


@dataclass(frozen=True)
class Analysis:
    """How the metrics analyse the run; what is absent takes the metrics' defaults."""

    window_s: WindowPair
    fairness_window_s: WindowPair | None = absent()
    bin_s: Positive | None = absent()
    bitrate_point: Literal["egress", "ingress"] | None = absent()
    direction: Literal["dominant", "all"] | None = absent()
    capacity_source: Literal["measured", "configured"] | None = absent(
        "absent for a trace-driven link"
    )
    delay_thresholds_ms: Annotated[tuple[NonNeg, ...], Json({"minItems": 1})] | None = absent()
    response: ResponseSettings | None = absent()


@dataclass(frozen=True)
class ScheduleDetail:
    """The schedule the runner played (:class:`cganalysis.experiment.schedule.Schedule`)."""

    preset: str | None = absent()
    duration_s: Positive | None = absent()
    time_scale: Positive | None = absent()
    cg_start_s: NonNeg | None = absent()
    cg_stop_s: Annotated[float | None, Json({"minimum": 0})] = None  # null: until the end
    steps: tuple[Step, ...] | None = absent()
    window_s: WindowPair | None = absent()
    fairness_window_s: WindowPair | None = None


#: A role's rule, or its rules (first match wins): ``udp:30002``, ``tcp``.
RoleRules = Annotated[
    Mapping[str, str | Annotated[list[str], Json({"minItems": 1})]], Json({"minProperties": 1})
]


@dataclass(frozen=True, kw_only=True)
class RunMeta:
    """A run's metadata: what the metrics read, the checks' verdicts, and provenance."""

    meta_version: Literal[1] | None = absent()
    run_id: str | None = absent()
    campaign: str | None = absent("absent outside a campaign")
    repetition: Annotated[int, Json({"minimum": 0})] | None = absent("absent outside a campaign")
    #: Written as top-level keys (qdisc, cca, system, queue, a campaign's factors).
    label_keys: Mapping[str, LabelValue] = spread()
    # The same labels as one mapping: readers need not know which top-level keys are labels.
    labels: Mapping[str, LabelValue] | None = absent()
    start_ns: int | None = None  # the run's time origin, t0
    capacity_mbps: Positive | None = absent("the configured rate")
    capacity_measured_mbps: Positive | None = absent(
        "the calibration's delivered rate (constant links)"
    )
    capacity_configured_mbps: float | None = None
    capacity_trace: str | None = absent("trace-driven links")
    capacity_trace_scale: Positive | None = absent()
    capacity_trace_offset_s: float | None = absent()
    capacity_trace_bytes_per_opportunity: Annotated[int, Json({"minimum": 1})] | None = absent()
    capacity_note: str | None = absent()
    roles: RoleRules
    schedule: tuple[Step, ...] | None = absent()
    analysis: Analysis
    flags: list[str] | None = absent()
    cg_source: dict[str, Any] | None = absent()
    checks: dict[str, Any] | None = absent()
    calibration: dict[str, Any] | None = absent()
    delivered_busy_mbps: float | None = None
    bottleneck_backend: str | None = None
    bottleneck_backend_reason: str | None = None
    shaper: str | None = None
    delay_via: str | None = None
    config: dict[str, Any] | None = absent()
    schedule_detail: ScheduleDetail | None = absent()
    steps: list[dict[str, Any]] | None = None
    counters: dict[str, Any] | None = None
    qdisc_stats_records: int | None = None
    qdisc_before: Any = None
    qdisc_after: Any = None
    bottleneck_commands: list[str] | None = absent()
    delay_commands: list[str] | None = absent()
    hosts: dict[str, Any] | None = None
    testbed: dict[str, Any] | None = absent()
    topology: dict[str, Any] | None = None
    captures: dict[str, Any] | None = absent()
    times: dict[str, str | int | None] | None = absent()
    controller: dict[str, Any] | None = absent()
    files: dict[str, dict[str, Any]] | None = absent()
    #: Keys of other writers (a capture made without the testbed): ignored by the metrics.
    other_keys: Mapping[str, Any] = spread("provenance of other writers; ignored")


#: JSON schema of a run's meta.json, derived from :class:`RunMeta`.
META_SCHEMA: dict[str, Any] = json_schema(RunMeta, "meta.json")


def validate_meta(meta: Mapping[str, Any], where: str) -> None:
    """Checks a run's metadata against META_SCHEMA: where it is written, and where it is read."""
    check_document(
        meta,
        META_SCHEMA,
        where,
        error=ConfigError,
        hint="the keys are documented in docs/metrics.md",
    )
