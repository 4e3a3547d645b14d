"""The metrics document of one run (what ``cganalysis metrics`` writes), as typed records.

Each record is built by the code that computes its part (:mod:`.compute`, :mod:`.starts`)
and :func:`cganalysis.jsonrecord.to_json` writes it; the JSON schema is derived from these
types (:mod:`.docschema`, ``cganalysis schema metrics``). A role's block is the exception:
its keys are those of the metric registry (:data:`.registry.ROLE_METRICS`, plus the keys of
a run's own delay thresholds), so its schema comes from the registry. Keys are documented
in docs/metrics.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from cganalysis.jsonrecord import Json, absent, optional
from cganalysis.metrics.registry import JSON_OF_KIND, ROLE_METRICS
from cganalysis.metrics.response import EventKind, Status
from cganalysis.metrics.runfacts import BitratePoint, CapacitySource, Direction
from cganalysis.metrics.starts import FlowStart
from cganalysis.metrics.steps import ResponseSettings, Step

SCHEMA_VERSION: Literal[1] = 1

NonNeg = Annotated[float, Json({"minimum": 0})]
#: A span of seconds from t0: [start, end].
Span = tuple[float, float]
#: Where the competitor's schedule comes from: the run's meta.json, the command line, the
#: traffic itself (a capture without a testbed schedule), or nowhere (no competitor).
ScheduleSource = Literal["meta", "flags", "inferred", "none"]

#: A role's block: its keys, ranges and which are required come from the metric registry;
#: the patterns admit the keys of other delay thresholds or quantiles (a run's own).
ROLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [m.key for m in ROLE_METRICS if m.required],
    "properties": {m.key: JSON_OF_KIND[m.kind] for m in ROLE_METRICS},
    "patternProperties": {
        r"^pct_delay_over_.*ms$": JSON_OF_KIND["pct"],
        r"^delay_.*_ms2?$": JSON_OF_KIND["nonneg"],
        r"^bitrate_.*_mbps$": JSON_OF_KIND["nonneg"],
        r"^jitter_.*_ms$": JSON_OF_KIND["nonneg"],
    },
    "additionalProperties": False,
}
RoleStats = Annotated[dict[str, float | str | None], Json(ROLE_SCHEMA)]

#: Why a key may be absent. The keys the tables and figures read are required; the others
#: came later (a document of an earlier version lacks them) or are the computation's record
#: of its inputs, which a document made elsewhere (a test's, another tool's) may leave out.
NOT_READ = "may be absent: the tables and figures do not read it"


@dataclass(frozen=True, kw_only=True)
class CapacityUsed:
    """The link capacity utilisation and fairness divide by (``mbps``: its mean over the
    analysis window), and where it comes from."""

    source: CapacitySource
    mbps: NonNeg
    configured_mbps: float | None = optional(NOT_READ)
    measured_mbps: float | None = optional(NOT_READ)
    trace: str | None = optional(NOT_READ)
    trace_scale: float | None = optional(NOT_READ)
    trace_offset_s: float | None = optional(NOT_READ)


@dataclass(frozen=True)
class ExcludedReverse:
    """The reverse direction's flows left out of the roles (``direction: dominant``)."""

    flows: int
    packets: int
    bytes: int


@dataclass(frozen=True, kw_only=True)
class Inputs:
    """What the metrics were computed from, and with which settings."""

    packets: str | None = optional(NOT_READ)
    #: Where the run's facts came from (metrics/runfacts.py): its meta.json and/or "flags";
    #: the key's name predates the module's and stays, published documents carry it.
    spec_source: str | None = absent(NOT_READ)
    mode: Literal["dual", "single"]
    t0_ns: int | None = absent(NOT_READ)
    t0_source: Literal["meta", "first_packet"] | None = absent(NOT_READ)
    data_span_s: Span | None = absent(NOT_READ)
    capacity: CapacityUsed
    window_s: tuple[float, float | None]
    window_effective_s: Span
    bin_s: Annotated[float, Json({"exclusiveMinimum": 0})]
    bitrate_point: BitratePoint | None = absent(NOT_READ)
    direction: Direction | None = absent(NOT_READ)
    rules: list[str]
    schedule: list[Step]
    schedule_source: ScheduleSource | None = absent(NOT_READ)
    fairness_window_s: tuple[float, float | None] | None = optional(NOT_READ)
    response: ResponseSettings | None = absent(NOT_READ)
    delay_thresholds_ms: list[float] | None = absent(NOT_READ)
    excluded_reverse: ExcludedReverse | None = absent(NOT_READ)


@dataclass(frozen=True)
class Fairness:
    """Xu's fairness ratio and Jain's index over the bins where the competitor is on."""

    bins: int
    from_s: float
    to_s: float
    cg_mean_mbps: NonNeg
    competitor_mean_mbps: NonNeg
    capacity_mbps: NonNeg
    fairness_ratio: Annotated[float | None, Json(JSON_OF_KIND["signed_ratio"])]
    jain_index: Annotated[float | None, Json(JSON_OF_KIND["ratio"])]


@dataclass(frozen=True)
class BitrateLevel:
    """The CG flow's mean bitrate and its deviation over a span."""

    mean_mbps: float
    std_mbps: float
    from_s: float
    to_s: float


@dataclass(frozen=True)
class EventOutcome:
    """One change of the competing flow and how long the CG flow took to adapt to it."""

    t_s: float
    kind: EventKind
    rate_before_mbps: float | None
    rate_after_mbps: float | None
    baseline: BitrateLevel | None
    target: BitrateLevel | None
    time_s: float | None
    status: Status
    note: str


@dataclass(frozen=True)
class Phase:
    """Per-role metrics over one phase of the run (whole bins)."""

    window_s: Span
    roles: dict[str, RoleStats]


@dataclass(frozen=True)
class Phases:
    """Xu's phases: before the competitor starts and while it runs (each absent when it
    is shorter than a bin, or without a competitor)."""

    before_competitor: Phase | None = absent()
    with_competitor: Phase | None = absent()


@dataclass(frozen=True, kw_only=True)
class MetricsDocument:
    """Every metric of one run (docs/metrics.md). Percentages are in [0, 100], rates and
    utilisations are ratios in [0, 1] (the fairness ratio in [-1, 1]); null marks a value
    that does not apply."""

    schema_version: Literal[1]
    run: dict[str, str | int | float]
    inputs: Inputs
    roles: Annotated[dict[str, RoleStats], Json({"required": ["cg", "competitor"]})]
    # Always a number: the sum over the roles (0 without a delivered packet). Above 1 it is
    # kept (with a warning) because it says the capacity given is wrong.
    utilisation_total: NonNeg
    fairness_ratio: Annotated[float | None, Json(JSON_OF_KIND["signed_ratio"])]
    jain_index: Annotated[float | None, Json(JSON_OF_KIND["ratio"])]
    fairness: Fairness | None = optional(NOT_READ)
    response_time_s: Annotated[float | None, Json(JSON_OF_KIND["nonneg"])]
    response_status: Status
    recovery_time_s: Annotated[float | None, Json(JSON_OF_KIND["nonneg"])]
    recovery_status: Status
    events: list[EventOutcome]
    phases: Phases
    warnings: list[str]
    flow_starts: list[FlowStart] | None = absent(NOT_READ)
    #: The run's own flags, then the metrics' (a flow that did not start on time).
    flags: list[str] | None = absent(NOT_READ)
    #: The versions that computed the numbers (provenance, added when the file is written).
    software: dict[str, Any] | None = absent(
        "the versions that computed the numbers: Python, packages, lock file"
    )
