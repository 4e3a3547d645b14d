"""What a run was, as the metrics need it: capacity, windows, schedule and roles.

A :class:`RunFacts` comes from a run's ``meta.json`` (:func:`facts_from_meta`, keys documented
in ``docs/metrics.md`` and checked against
:data:`cganalysis.metrics.runmeta.META_SCHEMA`) or from command-line flags
(:func:`facts_from_values`). Every time is in seconds from the run's origin ``t0``: the
``start_ns`` of the metadata when given, else the first packet seen at ingress.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cganalysis.errors import ConfigError
from cganalysis.metrics.delay import DEFAULT_DELAY_THRESHOLDS_MS
from cganalysis.metrics.roles import RoleRule, rules_from_mapping
from cganalysis.metrics.runmeta import validate_meta
from cganalysis.metrics.starts import PlannedStart, planned_starts
from cganalysis.metrics.steps import ResponseSettings, Step
from cganalysis.traces.find import find_trace

CapacitySource = Literal["configured", "measured", "trace"]
BitratePoint = Literal["egress", "ingress"]
Direction = Literal["dominant", "all"]

#: Xu & Claypool compute bitrates every 0.5 s.
DEFAULT_BIN_S = 0.5
#: Labels copied from the metadata into every result, for tables and figures; a meta.json
#: also lists every label of its run (campaign factors such as ``link``) under ``labels``.
LABEL_KEYS: tuple[str, ...] = (
    "run_id",
    "campaign",
    "qdisc",
    "cca",
    "system",
    "repetition",
    "queue",
)


@dataclass(frozen=True)
class Window:
    """``[start_s, end_s)`` in seconds from t0; ``end_s`` None means the end of the data."""

    start_s: float
    end_s: float | None = None

    def __post_init__(self) -> None:
        if not math.isfinite(self.start_s) or (
            self.end_s is not None and not math.isfinite(self.end_s)
        ):
            raise ConfigError(f"window {self}: times must be finite numbers of seconds")
        if self.end_s is not None and self.end_s <= self.start_s:
            raise ConfigError(
                f"window {self.start_s}:{self.end_s}: the end must be after the start"
            )

    def __str__(self) -> str:
        end = "" if self.end_s is None else f"{self.end_s:g}"
        return f"{self.start_s:g}:{end}"


def parse_window(text: str, flag: str = "--window") -> Window:
    """``START:END`` in seconds; END may be empty (to the end of the data)."""
    start, sep, end = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return Window(float(start), float(end) if end.strip() else None)
    except ValueError:
        raise ConfigError(
            f"{flag} {text!r}: expected START:END in seconds from the run's start, e.g. "
            "120:360, or 120: for 'until the end of the data'"
        ) from None


@dataclass(frozen=True)
class Capacity:
    """The bottleneck's capacity: a constant, or a mahimahi trace (see capacity.py)."""

    source: CapacitySource
    mbps: float | None = None  # the constant used when source is not "trace"
    configured_mbps: float | None = None
    measured_mbps: float | None = None
    trace: Path | None = None
    trace_scale: float = 1.0
    trace_offset_s: float = 0.0  # when the trace's time 0 was, in seconds from t0
    trace_bytes_per_opportunity: int = 1500


def _response_settings(meta: Mapping[str, Any], analysis: Mapping[str, Any]) -> ResponseSettings:
    """What meta.json says; Xu's 60 s windows scale with a scaled schedule (as its phases
    do: a 9-minute run in 3 minutes averages the last 20 s of its 60 s TCP phase, not all
    of it), read from the runner's ``schedule_detail.time_scale``."""
    detail = meta.get("schedule_detail")
    scale = detail.get("time_scale", 1.0) if isinstance(detail, Mapping) else 1.0
    defaults = ResponseSettings()
    scaled = {"before_s": defaults.before_s * scale, "settle_s": defaults.settle_s * scale}
    return ResponseSettings(**{**scaled, **analysis.get("response", {})})


@dataclass(frozen=True)
class RunFacts:
    capacity: Capacity
    window: Window
    rules: tuple[RoleRule, ...]
    bin_s: float = DEFAULT_BIN_S
    schedule: tuple[Step, ...] = ()
    t0_ns: int | None = None
    #: Where fairness is measured; None: the analysis window while the competitor is on.
    fairness_window: Window | None = None
    response: ResponseSettings = field(default_factory=ResponseSettings)
    bitrate_point: BitratePoint = "egress"
    direction: Direction = "dominant"
    delay_thresholds_ms: tuple[float, ...] = DEFAULT_DELAY_THRESHOLDS_MS
    labels: Mapping[str, str | int | float] = field(default_factory=dict)
    source: str = "flags"
    #: meta.json's ``flags`` (what went wrong in the run), carried into the metrics so
    #: that the tables can say which runs they hold are suspect.
    run_flags: tuple[str, ...] = ()
    #: When the testbed started each flow (meta.json's ``schedule_detail``; empty for
    #: runs it did not make): checked against the captures (starts.py). Overriding the
    #: schedule for the analysis does not change them.
    planned_starts: tuple[PlannedStart, ...] = ()

    def __post_init__(self) -> None:
        if not self.bin_s > 0:
            raise ConfigError(f"bin size {self.bin_s}: must be a positive number of seconds")
        if not self.rules:
            raise ConfigError("no role rules: give --role cg=udp:PORT (and competitor=tcp)")
        times = [s.t_s for s in self.schedule]
        if times != sorted(times) or len(set(times)) != len(times):
            raise ConfigError(f"schedule times {times}: must be strictly increasing")


