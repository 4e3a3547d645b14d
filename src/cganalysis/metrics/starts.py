"""Did each flow start when the testbed started it? A check of every run with a schedule.

The runner starts the CG sender at the schedule's CG start and one iperf3 client per step of
the competing flow (experiment/session.py, experiment/competitor.py), and records when in
meta.json's ``schedule_detail``. A process that a loaded host keeps from starting (the
rtp-cbr sender's ``python3`` took over 30 s in a guest under TCG) leaves a run whose
captures miss the flow, or hold it late, with nothing else wrong: the metrics would
silently describe a different experiment. Each flow's first packet at the ingress tap is
compared with its scheduled start; a flow later than :data:`START_TOLERANCE_S`, or absent,
becomes one sentence in the metrics document's ``flags`` (docs/metrics.md, "Flow starts").

The check lives here rather than in the runner because the metrics see every run, those
recorded before it existed included, and the run's files stay as they were written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import polars as pl

from cganalysis.jsonrecord import Json, absent, optional

if TYPE_CHECKING:
    from cganalysis.metrics.timebase import Prepared

#: How long a flow's first packet at the ingress tap may trail its scheduled start, s.
#: Start-ups measured here: iperf3 6 ms and the rtp-cbr sender (python3) 57 ms from the
#: schedule to the first packet (tests/fixtures/dualpoint), `cganalysis cg send` ~0.25 s to
#: import (interpreter and polars; host at load 2.4, nice 19). Python runs 10-20x slower in
#: a guest under TCG (docs/testbed.md): rtp-cbr ~1 s there, inside the tolerance; cga-cg's
#: sender (seconds there) is flagged, rightly. The failure it is for is tens of seconds;
#: a start within 2 s costs at most four 0.5-s bins.
START_TOLERANCE_S = 2.0

NS_PER_S = 1e9


@dataclass(frozen=True)
class PlannedStart:
    """A flow the testbed started: its role, its name in a flag, and when (s from t0)."""

    role: str
    name: str
    t_s: float
    #: A first packet from here on belongs to the next step (or the flow was stopped).
    until_s: float | None = None
    until_what: str = "the next step"


def _rate(rate: float | None) -> str:
    return "bulk" if rate is None else f"{rate:g} Mbit/s"


def planned_starts(
    detail: Mapping[str, Any], schedule: Sequence[Mapping[str, Any]] = ()
) -> tuple[PlannedStart, ...]:
    """The starts in meta.json's ``schedule_detail`` (the runner's): the CG flow at
    ``cg_start_s``, and one iperf3 connection per step of the competitor that is on (as
    ``Schedule.phases``, numbered as the runner's ``iperf3-stepNN`` files). None without
    ``cg_start_s``: not a schedule the runner played."""
    if "cg_start_s" not in detail:
        return ()
    steps = list(detail.get("steps") or schedule)
    stop = detail.get("cg_stop_s")
    out = [
        PlannedStart(
            "cg",
            "CG flow",
            float(detail["cg_start_s"]),
            None if stop is None else float(stop),
            "its scheduled stop",
        )
    ]
    duration = detail.get("duration_s")
    comp: list[tuple[float, float | None, float | None]] = []
    for i, step in enumerate(steps):
        t, rate = float(step["t_s"]), step["rate_mbps"]
        nxt = float(steps[i + 1]["t_s"]) if i + 1 < len(steps) else None
        end = nxt if nxt is not None else duration
        if (rate is None or rate > 0) and (end is None or end > t):
            comp.append((t, nxt, rate))
    out += [
        PlannedStart(
            "competitor",
            f"competing TCP flow, step {k + 1} of {len(comp)} ({_rate(rate)})",
            t,
            nxt,
        )
        for k, (t, nxt, rate) in enumerate(comp)
    ]
    return tuple(out)


@dataclass(frozen=True, kw_only=True)
class FlowStart:
    """A flow the testbed started, against its first packet at the ingress tap."""

    role: str
    name: str | None = absent("may be absent: the tables do not read it")
    scheduled_s: float
    first_packet_s: float | None
    late_s: float | None = optional("may be absent: the tables do not read it")
    allowed_s: Annotated[float, Json({"minimum": 0})]
    ok: bool


@dataclass(frozen=True)
class StartCheck:
    """One planned start against the first packet seen for it (None: none seen)."""

    planned: PlannedStart
    first_s: float | None
    allowed_s: float

    @property
    def late_s(self) -> float | None:
        return None if self.first_s is None else self.first_s - self.planned.t_s

    @property
    def ok(self) -> bool:
        late = self.late_s
        return late is not None and late <= self.allowed_s

    def flag(self) -> str | None:
        """The sentence for the run's flags, or None when the flow started on time."""
        p, late = self.planned, self.late_s
        if late is None:
            span = (
                f"from its scheduled start at {p.t_s:.1f} s on"
                if p.until_s is None
                else f"between its scheduled start at {p.t_s:.1f} s and {p.until_what} at "
                f"{p.until_s:.1f} s"
            )
            return f"{p.name}: no packet at the ingress tap {span}"
        if late > self.allowed_s:
            return (
                f"{p.name}: first packet at the ingress tap {late:.1f} s after its scheduled "
                f"start at {p.t_s:.1f} s (allowed: {self.allowed_s:g} s)"
            )
        return None

    def record(self) -> FlowStart:
        """The check as the metrics document's ``flow_starts`` hold it."""
        late = self.late_s
        return FlowStart(
            role=self.planned.role,
            name=self.planned.name,
            scheduled_s=self.planned.t_s,
            first_packet_s=self.first_s,
            late_s=None if late is None else round(late, 6),
            allowed_s=self.allowed_s,
            ok=self.ok,
        )


def check_starts(
    planned: Sequence[PlannedStart],
    flow_starts: Mapping[str, Sequence[float]],
    tolerance_s: float = START_TOLERANCE_S,
) -> list[StartCheck]:
    """Each planned start against the flows of its role (their first ingress times, s
    from t0): its flow is the earliest that began between ``tolerance_s`` before the
    start (clocks of two hosts) and the next step. A new connection per step is what the
    runner makes, so a step's flow is told apart from its predecessor's by starting anew."""
    out = []
    for p in planned:
        seen = [
            t
            for t in flow_starts.get(p.role, ())
            if t >= p.t_s - tolerance_s and (p.until_s is None or t < p.until_s)
        ]
        out.append(StartCheck(p, min(seen) if seen else None, tolerance_s))
    return out


def flow_starts(packets: pl.DataFrame) -> dict[str, list[float]]:
    """Per role, the first ingress time of each of its flows (s from t0), from the metrics'
    prepared packets (columns ``role``, ``flow_id``, ``t_in_ns``)."""
    firsts = packets.group_by("role", "flow_id").agg(pl.col("t_in_ns").min()).sort("t_in_ns")
    out: dict[str, list[float]] = {}
    for role, t_ns in firsts.select("role", "t_in_ns").iter_rows():
        out.setdefault(str(role), []).append(t_ns / NS_PER_S)
    return out


def start_checks(prepared: Prepared, planned: Sequence[PlannedStart]) -> list[StartCheck]:
    """The run's checks; none when its time origin is not the runner's (the first packet's
    instead: then the scheduled times mean nothing against the captures)."""
    if not planned or prepared.t0_source != "meta":
        return []
    return check_starts(planned, flow_starts(prepared.packets))


def start_flags(checks: Sequence[StartCheck]) -> list[str]:
    return [f for c in checks if (f := c.flag()) is not None]
