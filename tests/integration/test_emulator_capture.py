"""cga-emu as the router's bottleneck: its two captures measure exactly the emulator's
sojourn (checked packet by packet against its ground-truth event log), and SIGTERM leaves
complete statistics. Needs root (network namespaces), tcpdump, iperf3 and cga-emu."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from cganalysis.emulator import read_events, read_stats
from cganalysis.matching import match_files
from tests.conftest import need_root, need_tool
from tests.integration.emu_helpers import need_emulator
from tests.support.netbed import Bed, bed, quantiles, wait_ok

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]


@pytest.fixture(scope="module")
def net() -> Iterator[Bed]:
    need_root()
    need_tool("tcpdump", "iperf3", "ethtool")
    need_emulator()
    with bed("cap") as b:
        yield b


def test_captures_measure_the_emulators_sojourn(net: Bed, tmp_path: Path) -> None:
    # 15 Mbit/s of UDP into 10 Mbit/s with a 100-packet pfifo: queueing and drops.
    a_to_b = {"rate": {"mbit": 10}, "qdisc": {"kind": "pfifo", "limit": 100}}
    with net.emulator(tmp_path, a_to_b), net.taps(tmp_path) as taps:
        wait_ok(net.iperf(5301, 3, "-u", "-b", "15M", "-l", "1000"), 30)
    m = match_files(taps.ingress, taps.egress)
    assert m.summary.capture_drops_ingress == m.summary.capture_drops_egress == 0
    udp = m.packets.filter((pl.col("proto") == 17) & (pl.col("dport") == 5301))
    assert udp.height > 3000

    ev = read_events(tmp_path / "events.csv").filter(pl.col("direction") == "a_to_b")
    # iperf3's TCP control connection shares the port: its IP IDs may equal the UDP ones.
    arrivals = ev.filter(pl.col("event") == "enqueue").select(
        "pkt", "t_ns", "proto", "ip_id", "dport"
    )
    sends = ev.filter(pl.col("event") == "send").select("pkt", t_send=pl.col("t_ns"))
    drops = ev.filter(pl.col("event") == "drop").select("pkt", dropped=pl.lit(True))
    truth = arrivals.join(sends, on="pkt", how="left").join(drops, on="pkt", how="left")
    j = udp.join(truth, on=["proto", "dport", "ip_id"], how="inner", validate="1:1")
    assert j.height == udp.height, "every captured UDP packet is in the event log"

    # The ingress tap and the emulator read the kernel's receive time stamp: the same one
    # when the kernel stamped the frame as it arrived; when it had not, each packet socket
    # stamps the frame as it is handed it, one after the other (on a loaded machine 1.4 %
    # of the frames differed, by up to 3 us).
    apart_us = ((j["t_ns"] - j["t_ingress_ns"]) / 1e3).abs()
    assert (apart_us == 0).mean() > 0.9
    assert apart_us.max() < 100
    # Captured losses are exactly the emulator's drops, deliveries exactly its sends.
    assert (j["lost"] == j["dropped"].fill_null(False)).all()
    sent = j.filter(pl.col("lost").not_())
    assert sent["t_send"].null_count() == 0
    # The egress tap stamps the frame inside the emulator's send call: microseconds later.
    lag_us = (sent["t_egress_ns"] - sent["t_send"]) / 1e3
    print("egress tap minus emulator send time (us):", quantiles(lag_us))
    assert lag_us.min() >= -1 and lag_us.median() < 50 and lag_us.quantile(0.99) < 2000
    sojourn_ms = (sent["t_send"] - sent["t_ns"]) / 1e6
    assert (sent["delay_ms"] - sojourn_ms).abs().median() < 0.05

    # A full 100-packet buffer of 1042-byte frames drains in 83 ms at 10 Mbit/s.
    full = sent.filter(pl.col("t_ingress_ns") > sent["t_ingress_ns"].min() + 1_000_000_000)
    assert 0.9 * 83.4 < full["delay_ms"].median() < 1.1 * 83.4

    stats = [r for r in read_stats(tmp_path / "stats.jsonl") if r["direction"] == "a_to_b"]
    last = stats[-1]
    assert last["final"] is True
    assert last["dropped"] == ev.filter(pl.col("event") == "drop").height
    assert last["tx_packets"] == ev.filter(pl.col("event") == "send").height


def test_sigterm_exits_cleanly_leaving_statistics(net: Bed, tmp_path: Path) -> None:
    a_to_b = {"rate": {"mbit": 20}, "qdisc": {"kind": "dualpi2", "limit": 1000}}
    with net.emulator(tmp_path, a_to_b, events=False) as emu:
        net.ip("srv", "ping", "-c", "5", "-i", "0.05", "-W", "1", "10.66.0.2")
        code = emu.stop()
    assert code == 0
    lines = (tmp_path / "stats.jsonl").read_text().splitlines()
    final = [json.loads(x) for x in lines if '"final": true' in x]
    assert {r["direction"] for r in final} == {"a_to_b", "b_to_a"}
    ab = next(r for r in final if r["direction"] == "a_to_b")
    ba = next(r for r in final if r["direction"] == "b_to_a")
    assert ab["tx_packets"] == ab["rx_packets"] == 5 and ba["tx_packets"] == 5
    assert ab["qdisc"] == "dualpi2" and "prob" in ab and "delay_l_us" in ab
    assert "cga-emu: stopped" in (tmp_path / "emu.log").read_text()
