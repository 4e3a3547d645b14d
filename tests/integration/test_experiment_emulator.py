"""The emulator backend with the real ``cga-emu``: DualPI2, which this kernel lacks, as a
bump in the wire on the router, and the propagation delay as a delay-only hop that stays
outside the router's two captures."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import polars as pl
import pytest
import yaml

from cganalysis.capture import read_capture
from cganalysis.matching import match_files
from tests.conftest import need_root, need_tool
from tests.integration.experiment_helpers import RUNS, TOOLS, cli, namespaces, short_run, write

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]


def _run(tmp_path: Path, doc: dict[str, object]) -> tuple[Path, dict[str, object]]:
    need_root()
    need_tool(*TOOLS, "cga-emu")
    out = tmp_path / "run"
    res = cli("experiment", write(doc, tmp_path / "run.yaml"), "-o", out)
    assert res.returncode == 0, res.stderr[-3000:]
    meta = json.loads((out / "meta.json").read_text())
    # Only this run's namespaces count: other runs may come and go meanwhile.
    tag = meta["testbed"]["tag"]
    assert not [n for n in namespaces() if tag in n], "the run left namespaces behind"
    return out, meta


def test_quick_dualpi2_runs_through_the_emulator(tmp_path: Path) -> None:
    """The shipped configs/runs/quick-dualpi2.yaml, as it is."""
    doc = yaml.safe_load((RUNS / "quick-dualpi2.yaml").read_text())
    out, meta = _run(tmp_path, doc)
    assert meta["bottleneck_backend"] == "emulator"  # auto: the kernel has no dualpi2
    stats = [json.loads(x) for x in (out / "qdisc-stats.jsonl").read_text().splitlines()]
    assert any(s.get("qdisc") == "dualpi2" and (s.get("prob") or 0) > 0 for s in stats)

    m = match_files(out / "ingress.pcap", out / "egress.pcap")
    assert m.summary.egress_only_packets == 0 and meta["checks"]["drops"]["ok"]
    t0 = meta["start_ns"]
    during = m.packets.filter(
        pl.col("lost").not_() & ((pl.col("t_ingress_ns") - t0) / 1e9).is_between(10.0, 17.0)
    )
    tcp = during.filter((pl.col("proto") == 6) & (pl.col("size_bytes") > 1000))["delay_ms"]
    cg = during.filter(pl.col("proto") == 17)["delay_ms"]
    tcp_median = statistics.median(tcp.to_list())
    cg_median = statistics.median(cg.to_list())
    # Cubic in the classic queue sits near DualPI2's 15 ms target; the ECT(1) stream in
    # the L queue waits far less (the stand-in does not react to marks, so not ~0).
    assert 7.0 < tcp_median < 35.0, tcp_median
    assert cg_median < tcp_median / 2, (cg_median, tcp_median)


def _handshake_rtt_ms(capture: Path, *, dport: int) -> float:
    """The last TCP handshake to ``dport`` (iperf3's data connection follows its control
    one) as the router saw it, in ms: from the client's SYN to its ACK of the SYN-ACK, a
    whole round trip (router, server, router, client, router) of packets that queue nowhere.
    The router's captures hold the client-to-server direction only."""
    tcp = read_capture(capture).packets.filter(pl.col("proto") == 6)
    flags = pl.col("tcp_flags") & 0x12
    syn = tcp.filter((flags == 0x02) & (pl.col("dport") == dport)).row(-1, named=True)
    same = (pl.col("sport") == syn["sport"]) & (pl.col("dport") == dport)
    later = pl.col("t_ns") > syn["t_ns"]
    ack = tcp.filter(same & (flags == 0x10) & later).row(0, named=True)
    return float(ack["t_ns"] - syn["t_ns"]) / 1e6


def test_propagation_delay_stays_outside_the_captures(tmp_path: Path) -> None:
    doc = short_run(
        "test-delay",
        **{
            "propagation": {"forward_ms": 15, "reverse_ms": 15},
            "calibration.enabled": False,
        },
    )
    # A competitor too slow to queue: its RTT is the path's, not the bottleneck's.
    doc["schedule"] = {
        "preset": "custom",
        "duration_s": 8,
        "competitor": [{"t_s": 2, "rate_mbit": 1}, {"t_s": 7, "rate_mbit": "off"}],
    }
    out, _meta = _run(tmp_path, doc)
    hop = json.loads((out / "emu-delay.json").read_text())
    assert hop["a_to_b"]["delay_ms"] == 15.0 and hop["b_to_a"]["delay_ms"] == 15.0
    # The router's captures see only the idle bottleneck, not the 15 ms each way ...
    m = match_files(out / "ingress.pcap", out / "egress.pcap")
    assert statistics.median(m.packets["delay_ms"].drop_nulls().to_list()) < 2.0
    # ... while TCP's round trip crosses the hop once each way: iperf3's smallest RTT is a
    # floor (microseconds; it includes the flow's own queue: iperf3 3.18, Debian 13's,
    # writes its 128 KB blocks in bursts that queue ~40 ms at the shaper even at 1 Mbit/s).
    iperf = json.loads((out / "iperf3-step01.json").read_text())
    assert iperf["end"]["streams"][0]["sender"]["min_rtt"] / 1000 >= 30.0
    # The data connection's handshake queues nowhere: 15 ms each way gives 30 ms, never 60
    # (the hop crossed twice a way); the upper bound leaves room for a loaded 2-core
    # host's timers.
    rtt_ms = _handshake_rtt_ms(out / "ingress.pcap", dport=5201)
    assert 30.0 <= rtt_ms < 45.0, rtt_ms
