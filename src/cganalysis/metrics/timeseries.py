"""Per-bin series of one run for the TMA-style figures: rate, delay and loss per role.

Rates are delivered (egress time) and offered (ingress time); delay and loss are over the
packets that entered in the bin, so a bin's loss rate is the fate of what was sent then.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from cganalysis.metrics.bitrate import bitrate_series, n_bins
from cganalysis.metrics.capacity import LinkCapacity
from cganalysis.metrics.timebase import NS_PER_S, Prepared


def run_timeseries(
    prepared: Prepared,
    *,
    bin_s: float,
    roles: Sequence[str] = ("cg", "competitor"),
    capacity: LinkCapacity | None = None,
    start_s: float | None = None,
    end_s: float | None = None,
) -> pl.DataFrame:
    """One row per role and bin, in the RUN_TIMESERIES layout, over the whole data by default."""
    start = (
        float(np.floor(min(prepared.data_start_s, 0.0) / bin_s) * bin_s)
        if start_s is None
        else start_s
    )
    end = prepared.data_end_s if end_s is None else end_s
    # Only the six columns the series read, of the roles shown (a copy of every column of
    # the packets was a third of the time here).
    columns = ["role", "t_in_ns", "t_out_ns", "size_bytes", "delay_ms", "lost"]
    parts = [prepared.role(r).select(columns) for r in roles]
    pk = pl.concat(parts) if parts else prepared.packets.select(columns).clear()
    single = prepared.mode == "single"
    rate = bitrate_series(
        pk,
        start_s=start,
        end_s=end,
        bin_s=bin_s,
        point="ingress" if single else "egress",
        keys=roles,
    ).select("t_s", "role", "rate_mbps")
    offered = bitrate_series(
        pk, start_s=start, end_s=end, bin_s=bin_s, point="ingress", keys=roles
    ).select("t_s", "role", pl.col("rate_mbps").alias("offered_mbps"))
    start_ns, bin_ns = round(start * NS_PER_S), round(bin_s * NS_PER_S)
    n = n_bins(start, end, bin_s)
    rel = pl.col("t_in_ns") - start_ns
    per_bin = (
        pk.lazy()
        .select("role", "t_in_ns", "delay_ms", "lost")
        .filter((rel >= 0) & (rel < n * bin_ns))
        .group_by("role", (rel // bin_ns).cast(pl.Int64).alias("bin"))
        .agg(
            pl.len().cast(pl.Int64).alias("packets"),
            pl.col("delay_ms").mean().alias("delay_mean_ms"),
            pl.col("delay_ms").quantile(0.95, interpolation="linear").alias("delay_p95_ms"),
            pl.col("delay_ms").max().alias("delay_max_ms"),
            (
                100.0
                * pl.col("lost").cast(pl.Float64).sum()
                / pl.col("lost").is_not_null().sum().cast(pl.Float64)
            ).alias("loss_pct"),
        )
        .with_columns((start + pl.col("bin").cast(pl.Float64) * bin_s).alias("t_s"))
        .drop("bin")
        .collect()
    )
    out = (
        rate.join(offered, on=["t_s", "role"], how="left")
        .join(per_bin, on=["t_s", "role"], how="left")
        .with_columns(pl.col("packets").fill_null(0))
    )
    if capacity is not None:
        cap = capacity.series(start, end, bin_s)
        out = out.join(cap, on="t_s", how="left")
    else:
        out = out.with_columns(pl.lit(None, dtype=pl.Float64).alias("capacity_mbps"))
    return out.select(
        "t_s",
        "role",
        "rate_mbps",
        "offered_mbps",
        "delay_mean_ms",
        "delay_p95_ms",
        "delay_max_ms",
        # NaN (no packet with a known fate in the bin) becomes null: no value, not 0 %.
        pl.col("loss_pct").fill_nan(None),
        "packets",
        "capacity_mbps",
    ).sort("role", "t_s")
