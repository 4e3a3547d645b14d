"""Calibration: what the bottleneck really delivers, and the testbed's idle delay floor.

A configured rate is not a delivered rate on every machine (docs/testbed.md,
Calibration: HTB at 20 Mbit/s gave 10-12 Mbit/s here). So before traffic:

1. idle floor: a light ping stream (100 packets/s) through the idle router, captured at
   both taps and matched: the time through an empty router (forwarding + capture cost);
2. saturation: UDP offered at ``offered_factor`` x the configured rate for
   ``saturation_s``; the delivered rate is read from the qdisc's own byte counter and
   from the egress capture, over the interval after the first second (the queue is full
   by then); the flow runs until that window has closed (the controller stops it), and a
   window the captured flow does not cover measured nothing (flagged as such);
3. a shaper that delivers less than ``min_ratio`` of its rate is replaced, when the
   configuration allows it (``on_low: replace``, a single-leaf HTB), by TBF with a burst of
   ~10 ms of traffic, and measured again; if it is still short, the run is flagged.

Rates are at layer 2 (Ethernet header included), as HTB and TBF count them. The figures
go into every run's metadata; the metrics use the measured capacity.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cganalysis.capture import read_capture
from cganalysis.matching import match_files
from cganalysis.testbed.dataplane.bottleneck import AnyBottleneck, KernelBottleneck
from cganalysis.testbed.measure.capture import Tap, start_tap, stop_taps
from cganalysis.testbed.shared.hosts import TIMEOUT_SCALE_ENV, Host, TestbedError, stop
from cganalysis.testbed.shared.topology import Topology
from cganalysis.testbed.spec.config import Calibration, CaptureConfig
from cganalysis.testbed.spec.qdisc import Htb, HtbClass

CALIBRATION_PORT = 5299
#: Seconds iperf3's own duration exceeds the longest the window can need (a safety bound:
#: the controller stops the flow once the window has closed).
FLOW_BOUND_SLACK_S = 30


def _fetch_taps(host: Host, taps: list[Tap], local_dir: Path) -> dict[str, Path]:
    out = {}
    for tap in taps:
        name = Path(tap.path).name
        host.fetch(tap.path, local_dir / name)
        host.fetch(tap.log, local_dir / (name + ".log"))
        out[tap.point] = local_dir / name
    return out


def wait_listening(host: Host, port: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        out = host.run(["ss", "-ltnH"], check=False).stdout
        if any(line.split()[3].endswith(f":{port}") for line in out.splitlines() if line.split()):
            return
        time.sleep(0.05)
    raise TestbedError(f"on {host.name}: nothing listens on port {port} after {timeout_s} s")


def idle_floor(
    topo: Topology, cap: CaptureConfig, cal: Calibration, local_dir: Path
) -> dict[str, Any]:
    """Median/p99 time through the idle router, from the two captures, matched."""

    r = topo.taps
    taps = [
        start_tap(r, cap, "ingress", topo.router_in, "in", None, prefix="calibration-idle-"),
        start_tap(r, cap, "egress", topo.router_out, "out", None, prefix="calibration-idle-"),
    ]
    try:
        count = max(10, round(cal.idle_s * 100))
        topo.server.run(
            ["ping", "-q", "-c", str(count), "-i", "0.01", "-s", "100", "-W", "1", topo.client_ip],
            check=False,
            timeout_s=cal.idle_s + 15,
        )
        time.sleep(0.2)
    finally:
        stop_taps(r, taps)
    files = _fetch_taps(r, taps, local_dir)
    m = match_files(files["ingress"], files["egress"])
    delays = m.packets.filter(~m.packets["lost"])["delay_ms"].drop_nulls().to_numpy()
    if delays.size == 0:
        return {"packets": 0, "note": "no packet crossed the idle router"}
    return {
        "packets": int(delays.size),
        "median_ms": round(float(np.median(delays)), 6),
        "p99_ms": round(float(np.quantile(delays, 0.99)), 6),
        "max_ms": round(float(delays.max()), 6),
    }


def saturate(
    topo: Topology,
    bn: AnyBottleneck,
    cap: CaptureConfig,
    cal: Calibration,
    rate_mbit: float,
    local_dir: Path,
    label: str,
) -> dict[str, Any]:
    """Delivered rate (Mbit/s at layer 2) under UDP offered above the configured rate."""

    r = topo.taps
    prefix = f"calibration-{label}-"
    tap = start_tap(r, cap, "egress", topo.router_out, "out", rate_mbit, prefix=prefix)
    server = topo.client.spawn(
        "iperf3 calibration server",
        ["iperf3", "-s", "-1", "-B", topo.client_ip, "-p", str(CALIBRATION_PORT)],
        stdout=None,
        stderr=None,
    )
    try:
        wait_listening(topo.client, CALIBRATION_PORT)
        offered = rate_mbit * cal.offered_factor
        seconds = max(2, round(cal.saturation_s))
        base = int(bn.counters().get("sent_bytes") or 0)
        start_timeout_s = float(os.environ.get(TIMEOUT_SCALE_ENV) or 1.0) * 10.0
        # The flow must outlast the window, and only the controller knows when the window
        # has closed: it stops the client then. A duration of iperf3's own (-t) runs on the
        # wall clock, and a guest stalled by its host (the vm testbed under TCG) or a late
        # controller saw the flow end before the window opened (0 Mbit/s measured); -t is
        # only a bound here, for a controller that dies.
        bound_s = math.ceil(seconds + start_timeout_s + FLOW_BOUND_SLACK_S)
        client = topo.server.spawn(
            "iperf3 calibration client",
            [
                "iperf3",
                "-c",
                topo.client_ip,
                "-p",
                str(CALIBRATION_PORT),
                "-u",
                "-b",
                f"{offered:g}M",
                "-l",
                "1400",
                "-t",
                str(bound_s),
            ],
            stdout=None,
            stderr=None,
        )
        try:
            flowing = _wait_flowing(bn, base, start_timeout_s)
            time.sleep(1.0)  # fill the queue before measuring
            c1, t1 = bn.counters(), time.time_ns()
            time.sleep(seconds - 1.2)
            c2, t2 = bn.counters(), time.time_ns()
            sending = client.returncode() is None
        finally:
            stop(client)
        time.sleep(0.3)
    finally:
        stop(server)
        stop_taps(r, [tap])
    files = _fetch_taps(r, [tap], local_dir)
    pk = read_capture(files["egress"]).packets.drop_nulls("t_ns")
    udp = (pk["proto"] == 17) & (pk["dport"] == CALIBRATION_PORT)
    fig = window_figures(
        pk["t_ns"].to_numpy(),
        pk["wire_len_bytes"].to_numpy(),
        udp.fill_null(False).to_numpy(),
        CounterWindow(t1, t2, int(c1.get("sent_bytes") or 0), int(c2.get("sent_bytes") or 0)),
    )
    problem = fig.pop("problem")
    if problem is None and not flowing:
        problem = f"the flow did not reach the qdisc within {start_timeout_s:g} s"
    if problem is None and not sending:
        problem = "iperf3 stopped sending before the window closed"
    return {
        "label": label,
        "offered_mbps": round(offered, 3),
        **fig,
        "qdisc_drops": int(c2.get("dropped") or 0) - int(c1.get("dropped") or 0),
        **({"problem": problem} if problem else {}),
    }


@dataclass(frozen=True)
class CounterWindow:
    """The measurement window on the router's clock, with the qdisc's byte counter at both
    ends (read just before ``start_ns`` / ``end_ns`` were taken)."""

    start_ns: int
    end_ns: int
    sent_bytes_start: int
    sent_bytes_end: int


def window_figures(
    t_ns: npt.NDArray[np.int64],
    wire_len: npt.NDArray[np.int64],
    in_flow: npt.NDArray[np.bool_],
    w: CounterWindow,
) -> dict[str, Any]:
    """Delivered rates over window ``w`` from the qdisc counter and from the egress
    capture's packets (times ``t_ns``, same clock as the window; ``in_flow`` marks the
    calibration flow's), the capture's longest silence inside the window (a guest stalled
    by its host shows here), and ``problem``: why the window measured nothing about the
    shaper (None when it did). The flow must cover the window: its packets captured before
    the window opens and after it closes (its queue is backlogged all along, so the shaper
    sends all along; iperf3's control connection, which outlives the flow, does not
    count)."""
    # A clock stepped backwards (none seen) would leave no window: a problem, not a crash.
    span_s = max(w.end_ns - w.start_ns, 1) / 1e9
    inside = (t_ns >= w.start_ns) & (t_ns < w.end_ns)
    cap_bits = int(wire_len[inside].sum()) * 8
    qdisc_bits = (w.sent_bytes_end - w.sent_bytes_start) * 8
    edges = np.concatenate(([w.start_ns], np.sort(t_ns[inside]), [w.end_ns]))
    flow = t_ns[in_flow]
    problem = None
    if w.end_ns <= w.start_ns:
        problem = f"the router's clock went backwards ({w.end_ns - w.start_ns} ns window)"
    elif flow.size == 0:
        problem = "the egress capture holds none of the calibration flow's packets"
    elif int(flow.min()) > w.start_ns or int(flow.max()) < w.end_ns:
        first, last = ((int(x) - w.start_ns) / 1e9 for x in (flow.min(), flow.max()))
        problem = (
            f"the flow did not cover the window: its packets span {first:+.2f} s to "
            f"{last:+.2f} s from the window's opening, which lasted {span_s:.2f} s"
        )
    return {
        "interval_s": round(span_s, 3),
        "delivered_qdisc_mbps": round(qdisc_bits / span_s / 1e6, 3),
        "delivered_capture_mbps": round(cap_bits / span_s / 1e6, 3),
        "capture_packets": int(inside.sum()),
        "max_gap_ms": round(float(np.diff(edges).max()) / 1e6, 3),
        "problem": problem,
    }


def _wait_flowing(bn: AnyBottleneck, base: int, timeout_s: float) -> bool:
    """Until the qdisc has sent ~10 packets more than ``base`` (True), or ``timeout_s``
    (False): iperf3 may take seconds to start sending (in the vm testbed's guest under
    TCG), and the window must not start before it does."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if int(bn.counters().get("sent_bytes") or 0) - base > 15000:
            return True
        time.sleep(0.05)
    return False


