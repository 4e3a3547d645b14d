"""RTP streams and flow numbers of a capture read a chunk at a time, equal to what
:func:`cganalysis.capture.rtp.classify_rtp_streams` and
:func:`cganalysis.matching.table.assign_flow_ids` find on the whole table.

The RTP rule counts, per (flow, SSRC), the consecutive packets whose sequence number
steps forward by 1..64 in time order: each chunk's counts are added to the running ones,
with the step across the chunk boundary from the stream's last sequence number. State:
one row per candidate stream and one per (flow, candidate SSRC).
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from cganalysis.capture.rtp import RtpRule, RtpStream, rtcp_like, stream_key

_STREAM = ["flow_hash", "rtp_ssrc"]


def _candidate() -> pl.Expr:
    """Packets that may belong to an RTP stream (as the classifier filters them)."""
    return (pl.col("proto") == 17) & pl.col("rtp_ssrc").is_not_null() & ~rtcp_like()


def _in_order(seq: pl.Expr, max_step: int) -> pl.Expr:
    return ((seq.cast(pl.Int32).diff() % 65536).is_between(1, max_step)).sum()


class RtpScan:
    """Running RTP counts (candidates fed in time order) and first appearances."""

    def __init__(self, rule: RtpRule | None = None) -> None:
        self.rule = rule or RtpRule()
        self.counts = pl.DataFrame(
            schema={
                "flow_hash": pl.UInt64,
                "rtp_ssrc": pl.UInt32,
                "n": pl.UInt64,
                "in_order": pl.UInt64,
                "last": pl.Int32,
            }
        )
        #: per (flow_hash, candidate SSRC or null): earliest time and first IP row
        self.firsts = pl.DataFrame(
            schema={
                "flow_hash": pl.UInt64,
                "cand_ssrc": pl.UInt32,
                "t_min": pl.Int64,
                "row_min": pl.UInt64,
            }
        )

    def add(self, packets: pl.DataFrame, ip: pl.DataFrame, first_row: int) -> None:
        """One chunk in file order (``ip``: its IP packets, the first being IP row
        ``first_row``); the counts assume the file is in time order."""
        self.add_candidates(packets.filter(_candidate()))
        chunk_firsts = (
            ip.lazy()
            .with_row_index("_row", offset=first_row)
            .group_by(
                "flow_hash", pl.when(_candidate()).then(pl.col("rtp_ssrc")).alias("cand_ssrc")
            )
            .agg(t_min=pl.col("t_ns").min(), row_min=pl.col("_row").min().cast(pl.UInt64))
        )
        self.firsts = (
            pl.concat([self.firsts.lazy(), chunk_firsts])
            .group_by("flow_hash", "cand_ssrc")
            .agg(pl.col("t_min").min(), pl.col("row_min").min())
            .collect()
        )

    def add_candidates(self, cand: pl.DataFrame) -> None:
        """Candidate packets, in time order, following those added before."""
        if cand.height == 0:
            return
        step = self.rule.max_step
        chunk = cand.group_by(_STREAM).agg(
            n_c=pl.len().cast(pl.UInt64),
            io_c=_in_order(pl.col("rtp_seq"), step).cast(pl.UInt64),
            first_c=pl.col("rtp_seq").first().cast(pl.Int32),
            last_c=pl.col("rtp_seq").last().cast(pl.Int32),
        )
        both = self.counts.join(chunk, on=_STREAM, how="full", coalesce=True)
        across = ((pl.col("first_c") - pl.col("last")) % 65536).is_between(1, step)
        self.counts = both.select(
            *_STREAM,
            n=pl.col("n").fill_null(0) + pl.col("n_c").fill_null(0),
            in_order=pl.col("in_order").fill_null(0)
            + pl.col("io_c").fill_null(0)
            + across.fill_null(False).cast(pl.UInt64),
            last=pl.coalesce("last_c", "last"),
        )

    def streams(self) -> set[RtpStream]:
        rule = self.rule
        found = self.counts.filter(
            (pl.col("n") >= rule.min_packets)
            & (pl.col("in_order") >= rule.min_in_order_share * (pl.col("n") - 1))
        )
        return {(int(f), int(s)) for f, s in found.select(_STREAM).iter_rows()}


def classify_in_time_order(chunks: Iterable[pl.DataFrame], watermarks: list[int]) -> set[RtpStream]:
    """The RTP streams of a capture out of time order: candidates are held until the
    watermark says none earlier can follow, then counted in (time, row) order."""
    scan = RtpScan()
    held = pl.DataFrame()
    first_row = 0
    order = [pl.col("t_ns"), pl.col("_row")]
    for c, packets in enumerate(chunks):
        ip = packets.filter(pl.col("ip_version").is_not_null()).with_row_index(
            "_row", offset=first_row
        )
        first_row += ip.height
        cand = ip.filter(_candidate()).select("t_ns", "_row", *_STREAM, "rtp_seq")
        held = pl.concat([held, cand]) if held.width else cand
        due = pl.col("t_ns") <= watermarks[c + 1]
        scan.add_candidates(held.filter(due).sort(order))
        held = held.filter(~due | pl.col("t_ns").is_null())
    if held.width:
        scan.add_candidates(held.sort(order, nulls_last=True))
    return scan.streams()


def first_appearances(firsts: pl.DataFrame, streams: set[RtpStream]) -> pl.DataFrame:
    """``flow_id``, ``_fkey`` and ``flow_hash`` of every flow, numbered by first appearance."""
    keys = pl.Series(
        [stream_key_int(f, s) for f, s in streams],
        dtype=pl.UInt64,
    )
    candidate_key = stream_key(pl.col("flow_hash"), pl.col("cand_ssrc"))
    is_rtp = candidate_key.is_in(pl.lit(keys).implode()) & pl.col("cand_ssrc").is_not_null()
    return (
        firsts.with_columns(
            _fkey=stream_key(pl.col("flow_hash"), pl.when(is_rtp).then(pl.col("cand_ssrc")))
        )
        .group_by("_fkey")
        .agg(
            _first=pl.col("t_min").min(),
            _first_row=pl.col("row_min").min(),
            flow_hash=pl.col("flow_hash").first(),
        )
        .sort("_first", "_first_row", nulls_last=True)
        .with_row_index("flow_id")
        .select(pl.col("flow_id").cast(pl.UInt32), "_fkey", "flow_hash")
    )


def stream_key_int(flow_hash: int, ssrc: int) -> int:
    """:func:`stream_key` of one (flow, SSRC), in Python integers."""
    return flow_hash ^ (((ssrc + 1) * 0x9E37_79B9_7F4A_7C15) & 0xFFFF_FFFF_FFFF_FFFF)
