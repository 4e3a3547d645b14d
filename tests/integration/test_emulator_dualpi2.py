"""DualPI2 end to end through cga-emu (the kernel here has no dualpi2): an ECT(1) flow
keeps sub-millisecond queueing delay in the L queue while a Cubic flow in the C queue sits
near the 15 ms target; then the same over a cellular trace, where ECN marking works too
(mahimahi's queues cannot mark). Delays come from the router's two captures."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from cganalysis.emulator import read_stats
from cganalysis.matching import match_files
from tests.conftest import need_root, need_tool, trace
from tests.integration.emu_helpers import need_emulator
from tests.support.netbed import Bed, bed, quantiles, steady, wait_ok

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]

TRACE = trace("cga-lte-s1-60s.down")
SECONDS = 8


@pytest.fixture(scope="module")
def net() -> Iterator[Bed]:
    need_root()
    need_tool("tcpdump", "iperf3", "ethtool")
    need_emulator()
    with bed("pi2") as b:
        yield b


def run(net: Bed, tmp_path: Path, rate: dict[str, object]) -> tuple[pl.DataFrame, dict]:
    pipeline = {"rate": rate, "qdisc": {"kind": "dualpi2", "limit": 1000}}
    with net.emulator(tmp_path, pipeline, events=False), net.taps(tmp_path) as taps:
        # 2 Mbit/s of ECT(1), one 1000-byte packet every 4 ms; Cubic starts 0.5 s later.
        rtp = net.paced_udp(30002, 2.0, SECONDS + 1, size=1000, ecn=1)
        time.sleep(0.5)
        wait_ok(net.iperf(5501, SECONDS, "-C", "cubic"), SECONDS + 30)
        wait_ok(rtp, 30)
    m = match_files(taps.ingress, taps.egress)
    stats = [r for r in read_stats(tmp_path / "stats.jsonl") if r["direction"] == "a_to_b"]
    return m.packets, stats[-1]


def check(packets: pl.DataFrame, final: dict, c_lo_ms: float, c_hi_ms: float) -> None:
    l4s = steady(packets.filter((pl.col("dport") == 30002) & pl.col("lost").not_()), 2.0)
    cubic = steady(
        packets.filter((pl.col("dport") == 5501) & (pl.col("size_bytes") > 500)), 2.0, 1.0
    )
    c_ok = cubic.filter(pl.col("lost").not_())
    print("L (ECT(1)) delay ms", quantiles(l4s["delay_ms"]), "marked", l4s["ce_marked"].mean())
    print("C (Cubic) delay ms", quantiles(c_ok["delay_ms"]), "lost", cubic["lost"].mean())
    print({k: final[k] for k in ("prob", "pkts_in_l", "pkts_in_c", "ecn_mark", "step_mark")})
    assert l4s.height > 500 and c_ok.height > 1000
    assert (l4s["ecn_ingress"] == 1).all()
    assert l4s["delay_ms"].median() < 1.0  # type: ignore[operator]
    assert c_lo_ms < c_ok["delay_ms"].median() < c_hi_ms  # type: ignore[operator]
    assert final["pkts_in_l"] > 0 and final["pkts_in_c"] > 0
    # Cubic is Not-ECT: the PI2 controller drops its packets (p'^2 > 0 at equilibrium).
    assert cubic["lost"].sum() > 0


def test_l4s_flow_stays_sub_ms_while_cubic_sits_near_target(net: Bed, tmp_path: Path) -> None:
    packets, final = run(net, tmp_path, {"mbit": 20})
    check(packets, final, 7.5, 30.0)


def test_dualpi2_marks_over_a_cellular_trace(net: Bed, tmp_path: Path) -> None:
    packets, final = run(net, tmp_path, {"trace": str(TRACE), "scale": 2.0})
    l4s = steady(packets.filter(pl.col("dport") == 30002), 2.0)
    print("trace: L delay ms", quantiles(l4s.filter(pl.col("lost").not_())["delay_ms"]))
    print({k: final[k] for k in ("prob", "ecn_mark", "step_mark", "trace_mean_mbit")})
    # A trace's capacity varies: the L queue builds during its dips and is CE-marked.
    assert final["ecn_mark"] > 0
    assert l4s["ce_marked"].sum() > 0
