"""SQF against its seed (Benameur et al., seed 001) end to end through cga-emu: with a
saturating bulk flow and a smooth low-rate flow sharing a 10 Mbit/s link, the smooth flow's
queueing delay stays near zero under SQF and not under FIFO (the same buffer size)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from cganalysis.matching import match_files
from tests.conftest import need_root, need_tool
from tests.integration.emu_helpers import need_emulator
from tests.support.netbed import Bed, bed, quantiles, steady, wait_ok

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]

SECONDS = 5


@pytest.fixture(scope="module")
def net() -> Iterator[Bed]:
    need_root()
    need_tool("tcpdump", "iperf3", "ethtool")
    need_emulator()
    with bed("sqf") as b:
        yield b


def smooth_vs_bulk(net: Bed, workdir: Path, qdisc: dict[str, Any]) -> dict[str, Any]:
    workdir.mkdir()
    pipeline = {"rate": {"mbit": 10}, "qdisc": qdisc}
    with net.emulator(workdir, pipeline, events=False), net.taps(workdir) as taps:
        # Bulk: 15 Mbit/s of UDP (1.5x the link). Smooth: 200-byte packets every 8 ms.
        bulk = net.iperf(5601, SECONDS, "-u", "-b", "15M", "-l", "1400")
        time.sleep(0.3)
        smooth = net.paced_udp(30004, 0.2, SECONDS - 1, size=200)
        wait_ok(smooth, 30)
        wait_ok(bulk, 30)
    packets = match_files(taps.ingress, taps.egress).packets
    s = steady(packets.filter(pl.col("dport") == 30004), 0.5, 0.2)
    b = steady(packets.filter(pl.col("dport") == 5601), 1.0, 0.5)
    out = {
        "kind": qdisc["kind"],
        "smooth_delay_ms": quantiles(s.filter(pl.col("lost").not_())["delay_ms"]),
        "smooth_loss": round(float(s["lost"].mean()), 4),  # type: ignore[arg-type]
        "bulk_delay_ms": quantiles(b.filter(pl.col("lost").not_())["delay_ms"]),
        "bulk_loss": round(float(b["lost"].mean()), 4),  # type: ignore[arg-type]
        "smooth_packets": s.height,
    }
    print(out)
    return out


def test_smooth_flow_delay_near_zero_under_sqf_not_fifo(net: Bed, tmp_path: Path) -> None:
    sqf = smooth_vs_bulk(net, tmp_path / "sqf", {"kind": "sqf", "limit": 100, "flows": 128})
    fifo = smooth_vs_bulk(net, tmp_path / "fifo", {"kind": "pfifo", "limit": 100})
    assert sqf["smooth_packets"] > 100 and fifo["smooth_packets"] > 100
    # SQF: the smooth flow's virtual queue is the shortest, served next: about one bulk
    # packet's transmission (1.1 ms at 10 Mbit/s) at worst, and never dropped.
    assert sqf["smooth_delay_ms"]["p50"] < 3.0
    assert sqf["smooth_loss"] == 0
    # FIFO: it waits behind the full 100-packet buffer (~115 ms) and shares its losses.
    assert fifo["smooth_delay_ms"]["p50"] > 50.0
    assert fifo["smooth_loss"] > 0.05
    # The bulk flow itself still sees a full buffer under SQF (it is the longest queue).
    assert sqf["bulk_delay_ms"]["p50"] > 50.0
