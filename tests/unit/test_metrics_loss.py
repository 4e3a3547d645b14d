"""Loss from the two capture points and from RTP sequence gaps."""

from __future__ import annotations

import polars as pl

from cganalysis.metrics.loss import Loss, loss, rtp_gap_loss
from tests.unit.synthetic import flow, table


def test_matched_loss_ignores_unknown_fates() -> None:
    df = flow([0, 1, 2, 3, 4], lost=[False, True, None, False, True])
    assert loss(df) == Loss(lost=2, known=4)
    assert loss(df).rate == 0.5


def test_no_loss_is_zero_and_nothing_known_is_none() -> None:
    assert loss(flow([0, 1, 2])).rate == 0.0
    assert loss(flow([0, 1], lost=[None, None])).rate is None


def test_rtp_gap_loss_counts_distinct_sequence_numbers() -> None:
    # Expected 0..8 = 9, received {0,1,2,4,5,8} = 6 (5 duplicated): 3 lost.
    seq = [0, 1, 2, 4, 5, 5, 8]
    df = flow([i * 0.01 for i in range(7)], rtp_ssrc=1, rtp_seq=seq, single=True)
    assert rtp_gap_loss(df) == Loss(lost=3, known=9)


def test_rtp_gap_loss_is_per_flow_and_uses_the_extended_sequence() -> None:
    # One flow wraps 65535 -> 0 (extended 65536); the other has one gap.
    a = flow([0, 1, 2], flow_id=1, rtp_ssrc=1, rtp_seq=[65534, 65535, 65536], single=True)
    b = flow([0, 1, 2], flow_id=2, rtp_ssrc=2, rtp_seq=[10, 12, 13], single=True)
    assert rtp_gap_loss(table(a, b)) == Loss(lost=1, known=7)


def test_no_rtp_gives_nothing_known() -> None:
    assert rtp_gap_loss(flow([0, 1])).rate is None
    assert rtp_gap_loss(flow([0, 1]).filter(pl.lit(value=False))).known == 0
