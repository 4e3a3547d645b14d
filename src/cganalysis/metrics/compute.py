"""One run's metrics, as the typed record :class:`~.document.MetricsDocument`; ``cganalysis
metrics`` writes it as JSON (:func:`run_metrics`).

The document's layout is described in docs/metrics.md and its records in :mod:`.document`
(the JSON schema is derived from them). Percentages are in [0, 100], rates and utilisations
are ratios in [0, 1] (the fairness ratio in [-1, 1]); ``None`` (``null``) marks a value that
does not apply (no competing flow, no delivered packet, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from cganalysis.errors import ConfigError
from cganalysis.jsonrecord import to_json
from cganalysis.metrics.bitrate import bitrate_series, n_bins
from cganalysis.metrics.capacity import LinkCapacity
from cganalysis.metrics.document import (
    SCHEMA_VERSION,
    BitrateLevel,
    CapacityUsed,
    EventOutcome,
    ExcludedReverse,
    Fairness,
    Inputs,
    MetricsDocument,
    Phase,
    Phases,
    ScheduleSource,
)
from cganalysis.metrics.fairness import jain_index, xu_fairness_ratio
from cganalysis.metrics.response import (
    Adaptation,
    Level,
    adaptation_times,
    events_from_schedule,
    first_of,
)
from cganalysis.metrics.roles import OTHER
from cganalysis.metrics.rolestats import CG, COMPETITOR, MAIN_ROLES, roles_block
from cganalysis.metrics.runfacts import BitratePoint, RunFacts, Window
from cganalysis.metrics.starts import start_checks, start_flags
from cganalysis.metrics.steps import Step
from cganalysis.metrics.timebase import NS_PER_S, Prepared, Resolved, prepare, resolve_window


def link_capacity(facts: RunFacts, trace_ms: np.ndarray | None) -> LinkCapacity:
    cap = facts.capacity
    if cap.source == "trace":
        if trace_ms is None:
            raise ConfigError(
                f"capacity trace {cap.trace}: not loaded (read it with io.read_trace)"
            )
        return LinkCapacity(
            trace_ms=trace_ms,
            offset_s=cap.trace_offset_s,
            scale=cap.trace_scale,
            bytes_per_opportunity=cap.trace_bytes_per_opportunity,
        )
    return LinkCapacity(constant_mbps=cap.mbps)


def whole_bins(window: Resolved, bin_s: float, name: str) -> Resolved:
    """The window shortened to a whole number of bins (see bitrate.py)."""
    n = n_bins(window.start_s, window.end_s, bin_s)
    if n == 0:
        raise ConfigError(
            f"{name} {window.requested}: shorter than one bin ({bin_s:g} s) once clipped to the "
            "data; give a longer window or a smaller --bin-s"
        )
    return Resolved(window.start_s, window.start_s + n * bin_s, window.requested, window.warnings)


def on_intervals(schedule: Sequence[Step], end_s: float) -> list[tuple[float, float]]:
    """The spans during which the competitor is scheduled on."""
    spans: list[tuple[float, float]] = []
    start: float | None = None
    for step in schedule:
        if step.on and start is None:
            start = step.t_s
        elif not step.on and start is not None:
            spans.append((start, step.t_s))
            start = None
    if start is not None and start < end_s:
        spans.append((start, end_s))
    return spans


def infer_schedule(prepared: Prepared, bin_s: float) -> tuple[Step, ...]:
    """On at the competitor's first packet, off at its last unless that is the data's end.

    For captures without a testbed schedule (a commercial CG service and a download started
    by hand): Xu's response and recovery still apply, timed from the traffic itself.
    """
    comp = prepared.role(COMPETITOR)
    if comp.height == 0:
        return ()
    first = comp.get_column("t_in_ns").min()
    last = comp.get_column("t_in_ns").max()
    assert isinstance(first, int) and isinstance(last, int)
    steps = [Step(first / NS_PER_S, None)]
    if prepared.data_end_s - last / NS_PER_S > 2 * bin_s:
        steps.append(Step(last / NS_PER_S, 0.0))
    return tuple(steps)


def _level(level: Level | None) -> BitrateLevel | None:
    if level is None:
        return None
    return BitrateLevel(level.mean_mbps, level.std_mbps, level.start_s, level.end_s)


def _adaptation(a: Adaptation) -> EventOutcome:
    return EventOutcome(
        t_s=a.event.t_s,
        kind=a.event.kind,
        rate_before_mbps=a.event.rate_before_mbps,
        rate_after_mbps=a.event.rate_after_mbps,
        baseline=_level(a.baseline),
        target=_level(a.target),
        time_s=a.time_s,
        status=a.status,
        note=a.note,
    )


def fairness_block(
    prepared: Prepared,
    *,
    facts: RunFacts,
    window: Resolved,
    point: BitratePoint,
    capacity: LinkCapacity,
    spans: Sequence[tuple[float, float]],
    warnings: list[str],
) -> Fairness | None:
    """Xu's ratio and Jain's index over the competition bins, or None when not applicable."""
    if prepared.role(COMPETITOR).height == 0:
        return None
    if facts.fairness_window is not None:
        fw = whole_bins(
            resolve_window(facts.fairness_window, prepared, "fairness window", facts.bin_s),
            facts.bin_s,
            "fairness window",
        )
        start, end, mask_spans = fw.start_s, fw.end_s, [(fw.start_s, fw.end_s)]
        warnings.extend(fw.warnings)
    else:
        start, end, mask_spans = window.start_s, window.end_s, list(spans)
    series = bitrate_series(
        prepared.packets,
        start_s=start,
        end_s=end,
        bin_s=facts.bin_s,
        point=point,
        keys=list(MAIN_ROLES),
    )
    cap = capacity.series(start, end, facts.bin_s)
    t = cap.get_column("t_s").to_numpy()
    inside = np.zeros(t.size, dtype=bool)
    for a, b in mask_spans:
        inside |= (t >= a - 1e-9) & (t + facts.bin_s <= b + 1e-9)
    if not inside.any():
        warnings.append("fairness: the competitor is never on inside the analysis window")
        return None
    means = {}
    for role in MAIN_ROLES:
        r = series.filter(pl.col("role") == role).sort("t_s").get_column("rate_mbps").to_numpy()
        means[role] = float(r[inside].mean())
    cap_mbps = float(cap.get_column("capacity_mbps").to_numpy()[inside].mean())
    return Fairness(
        bins=int(inside.sum()),
        from_s=float(t[inside].min()),
        to_s=float(t[inside].max() + facts.bin_s),
        cg_mean_mbps=means[CG],
        competitor_mean_mbps=means[COMPETITOR],
        capacity_mbps=cap_mbps,
        fairness_ratio=xu_fairness_ratio(means[CG], means[COMPETITOR], cap_mbps)
        if cap_mbps > 0
        else None,
        jain_index=jain_index([means[CG], means[COMPETITOR]]),
    )


def phases_block(
    prepared: Prepared,
    *,
    facts: RunFacts,
    point: BitratePoint,
    capacity: LinkCapacity,
    spans: Sequence[tuple[float, float]],
    warnings: list[str],
) -> Phases:
    """Per-role stats without and with the competitor (Xu Tables 2-6)."""
    if not spans:
        return Phases()
    first_on, first_off = spans[0]
    wanted = {
        "before_competitor": (prepared.data_start_s, first_on),
        "with_competitor": (first_on, first_off),
    }
    out: dict[str, Phase] = {}
    for name, (a, b) in wanted.items():
        try:
            r = whole_bins(
                resolve_window(Window(a, b), prepared, name, facts.bin_s), facts.bin_s, name
            )
        except ConfigError as err:
            warnings.append(f"phase {name} skipped: {err}")
            continue
        out[name] = Phase((r.start_s, r.end_s), roles_block(prepared, r, facts, point, capacity))
    return Phases(**out)


def run_metrics(
    packets: pl.DataFrame,
    facts: RunFacts,
    *,
    trace_ms: np.ndarray | None = None,
    packets_path: str | None = None,
    prepared: Prepared | None = None,
) -> dict[str, Any]:
    """Every metric of one run, as the JSON document (:func:`metrics_record`'s)."""
    record = metrics_record(
        packets, facts, trace_ms=trace_ms, packets_path=packets_path, prepared=prepared
    )
    document: dict[str, Any] = to_json(record)
    return document


def metrics_record(
    packets: pl.DataFrame,
    facts: RunFacts,
    *,
    trace_ms: np.ndarray | None = None,
    packets_path: str | None = None,
    prepared: Prepared | None = None,
) -> MetricsDocument:
    """Every metric of one run. ``prepared``: ``prepare(packets, facts)`` when the caller
    has it already (the time series reads it too)."""
    if prepared is None:
        prepared = prepare(packets, facts)
    capacity = link_capacity(facts, trace_ms)
    warnings: list[str] = []
    single = prepared.mode == "single"
    point: BitratePoint = facts.bitrate_point
    if single and point == "egress":
        point = "ingress"
        warnings.append("single capture (no egress times): bitrates are measured at ingress")
    window = whole_bins(
        resolve_window(facts.window, prepared, tolerance_s=facts.bin_s), facts.bin_s, "--window"
    )
    warnings.extend(window.warnings)

    schedule = facts.schedule
    schedule_source: ScheduleSource = "meta" if facts.source != "flags" else "flags"
    if not schedule:
        schedule = infer_schedule(prepared, facts.bin_s)
        schedule_source = "inferred" if schedule else "none"
    spans = on_intervals(schedule, prepared.data_end_s)

    roles = roles_block(prepared, window, facts, point, capacity)
    warnings.extend(
        f"role {role}: no packet in the analysis window matched its rules"
        for role in MAIN_ROLES
        if roles[role]["packets"] == 0
    )
    total = sum(v["utilisation"] or 0.0 for v in roles.values())
    if total > 1.02:
        warnings.append(
            f"total utilisation {total:.3f} > 1: the capacity used "
            f"({capacity.mean_mbps(window.start_s, window.end_s):.3g} Mbit/s) is below what "
            "the link delivered; check capacity_mbps or the measured capacity"
        )

    fairness = fairness_block(
        prepared,
        facts=facts,
        window=window,
        point=point,
        capacity=capacity,
        spans=spans,
        warnings=warnings,
    )

    # Response and recovery look at the whole run: the phases before, during and after the
    # competing flow, not only the analysis window.
    events = events_from_schedule(schedule)
    adaptations: list[Adaptation] = []
    if events and prepared.role(COMPETITOR).height > 0:
        t_first = np.floor(min(prepared.data_start_s, 0.0) / facts.bin_s) * facts.bin_s
        cg = bitrate_series(
            prepared.role(CG),
            start_s=float(t_first),
            end_s=prepared.data_end_s,
            bin_s=facts.bin_s,
            point=point,
            keys=[CG],
        ).filter(pl.col("role") == CG)
        adaptations = adaptation_times(
            cg.get_column("t_s").to_numpy(),
            cg.get_column("rate_mbps").to_numpy(),
            events,
            bin_s=facts.bin_s,
            data_end_s=prepared.data_end_s,
            settings=facts.response,
        )
    response = first_of(adaptations, "arrival")
    recovery = first_of(adaptations, "departure")

    starts = start_checks(prepared, facts.planned_starts)
    cap = facts.capacity
    excluded = prepared.excluded
    inputs = Inputs(
        packets=packets_path,
        spec_source=facts.source,
        mode=prepared.mode,
        t0_ns=prepared.t0_ns,
        t0_source=prepared.t0_source,
        data_span_s=(prepared.data_start_s, prepared.data_end_s),
        capacity=CapacityUsed(
            source=cap.source,
            mbps=capacity.mean_mbps(window.start_s, window.end_s),
            configured_mbps=cap.configured_mbps,
            measured_mbps=cap.measured_mbps,
            trace=None if cap.trace is None else str(cap.trace),
            trace_scale=cap.trace_scale if cap.trace else None,
            trace_offset_s=cap.trace_offset_s if cap.trace else None,
        ),
        window_s=(facts.window.start_s, facts.window.end_s),
        window_effective_s=(window.start_s, window.end_s),
        bin_s=facts.bin_s,
        bitrate_point=point,
        direction=facts.direction,
        rules=[str(r) for r in facts.rules] + [f"{OTHER}=(unmatched)"],
        schedule=list(schedule),
        schedule_source=schedule_source,
        fairness_window_s=None
        if facts.fairness_window is None
        else (facts.fairness_window.start_s, facts.fairness_window.end_s),
        response=facts.response,
        delay_thresholds_ms=list(facts.delay_thresholds_ms),
        excluded_reverse=ExcludedReverse(
            flows=excluded.height,
            packets=int(excluded.get_column("packets").sum()) if excluded.height else 0,
            bytes=int(excluded.get_column("bytes").sum()) if excluded.height else 0,
        ),
    )
    return MetricsDocument(
        schema_version=SCHEMA_VERSION,
        run=dict(facts.labels),
        inputs=inputs,
        roles=roles,
        utilisation_total=total,
        fairness_ratio=None if fairness is None else fairness.fairness_ratio,
        jain_index=None if fairness is None else fairness.jain_index,
        fairness=fairness,
        response_time_s=None if response is None else response.time_s,
        response_status="not_applicable" if response is None else response.status,
        recovery_time_s=None if recovery is None else recovery.time_s,
        recovery_status="not_applicable" if recovery is None else recovery.status,
        events=[_adaptation(a) for a in adaptations],
        phases=phases_block(
            prepared, facts=facts, point=point, capacity=capacity, spans=spans, warnings=warnings
        ),
        warnings=warnings,
        flow_starts=[c.record() for c in starts],
        # The run's own flags, then the metrics' (a flow that did not start on time).
        flags=[*facts.run_flags, *start_flags(starts)],
    )
