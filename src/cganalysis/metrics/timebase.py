"""From a PACKETS table to the frame every metric reads: roles assigned, times relative.

Times become integer nanoseconds from the run's origin ``t0`` (``t_in_ns``, ``t_out_ns``), so
binning stays exact; seconds appear only at the edges (windows, series).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import polars as pl

from cganalysis.errors import ConfigError
from cganalysis.metrics.roles import assign_roles, dominant_direction
from cganalysis.metrics.runfacts import RunFacts, Window

NS_PER_S = 1_000_000_000

#: Columns of PACKETS the metrics need, and the optional ones (RTP, ECN) they use if present.
REQUIRED_COLUMNS: tuple[str, ...] = (
    "flow_id",
    "proto",
    "src",
    "dst",
    "sport",
    "dport",
    "size_bytes",
    "t_ingress_ns",
    "t_egress_ns",
    "delay_ms",
    "lost",
)
OPTIONAL_COLUMNS: dict[str, pl.DataType] = {
    "ce_marked": pl.Boolean(),
    "rtp_ssrc": pl.UInt32(),
    "rtp_seq_ext": pl.Int64(),
    "rtp_ts": pl.UInt32(),
    # The payload-level bitrate's (metrics.bitrate.payload_bytes).
    "ip_version": pl.UInt8(),
    "tcp_payload_bytes": pl.UInt32(),
}

#: Every column of PACKETS the metrics read.
METRIC_COLUMNS: tuple[str, ...] = (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS)

Mode = Literal["dual", "single"]


@dataclass(frozen=True)
class Prepared:
    """The packets of one run, ready for the metrics."""

    packets: pl.DataFrame  # + role, t_in_ns, t_out_ns (relative to t0)
    t0_ns: int
    t0_source: Literal["meta", "first_packet"]
    mode: Mode
    data_start_s: float  # first and last ingress time, relative to t0
    data_end_s: float
    excluded: pl.DataFrame = field(default_factory=pl.DataFrame)  # reverse-direction flows

    @cached_property
    def by_role(self) -> dict[str, pl.DataFrame]:
        """Each role's packets, in the table's (ingress time) order: one pass over the
        table, where a filter per role and window read every row each time (9 role blocks
        a run)."""
        # Without the addresses, which no role's metric reads (copying their strings was
        # most of the time), and a filter per role (a partition by role took twice as
        # long: its grouping hashes every role string).
        table = self.packets.drop("src", "dst")
        names = table.get_column("role").unique(maintain_order=True).to_list()
        return {str(r): table.filter(pl.col("role") == r) for r in names}

    def role(self, name: str) -> pl.DataFrame:
        """The packets of role ``name`` (none when no packet has it), by ingress time, all
        columns but the addresses."""
        found = self.by_role.get(name)
        return self.packets.drop("src", "dst").clear() if found is None else found


def entered_between(packets: pl.DataFrame, start_ns: int, end_ns: int) -> pl.DataFrame:
    """The packets of a table in ingress order (``t_in_ns``, as :func:`prepare` leaves it)
    that entered in ``[start_ns, end_ns)``: a slice found by halves, no copy."""
    t = packets.get_column("t_in_ns")
    lo = int(t.search_sorted(start_ns, side="left"))
    hi = int(t.search_sorted(end_ns, side="left"))
    return packets.slice(lo, max(0, hi - lo))


def check_columns(packets: pl.DataFrame, what: str = "packets table") -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in packets.columns]
    if missing:
        raise ConfigError(
            f"{what} lacks column(s) {', '.join(missing)}: make it with `cganalysis packets` "
            "(schema PACKETS in cganalysis.schemas)"
        )


def prepare(packets: pl.DataFrame, facts: RunFacts) -> Prepared:
    """Assigns roles, keeps the dominant direction if asked, and sets the time origin."""
    check_columns(packets)
    extra = [
        pl.lit(None, dtype=t).alias(c)
        for c, t in OPTIONAL_COLUMNS.items()
        if c not in packets.columns
    ]
    df = packets.with_columns(extra) if extra else packets
    # Each step below copies the table only when it changes it (a metrics job's memory is
    # a few copies of the packets).
    if df.get_column("t_ingress_ns").null_count():
        df = df.filter(pl.col("t_ingress_ns").is_not_null())
    if df.height == 0:
        raise ConfigError("packets table has no packet with an ingress time: nothing to measure")
    excluded = pl.DataFrame()
    if facts.direction == "dominant":
        df, excluded = dominant_direction(df)
    df = assign_roles(df, facts.rules)
    if facts.t0_ns is not None:
        t0, t0_source = int(facts.t0_ns), "meta"
    else:
        first = df.select(pl.col("t_ingress_ns").min()).item()
        t0, t0_source = int(first), "first_packet"
    single = df.select(pl.col("t_egress_ns").is_null().all()).item()
    df = df.with_columns(
        (pl.col("t_ingress_ns") - t0).alias("t_in_ns"),
        (pl.col("t_egress_ns") - t0).alias("t_out_ns"),
    )
    # `cganalysis packets` writes its rows in ingress order already; the sort is stable so
    # that packets of the same time keep the table's order either way.
    if not df.get_column("t_in_ns").is_sorted():
        df = df.sort("t_in_ns", maintain_order=True)
    span = df.select(pl.col("t_in_ns").min().alias("a"), pl.col("t_in_ns").max().alias("b"))
    return Prepared(
        packets=df,
        t0_ns=t0,
        t0_source="meta" if t0_source == "meta" else "first_packet",
        mode="single" if single else "dual",
        data_start_s=span["a"].item() / NS_PER_S,
        data_end_s=span["b"].item() / NS_PER_S,
        excluded=excluded,
    )


@dataclass(frozen=True)
class Resolved:
    """A window clipped to the data, with why it was clipped."""

    start_s: float
    end_s: float
    requested: Window
    warnings: tuple[str, ...] = ()

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    def ns(self) -> tuple[int, int]:
        return round(self.start_s * NS_PER_S), round(self.end_s * NS_PER_S)


def resolve_window(
    window: Window, prepared: Prepared, name: str = "--window", tolerance_s: float = 0.0
) -> Resolved:
    """Clips ``window`` to the data's span; a window that misses the data is an error.

    Clipping rather than failing keeps a run whose capture ended a few seconds early usable,
    and the duration used in utilisation is then the one observed, not the one asked for.
    """
    lo, hi = prepared.data_start_s, prepared.data_end_s
    end = hi if window.end_s is None else window.end_s
    if window.start_s >= hi or end <= lo:
        raise ConfigError(
            f"{name} {window}: outside the data, which spans {lo:.3f} to {hi:.3f} s from the "
            "run's start; give a window inside it (and check start_ns / --t0-ns)"
        )
    warnings = []
    start = window.start_s
    # Clipping by less than ``tolerance_s`` (a bin) is what any window does at the data's
    # edges; only more than that is worth a warning.
    if start < lo:
        if lo - start > tolerance_s:
            warnings.append(f"{name} starts at {start:g} s, before the first packet ({lo:.3f} s)")
        start = lo
    if window.end_s is not None and end > hi:
        if end - hi > tolerance_s:
            warnings.append(f"{name} ends at {end:g} s, after the last packet ({hi:.3f} s)")
        end = hi
    return Resolved(start, end, window, tuple(warnings))
