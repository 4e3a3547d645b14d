"""Queuing delay statistics against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cganalysis.metrics.delay import delay_cdf, delay_stats, quantile_key, threshold_key


def test_delay_stats_by_hand() -> None:
    # mean 22; deviations -21 -20 -19 -18 78; population variance 7610 / 5 = 1522.
    d = delay_stats(pl.Series([1.0, 2.0, 3.0, 4.0, 100.0]))
    assert d.count == 5
    assert d.mean_ms == 22.0
    assert d.var_ms2 == pytest.approx(1522.0)
    assert d.std_ms == pytest.approx(math.sqrt(1522.0))
    assert (d.min_ms, d.max_ms) == (1.0, 100.0)
    assert d.quantiles_ms[0.5] == 3.0
    assert d.quantiles_ms[0.25] == 2.0
    assert d.quantiles_ms[0.95] == pytest.approx(4 + 0.8 * 96)  # linear between 4 and 100
    # "% > 10 ms" is strictly above: 100 ms is not above 100 ms.
    assert d.pct_over == {10.0: 20.0, 20.0: 20.0, 50.0: 20.0, 100.0: 0.0}


def test_lost_packets_have_no_delay_and_are_ignored() -> None:
    d = delay_stats(pl.Series([10.0, None, 30.0]))
    assert (d.count, d.mean_ms, d.pct_over[20.0]) == (2, 20.0, 50.0)


def test_no_delivered_packet_gives_nulls() -> None:
    d = delay_stats(pl.Series([None, None], dtype=pl.Float64))
    assert d.count == 0 and d.mean_ms is None and d.std_ms is None
    assert d.pct_over[10.0] is None and d.quantiles_ms[0.5] is None


def test_single_packet_has_zero_spread() -> None:
    d = delay_stats(pl.Series([7.0]))
    assert (d.mean_ms, d.std_ms, d.var_ms2) == (7.0, 0.0, 0.0)


def test_keys() -> None:
    assert threshold_key(10.0) == "pct_delay_over_10ms"
    assert threshold_key(2.5) == "pct_delay_over_2.5ms"
    assert quantile_key(0.5) == "p50" and quantile_key(0.999) == "p99.9"


@given(st.lists(st.floats(0, 500, allow_nan=False), min_size=1, max_size=200))
def test_properties(values: list[float]) -> None:
    d = delay_stats(pl.Series(values, dtype=pl.Float64))
    pcts = [d.pct_over[t] for t in (10.0, 20.0, 50.0, 100.0)]
    assert all(p is not None and 0.0 <= p <= 100.0 for p in pcts)
    assert pcts == sorted(pcts, reverse=True)  # a higher threshold never has more packets
    assert d.std_ms is not None and d.var_ms2 is not None
    assert d.std_ms**2 == pytest.approx(d.var_ms2, rel=1e-9, abs=1e-9)
    assert d.min_ms is not None and d.max_ms is not None and d.mean_ms is not None
    assert d.min_ms - 1e-9 <= d.mean_ms <= d.max_ms + 1e-9


def test_cdf() -> None:
    cdf = delay_cdf(pl.Series([3.0, 1.0, None, 2.0, 4.0]))
    assert cdf.get_column("delay_ms").to_list() == [1.0, 2.0, 3.0, 4.0]
    assert cdf.get_column("cdf").to_list() == [0.25, 0.5, 0.75, 1.0]
    thin = delay_cdf(pl.Series(np.arange(1000, dtype=np.float64)), points=11)
    assert thin.height == 11
    assert thin.row(0) == (0.0, 0.001) and thin.row(-1) == (999.0, 1.0)
