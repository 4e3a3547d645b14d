"""Bitrate series: bins, zeros for empty bins, delivered vs offered, whole bins only."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from cganalysis.metrics.bitrate import bitrate_series, n_bins, smooth
from cganalysis.metrics.roles import parse_rules
from cganalysis.metrics.runfacts import Window, choose_capacity, facts_from_values
from cganalysis.metrics.timebase import prepare
from tests.unit.synthetic import flow, table


def _prepared(*flows: pl.DataFrame) -> pl.DataFrame:
    facts = facts_from_values(
        capacity=choose_capacity(10.0, None, None),
        window=Window(0, None),
        rules=parse_rules(["cg=udp:30002", "competitor=tcp"]),
        t0_ns=1_700_000_000_000_000_000,
    )
    return prepare(table(*flows), facts).packets


def test_bytes_per_bin_by_hand() -> None:
    pk = _prepared(flow([0.1, 0.2, 0.7, 2.2], size_bytes=[1000, 500, 250, 125], delay_ms=1.0))
    s = bitrate_series(pk, start_s=0.0, end_s=2.5, bin_s=0.5, keys=["cg"])
    assert s.get_column("t_s").to_list() == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert s.get_column("bytes").to_list() == [1500, 250, 0, 0, 125]
    # 1500 B in 0.5 s = 24 kbit/s; empty bins are a zero rate, not missing.
    assert s.get_column("rate_mbps").to_list() == pytest.approx([0.024, 0.004, 0, 0, 0.002])


def test_roles_without_packets_get_zero_rows() -> None:
    pk = _prepared(flow([0.1], size_bytes=1000))
    s = bitrate_series(pk, start_s=0.0, end_s=1.0, bin_s=0.5, keys=["cg", "competitor"])
    assert s.filter(pl.col("role") == "competitor").get_column("bytes").to_list() == [0, 0]


def test_delivered_counts_at_egress_and_offered_at_ingress() -> None:
    # Enters at 0.4 s, leaves 200 ms later: offered in bin 0, delivered in bin 1.
    pk = _prepared(flow([0.4], size_bytes=1000, delay_ms=200.0))
    out = bitrate_series(pk, start_s=0, end_s=1, bin_s=0.5, point="egress", keys=["cg"])
    inn = bitrate_series(pk, start_s=0, end_s=1, bin_s=0.5, point="ingress", keys=["cg"])
    assert out.get_column("bytes").to_list() == [0, 1000]
    assert inn.get_column("bytes").to_list() == [1000, 0]
    assert set(out.get_column("point")) == {"egress"}


def test_lost_packets_are_offered_but_not_delivered() -> None:
    pk = _prepared(flow([0.1, 0.2], size_bytes=1000, lost=[False, True]))
    out = bitrate_series(pk, start_s=0, end_s=0.5, bin_s=0.5, point="egress", keys=["cg"])
    inn = bitrate_series(pk, start_s=0, end_s=0.5, bin_s=0.5, point="ingress", keys=["cg"])
    assert (out.get_column("bytes").item(), inn.get_column("bytes").item()) == (1000, 2000)


def test_only_whole_bins_and_boundaries_are_half_open() -> None:
    assert n_bins(0.0, 1.2, 0.5) == 2
    assert n_bins(120.0, 360.0, 0.5) == 480  # no float rounding loss
    assert n_bins(1.0, 1.2, 0.5) == 0
    # A packet exactly at a bin's end belongs to the next bin; one at the window's end to none.
    pk = _prepared(flow([0.0, 0.5, 1.0], size_bytes=100, delay_ms=0.0))
    s = bitrate_series(pk, start_s=0, end_s=1.0, bin_s=0.5, keys=["cg"])
    assert s.get_column("bytes").to_list() == [100, 100]


def test_per_flow_series() -> None:
    pk = _prepared(
        flow([0.1], flow_id=3, size_bytes=100), flow([0.6], flow_id=7, sport=1, size_bytes=200)
    )
    s = bitrate_series(pk, start_s=0, end_s=1, bin_s=0.5, key="flow_id")
    assert s.select("flow_id", "bytes").rows() == [(3, 100), (3, 0), (7, 0), (7, 200)]


def test_smooth_is_a_centred_moving_average() -> None:
    x = np.array([0.0, 0.0, 3.0, 0.0, 0.0])
    assert smooth(x, 0.5, 0.0).tolist() == x.tolist()
    assert smooth(x, 0.5, 1.5).tolist() == pytest.approx([0, 1, 1, 1, 0])


@pytest.mark.parametrize("point", ["egress", "ingress"])
def test_one_key_gives_what_the_keys_together_give_for_it(point: str) -> None:
    """One key's series (counted by bincount) is the rows of that key in the series of
    several (a group-by joined with the grid): losses, times outside the window and bins
    at both ends, to the last bit."""
    rng = np.random.default_rng(5)
    t_cg, t_tcp = np.sort(rng.uniform(-0.5, 4.5, 400)), np.sort(rng.uniform(-0.5, 4.5, 300))
    pk = _prepared(
        flow(
            t_cg, size_bytes=rng.integers(60, 1500, 400).tolist(), lost=list(rng.random(400) < 0.1)
        ),
        flow(t_tcp, flow_id=1, proto=6, sport=5201, dport=40001, size_bytes=1448),
    )
    for role in ("cg", "competitor"):
        for start_s, end_s, bin_s in (
            (0.0, 4.0, 0.5),
            (0.3, 3.9, 0.1),
            (5.0, 6.0, 0.5),
            (1.0, 1.2, 0.5),
        ):
            kw = {"start_s": start_s, "end_s": end_s, "bin_s": bin_s, "point": point}
            one = bitrate_series(pk, keys=[role], **kw)  # type: ignore[arg-type]
            both = bitrate_series(pk, keys=["cg", "competitor"], **kw)  # type: ignore[arg-type]
            assert one.equals(both.filter(pl.col("role") == role)), (role, start_s, end_s, bin_s)
