"""Repetitions: mean and Student-t 95 % confidence intervals."""

from __future__ import annotations

import math

import polars as pl
import pytest

from cganalysis.metrics.aggregate import aggregate_repetitions, aggregate_series, mean_ci

T_975_2 = 4.302652729911275  # t quantile for 2 degrees of freedom, from tables


def test_mean_ci_by_hand() -> None:
    r = mean_ci([1.0, 2.0, 3.0])
    assert (r.n, r.mean, r.std) == (3, 2.0, 1.0)
    assert r.half_width == pytest.approx(T_975_2 / math.sqrt(3))
    assert r.low == pytest.approx(2.0 - T_975_2 / math.sqrt(3))


def test_one_run_has_no_interval_and_nulls_are_skipped() -> None:
    r = mean_ci([5.0, None])
    assert (r.n, r.mean, r.half_width, r.low) == (1, 5.0, None, None)
    assert mean_ci([]).mean is None


def test_aggregate_repetitions_groups_conditions() -> None:
    runs = pl.DataFrame(
        {
            "qdisc": ["htb", "htb", "htb", "pfifo"],
            "cca": ["cubic"] * 4,
            "delay_mean_ms": [1.0, 2.0, 3.0, 40.0],
        }
    )
    agg = aggregate_repetitions(runs, ["qdisc", "cca"], ["delay_mean_ms"])
    htb = agg.row(0, named=True)
    assert (htb["qdisc"], htb["n"], htb["delay_mean_ms_mean"]) == ("htb", 3, 2.0)
    assert htb["delay_mean_ms_ci"] == pytest.approx(T_975_2 / math.sqrt(3))
    pfifo = agg.row(1, named=True)
    assert (pfifo["n"], pfifo["delay_mean_ms_mean"], pfifo["delay_mean_ms_ci"]) == (1, 40.0, None)


def test_aggregate_series_per_bin() -> None:
    s = pl.DataFrame(
        {
            "role": ["cg"] * 6,
            "t_s": [0.0, 0.5, 0.0, 0.5, 0.0, 0.5],
            "rate_mbps": [1.0, 10.0, 2.0, 10.0, 3.0, 10.0],
        }
    )
    out = aggregate_series(s)
    assert out.get_column("mean").to_list() == [2.0, 10.0]
    assert out.get_column("ci").to_list() == pytest.approx([T_975_2 / math.sqrt(3), 0.0])
