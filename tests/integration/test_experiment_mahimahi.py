"""backend: mahimahi for real: mm-link and mm-delay between router and client, the captures
at the router's entry and the shell's exit, matched as for every backend.

A constant 12 Mbit/s link (mahimahi replays the rate as a trace) with a 10 ms mm-delay,
offered 16 Mbit/s of UDP: the delivered rate must be the link's (an opportunity of 1504
bytes carries one 1500-byte packet with its 4-byte TUN header), the delay must stay off
the capture span, and the drops the captures count must be mm-link's. Skips where mahimahi
is not installed (Debian has no package), also in CI."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from cganalysis.matching import match_files
from tests.conftest import need_mahimahi, need_root, need_tool
from tests.integration.experiment_helpers import TOOLS, cli, namespaces, short_run, write

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]

RATE_MBIT = 12.0
OFFERED_MBIT = 16.0


def test_mahimahi_link_delivers_its_rate_with_the_delay_off_the_capture_span(
    tmp_path: Path,
) -> None:
    need_root()
    need_tool(*TOOLS)
    need_mahimahi()
    doc = short_run(
        "test-mahimahi",
        bottleneck={
            "backend": "mahimahi",
            "rate_mbit": RATE_MBIT,
            "qdisc": {"kind": "pfifo", "limit": 100},
        },
        **{
            "schedule": {"preset": "custom", "duration_s": 10, "competitor": []},
            "propagation": {"forward_ms": 10, "reverse_ms": 10},
            "cg.source": "rtp-cbr",
            "cg.cc": "none",
            "cg.rate_mbit": OFFERED_MBIT,
        },
    )
    out = tmp_path / "run"
    res = cli("experiment", write(doc, tmp_path / "run.yaml"), "-o", out)
    assert res.returncode == 0, res.stderr[-3000:]
    meta = json.loads((out / "meta.json").read_text())
    tag = meta["testbed"]["tag"]
    assert not {n for n in namespaces() if tag in n}, "the run left namespaces behind"
    assert (meta["bottleneck_backend"], meta["delay_via"]) == ("mahimahi", "mahimahi")
    assert "mm-delay 10" in meta["testbed"]["mahimahi"]["command"]
    assert meta["checks"]["drops"]["ok"], meta["checks"]["drops"]
    assert meta["checks"]["drops"]["qdisc_drops"] > 0  # 16 into 12 Mbit/s: mm-link drops
    assert (out / "mm-downlink.log").is_file() and meta["qdisc_stats_records"] > 50

    m = match_files(out / "ingress.pcap", out / "egress.pcap")
    udp = m.packets.filter(pl.col("proto") == 17)
    delivered = udp.filter(pl.col("lost").not_())
    t0 = meta["start_ns"]
    span = delivered.filter(
        ((pl.col("t_egress_ns") - t0) >= 3e9) & ((pl.col("t_egress_ns") - t0) < 9e9)
    )
    ip_bytes = span["size_bytes"].sum()
    rate = ip_bytes * 8 / 6.0 / 1e6
    print(f"delivered {rate:.3f} Mbit/s of {RATE_MBIT} (IP bytes), {len(span)} packets")
    # One packet per 1504-byte opportunity: at most RATE x 1500/1504 of IP bytes.
    assert RATE_MBIT * 0.93 < rate <= RATE_MBIT * 1500 / 1504 * 1.01
    # mm-delay is after the egress tap: an uncongested packet crosses in about a ms
    # (mm-link's millisecond clock), not 10 ms.
    first = udp.sort("t_ingress_ns").head(20)["delay_ms"]
    assert first.min() < 3.0, first.to_list()  # type: ignore[operator]
