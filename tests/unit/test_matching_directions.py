"""Taps that see both directions: reverse flows are recognised, left out and counted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from cganalysis.capture.writer import write_pcap
from cganalysis.errors import MatchError
from cganalysis.matching import match_files
from tests.support.synthetic import DST, SRC, Knobs, make_scenario


def _acks(times_ns: np.ndarray, ip_id_start: int) -> pl.DataFrame:
    """Pure TCP ACKs from the client back to the server."""
    n = len(times_ns)
    return pl.DataFrame(
        {
            "t_ns": times_ns,
            "src_ip": DST,
            "dst_ip": SRC,
            "proto": 6,
            "sport": 5201,
            "dport": 40_000,
            "ip_id": (ip_id_start + np.arange(n)) % 65536,
            "size_bytes": 52,
            "dscp": 0,
            "ecn": 0,
            "ttl": 64,
            "tcp_seq": 77,
            "tcp_ack": 1_000 + np.arange(n) * 2896,
            "tcp_flags": 0x10,
            "is_rtp": False,
            "rtp_ssrc": 0,
            "rtp_seq": 0,
            "rtp_ts": 0,
            "rtp_marker": False,
            "rtp_pt": 0,
            "payload_tag": 0,
        }
    )


def test_reverse_flows_are_left_out_and_counted(tmp_path: Path) -> None:
    scenario = make_scenario(Knobs(seed=7, p_dup=0.0))
    start = int(scenario.ingress["t_ns"].min())  # type: ignore[arg-type]
    t_client = start + np.arange(40, dtype=np.int64) * 3_000_000
    # An ACK reaches the egress tap (client side) first, the ingress tap 50 us later.
    acks_at_egress = _acks(t_client, 100)
    acks_at_ingress = acks_at_egress.with_columns(pl.col("t_ns") + 50_000)
    ingress = pl.concat([scenario.ingress, acks_at_ingress.cast(scenario.ingress.schema)])
    egress = pl.concat([scenario.egress, acks_at_egress.cast(scenario.egress.schema)])
    write_pcap(tmp_path / "in.pcap", ingress.sort("t_ns"))
    write_pcap(tmp_path / "eg.pcap", egress.sort("t_ns"))

    both = match_files(tmp_path / "in.pcap", tmp_path / "eg.pcap")
    plain = match_files(*scenario.write(tmp_path))
    assert both.summary.reverse_packets_in == 40
    assert both.summary.reverse_packets_out == 40
    assert both.summary.egress_only_packets == 0
    assert both.packets.filter(pl.col("sport") == 5201).height == 0
    # The forward direction is what it is without the reverse traffic, except that the
    # egress capture now visibly ran longer, so some unknown fates become known.
    assert both.packets.drop("lost").equals(plain.packets.drop("lost"))
    known = plain.packets["lost"].is_not_null()
    assert both.packets.filter(known)["lost"].equals(plain.packets.filter(known)["lost"])


def test_only_reverse_traffic_means_swapped_captures(tmp_path: Path) -> None:
    scenario = make_scenario(Knobs(seed=8, p_dup=0.0, p_drop=0.0))
    ingress, egress = scenario.write(tmp_path)
    with pytest.raises(MatchError, match="wrong way round"):
        match_files(egress, ingress)
