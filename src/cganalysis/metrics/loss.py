"""Loss rates: from the two capture points, or from RTP sequence gaps in a single capture.

Two points: a packet that entered and never left is lost; packets whose fate is unknown
(``lost`` null: they entered outside the egress capture's span) are left out of both the
numerator and the denominator.

One point (RFC 3550 section 6.4.1): expected = highest - lowest extended sequence + 1,
received = distinct sequence numbers seen; duplicates do not hide losses.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class Loss:
    lost: int
    known: int  # packets whose fate is known (or, for RTP gaps, the packets expected)

    @property
    def rate(self) -> float | None:
        """Lost / known in [0, 1]; None when nothing is known."""
        return self.lost / self.known if self.known else None


def loss(packets: pl.DataFrame) -> Loss:
    """From the ``lost`` column of matched packets."""
    known = packets.filter(pl.col("lost").is_not_null())
    return Loss(lost=int(known.get_column("lost").sum()), known=known.height)


def rtp_gap_loss(packets: pl.DataFrame) -> Loss:
    """From RTP extended sequence numbers, per flow (5-tuple + SSRC), summed over flows."""
    rtp = packets.filter(pl.col("rtp_seq_ext").is_not_null())
    if rtp.height == 0:
        return Loss(0, 0)
    per_flow = rtp.group_by("flow_id").agg(
        (pl.col("rtp_seq_ext").max() - pl.col("rtp_seq_ext").min() + 1).alias("expected"),
        pl.col("rtp_seq_ext").n_unique().alias("received"),
    )
    expected = int(per_flow.get_column("expected").sum())
    received = int(per_flow.get_column("received").sum())
    return Loss(lost=expected - received, known=expected)
