"""The flow table: one row per flow of the packet table, with its counts, loss and delays."""

from __future__ import annotations

import polars as pl

from cganalysis import schemas

_IDENTITY = ["flow_id", "proto", "ip_version", "src", "dst", "sport", "dport", "rtp_ssrc"]


def _ecn_count(codepoint: int) -> pl.Expr:
    return (pl.col("ecn_ingress") == codepoint).sum().cast(pl.UInt64)


def flow_table(packets: pl.DataFrame) -> pl.DataFrame:
    """Aggregates a PACKETS table into the FLOWS table (sorted by flow_id)."""
    delivered = pl.col("lost").eq(False)
    delay = pl.col("delay_ms")
    span_s = (pl.col("t_last_ns") - pl.col("t_first_ns")) / 1e9
    known = pl.col("packets_in") - pl.col("packets_unknown")
    flows = (
        packets.group_by("flow_id")
        .agg(
            *(pl.col(c).first() for c in _IDENTITY if c != "flow_id"),
            packets_in=pl.len().cast(pl.UInt64),
            packets_out=delivered.sum().cast(pl.UInt64),
            bytes_in=pl.col("size_bytes").cast(pl.UInt64).sum(),
            bytes_out=pl.col("size_bytes").cast(pl.UInt64).filter(delivered).sum(),
            packets_lost=pl.col("lost").eq(True).sum().cast(pl.UInt64),
            packets_unknown=pl.col("lost").is_null().sum().cast(pl.UInt64),
            delay_mean_ms=delay.mean(),
            delay_min_ms=delay.min(),
            delay_p50_ms=delay.quantile(0.5, interpolation="linear"),
            delay_p95_ms=delay.quantile(0.95, interpolation="linear"),
            delay_p99_ms=delay.quantile(0.99, interpolation="linear"),
            delay_max_ms=delay.max(),
            ecn_not_ect_in=_ecn_count(0),
            ecn_ect1_in=_ecn_count(1),
            ecn_ect0_in=_ecn_count(2),
            ecn_ce_in=_ecn_count(3),
            ce_marked=pl.col("ce_marked").eq(True).sum().cast(pl.UInt64),
            t_first_ns=pl.col("t_ingress_ns").min(),
            t_last_ns=pl.col("t_ingress_ns").max(),
        )
        .with_columns(
            loss_rate=pl.when(known > 0).then(
                pl.col("packets_lost").cast(pl.Float64) / known.cast(pl.Float64)
            ),
            rate_in_mbps=pl.when(span_s > 0).then(
                pl.col("bytes_in").cast(pl.Float64) * 8 / span_s / 1e6
            ),
        )
        .sort("flow_id")
    )
    return schemas.check_schema(flows, schemas.FLOWS, "flows")
