"""The matcher on the committed real dual-point capture (HTB + pfifo, RTP + iperf3 Cubic):
its verdicts must agree with what the kernel and the tools said during that run."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from cganalysis.matching import MatchedPackets, match_files


@pytest.fixture(scope="module")
def matched(dualpoint_dir: Path) -> MatchedPackets:
    return match_files(dualpoint_dir / "ingress.pcap", dualpoint_dir / "egress.pcap")


def _qdisc_drops(dualpoint_dir: Path) -> int:
    qdiscs = json.loads((dualpoint_dir / "qdisc.json").read_text())
    return max(int(q["drops"]) for q in qdiscs)


def test_losses_are_the_qdisc_drops(matched: MatchedPackets, dualpoint_dir: Path) -> None:
    s = matched.summary
    assert s.capture_drops_ingress == 0 and s.capture_drops_egress == 0
    assert not s.loss_suspect
    assert s.packets_unknown == 0
    assert s.packets_lost == _qdisc_drops(dualpoint_dir) > 0
    assert s.egress_only_packets == 0
    assert s.reverse_packets_in == s.reverse_packets_out == 0
    assert s.packets_delivered + s.packets_lost == s.packets_in


def test_every_egress_packet_has_one_twin(matched: MatchedPackets, dualpoint_dir: Path) -> None:
    from cganalysis.capture import read_capture

    egress = read_capture(dualpoint_dir / "egress.pcap").packets
    delivered = matched.packets.filter(pl.col("lost").not_())
    assert delivered.height == egress.filter(pl.col("ip_version").is_not_null()).height
    assert delivered["t_egress_ns"].n_unique() == delivered.height
    assert (delivered["delay_ms"] >= 0).all()


def test_rtp_queues_only_while_tcp_saturates(matched: MatchedPackets, dualpoint_dir: Path) -> None:
    meta = json.loads((dualpoint_dir / "meta.json").read_text())
    rtp = matched.packets.filter(pl.col("rtp_ssrc") == meta["rtp"]["ssrc"])
    tcp = matched.packets.filter((pl.col("proto") == 6) & (pl.col("dport") == 5201))
    tcp_start, tcp_end = tcp["t_ingress_ns"].min(), tcp["t_ingress_ns"].max()
    before = rtp.filter(pl.col("t_ingress_ns") < tcp_start)
    during = rtp.filter(
        pl.col("t_ingress_ns").is_between(tcp_start + 500_000_000, tcp_end)  # type: ignore[operator]
    )
    assert before.height > 20 and during.height > 20
    # Idle link: well under a millisecond. Saturated 30-packet pfifo at ~4 Mbit/s: tens of ms,
    # at most the buffer's drain time (30 x 1514 B at 4 Mbit/s = 91 ms) plus timer slack.
    assert before["delay_ms"].max() < 1.0  # type: ignore[operator]
    assert 20 < during["delay_ms"].median() < 100  # type: ignore[operator]
    # The sequence wrap in the fixture (65300 -> 303) unwraps to one increasing run.
    ext = rtp.sort("t_ingress_ns")["rtp_seq_ext"]
    assert ext.min() == meta["rtp"]["seq_start"]
    assert ext.max() == meta["rtp"]["seq_start"] + meta["rtp"]["sender_summary"]["packets"] - 1


def test_flow_table(matched: MatchedPackets) -> None:
    flows = matched.flows
    video = flows.filter(pl.col("rtp_ssrc").is_not_null())
    assert video.height == 1
    assert video["ecn_ect1_in"].item() == video["packets_in"].item()
    assert flows["packets_in"].sum() == matched.packets.height
    assert 0 < video["loss_rate"].item() < 0.2
