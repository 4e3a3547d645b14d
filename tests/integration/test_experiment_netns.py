"""End-to-end experiments in network namespaces (root): kernel HTB + pfifo, iperf3 Cubic and
BBR against the constant-bitrate RTP stand-in; and a run killed midway leaves nothing.

Each run: ~18 s of traffic (bulk TCP from 6 s to 14 s) plus set-up and a short calibration.
Assertions compare phases of the same run (measure, don't assume rates): the machine is
shared, so absolute rates and delays vary.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from cganalysis.matching import match_files
from cganalysis.metrics.runfacts import facts_from_meta
from tests.conftest import need_root, need_tool
from tests.integration.experiment_helpers import (
    TOOLS,
    assert_flows_started,
    cli,
    namespaces,
    popen,
    short_run,
    write,
)

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]

CG_PORT = 30002


def _median(df: pl.DataFrame) -> float:
    values = df["delay_ms"].drop_nulls().to_numpy()
    assert values.size > 20, "too few packets in the phase"
    return float(np.median(values))


@pytest.mark.parametrize("cca", ["cubic", "bbr"])
def test_cg_and_tcp_queue_when_tcp_saturates_and_not_before(tmp_path: Path, cca: str) -> None:
    need_root()
    need_tool(*TOOLS)
    cfg = write(short_run(f"test-{cca}", **{"competitor.cca": cca}), tmp_path / "run.yaml")
    out = tmp_path / f"test-htb-{cca}-r01"
    res = cli("experiment", cfg, "-o", out, "--campaign", "tests")
    assert res.returncode == 0, res.stderr
    for name in (
        "ingress.pcap",
        "egress.pcap",
        "ingress.pcap.log",
        "egress.pcap.log",
        "iperf3-step01.json",
        "cg-sender.json",
        "qdisc-stats.jsonl",
        "meta.json",
    ):
        assert (out / name).is_file(), name
    assert not list(tmp_path.glob(".*tmp-*")), "the temporary directory was left behind"

    meta = json.loads((out / "meta.json").read_text())
    facts = facts_from_meta(meta, out)  # what the metrics read is there and valid
    capacity = meta["capacity_measured_mbps"]
    assert facts.capacity.mbps == capacity and capacity > 1.0
    assert meta["checks"]["drops"]["ok"], meta["checks"]
    assert not [f for f in meta["flags"] if "not where configured" in f]
    assert meta["cca"] == cca and meta["roles"]["cg"] == f"udp:{CG_PORT}"
    iperf = json.loads((out / "iperf3-step01.json").read_text())
    assert iperf["start"]["test_start"]["protocol"] == "TCP"
    assert iperf["end"]["sender_tcp_congestion"] == cca

    m = match_files(out / "ingress.pcap", out / "egress.pcap")
    # Both captures hold the whole run: started before the traffic, stopped after the
    # queue drained and the capture tools handed over their last packets.
    assert m.summary.egress_only_packets == 0
    _assert_not_cut_off(m.packets)
    # The CG flow and the TCP flow are in the captures and started on schedule (a loaded
    # host can keep a sender from starting; the metrics flag such a run).
    assert_flows_started(meta, out, m.packets)
    p = m.packets.with_columns(((pl.col("t_ingress_ns") - meta["start_ns"]) / 1e9).alias("t_s"))
    cg = p.filter((pl.col("proto") == 17) & (pl.col("dport") == CG_PORT) & ~pl.col("lost"))
    tcp = p.filter((pl.col("proto") == 6) & (pl.col("size_bytes") > 1000) & ~pl.col("lost"))
    # Offloads off: every TCP packet the qdisc saw fits the veth's MTU (no super-packets).
    assert tcp["size_bytes"].max() <= 1514, tcp["size_bytes"].max()

    def phase(df: pl.DataFrame, lo: float, hi: float) -> pl.DataFrame:
        return df.filter((pl.col("t_s") >= lo) & (pl.col("t_s") < hi))

    before = _median(phase(cg, 0.5, 5.5))
    during_cg = _median(phase(cg, 9.0, 13.5))
    during_tcp = _median(phase(tcp, 9.0, 13.5))
    after = _median(phase(cg, 15.5, 17.5))
    # Idle: a packet crosses the router in microseconds (plus serialisation of the
    # stand-in's 3-packet frames at the shaper rate, ~1.5 ms per packet at 8 Mbit/s).
    threshold = max(5.0, 10 * before)
    assert before < 2.0, f"CG queued before TCP started: median {before:.2f} ms"
    assert during_cg > threshold, f"CG did not queue while TCP saturated ({during_cg:.2f} ms)"
    assert during_tcp > threshold, f"TCP did not queue while saturating ({during_tcp:.2f} ms)"
    assert after < 2.0, f"the queue did not drain after TCP stopped ({after:.2f} ms)"
    # TCP did saturate the link: it carried at least half the measured capacity.
    eg = phase(tcp, 9.0, 13.5)
    tcp_mbps = float(eg["size_bytes"].sum()) * 8 / 4.5 / 1e6
    assert tcp_mbps > 0.5 * capacity, (tcp_mbps, capacity)
    # The qdisc's own view agrees: empty before TCP, backlogged during.
    stats = [json.loads(x) for x in (out / "qdisc-stats.jsonl").read_text().splitlines()]
    t0 = meta["start_ns"]
    backlog = [(r["t_ns"] - t0) / 1e9 for r in stats if (r["backlog_packets"] or 0) > 5]
    assert backlog and min(backlog) > 5.5 and max(backlog) < 15.5


def test_kernel_offloads_bring_super_packets_to_the_qdisc(tmp_path: Path) -> None:
    """`offloads: kernel`: TCP reaches the router as TSO super-packets, both captures hold
    them as queued, and they match one to one."""
    need_root()
    need_tool(*TOOLS)
    cfg = write(short_run("test-offloads", offloads="kernel"), tmp_path / "run.yaml")
    out = tmp_path / "test-offloads-r01"
    res = cli("experiment", cfg, "-o", out, "--campaign", "tests")
    assert res.returncode == 0, res.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["config"]["offloads"] == "kernel"
    assert meta["testbed"]["offloads_kept_on"] == ["srv0", "rtr0", "rtr1", "cli0"]
    m = match_files(out / "ingress.pcap", out / "egress.pcap")
    assert m.summary.egress_only_packets == 0
    _assert_not_cut_off(m.packets)
    tcp = m.packets.filter(pl.col("proto") == 6)
    big = tcp.filter(pl.col("size_bytes") > 1514)
    assert big.height > 10, f"no super-packets: largest {tcp['size_bytes'].max()} bytes"
    assert int(big["size_bytes"].max()) <= 65535 + 14
    # A super-packet is one packet with one delay: those that left have one.
    assert big.filter(~pl.col("lost"))["delay_ms"].null_count() == 0


def _assert_not_cut_off(packets: pl.DataFrame) -> None:
    """No tap stopped before the last packets left: a packet dropped within the end guard
    (the largest delay measured: over a second with super-packets queued) has an unknown
    fate, not a lost one, but a packet that entered after it left, so the egress capture
    ran past it."""
    unknown = packets.filter(pl.col("lost").is_null())
    if unknown.height:
        last_unknown = unknown["t_ingress_ns"].max()
        left_later = packets.filter(
            (pl.col("lost") == False) & (pl.col("t_ingress_ns") > last_unknown)  # noqa: E712
        )
        assert left_later.height > 0, "the egress capture ended before the last packets left"


def _read_lines(stream, lines: list[str]) -> None:  # type: ignore[no-untyped-def]
    lines.extend(stream)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_run_killed_midway_leaves_nothing(tmp_path: Path, sig: signal.Signals) -> None:
    need_root()
    need_tool(*TOOLS)
    doc = short_run("test-kill", **{"calibration.enabled": False})
    cfg = write(doc, tmp_path / "run.yaml")
    out = tmp_path / "killed"
    proc = popen("experiment", cfg, "-o", out)
    lines: list[str] = []
    reader = threading.Thread(target=_read_lines, args=(proc.stderr, lines), daemon=True)
    reader.start()
    deadline = time.monotonic() + 60
    while not any("step 1/1:" in line for line in lines):
        assert proc.poll() is None, "".join(lines)
        assert time.monotonic() < deadline, "the run never reached its TCP step"
        time.sleep(0.1)
    time.sleep(1.0)  # TCP, CG, captures and the poller all running
    up = json.loads(next(x for x in lines if "testbed up:" in x).split("testbed up:", 1)[1])
    names, tag = set(up["namespaces"].values()), up["tag"]
    assert names <= namespaces()
    pids = set()
    for ns in names:
        res = __import__("subprocess").run(
            ["ip", "netns", "pids", ns], capture_output=True, text=True, check=False
        )
        pids |= {int(x) for x in res.stdout.split()}
    assert len(pids) >= 5  # tcpdump x2, poller, iperf3 server + client, CG sender + sink

    proc.send_signal(sig)
    assert proc.wait(30) != 0
    reader.join(5)
    text = "".join(lines)
    assert "interrupted" in text and "testbed down" in text
    assert not names & namespaces(), "a namespace was left behind"
    alive = [p for p in pids if Path(f"/proc/{p}").exists()]
    assert not alive, f"processes left behind: {alive}"
    assert not out.exists()
    assert not list(tmp_path.glob(".killed.*")), "the temporary run directory was left"
    assert not Path(f"/run/cganalysis/testbeds/{tag}.json").exists()


def test_calibration_swaps_a_short_htb_for_tbf(tmp_path: Path) -> None:
    """A shaper under min_ratio is replaced by TBF and measured again (min_ratio above 1
    forces the swap whatever this machine's HTB delivers); the better one is kept."""
    need_root()
    need_tool(*TOOLS)
    doc = short_run(
        "test-cal",
        **{
            "bottleneck.rate_mbit": 20,
            "calibration.min_ratio": 1.2,
            "calibration.on_low": "replace",
        },
    )
    out = tmp_path / "cal"
    res = cli("testbed", "calibrate", write(doc, tmp_path / "run.yaml"), "-o", out)
    assert res.returncode == 0, res.stderr
    cal = json.loads((out / "calibration.json").read_text())
    assert [a["label"] for a in cal["attempts"]] == ["htb", "tbf"]
    best = max(cal["attempts"], key=lambda a: a["ratio"])
    assert cal["shaper"] == best["label"] and cal["ratio"] == best["ratio"]
    root = next(q for q in cal["qdisc"]["rtr1"]["qdisc"] if q.get("root"))
    assert root["kind"] == cal["shaper"]  # what is installed is what was chosen
    for a in cal["attempts"]:  # qdisc counter and capture agree on the delivered rate
        assert abs(a["delivered_qdisc_mbps"] - a["delivered_capture_mbps"]) < 0.05 * 20
    assert cal["flags"] and "metrics use the measured capacity" in cal["flags"][0]
    assert cal["idle_delay_floor"]["packets"] >= 40
    assert cal["idle_delay_floor"]["median_ms"] < 1.0


def test_calibration_of_an_htb_whose_default_class_cannot_fill_the_link(tmp_path: Path) -> None:
    """The calibration's flow enters the default class; capped below the link (TMA's
    best effort at ceil 20 of 50), it measures that class against its ceil, and the link
    keeps its configured rate (no "shaper delivers 40 %" flag, no 8-Mbit/s capacity)."""
    need_root()
    need_tool(*TOOLS)
    classes = [
        {"classid": "10", "rate_mbit": 4, "ceil_mbit": 20, "prio": 0,
         "leaf": {"kind": "pfifo", "limit": 63}, "match": {"proto": "udp", "port": CG_PORT}},
        {"classid": "20", "rate_mbit": 8, "ceil_mbit": 8, "prio": 1,
         "leaf": {"kind": "pfifo", "limit": 100}},
    ]  # fmt: skip
    doc = short_run(
        "test-cal-class",
        **{
            "bottleneck.rate_mbit": 20,
            "bottleneck.qdisc": {"kind": "htb", "default": "20", "classes": classes},
        },
    )
    out = tmp_path / "cal"
    res = cli("testbed", "calibrate", write(doc, tmp_path / "run.yaml"), "-o", out)
    assert res.returncode == 0, res.stderr
    cal = json.loads((out / "calibration.json").read_text())
    assert cal["measured_class"] == "20" and cal["measured_class_ceil_mbps"] == 8
    assert 0.85 * 8 < cal["delivered_capture_mbps"] < 1.05 * 8, cal["attempts"]
    assert cal["ratio"] == cal["attempts"][0]["ratio"] > 0.85, cal
    assert "capacity_measured_mbps" not in cal and not cal["flags"], cal
    assert "metrics use the configured link rate" in cal["note"]
