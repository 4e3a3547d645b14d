"""What the streaming match keeps between chunks besides its buffers: counts per flow
(directional 5-tuple hash) that decide, at the end, which flows crossed the taps the
other way and how large the end guard is; and which buffered ingress rows are final."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from cganalysis import _native
from cganalysis.capture.model import CaptureInfo
from cganalysis.errors import MatchError
from cganalysis.matching.flowacc import FlowAccumulator
from cganalysis.matching.options import MatchOptions
from cganalysis.matching.prescan import NO_WATERMARK, PointScan
from cganalysis.matching.summary import MatchSummary, SummaryCounts, make_summary

_ZERO = {
    "rows_in": pl.UInt64,
    "fwd": pl.UInt64,
    "fwd_bytes": pl.UInt64,
    "max_delay": pl.Int64,
    "rows_out": pl.UInt64,
    "rev": pl.UInt64,
    "rev_bytes": pl.UInt64,
    "alone": pl.UInt64,
}


class FlowHashCounts:
    """Per flow hash: ingress rows, those matched (and their bytes, largest delay);
    egress rows, those with a reverse twin (and their bytes), those seen only there."""

    def __init__(self) -> None:
        self.table = pl.DataFrame(schema={"flow_hash": pl.UInt64, **_ZERO})

    def _merge(self, part: pl.DataFrame) -> None:
        filled = part.with_columns(
            pl.lit(None, dtype).alias(c) for c, dtype in _ZERO.items() if c not in part.columns
        ).select(self.table.columns)
        self.table = (
            pl.concat([self.table, filled])
            .group_by("flow_hash")
            .agg(*(pl.col(c).max() if c == "max_delay" else pl.col(c).sum() for c in _ZERO))
        )

    def add_ingress(self, rows: pl.DataFrame) -> None:
        """Ingress rows with their fates (``_matched``, ``t_egress_ns``)."""
        matched = pl.col("_matched")
        self._merge(
            rows.group_by("flow_hash").agg(
                rows_in=pl.len().cast(pl.UInt64),
                fwd=matched.sum().cast(pl.UInt64),
                fwd_bytes=pl.col("size_bytes").cast(pl.UInt64).filter(matched).sum(),
                max_delay=(pl.col("t_egress_ns") - pl.col("t_ns")).filter(matched).max(),
            )
        )

    def add_egress(self, rows: pl.DataFrame) -> None:
        """Egress rows with their fates (``_matched``, ``_reverse``)."""
        rev = pl.col("_reverse")
        self._merge(
            rows.group_by("flow_hash").agg(
                rows_out=pl.len().cast(pl.UInt64),
                rev=rev.sum().cast(pl.UInt64),
                rev_bytes=pl.col("size_bytes").cast(pl.UInt64).filter(rev).sum(),
                alone=(~pl.col("_matched")).sum().cast(pl.UInt64),
            )
        )

    def with_ingress(self, rows: pl.DataFrame) -> FlowHashCounts:
        """A copy with ``rows`` added (to decide before they are written)."""
        copy = FlowHashCounts()
        copy.table = self.table
        copy.add_ingress(rows)
        return copy

    def reverse_flows(self) -> set[int]:
        """Flows whose packets reach the egress tap before the ingress tap."""
        t = self.table.with_columns(pl.col(c).fill_null(0) for c in ("rev", "fwd"))
        return {int(f) for f in t.filter(pl.col("rev") > pl.col("fwd"))["flow_hash"]}

    def check_direction(self, ingress: Path, egress: Path) -> None:
        t = self.table
        rev_packets = int(t["rev"].sum())
        if rev_packets and int(t["rev_bytes"].sum()) > int(t["fwd_bytes"].sum()):
            raise MatchError(
                f"most packets reach {egress} before {ingress} "
                f"({rev_packets} egress packets precede their ingress twin, "
                f"{int(t['fwd'].sum())} follow it): were ingress and egress given the "
                "wrong way round? Pass the capture taken where packets enter the bottleneck "
                "first."
            )

    def largest_delay(self, reverse: set[int]) -> int:
        kept = self.table.filter(~pl.col("flow_hash").is_in(sorted(reverse)))
        largest = kept["max_delay"].max()
        return 0 if largest is None else int(largest)  # type: ignore[arg-type]

    def of(self, column: str, flows: set[int], *, inside: bool) -> int:
        chosen = pl.col("flow_hash").is_in(sorted(flows))
        return int(self.table.filter(chosen if inside else ~chosen)[column].sum())


def fates(
    matcher: _native.StreamMatcher, buf: pl.DataFrame
) -> tuple[np.ndarray[Any, Any], pl.DataFrame]:
    """(resolved, ``buf`` with its rows' fates: ``_matched``, ``t_egress_ns``,
    ``_tos_egress``)."""
    resolved, matched, twin_ts, twin_tos = matcher.ingress_fates(
        buf["_row"].to_numpy().astype(np.uint64, copy=False)
    )
    return resolved, buf.with_columns(
        _matched=pl.Series(matched),
        t_egress_ns=pl.Series(twin_ts),
        _tos_egress=pl.Series(twin_tos),
    )


def emit_ready(
    matcher: _native.StreamMatcher,
    buf: pl.DataFrame,
    file_order: bool,
    watermark: int,
    hold: tuple[int, int] | None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows ready to be written, with their fates; the rest of the buffer).

    A row is ready when its fate is known, its place in the table is final (in time
    order: no ingress packet still to be read is earlier; ``watermark``) and it does not
    wait for the end guard (entered in ``hold``, ``(start, end]``); and so are the rows
    before it.
    """
    ok, with_fates = fates(matcher, buf)
    t = buf["t_ns"]
    has_t = t.is_not_null().to_numpy()
    t_np = t.fill_null(0).to_numpy()
    if not file_order and watermark != NO_WATERMARK:
        # rows without a time go last: only once no ingress packet is left to read
        ok = ok & has_t & (t_np <= watermark)
    if hold is not None:
        ok = ok & ~(has_t & (t_np > hold[0]) & (t_np <= hold[1]))
    k = int(np.argmin(ok)) if not ok.all() else buf.height
    return with_fates.head(k), buf.slice(k)


def summary_of(
    ingress: CaptureInfo,
    egress: CaptureInfo,
    ing: PointScan,
    eg: PointScan,
    counts: FlowHashCounts,
    acc: FlowAccumulator,
    reverse: set[int],
    span: tuple[int, int] | None,
    guard_ns: int,
    options: MatchOptions,
) -> MatchSummary:
    """The summary; ``acc`` holds the packet table's flows (reverse flows left out)."""
    totals = acc.totals()
    return make_summary(
        ingress,
        egress,
        SummaryCounts(
            packets_in=totals["packets_in"],
            packets_delivered=totals["packets_out"],
            packets_lost=totals["packets_lost"],
            packets_unknown=totals["packets_unknown"],
            egress_only_packets=counts.of("alone", reverse, inside=False),
            reverse_packets_in=counts.of("rows_in", reverse, inside=True),
            reverse_packets_out=counts.of("rows_out", reverse, inside=True),
            non_ip_packets_in=ing.rows - ing.ip_rows,
            non_ip_packets_out=eg.rows - eg.ip_rows,
            truncated_packets_in=ing.truncated_ip_rows,
        ),
        span,
        guard_ns,
        options.max_delay_ms,
    )
