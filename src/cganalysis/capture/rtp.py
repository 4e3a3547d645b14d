"""Deciding which UDP packets are RTP: per stream (flow and SSRC), never per packet.

Any UDP payload whose first two bits are 2 parses as an RTP header, so a single packet
proves nothing. A stream counts as RTP when enough of its packets carry the same SSRC and
their sequence numbers, in time order, mostly step forward by small amounts (what an RTP
sender does, allowing for loss and a little reordering). RTCP multiplexed on the same
port (RFC 5761: packet types 200-206 read as marker + payload type 72-78) is excluded.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

#: One RTP stream: (flow_hash, SSRC).
RtpStream = tuple[int, int]


@dataclass(frozen=True)
class RtpRule:
    min_packets: int = 8
    #: Share of consecutive packets whose sequence number advances by 1..max_step.
    min_in_order_share: float = 0.8
    max_step: int = 64


def rtcp_like() -> pl.Expr:
    return pl.col("rtp_marker") & pl.col("rtp_pt").is_between(72, 78)


def classify_rtp_streams(packets: pl.DataFrame, rule: RtpRule | None = None) -> set[RtpStream]:
    """The (flow_hash, SSRC) pairs of ``packets`` (CAPTURE schema) that are RTP streams."""
    rule = rule or RtpRule()
    candidates = packets.lazy().filter(
        (pl.col("proto") == 17) & pl.col("rtp_ssrc").is_not_null() & ~rtcp_like()
    )
    step = (pl.col("rtp_seq").cast(pl.Int32).diff() % 65536).over("flow_hash", "rtp_ssrc")
    # Captures are nearly always in time order already: sort only when they are not.
    if not packets["t_ns"].is_sorted(nulls_last=True):
        candidates = candidates.sort("t_ns", nulls_last=True)
    streams = (
        candidates.with_columns(step=step)
        .group_by("flow_hash", "rtp_ssrc")
        .agg(
            n=pl.len(),
            in_order=pl.col("step").is_between(1, rule.max_step).sum(),
        )
        .filter(
            (pl.col("n") >= rule.min_packets)
            & (pl.col("in_order") >= rule.min_in_order_share * (pl.col("n") - 1))
        )
        .select("flow_hash", "rtp_ssrc")
        .collect()
    )
    return {(int(f), int(s)) for f, s in streams.iter_rows()}


def stream_key(flow_hash: pl.Expr, ssrc: pl.Expr) -> pl.Expr:
    """One u64 per (flow, SSRC); SSRC null (not RTP) keys the flow alone."""
    mixed = (ssrc.cast(pl.UInt64) + 1).fill_null(0) * 0x9E37_79B9_7F4A_7C15
    return flow_hash ^ mixed


def mark_rtp(packets: pl.DataFrame, streams: set[RtpStream]) -> pl.DataFrame:
    """Sets ``is_rtp`` from a set of streams (for egress: the streams found at ingress)."""
    keys = pl.Series(
        [f ^ (((s + 1) * 0x9E37_79B9_7F4A_7C15) & 0xFFFF_FFFF_FFFF_FFFF) for f, s in streams],
        dtype=pl.UInt64,
    )
    key = stream_key(pl.col("flow_hash"), pl.col("rtp_ssrc"))
    in_stream = key.is_in(pl.lit(keys).implode()) & pl.col("rtp_ssrc").is_not_null() & ~rtcp_like()
    return packets.with_columns(is_rtp=in_stream.fill_null(False))


def unwrap_rtp_seq(seq: pl.Expr, over: list[str]) -> pl.Expr:
    """RTP sequence numbers extended past 16 bits, in the frame's row order.

    Each step is taken as the shortest way round the 16-bit circle, so wraps and small
    reorderings both come out right; the first packet of a stream keeps its own value.
    """
    step = seq.cast(pl.Int64).diff()
    wrapped = ((step + 32768) % 65536) - 32768
    return (seq.cast(pl.Int64).first() + wrapped.fill_null(0).cum_sum()).over(over)
