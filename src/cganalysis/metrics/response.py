"""Response and recovery times (Xu & Claypool section 4.2), for any competitor schedule.

The paper: "we calculate the mean original bitrate before the TCP flow arrives (from 125s to
185s) and the mean bitrate for one minute when the game system stabilizes, having adjusted to
the TCP flow (from 310s to 370s). Response time is the number of seconds it takes the game
system from time 185s until the average bitrate is within one standard deviation of the
adjusted bitrate. Similarly, recovery time is the number of seconds it takes the game system
from time 370s until the bitrate is within one standard deviation of the original bitrate."

Generalised: every change of the competitor's scheduled rate is an event.
- ``arrival`` (off -> on) and ``step`` (on -> another rate): the target is the mean and
  standard deviation of the last ``settle_s`` seconds before the next event (the level the
  CG flow settled at); the baseline is the ``before_s`` seconds before the event.
- ``departure`` (on -> off): the target is the level before the last arrival (the original
  bitrate), as in the paper.
The time is from the event to the start of the first bin whose rate is within one target
standard deviation of the target mean, searched until the next event (or the end of the
data). Not reached in that span: ``never`` (the black cells of Xu Fig. 4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from cganalysis.metrics.bitrate import smooth
from cganalysis.metrics.steps import ResponseSettings, Step

EventKind = Literal["arrival", "step", "departure"]
Status = Literal["reached", "never", "not_applicable"]


@dataclass(frozen=True)
class Event:
    t_s: float
    kind: EventKind
    rate_before_mbps: float | None  # None: unlimited
    rate_after_mbps: float | None


@dataclass(frozen=True)
class Level:
    mean_mbps: float
    std_mbps: float
    start_s: float
    end_s: float


@dataclass(frozen=True)
class Adaptation:
    event: Event
    baseline: Level | None
    target: Level | None
    time_s: float | None
    status: Status
    note: str = ""


def events_from_schedule(schedule: Sequence[Step]) -> list[Event]:
    """Rate changes of the schedule; the competitor is off before its first step."""
    events: list[Event] = []
    on = False
    rate: float | None = 0.0
    for step in schedule:
        if step.on == on and (not on or step.rate_mbps == rate):
            continue  # restates the current rate: not an event
        kind: EventKind = "arrival" if step.on and not on else "step" if step.on else "departure"
        after = step.rate_mbps if step.on else 0.0
        events.append(Event(step.t_s, kind, rate, after))
        on, rate = step.on, after
    return events


def _level(
    t_s: np.ndarray, rates: np.ndarray, start: float, end: float, bin_s: float
) -> Level | None:
    """Mean and std (ddof = 0) of the whole bins inside ``[start, end)``."""
    inside = (t_s >= start - 1e-9) & (t_s + bin_s <= end + 1e-9)
    if not inside.any():
        return None
    sel = rates[inside]
    return Level(float(sel.mean()), float(sel.std()), start, end)


def adaptation_times(
    t_s: np.ndarray,
    rates_mbps: np.ndarray,
    events: Sequence[Event],
    *,
    bin_s: float,
    data_end_s: float,
    settings: ResponseSettings | None = None,
) -> list[Adaptation]:
    """One :class:`Adaptation` per event, from a bitrate series (bin starts and rates)."""
    settings = settings or ResponseSettings()
    t_s = np.asarray(t_s, dtype=np.float64)
    rates = smooth(np.asarray(rates_mbps, dtype=np.float64), bin_s, settings.smooth_s)
    out: list[Adaptation] = []
    last_arrival: Event | None = None
    for i, ev in enumerate(events):
        t_next = events[i + 1].t_s if i + 1 < len(events) else data_end_s
        baseline = _level(t_s, rates, ev.t_s - settings.before_s, ev.t_s, bin_s)
        if ev.kind == "departure":
            target = (
                None
                if last_arrival is None
                else _level(
                    t_s, rates, last_arrival.t_s - settings.before_s, last_arrival.t_s, bin_s
                )
            )
            why = "no bitrate before the competitor arrived"
        else:
            target = _level(t_s, rates, max(ev.t_s, t_next - settings.settle_s), t_next, bin_s)
            why = "no whole bin between this event and the next"
        if ev.kind == "arrival":
            last_arrival = ev
        if target is None or t_next <= ev.t_s:
            out.append(Adaptation(ev, baseline, None, None, "not_applicable", why))
            continue
        search = (t_s >= ev.t_s - 1e-9) & (t_s + bin_s <= t_next + 1e-9)
        within = search & (np.abs(rates - target.mean_mbps) <= target.std_mbps + 1e-12)
        hits = np.flatnonzero(within)
        if hits.size == 0:
            out.append(Adaptation(ev, baseline, target, None, "never"))
        else:
            out.append(Adaptation(ev, baseline, target, float(t_s[hits[0]] - ev.t_s), "reached"))
    return out


def first_of(adaptations: Sequence[Adaptation], kind: EventKind) -> Adaptation | None:
    return next((a for a in adaptations if a.event.kind == kind), None)
