"""Response and recovery times (Xu section 4.2) on hand-made bitrate series."""

from __future__ import annotations

import numpy as np
import pytest

from cganalysis.metrics.response import (
    Event,
    adaptation_times,
    events_from_schedule,
    first_of,
)
from cganalysis.metrics.steps import ResponseSettings, Step

BIN = 0.5


def test_events_of_the_xu_and_tma_schedules() -> None:
    xu = events_from_schedule([Step(185, None), Step(370, 0)])
    assert [(e.t_s, e.kind) for e in xu] == [(185, "arrival"), (370, "departure")]
    tma = events_from_schedule([Step(60, 10), Step(120, 20), Step(120.5, 20), Step(360, 0)])
    assert [e.kind for e in tma] == ["arrival", "step", "departure"]
    assert tma[1] == Event(120, "step", 10, 20)
    assert events_from_schedule([Step(0, 0)]) == []


def xu_series() -> tuple[np.ndarray, np.ndarray]:
    """30 Mbit/s until 185 s; down 1.5 Mbit/s per second to 15 +- 1; back up after 370 s."""
    t = np.arange(0, 540, BIN)
    r = np.full(t.size, 30.0)
    down = (t >= 185) & (t < 195)
    r[down] = 30.0 - 1.5 * (t[down] - 185)
    settled = (t >= 195) & (t < 370)
    r[settled] = np.where(np.arange(settled.sum()) % 2 == 0, 14.0, 16.0)
    up = (t >= 370) & (t < 400)
    r[up] = 15.0 + 0.5 * (t[up] - 370)
    return t, r


def test_response_and_recovery_by_hand() -> None:
    t, r = xu_series()
    events = events_from_schedule([Step(185, None), Step(370, 0)])
    out = adaptation_times(t, r, events, bin_s=BIN, data_end_s=540.0)
    response, recovery = first_of(out, "arrival"), first_of(out, "departure")
    assert response is not None and recovery is not None
    # Target 310-370 s: alternating 14/16, mean 15, std 1. 30 - 1.5 x <= 16 from x = 9.33 s:
    # the first bin at or after that starts at 194.5 s.
    assert response.target is not None
    assert (response.target.mean_mbps, response.target.std_mbps) == (15.0, 1.0)
    assert response.status == "reached" and response.time_s == pytest.approx(9.5)
    # Original level 125-185 s is exactly 30 with std 0: reached when the ramp hits 30, at 400 s.
    assert recovery.target is not None and recovery.target.mean_mbps == 30.0
    assert recovery.status == "reached" and recovery.time_s == pytest.approx(30.0)


def test_never_recovers() -> None:
    t, r = xu_series()
    r[t >= 370] = 15.0  # stays down after the competitor left
    events = events_from_schedule([Step(185, None), Step(370, 0)])
    recovery = first_of(adaptation_times(t, r, events, bin_s=BIN, data_end_s=540.0), "departure")
    assert recovery is not None
    assert (recovery.status, recovery.time_s) == ("never", None)


def test_no_reaction_needed_is_an_immediate_response() -> None:
    t = np.arange(0, 540, BIN)
    r = np.full(t.size, 20.0)
    events = events_from_schedule([Step(185, None), Step(370, 0)])
    out = adaptation_times(t, r, events, bin_s=BIN, data_end_s=540.0)
    assert [(a.status, a.time_s) for a in out] == [("reached", 0.0), ("reached", 0.0)]


def test_departure_without_arrival_or_data_is_not_applicable() -> None:
    t = np.arange(0, 100, BIN)
    r = np.full(t.size, 10.0)
    events = [Event(50, "departure", 10, 0)]
    (a,) = adaptation_times(t, r, events, bin_s=BIN, data_end_s=100.0)
    assert a.status == "not_applicable" and a.time_s is None
    # An arrival after the data ended has no target either.
    (b,) = adaptation_times(t, r, [Event(200, "arrival", 0, None)], bin_s=BIN, data_end_s=100.0)
    assert b.status == "not_applicable"


def test_smoothing_delays_a_noisy_crossing() -> None:
    t = np.arange(0, 200, BIN)
    r = np.full(t.size, 30.0)
    r[t >= 100] = 10.0
    r[(t >= 100) & (t < 120) & (np.arange(t.size) % 2 == 0)] = 30.0  # flapping for 20 s
    events = [Event(100, "arrival", 0, None)]
    raw = adaptation_times(t, r, events, bin_s=BIN, data_end_s=200.0)[0]
    smooth = adaptation_times(
        t, r, events, bin_s=BIN, data_end_s=200.0, settings=ResponseSettings(smooth_s=4.0)
    )[0]
    assert raw.time_s == 0.5
    assert smooth.time_s is not None and smooth.time_s > 10.0