def calibrate(
    topo: Topology,
    bn: AnyBottleneck,
    cap: CaptureConfig,
    cal: Calibration,
    local_dir: Path,
    progress: Any = print,
) -> tuple[dict[str, Any], AnyBottleneck]:
    """Runs the calibration; returns its figures and the bottleneck to use (maybe TBF)."""
    local_dir.mkdir(parents=True, exist_ok=True)
    d = bn.forward
    out: dict[str, Any] = {
        "configured_mbps": d.rate_mbit,
        "min_ratio": cal.min_ratio,
        "attempts": [],
        "flags": [],
    }
    progress("calibration: idle delay floor")
    out["idle_delay_floor"] = idle_floor(topo, cap, cal, local_dir)
    if d.rate_mbit is None:
        out["note"] = "no rate configured (line rate): nothing to calibrate"
        return out, bn
    cls = d.qdisc.class_of("udp", CALIBRATION_PORT) if isinstance(d.qdisc, Htb) else None
    if cls is not None and cls.ceil_mbit < d.rate_mbit:
        # One flow can only fill its own class: the ratio checks the shaper against that
        # class's ceil; the link's rate stays the configured one (for utilisation).
        return _class_only(topo, bn, cap, cal, local_dir, cls, out, progress), bn
    attempt = _measure(topo, bn, cap, cal, local_dir, d.shaper, progress)
    out["attempts"].append(attempt)
    if "problem" in attempt:
        # Not a shaper that delivers 0 %: the window saw no traffic, which says nothing
        # about the shaper (and swapping it for TBF would not help).
        out.update(shaper=d.shaper, burst_bytes=d.burst_bytes)
        out["flags"].append(
            f"calibration measured nothing: {attempt['problem']}; metrics use the configured "
            f"{d.rate_mbit:g} Mbit/s"
        )
        return out, bn
    chosen = bn
    replaceable = (
        cal.on_low == "replace"
        and isinstance(bn, KernelBottleneck)
        and d.shaper == "htb"
        and not isinstance(d.qdisc, Htb)
    )
    if attempt["ratio"] < cal.min_ratio and replaceable:
        progress(f"calibration: htb delivered {attempt['ratio']:.0%} of its rate; trying tbf")
        tbf = bn.with_forward(replace(d, shaper="tbf"))
        bn.remove()
        tbf.apply()
        second = _measure(topo, tbf, cap, cal, local_dir, "tbf", progress)
        out["attempts"].append(second)
        if "problem" not in second and second["ratio"] > attempt["ratio"]:
            chosen, attempt = tbf, second
        else:
            tbf.remove()
            bn.apply()  # back to the configured shaper
    best = attempt
    out.update(
        shaper=chosen.forward.shaper,
        burst_bytes=chosen.forward.burst_bytes,
        delivered_qdisc_mbps=best["delivered_qdisc_mbps"],
        delivered_capture_mbps=best["delivered_capture_mbps"],
        capacity_measured_mbps=best["delivered_capture_mbps"] or best["delivered_qdisc_mbps"],
        ratio=best["ratio"],
    )
    if best["ratio"] < cal.min_ratio:
        out["flags"].append(
            f"shaper delivers {best['ratio']:.1%} of its configured {d.rate_mbit:g} Mbit/s "
            f"(< {cal.min_ratio:.0%}); metrics use the measured capacity"
        )
    return out, chosen


