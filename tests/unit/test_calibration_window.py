"""Calibration's saturation window (testbed.dataplane.calibration.window_figures) on
guest-like input.

The vm testbed's guest under TCG runs in bursts when its host is loaded: the whole guest
stops for seconds, and its clock, which keeps the host's time, jumps when it resumes. A
flow timed by iperf3's own duration could then end before the controller's window opened
(reproduced by stopping QEMU for 10 s: the flow's packets ran from -0.24 s to +10.81 s of
the moment it was seen, the window opened at +11.26 s) and the window read 0 Mbit/s, which
the run reported as a shaper delivering 0 % of its rate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cganalysis.testbed.dataplane.calibration import CounterWindow, window_figures

S = 1_000_000_000
WIRE = 1442  # a 1400-byte UDP datagram on Ethernet
T0 = 1_795_503_160_000_000_000  # the guest's realtime clock, ns since the epoch


def _shaped(
    start_s: float, end_s: float, mbps: float, stalls: list[tuple[float, float]]
) -> np.ndarray:
    """Departure times of a backlogged shaper at ``mbps``, silent during ``stalls``."""
    gap_s = WIRE * 8 / (mbps * 1e6)
    t = np.arange(start_s, end_s, gap_s)
    for a, b in stalls:
        t = t[(t < a) | (t >= b)]
    return (T0 + t * S).astype(np.int64)


def _window(times: np.ndarray, start_s: float, end_s: float) -> CounterWindow:
    """A window whose qdisc counter agrees with the departures it holds."""
    a, b = T0 + int(start_s * S), T0 + int(end_s * S)
    before = int((times < a).sum()) * WIRE
    upto = int((times < b).sum()) * WIRE
    return CounterWindow(a, b, 1_000_000 + before, 1_000_000 + upto)


def _figures(
    times: np.ndarray, w: CounterWindow, control: np.ndarray | None = None
) -> dict[str, Any]:
    ctl = np.array([], dtype=np.int64) if control is None else control
    t = np.concatenate([times, ctl])
    lens = np.full(t.size, WIRE, dtype=np.int64)
    lens[times.size :] = 66
    in_flow = np.arange(t.size) < times.size
    return window_figures(t, lens, in_flow, w)


def test_a_flow_covering_the_window_gives_the_shaper_rate() -> None:
    times = _shaped(-0.2, 6.0, 8.0, [])
    fig = _figures(times, _window(times, 1.4, 3.6))
    assert fig["problem"] is None
    assert abs(fig["delivered_capture_mbps"] - 8.0) < 0.02, fig
    assert abs(fig["delivered_qdisc_mbps"] - 8.0) < 0.02, fig
    assert fig["max_gap_ms"] < 2.0, fig  # one packet time, 1.44 ms


def test_a_window_after_the_flow_ended_is_not_a_zero_rate_shaper() -> None:
    # The reproduced stall: the flow seen at 0, the guest stopped from +0.3 to +10.3 s,
    # iperf3's 9-second duration over by +10.81 s, the window at +11.26 to +13.38 s.
    times = _shaped(-0.24, 10.81, 8.0, [(0.3, 10.3)])
    # iperf3's control connection exchanges results after the flow: no cover for it.
    control = (T0 + np.array([10.9, 11.0, 14.0]) * S).astype(np.int64)
    fig = _figures(times, _window(times, 11.26, 13.38), control)
    assert fig["delivered_capture_mbps"] < 0.1 and fig["delivered_qdisc_mbps"] == 0.0
    assert fig["problem"] is not None and "did not cover the window" in fig["problem"]
    # Its last packet 0.45 s before the window opened (+10.81 s against +11.26 s).
    assert "to -0.45 s" in fig["problem"], fig["problem"]


def test_a_window_before_the_flow_started_is_not_covered() -> None:
    times = _shaped(4.0, 9.0, 8.0, [])
    fig = _figures(times, _window(times, 1.0, 3.0))
    assert fig["problem"] is not None and "span +3.00 s to +8.00 s" in fig["problem"], fig


def test_a_stall_inside_the_window_shows_as_its_longest_silence() -> None:
    # Covered, so a measurement: the shaper did not send while the guest was stopped,
    # and the figures say how long that was.
    times = _shaped(-0.2, 6.0, 8.0, [(2.0, 3.0)])
    fig = _figures(times, _window(times, 1.4, 3.6))
    assert fig["problem"] is None
    assert 999 < fig["max_gap_ms"] < 1003, fig  # the stall plus up to two packet times
    assert abs(fig["delivered_capture_mbps"] - 8.0 * 1.2 / 2.2) < 0.05, fig


def test_no_flow_packet_at_all() -> None:
    control = (T0 + np.array([0.5, 5.0]) * S).astype(np.int64)
    w = CounterWindow(T0 + S, T0 + 3 * S, 5000, 5000)
    fig = _figures(np.array([], dtype=np.int64), w, control)
    assert fig["problem"] == "the egress capture holds none of the calibration flow's packets"
    assert fig["capture_packets"] == 0 and fig["max_gap_ms"] == 2000.0


def test_a_clock_that_went_backwards_is_a_problem_not_a_crash() -> None:
    times = _shaped(0.0, 5.0, 8.0, [])
    w = CounterWindow(T0 + 3 * S, T0 + 2 * S, 0, 0)
    fig = _figures(times, w)
    assert fig["problem"] is not None and "backwards" in fig["problem"]
