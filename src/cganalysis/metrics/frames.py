"""Frame rate of an RTP video flow as the player sees it (Xu & Claypool's Table 6).

A video frame is the set of RTP packets of one flow with one RTP timestamp (RFC 3550: all
packets of a frame carry its sampling instant). A frame counts as delivered when every one
of its packets that entered the bottleneck left it: a frame missing a packet cannot be
decoded as sent, and frames the encoder skipped never enter at all, so both lower the
rate, as both lower what a player sees.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class FrameRate:
    frames_delivered: int
    frames_incomplete: int  # at least one packet lost at the bottleneck
    frame_rate_fps: float


def frame_rate(entered: pl.DataFrame, duration_s: float) -> FrameRate | None:
    """Over the matched packets that entered in a window of ``duration_s``; None when no
    packet is RTP, or when no frame's fate is known (every one entered outside the egress
    capture's span)."""
    rtp = entered.filter(pl.col("rtp_seq_ext").is_not_null() & pl.col("rtp_ts").is_not_null())
    if rtp.height == 0 or duration_s <= 0:
        return None
    frames = rtp.group_by("flow_id", "rtp_ts").agg(
        pl.col("lost").is_null().any().alias("unknown"),
        pl.col("lost").fill_null(False).any().alias("incomplete"),
    )
    # A frame with a packet of unknown fate (the captures' edges) is left out of both counts.
    known = frames.filter(~pl.col("unknown"))
    if known.height == 0:
        return None
    incomplete = int(known.get_column("incomplete").sum())
    delivered = known.height - incomplete
    return FrameRate(delivered, incomplete, delivered / duration_s)
