"""Rows of the packet table made a batch at a time, in table order, equal to what
:func:`cganalysis.matching.table.build_packet_table` makes of the whole capture.

The only state carried from batch to batch is each RTP stream's last sequence number and
its unwrapped value (``rtp_seq_ext`` continues across batches).
"""

from __future__ import annotations

import polars as pl

from cganalysis.matching.table import packet_columns

_WRAP = 65536


def _shortest(step: pl.Expr) -> pl.Expr:
    """A 16-bit step taken the shortest way round the circle (as ``unwrap_rtp_seq``)."""
    return ((step + 32768) % _WRAP) - 32768


class SeqUnwrap:
    """``rtp_seq_ext`` per flow, continued across batches."""

    def __init__(self) -> None:
        self.carry = pl.DataFrame(
            schema={"flow_id": pl.UInt32, "_c_seq": pl.Int64, "_c_ext": pl.Int64}
        )

    def apply(self, batch: pl.DataFrame) -> pl.DataFrame:
        """``batch`` (with ``flow_id``, ``rtp_seq``, ``is_rtp``, in table order) with
        ``rtp_seq_ext``."""
        seq = pl.col("rtp_seq").cast(pl.Int64)
        first = seq.first().over("flow_id")
        base = (
            pl.when(pl.col("_c_ext").is_not_null())
            .then(pl.col("_c_ext") + _shortest(first - pl.col("_c_seq")))
            .otherwise(first)
        )
        steps = _shortest(seq.diff()).fill_null(0).cum_sum().over("flow_id")
        out = (
            batch.join(self.carry, on="flow_id", how="left", maintain_order="left")
            .with_columns(rtp_seq_ext=pl.when(pl.col("is_rtp")).then(base + steps))
            .drop("_c_seq", "_c_ext")
        )
        last = (
            out.filter(pl.col("is_rtp"))
            .group_by("flow_id")
            .agg(_c_seq=seq.last(), _c_ext=pl.col("rtp_seq_ext").last())
        )
        if last.height:
            self.carry = pl.concat(
                [self.carry.join(last, on="flow_id", how="anti"), last], how="vertical"
            )
        return out


def packet_rows(
    batch: pl.DataFrame,
    flow_ids: pl.DataFrame,
    unwrap: SeqUnwrap,
    egress_span_ns: tuple[int, int] | None,
    guard_ns: int,
) -> pl.DataFrame:
    """PACKETS rows of ingress packets in table order, each with its fate: ``_matched``,
    ``t_egress_ns`` and ``_tos_egress`` (the twin's TOS byte). ``flow_ids``: ``_fkey`` ->
    ``flow_id`` of every flow."""
    tos = pl.col("_tos_egress")
    with_ids = batch.with_columns(
        flow_id=pl.col("_fkey").replace_strict(
            flow_ids["_fkey"], flow_ids["flow_id"], return_dtype=pl.UInt32
        ),
        t_egress_ns=pl.when(pl.col("_matched")).then(pl.col("t_egress_ns")),
        ecn_egress=pl.when(pl.col("_matched")).then(tos & 3),
        dscp_egress=pl.when(pl.col("_matched")).then(tos // 4),
    )
    return unwrap.apply(with_ids).select(packet_columns(egress_span_ns, guard_ns))