def _class_only(
    topo: Topology,
    bn: AnyBottleneck,
    cap: CaptureConfig,
    cal: Calibration,
    local_dir: Path,
    cls: HtbClass,
    out: dict[str, Any],
    progress: Any,
) -> dict[str, Any]:
    d = bn.forward
    label = f"htb class 1:{cls.classid}"
    attempt = _measure(topo, bn, cap, cal, local_dir, "htb", progress, cls.ceil_mbit)
    out["attempts"].append(attempt)
    out.update(
        shaper=d.shaper,
        burst_bytes=d.burst_bytes,
        measured_class=cls.classid,
        measured_class_ceil_mbps=cls.ceil_mbit,
        note=f"the calibration's flow fills {label} alone, whose ceil ({cls.ceil_mbit:g} "
        f"Mbit/s) is below the link's {d.rate_mbit:g}: the ratio is against that ceil; the "
        "metrics use the configured link rate",
    )
    if "problem" in attempt:
        out["flags"].append(f"calibration measured nothing: {attempt['problem']}")
        return out
    out.update(
        delivered_qdisc_mbps=attempt["delivered_qdisc_mbps"],
        delivered_capture_mbps=attempt["delivered_capture_mbps"],
        ratio=attempt["ratio"],
    )
    if attempt["ratio"] < cal.min_ratio:
        out["flags"].append(
            f"shaper delivers {attempt['ratio']:.1%} of {label}'s ceil {cls.ceil_mbit:g} "
            f"Mbit/s (< {cal.min_ratio:.0%})"
        )
    return out


def _measure(
    topo: Topology,
    bn: AnyBottleneck,
    cap: CaptureConfig,
    cal: Calibration,
    local_dir: Path,
    label: str,
    progress: Any,
    expected_mbit: float | None = None,
) -> dict[str, Any]:
    """``expected_mbit``: what the flow can get (default: the configured rate)."""
    rate = expected_mbit if expected_mbit is not None else bn.forward.rate_mbit
    assert rate is not None
    progress(f"calibration: saturating {label} at {rate * cal.offered_factor:g} Mbit/s")
    res = saturate(topo, bn, cap, cal, rate, local_dir, label)
    if "problem" in res:
        progress(f"calibration: {label}: no measurement: {res['problem']}")
        return res
    delivered = res["delivered_capture_mbps"] or res["delivered_qdisc_mbps"]
    res["ratio"] = round(delivered / rate, 4)
    progress(
        f"calibration: {label} delivered {res['delivered_capture_mbps']:.2f} Mbit/s on the wire "
        f"({res['delivered_qdisc_mbps']:.2f} by the qdisc counter) of {rate:g} configured"
    )
    return res
