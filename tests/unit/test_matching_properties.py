"""Property tests: synthetic capture pairs with known truth; the matcher must recover it.

Each example writes two real pcap files (ingress, egress) from a model bottleneck that
delays, drops, reorders, duplicates, retransmits and CE-marks packets, with RTP sequence
numbers and IP IDs that wrap, then runs the whole pipeline on them.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import polars as pl
from hypothesis import HealthCheck, given, settings

from cganalysis.matching import MatchedPackets, match_files
from tests.support.synthetic import Knobs, Scenario, knobs_strategy, make_scenario

knobs = knobs_strategy()


def run_pipeline(scenario: Scenario) -> MatchedPackets:
    with tempfile.TemporaryDirectory() as tmp:
        ingress, egress = scenario.write(Path(tmp))
        return match_files(ingress, egress)


def expected_verdict(truth: pl.DataFrame) -> pl.DataFrame:
    """The loss verdict the definition asks for: a dropped packet is lost only if it
    entered inside the egress capture's span and at least the largest delay before its end."""
    delivered = truth.filter(pl.col("t_egress_ns").is_not_null())
    first, last = delivered["t_egress_ns"].min(), delivered["t_egress_ns"].max()
    guard = (delivered["t_egress_ns"] - delivered["t_ns"]).max()
    inside = (pl.col("t_ns") >= first) & (pl.col("t_ns") <= last - guard)  # type: ignore[operator]
    return truth.with_columns(
        lost=pl.when(pl.col("t_egress_ns").is_not_null())
        .then(False)
        .when(inside)
        .then(True)
        .otherwise(None)
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(knobs)
def test_matcher_recovers_the_truth(k: Knobs) -> None:
    scenario = make_scenario(k)
    if scenario.egress.height == 0:
        return  # nothing left the queue: covered by the empty-capture tests
    result = run_pipeline(scenario)
    truth = expected_verdict(scenario.truth)
    got = result.packets.join(
        truth.rename(
            {"t_egress_ns": "true_egress_ns", "lost": "true_lost", "ecn_egress": "true_ecn"}
        ),
        left_on="t_ingress_ns",
        right_on="t_ns",
        how="full",
    )
    assert got["t_ingress_ns"].null_count() == 0, "a truth packet has no row"
    assert result.packets.height == truth.height

    # Copies of one packet are byte-identical: only their multiset of fates is defined
    # (for a lone packet that is its own fate). Which copy is the undelivered one is not,
    # so at the capture's end a copy 1 us inside the unknown window may stand for one just
    # outside it: copies are compared on how many were not delivered.
    per_group = got.group_by("group").agg(
        n=pl.len(),
        egress=pl.col("t_egress_ns").drop_nulls().sort(),
        true_egress=pl.col("true_egress_ns").drop_nulls().sort(),
        lost=pl.col("lost").eq(True).sum(),
        true_lost=pl.col("true_lost").eq(True).sum(),
        unknown=pl.col("lost").is_null().sum(),
        true_unknown=pl.col("true_lost").is_null().sum(),
    )
    verdicts_differ = (pl.col("lost") != pl.col("true_lost")) | (
        pl.col("unknown") != pl.col("true_unknown")
    )
    bad = per_group.filter(
        (pl.col("egress") != pl.col("true_egress")) | ((pl.col("n") == 1) & verdicts_differ)
    )
    assert bad.height == 0, f"wrong fates for {bad.height} packets:\n{bad.head()}"

    # A packet with no copies: its own egress time, ECN and CE verdict, exactly.
    single = got.join(per_group.filter(pl.col("n") == 1).select("group"), on="group")
    assert single["t_egress_ns"].eq_missing(single["true_egress_ns"]).all()
    assert single["ecn_egress"].eq_missing(single["true_ecn"]).all()
    became_ce = (single["true_ecn"] == 3) & (single["ecn_ingress"] != 3)
    assert single["ce_marked"].eq_missing(became_ce).all()
    delivered = got.filter(pl.col("t_egress_ns").is_not_null())
    # The quotient correctly rounded, in Python (polars' division by a scalar multiplies by
    # its reciprocal, and can differ from it in the last bit).
    ns = zip(delivered["t_egress_ns"], delivered["t_ingress_ns"], strict=True)
    exact = pl.Series([(out - inn) / 1_000_000 for out, inn in ns], dtype=pl.Float64)
    assert (delivered["delay_ms"] == exact).all()
    assert (delivered["delay_ms"] >= 0).all()
    assert result.egress_only.height == 0
    # Flow table totals agree with the packet table.
    assert int(result.flows["packets_in"].sum()) == result.packets.height
    assert int(result.flows["packets_lost"].sum()) == int(result.packets["lost"].eq(True).sum())
