"""The two measures TMA 2024 leaves open, next to the ones it states: the queuing delay
averaged over time (``delay_time_mean_ms``) beside the per-packet mean, and the bitrate and
utilisation of the transport payload (``*_payload*``) beside the IP-level ones. Each on
synthetic packet tables where the two definitions must differ by a known amount, and where
they must agree."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

from cganalysis.metrics.compute import run_metrics
from cganalysis.metrics.delay import time_weighted_delay_ms
from cganalysis.metrics.docschema import validate_metrics
from cganalysis.metrics.roles import parse_rules
from cganalysis.metrics.runfacts import Window, choose_capacity, facts_from_values
from tests.unit.synthetic import T0_NS, cbr, flow, table

NS = 1_000_000_000


def _metrics(packets: pl.DataFrame, end_s: float = 1.0) -> dict[str, Any]:
    facts = facts_from_values(
        capacity=choose_capacity(50.0, None, None),
        window=Window(0, end_s),
        rules=parse_rules(["cg=udp:30002", "competitor=tcp"]),
        t0_ns=T0_NS,
        bin_s=0.5,
    )
    doc = run_metrics(packets, facts)
    validate_metrics(doc)
    return doc


def _burst() -> pl.DataFrame:
    """A packet every 10 ms delayed 1 ms (past the 1 s window's end: the window is not
    clipped to the last packet), and a burst of 100 packets in [0.505, 0.506) delayed
    51 ms (the next regular packet, at 0.51 s, ends it)."""
    regular = flow(np.arange(110) * 0.01, delay_ms=1.0)
    burst = flow(0.505 + np.arange(100) * 1e-5, delay_ms=51.0)
    return table(regular, burst)


def test_a_burst_of_delayed_packets_weighs_by_packet_not_by_time() -> None:
    cg = _metrics(_burst())["roles"]["cg"]
    # Per packet: half the packets waited 51 ms.
    assert cg["delay_mean_ms"] == pytest.approx((100 * 1.0 + 100 * 51.0) / 200)  # 26
    # Over time: 51 ms held for the 5 ms from the burst to the next packet, 1 ms elsewhere.
    assert cg["delay_time_mean_ms"] == pytest.approx((0.995 * 1.0 + 0.005 * 51.0) / 1.0)  # 1.25


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_evenly_spaced_packets_give_the_same_mean_either_way(seed: int) -> None:
    """One long delay among evenly spaced packets: each packet holds the same time, so the
    time weights are the packet weights and the means agree, whatever the delays."""
    delays = np.random.default_rng(seed).exponential(5.0, 110)
    delays[50] = 400.0  # one long delay
    cg = _metrics(flow(np.arange(110) * 0.01, delay_ms=delays.tolist()))["roles"]["cg"]
    assert cg["delay_mean_ms"] == pytest.approx(float(delays[:100].mean()))  # the window's
    assert cg["delay_time_mean_ms"] == pytest.approx(cg["delay_mean_ms"])


def test_a_lost_packet_leaves_the_previous_delay_in_force() -> None:
    t = pl.Series([0, NS // 2], dtype=pl.Int64)
    assert time_weighted_delay_ms(t, pl.Series([2.0, None]), NS) == pytest.approx(2.0)
    assert time_weighted_delay_ms(t, pl.Series([2.0, 4.0]), NS) == pytest.approx(3.0)
    assert time_weighted_delay_ms(t, pl.Series([None, None], dtype=pl.Float64), NS) is None


def test_payload_level_is_the_ip_level_less_the_headers() -> None:
    """UDP: 1250-byte IP packets carry 1250 - 20 (IPv4) - 8 (UDP) = 1222 payload bytes.
    TCP: 1500-byte IP packets with 1448 payload bytes (20 IP + 32 TCP with timestamps)."""
    cg = cbr(10, 0, 1.5, size_bytes=1250, delay_ms=1.0)
    tcp = cbr(
        20, 0, 1.5, flow_id=1, proto=6, sport=5201, dport=50000, size_bytes=1500, delay_ms=1.0
    ).with_columns(pl.lit(1448, dtype=pl.UInt32).alias("tcp_payload_bytes"))
    roles = _metrics(table(cg, tcp))["roles"]
    for role, ratio in (("cg", 1222 / 1250), ("competitor", 1448 / 1500)):
        r = roles[role]
        assert r["bitrate_payload_mean_mbps"] == pytest.approx(r["bitrate_mean_mbps"] * ratio)
        assert r["utilisation_payload"] == pytest.approx(r["utilisation"] * ratio)
    assert roles["cg"]["bitrate_mean_mbps"] > 9.9  # the IP-level rate offered, 10 Mbit/s


def test_payload_level_is_null_where_a_packet_has_no_payload_size() -> None:
    """A table without TCP payload sizes (an older one) or an IP version gives no payload
    figure rather than one that counts those packets as empty."""
    cg = cbr(10, 0, 1.5, delay_ms=1.0).with_columns(
        pl.lit(None, dtype=pl.UInt8).alias("ip_version")
    )
    tcp = cbr(20, 0, 1.5, flow_id=1, proto=6, sport=5201, dport=50000, delay_ms=1.0)
    roles = _metrics(table(cg, tcp))["roles"]
    for role in ("cg", "competitor"):
        assert roles[role]["bitrate_payload_mean_mbps"] is None
        assert roles[role]["utilisation_payload"] is None
        assert roles[role]["bitrate_mean_mbps"] > 0
