"""The flow table of a packet table seen a batch at a time (one running row per flow),
with the delay percentiles exact: order statistics found by a radix search over the
written packet table (a few passes over two of its columns, memory per flow only).

Everything equals :func:`cganalysis.matching.flows.flow_table` of the whole table except
``delay_mean_ms``, the exact mean of the integer nanosecond delays (polars' sum of the
millisecond floats may differ from it in the last bits).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import polars as pl

from cganalysis import schemas
from cganalysis.matching.table import NS_PER_MS

_IDENTITY = ["proto", "ip_version", "src", "dst", "sport", "dport", "rtp_ssrc"]
QUANTILES = {"delay_p50_ms": 0.5, "delay_p95_ms": 0.95, "delay_p99_ms": 0.99}
#: Bits of the delay resolved per pass over the table.
_DIGIT = 11


def _ecn(codepoint: int) -> pl.Expr:
    return (pl.col("ecn_ingress") == codepoint).sum().cast(pl.UInt64)


_SUMS = [
    "packets_in",
    "packets_out",
    "bytes_in",
    "bytes_out",
    "packets_lost",
    "packets_unknown",
    "n_delay",
    "delay_sum_ns",
    "ecn_not_ect_in",
    "ecn_ect1_in",
    "ecn_ect0_in",
    "ecn_ce_in",
    "ce_marked",
]


class FlowAccumulator:
    def __init__(self) -> None:
        self.state: pl.DataFrame | None = None

    def add(self, packets: pl.DataFrame) -> None:
        """A batch of PACKETS rows, in table order (the first row names the flow)."""
        delivered = pl.col("lost").eq(False)
        delay = pl.col("delay_ms")
        size = pl.col("size_bytes").cast(pl.UInt64)
        batch = packets.group_by("flow_id", maintain_order=True).agg(
            *(pl.col(c).first() for c in _IDENTITY),
            packets_in=pl.len().cast(pl.UInt64),
            packets_out=delivered.sum().cast(pl.UInt64),
            bytes_in=size.sum(),
            bytes_out=size.filter(delivered).sum(),
            packets_lost=pl.col("lost").eq(True).sum().cast(pl.UInt64),
            packets_unknown=pl.col("lost").is_null().sum().cast(pl.UInt64),
            n_delay=delay.count().cast(pl.UInt64),
            delay_sum_ns=(pl.col("t_egress_ns") - pl.col("t_ingress_ns")).sum(),
            delay_min_ms=delay.min(),
            delay_max_ms=delay.max(),
            ecn_not_ect_in=_ecn(0),
            ecn_ect1_in=_ecn(1),
            ecn_ect0_in=_ecn(2),
            ecn_ce_in=_ecn(3),
            ce_marked=pl.col("ce_marked").eq(True).sum().cast(pl.UInt64),
            t_first_ns=pl.col("t_ingress_ns").min(),
            t_last_ns=pl.col("t_ingress_ns").max(),
        )
        if self.state is None:
            self.state = batch
            return
        self.state = (
            pl.concat([self.state, batch])
            .group_by("flow_id", maintain_order=True)
            .agg(
                *(pl.col(c).first() for c in _IDENTITY),
                *(pl.col(c).sum() for c in _SUMS),
                pl.col("delay_min_ms").min(),
                pl.col("delay_max_ms").max(),
                pl.col("t_first_ns").min(),
                pl.col("t_last_ns").max(),
            )
            .select(batch.columns)
        )

    def remap(self, old_to_new: pl.DataFrame) -> None:
        """Keeps the flows in ``old_to_new`` (``flow_id``, ``new_id``), renumbered."""
        if self.state is not None:
            self.state = (
                self.state.join(old_to_new, on="flow_id")
                .with_columns(flow_id=pl.col("new_id"))
                .drop("new_id")
            )

    def totals(self) -> dict[str, int]:
        if self.state is None:
            return dict.fromkeys(_SUMS, 0)
        return {c: int(self.state[c].sum()) for c in _SUMS}

    def table(
        self, delays: Callable[[], Iterator[pl.DataFrame]], max_delay_ns: int
    ) -> pl.DataFrame:
        """The FLOWS table; ``delays()`` yields the written table's (flow_id, delay_ms)
        in batches, once per pass of the percentile search."""
        if self.state is None:
            return schemas.empty(schemas.FLOWS)
        known = pl.col("packets_in") - pl.col("packets_unknown")
        span_s = (pl.col("t_last_ns") - pl.col("t_first_ns")) / 1e9
        quantiles = exact_quantiles(delays, self.state.select("flow_id", "n_delay"), max_delay_ns)
        flows = (
            self.state.join(quantiles, on="flow_id", how="left")
            .with_columns(
                delay_mean_ms=pl.when(pl.col("n_delay") > 0).then(
                    pl.col("delay_sum_ns").cast(pl.Float64)
                    / pl.col("n_delay").cast(pl.Float64)
                    / NS_PER_MS
                ),
                loss_rate=pl.when(known > 0).then(
                    pl.col("packets_lost").cast(pl.Float64) / known.cast(pl.Float64)
                ),
                rate_in_mbps=pl.when(span_s > 0).then(
                    pl.col("bytes_in").cast(pl.Float64) * 8 / span_s / 1e6
                ),
            )
            .sort("flow_id")
            .select(list(schemas.FLOWS))
        )
        return schemas.check_schema(flows, schemas.FLOWS, "flows")


def _targets(counts: pl.DataFrame) -> pl.DataFrame:
    """(flow_id, rank) of every order statistic the percentiles interpolate between."""
    rows = []
    for flow_id, n in counts.filter(pl.col("n_delay") > 0).iter_rows():
        for q in QUANTILES.values():
            idx = (n - 1) * q
            rows += [(flow_id, math.floor(idx)), (flow_id, math.ceil(idx))]
    return pl.DataFrame(
        rows, schema={"flow_id": pl.UInt32, "rank": pl.Int64}, orient="row"
    ).unique()


def _order_statistics(
    delays: Callable[[], Iterator[pl.DataFrame]], targets: pl.DataFrame, max_delay_ns: int
) -> pl.DataFrame:
    """(flow_id, rank, d): the rank-th smallest delay of each flow in integer ns.

    Radix search from the top bits: each pass counts, per target, the delays that share
    the target's prefix found so far by their next digit, and keeps the digit whose bucket
    holds the target's rank."""
    bits = max(1, int(max_delay_ns).bit_length())
    state = targets.with_columns(prefix=pl.lit(0, pl.Int64), residual=pl.col("rank"))
    done = 0
    while done < bits:
        width = min(_DIGIT, bits - done)
        shift = bits - done - width
        wanted = state.select("flow_id", "prefix").unique()
        counts: pl.DataFrame | None = None
        for batch in delays():
            d = (pl.col("delay_ms") * NS_PER_MS).round().cast(pl.Int64)
            hits = (
                batch.lazy()
                .filter(pl.col("delay_ms").is_not_null())
                .select("flow_id", d.alias("d"))
                .join(wanted.lazy(), on="flow_id")
                .filter(pl.col("d") // (1 << (shift + width)) == pl.col("prefix"))
                .group_by(
                    "flow_id", "prefix", (pl.col("d") // (1 << shift) % (1 << width)).alias("digit")
                )
                .agg(k=pl.len())
                .collect()
            )
            counts = hits if counts is None else pl.concat([counts, hits])
            counts = counts.group_by("flow_id", "prefix", "digit").agg(pl.col("k").sum())
        assert counts is not None
        cum = counts.sort("digit").with_columns(
            upto=pl.col("k").cum_sum().over("flow_id", "prefix")
        )
        state = (
            state.join(cum, on=["flow_id", "prefix"])
            .filter(pl.col("upto") > pl.col("residual"))
            .sort("digit")
            .group_by("flow_id", "rank", maintain_order=True)
            .first()
            .select(
                "flow_id",
                "rank",
                prefix=pl.col("prefix") * (1 << width) + pl.col("digit"),
                residual=pl.col("residual") - (pl.col("upto") - pl.col("k")),
            )
        )
        done += width
    return state.select("flow_id", "rank", d=pl.col("prefix"))


def exact_quantiles(
    delays: Callable[[], Iterator[pl.DataFrame]], counts: pl.DataFrame, max_delay_ns: int
) -> pl.DataFrame:
    """flow_id and the QUANTILES columns, linear interpolation as polars' ``quantile``."""
    targets = _targets(counts)
    names = list(QUANTILES)
    if targets.height == 0:
        return pl.DataFrame(schema={"flow_id": pl.UInt32, **dict.fromkeys(names, pl.Float64)})
    found = _order_statistics(delays, targets, max_delay_ns).with_columns(
        v=pl.col("d") / NS_PER_MS  # the delay_ms value itself (same operation as the table)
    )
    value = dict(zip(zip(found["flow_id"], found["rank"], strict=True), found["v"], strict=True))
    rows = []
    for flow_id, n in counts.filter(pl.col("n_delay") > 0).iter_rows():
        row: list[float] = []
        for q in QUANTILES.values():
            idx = (n - 1) * q
            lo, hi = math.floor(idx), math.ceil(idx)
            v_lo, v_hi = value[(flow_id, lo)], value[(flow_id, hi)]
            row.append(v_lo if lo == hi else v_lo + (v_hi - v_lo) * (idx - lo))
        rows.append((flow_id, *row))
    return pl.DataFrame(
        rows, schema={"flow_id": pl.UInt32, **dict.fromkeys(names, pl.Float64)}, orient="row"
    )
