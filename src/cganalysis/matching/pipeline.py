"""From two captures to the packet, flow and egress-only tables and a summary."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from cganalysis.capture import Capture, Engine, read_capture_pair
from cganalysis.capture.rtp import mark_rtp
from cganalysis.errors import MatchError
from cganalysis.matching.flows import flow_table
from cganalysis.matching.options import MatchOptions
from cganalysis.matching.pairing import pair_packets
from cganalysis.matching.summary import MatchSummary, SummaryCounts, make_summary
from cganalysis.matching.table import assign_flow_ids, build_egress_only, build_packet_table


@dataclass(frozen=True)
class MatchedPackets:
    packets: pl.DataFrame  # schemas.PACKETS
    egress_only: pl.DataFrame  # schemas.EGRESS_ONLY
    summary: MatchSummary

    @cached_property
    def flows(self) -> pl.DataFrame:
        """The flow table (schemas.FLOWS), computed when first asked for."""
        return flow_table(self.packets)


def match_files(
    ingress: Path | str,
    egress: Path | str,
    *,
    engine: Engine = "native",
    options: MatchOptions | None = None,
) -> MatchedPackets:
    """Reads both captures (RTP streams decided at ingress, applied to both) and matches."""
    ing, eg = read_capture_pair(ingress, egress, engine=engine)
    return match_captures(ing, eg, options=options)


def _rtp_streams(packets: pl.DataFrame) -> set[tuple[int, int]]:
    rtp = packets.filter(pl.col("is_rtp")).select("flow_hash", "rtp_ssrc").unique()
    return {(int(f), int(s)) for f, s in rtp.iter_rows()}


def _ip_rows(capture: Capture) -> pl.DataFrame:
    """The IP packets, numbered (``_row``) in the order the pairing arrays refer to."""
    packets = capture.packets
    if packets["ip_version"].null_count():
        # a filter copies every column: only when there is something to leave out
        packets = packets.filter(pl.col("ip_version").is_not_null())
    return packets.with_row_index("_row")


def _in_flows(flow_hashes: set[int]) -> pl.Expr:
    hashes = pl.Series(sorted(flow_hashes), dtype=pl.UInt64)
    return pl.col("flow_hash").is_in(pl.lit(hashes).implode())


def _reverse_flows(
    ingress: pl.DataFrame, egress: pl.DataFrame, matched_in: pl.Series, reverse_eg: pl.Series
) -> set[int]:
    """Flows whose packets reach the egress tap before the ingress tap (a tap that sees
    both directions shows, say, TCP ACKs this way): they do not cross the bottleneck."""
    forward = (
        ingress.select("flow_hash", matched_in.alias("m"))
        .group_by("flow_hash")
        .agg(fwd=pl.col("m").sum())
    )
    backward = (
        egress.select("flow_hash", reverse_eg.alias("r"))
        .group_by("flow_hash")
        .agg(rev=pl.col("r").sum())
    )
    both = backward.join(forward, on="flow_hash", how="left").with_columns(
        pl.col("fwd").fill_null(0)
    )
    return {int(f) for f in both.filter(pl.col("rev") > pl.col("fwd"))["flow_hash"]}


def match_captures(
    ingress: Capture, egress: Capture, *, options: MatchOptions | None = None
) -> MatchedPackets:
    """Matches two captures already read (see :func:`match_files`)."""
    options = options or MatchOptions()
    ing_all, eg_all = _ip_rows(ingress), _ip_rows(egress)
    for cap, rows in ((ingress, ing_all), (egress, eg_all)):
        if rows.height == 0:
            raise MatchError(
                f"{cap.info.path}: no IP packets in the capture; check the interface and "
                "the capture filter"
            )
    # Both sides must agree on which streams are RTP: the ingress point decides.
    eg_all = mark_rtp(eg_all, _rtp_streams(ing_all))
    max_delay_ns = options.max_delay_ns
    pairing = pair_packets(ing_all, eg_all, max_delay_ns)

    matched_in = pl.Series("m", pairing.in_to_eg >= 0)
    reverse_eg = pl.Series("r", pairing.reverse_twin)
    reverse: set[int] = set()
    if reverse_eg.any():  # only a tap that sees both directions (or swapped files) has any
        reverse = _reverse_flows(ing_all, eg_all, matched_in, reverse_eg)
        fwd_bytes = int(ing_all["size_bytes"].filter(matched_in).sum())
        rev_bytes = int(eg_all["size_bytes"].filter(reverse_eg).sum())
        if rev_bytes > fwd_bytes:
            raise MatchError(
                f"most packets reach {egress.info.path} before {ingress.info.path} "
                f"({int(reverse_eg.sum())} egress packets precede their ingress twin, "
                f"{int(matched_in.sum())} follow it): were ingress and egress given the "
                "wrong way round? Pass the capture taken where packets enter the bottleneck "
                "first."
            )

    ing, eg = ing_all, eg_all
    if reverse:
        ing, eg = ing_all.filter(~_in_flows(reverse)), eg_all.filter(~_in_flows(reverse))
    ing = assign_flow_ids(ing)
    guard_ns = options.end_guard_ns
    if guard_ns is None:
        guard_ns = _largest_delay_ns(ing, eg_all, pairing.in_to_eg)
    span = egress.info.span_ns or _packet_span(eg_all)
    packets = build_packet_table(ing, eg_all, pairing.in_to_eg, span, guard_ns)
    flow_ids = ing.select("_fkey", "flow_id").unique("_fkey")
    egress_only = build_egress_only(eg, pairing.eg_to_in, flow_ids)
    summary = _summarise(
        ingress, egress, ing_all, eg_all, packets, egress_only, reverse, span, guard_ns, options
    )
    return MatchedPackets(packets=packets, egress_only=egress_only, summary=summary)


def _largest_delay_ns(
    ing: pl.DataFrame, eg: pl.DataFrame, in_to_eg: np.ndarray[Any, np.dtype[np.int64]]
) -> int:
    twin = in_to_eg[ing["_row"].to_numpy()]
    ok = twin >= 0
    if not ok.any():
        return 0
    t_in = ing["t_ns"].fill_null(0).to_numpy()[ok]
    t_out = eg["t_ns"].fill_null(0).to_numpy()[twin[ok]]
    return int((t_out - t_in).max())


def _packet_span(packets: pl.DataFrame) -> tuple[int, int] | None:
    t = packets["t_ns"].drop_nulls()
    if t.len() == 0:
        return None
    return int(t.min()), int(t.max())  # type: ignore[arg-type]


def _summarise(
    ingress: Capture,
    egress: Capture,
    ing_all: pl.DataFrame,
    eg_all: pl.DataFrame,
    packets: pl.DataFrame,
    egress_only: pl.DataFrame,
    reverse: set[int],
    span: tuple[int, int] | None,
    guard_ns: int,
    options: MatchOptions,
) -> MatchSummary:
    lost = packets["lost"]
    is_rev = _in_flows(reverse)
    return make_summary(
        ingress.info,
        egress.info,
        SummaryCounts(
            packets_in=packets.height,
            packets_delivered=int(lost.eq(False).sum()),
            packets_lost=int(lost.eq(True).sum()),
            packets_unknown=int(lost.is_null().sum()),
            egress_only_packets=egress_only.height,
            reverse_packets_in=int(ing_all.select(is_rev.sum()).item()),
            reverse_packets_out=int(eg_all.select(is_rev.sum()).item()),
            non_ip_packets_in=ingress.packets.height - ing_all.height,
            non_ip_packets_out=egress.packets.height - eg_all.height,
            truncated_packets_in=int(ing_all["truncated"].sum()),
        ),
        span,
        guard_ns,
        options.max_delay_ms,
    )