def choose_capacity(
    configured: float | None,
    measured: float | None,
    trace: Path | None,
    *,
    prefer: Literal["measured", "configured"] = "measured",
    trace_scale: float = 1.0,
    trace_offset_s: float = 0.0,
    trace_bytes_per_opportunity: int = 1500,
    key: str = "--capacity-mbps",
) -> Capacity:
    """A trace wins; else the measured capacity (when preferred and known), else configured.

    The measured one is preferred because a configured shaper rate is not what some machines
    deliver (docs/testbed.md, Calibration): utilisation against a rate the link never had
    reads as waste.
    """
    for name, v in (("configured", configured), ("measured", measured)):
        if v is not None and not (math.isfinite(v) and v > 0):
            raise ConfigError(f"{key}: {name} capacity {v} must be a positive number of Mbit/s")
    if trace is not None:
        if not trace_scale > 0:
            raise ConfigError(f"capacity trace scale {trace_scale}: must be positive")
        return Capacity(
            "trace",
            None,
            configured,
            measured,
            trace,
            trace_scale,
            trace_offset_s,
            trace_bytes_per_opportunity,
        )
    if measured is not None and (prefer == "measured" or configured is None):
        return Capacity("measured", measured, configured, measured)
    if configured is not None:
        return Capacity("configured", configured, configured, measured)
    raise ConfigError(
        f"no link capacity: give {key} X (Mbit/s) or a capacity trace, or in meta.json "
        "capacity_mbps, capacity_measured_mbps or capacity_trace"
    )


def labels_from_meta(meta: Mapping[str, Any]) -> dict[str, str | int | float]:
    """LABEL_KEYS from the top level, then every other entry of ``labels`` (older metas have
    no ``labels``: their LABEL_KEYS are all there is). The top level wins a clash: it is
    what older tools and hand edits change."""
    labels: dict[str, str | int | float] = {k: meta[k] for k in LABEL_KEYS if k in meta}
    for key, value in (meta.get("labels") or {}).items():
        labels.setdefault(str(key), value)
    return labels


def trace_file(path: Path, base_dir: Path) -> Path:
    """The run's trace where it was, else the same name on the trace search path (a run
    made on another machine; a generated trace is made again, the same bytes), else the
    path as recorded (its reader then says it is missing)."""
    if path.is_file():
        return path

    try:
        return find_trace(path.name, base_dir)
    except ConfigError:
        return path


def facts_from_meta(meta: Mapping[str, Any], base_dir: Path, where: str = "meta.json") -> RunFacts:
    """The facts of a run from its metadata; relative trace paths are relative to ``base_dir``."""
    validate_meta(meta, where)
    analysis: Mapping[str, Any] = meta["analysis"]
    trace = meta.get("capacity_trace")
    try:
        capacity = choose_capacity(
            meta.get("capacity_mbps"),
            meta.get("capacity_measured_mbps"),
            None if trace is None else trace_file(base_dir / trace, base_dir),
            prefer=analysis.get("capacity_source", "measured"),
            trace_scale=meta.get("capacity_trace_scale", 1.0),
            trace_offset_s=meta.get("capacity_trace_offset_s", 0.0),
            trace_bytes_per_opportunity=meta.get("capacity_trace_bytes_per_opportunity", 1500),
            key="capacity_mbps",
        )
        window = Window(*analysis["window_s"])
        fw = analysis.get("fairness_window_s")
        return RunFacts(
            capacity=capacity,
            window=window,
            rules=rules_from_mapping(meta["roles"]),
            bin_s=analysis.get("bin_s", DEFAULT_BIN_S),
            schedule=tuple(Step(float(s["t_s"]), s["rate_mbps"]) for s in meta.get("schedule", [])),
            t0_ns=meta.get("start_ns"),
            fairness_window=None if fw is None else Window(*fw),
            response=_response_settings(meta, analysis),
            bitrate_point=analysis.get("bitrate_point", "egress"),
            direction=analysis.get("direction", "dominant"),
            delay_thresholds_ms=tuple(
                analysis.get("delay_thresholds_ms", DEFAULT_DELAY_THRESHOLDS_MS)
            ),
            labels=labels_from_meta(meta),
            source=where,
            run_flags=tuple(str(f) for f in meta.get("flags") or ()),
            planned_starts=planned_starts(
                meta.get("schedule_detail") or {}, meta.get("schedule") or ()
            ),
        )
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None


def facts_from_values(
    *,
    capacity: Capacity,
    window: Window,
    rules: Sequence[RoleRule],
    bin_s: float = DEFAULT_BIN_S,
    schedule: Sequence[Step] = (),
    t0_ns: int | None = None,
    fairness_window: Window | None = None,
    response: ResponseSettings | None = None,
    bitrate_point: BitratePoint = "egress",
    direction: Direction = "dominant",
    delay_thresholds_ms: Sequence[float] = DEFAULT_DELAY_THRESHOLDS_MS,
    labels: Mapping[str, str | int | float] | None = None,
) -> RunFacts:
    return RunFacts(
        capacity=capacity,
        window=window,
        rules=tuple(rules),
        bin_s=bin_s,
        schedule=tuple(schedule),
        t0_ns=t0_ns,
        fairness_window=fairness_window,
        response=response or ResponseSettings(),
        bitrate_point=bitrate_point,
        direction=direction,
        delay_thresholds_ms=tuple(delay_thresholds_ms),
        labels=dict(labels or {}),
        source="flags",
    )
