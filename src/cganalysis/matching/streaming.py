"""Matching two captures into parquet files with memory that does not grow with them.

Three steps, each reading the captures a chunk at a time (:mod:`cganalysis.capture.chunks`):

1. :mod:`.prescan` reads both once for what must be known of the whole capture first
   (watermarks, order, the egress span, RTP streams, flow numbers);
2. this module reads both again, side by side in time, pushes each chunk's identity keys
   into the native streaming matcher, and writes each packet-table row once its fate and
   its place in time order are final (:mod:`.rows`, :mod:`.sink`); packets of the last
   ``max_delay`` of the egress capture wait for the end guard (the largest delay);
3. flows that turned out to cross the taps the other way are taken out (a rewrite, only
   when there are any), and the flow table is made (:mod:`.flowacc`).

Memory holds the packets of about ``max_delay`` plus a chunk (plus a capture's disorder)
and a row per flow. The tables equal :func:`cganalysis.matching.match_files`' (the flow
table's ``delay_mean_ms`` up to the last bits, see :mod:`.flowacc`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from cganalysis import _native, schemas
from cganalysis.capture.chunks import DEFAULT_CHUNK, CaptureChunks
from cganalysis.capture.rtp import RtpStream, mark_rtp
from cganalysis.errors import CaptureError, MatchError
from cganalysis.io import write_parquet
from cganalysis.matching.flowacc import FlowAccumulator
from cganalysis.matching.options import MatchOptions
from cganalysis.matching.pairing import _timestamps, identity_keys
from cganalysis.matching.prescan import (
    NO_WATERMARK,
    IngressScan,
    PointScan,
    scan_egress,
    scan_ingress,
)
from cganalysis.matching.rows import SeqUnwrap, packet_rows
from cganalysis.matching.sink import ParquetSink, rewrite
from cganalysis.matching.streamstate import FlowHashCounts, emit_ready, fates, summary_of
from cganalysis.matching.summary import MatchSummary
from cganalysis.matching.table import NS_PER_MS, flow_key
from cganalysis.progress import Progress

#: Ingress columns the packet table does not need once the identity keys are made.
_IN_DROP = ["ttl", "interface_id", "wire_len_bytes", "l4_hash", "truncated"]
_EG_KEEP = ["_row", "_fkey", "flow_hash", *(c for c in schemas.EGRESS_ONLY if c != "flow_id")]


class _Side:
    """One capture read chunk by chunk, in step with its watermarks."""

    def __init__(
        self,
        path: Path,
        scan: PointScan,
        chunk: int,
        streams: set[RtpStream],
        progress: Progress | None = None,
    ):
        self.chunks: Iterator[pl.DataFrame] = iter(CaptureChunks(path, chunk, progress=progress))
        self.scan = scan
        self.streams = streams
        self.next = 0  # chunks read
        self.rows = 0  # IP rows read

    @property
    def done(self) -> bool:
        return self.next >= len(self.scan.watermarks) - 1

    @property
    def watermark(self) -> int:
        """No IP packet still to be read is earlier."""
        return self.scan.watermarks[self.next]

    def read(self) -> pl.DataFrame:
        """The next chunk's IP packets, RTP marked, numbered (``_row``) and keyed."""
        packets = next(self.chunks)
        self.next += 1
        ip = packets.filter(pl.col("ip_version").is_not_null())
        ip = mark_rtp(ip, self.streams).with_row_index("_row", offset=self.rows)
        self.rows += ip.height
        return ip.with_columns(pl.col("_row").cast(pl.UInt64), _fkey=flow_key())


class _Matching:
    """The second step's state: the matcher, both buffers, the outputs and the counts."""

    def __init__(
        self,
        paths: tuple[Path, Path],
        ing_scan: IngressScan,
        eg_scan: PointScan,
        options: MatchOptions,
        chunk: int,
        progress: Progress | None = None,
    ):
        self.ingress_path, self.egress_path = paths
        self.max_delay_ns = round(options.max_delay_ms * NS_PER_MS)
        self.span = eg_scan.span_ns
        given = options.end_guard_ms
        self.given_guard = None if given is None else round(given * NS_PER_MS)
        # Packets that entered in the last max-delay of the egress capture wait for the
        # end guard (the largest delay): their verdict may depend on it; no other's does.
        self.hold: tuple[int, int] | None = (
            None
            if self.given_guard is not None or self.span is None
            else (self.span[1] - self.max_delay_ns, self.span[1])
        )
        # the guard of the rows written before the end: any up to max_delay gives them the
        # same verdict
        self.guard_before_end = (
            self.given_guard if self.given_guard is not None else self.max_delay_ns
        )
        self.flow_ids: pl.DataFrame = ing_scan.flow_ids
        self.file_order = ing_scan.point.ip_in_order
        self.ingress = _Side(paths[0], ing_scan.point, chunk, ing_scan.rtp_streams, progress)
        self.egress = _Side(paths[1], eg_scan, chunk, ing_scan.rtp_streams, progress)
        self.matcher = _native.StreamMatcher(self.max_delay_ns)
        self.counts = FlowHashCounts()
        self.flows = FlowAccumulator()
        self.unwrap = SeqUnwrap()
        self.ing_buf: pl.DataFrame | None = None
        self.eg_buf: pl.DataFrame | None = None

    def run(self, packets: ParquetSink, egress_only: ParquetSink) -> pl.DataFrame | None:
        """Reads both captures to their end; returns the ingress rows still held."""
        ing, eg, m = self.ingress, self.egress, self.matcher
        while not (ing.done and eg.done):
            if not ing.done and (eg.done or ing.watermark <= eg.watermark):
                ip = ing.read()
                m.push_ingress(identity_keys(ip), _timestamps(ip))
                self.ing_buf = _append(self.ing_buf, ip.drop(_IN_DROP), self.file_order)
            else:
                ip = eg.read()
                tos = (ip["dscp"] * 4 + ip["ecn"]).cast(pl.UInt8).to_numpy()
                m.push_egress(identity_keys(ip), _timestamps(ip), tos)
                self.eg_buf = _append(self.eg_buf, ip.select(_EG_KEEP), True)
            m.advance(NO_WATERMARK if ing.done and eg.done else min(ing.watermark, eg.watermark))
            self._drain_egress(egress_only)
            if self.ing_buf is not None and not (ing.done and eg.done):
                if self.hold is not None and eg.done and not self.eg_buf_left:
                    self._decide_guard()
                ready, self.ing_buf = emit_ready(
                    m, self.ing_buf, self.file_order, ing.watermark, self.hold
                )
                if ready.height:
                    self.counts.add_ingress(ready)
                    self._write(packets, ready, self.guard_before_end)
                    m.release_ingress(_first_needed(self.ing_buf, ready))
        m.advance(NO_WATERMARK)
        self._drain_egress(egress_only)
        if self.ing_buf is None:
            return None
        rest = emit_ready(m, self.ing_buf, self.file_order, NO_WATERMARK, None)[0]
        self.counts.add_ingress(rest)
        return rest

    @property
    def eg_buf_left(self) -> bool:
        return self.eg_buf is not None and self.eg_buf.height > 0

    def _decide_guard(self) -> None:
        """Every egress packet's fate is known: so are every pair and reverse twin, and with
        them the end guard; the rows that waited for it need not wait any longer (an
        ingress capture running on after the egress capture stopped streams on)."""
        assert self.ing_buf is not None
        resolved, with_fates = fates(self.matcher, self.ing_buf)
        known = self.counts.with_ingress(with_fates.filter(pl.Series(resolved)))
        self.guard_before_end = known.largest_delay(known.reverse_flows())
        self.hold = None

    def _write(self, sink: ParquetSink, batch: pl.DataFrame, guard_ns: int) -> None:
        rows = packet_rows(batch, self.flow_ids, self.unwrap, self.span, guard_ns)
        self.flows.add(rows)
        sink.write(rows)

    def _drain_egress(self, sink: ParquetSink) -> None:
        """Writes the egress rows whose fate is known (in file order) if they have no twin."""
        buf = self.eg_buf
        if buf is None or buf.height == 0:
            return
        rows = buf["_row"].to_numpy().astype(np.uint64, copy=False)
        resolved, matched, reverse = self.matcher.egress_fates(rows)
        k = buf.height if resolved.all() else int(np.argmin(resolved))
        if k == 0:
            return
        done = buf.head(k).with_columns(
            _matched=pl.Series(matched[:k]), _reverse=pl.Series(reverse[:k])
        )
        self.eg_buf = buf.slice(k)
        self.matcher.release_egress(int(rows[k - 1]) + 1)
        self.counts.add_egress(done)
        alone = done.filter(~pl.col("_matched")).join(
            self.flow_ids.select("_fkey", "flow_id"), on="_fkey", how="left", maintain_order="left"
        )
        sink.write(alone.select(list(schemas.EGRESS_ONLY)))

    def finish(self, packets: ParquetSink, rest: pl.DataFrame | None) -> tuple[set[int], int]:
        """Decides the reverse flows and the end guard, writes the held rows; returns both."""
        self.counts.check_direction(self.ingress_path, self.egress_path)
        reverse = self.counts.reverse_flows()
        guard = self.given_guard
        if guard is None:
            guard = self.counts.largest_delay(reverse)
        if rest is not None and rest.height:
            self._write(packets, rest, guard)
        return reverse, guard


def match_to_files(
    ingress: Path,
    egress: Path,
    output: Path,
    egress_only: Path,
    *,
    flows: Path | None = None,
    options: MatchOptions | None = None,
    chunk_packets: int = DEFAULT_CHUNK,
    timings: dict[str, float] | None = None,
    progress: bool = False,
) -> MatchSummary:
    """Matches two captures into the packet table (``output``), the egress-only table and,
    given ``flows``, the flow table; returns the summary (each file's provenance holds it,
    under "summary"). ``timings`` receives the seconds of each step (benchmarks);
    ``progress``: each step's progress on a terminal (:mod:`cganalysis.progress`)."""
    options = options or MatchOptions()
    clock = _Clock(timings)
    for path in (ingress, egress):
        if not path.exists():
            raise CaptureError(path, "no such file")
    show = None if progress else False  # the totals: each capture's size, once per read
    # The egress scan on a second core (the reader and polars release the GIL).
    with (
        Progress("reading the captures (pass 1 of 2)", show=show) as scanning,
        ThreadPoolExecutor(max_workers=1) as pool,
    ):
        chunks = [
            CaptureChunks(p, chunk_packets, addresses=False, progress=scanning)
            for p in (ingress, egress)
        ]
        eg_future = pool.submit(scan_egress, chunks[1])
        ing_scan = scan_ingress(chunks[0])
        eg_scan = eg_future.result()
    clock.lap("prescan")
    for path, scan in ((ingress, ing_scan.point), (egress, eg_scan)):
        if scan.ip_rows == 0:
            raise MatchError(
                f"{path}: no IP packets in the capture; check the interface and the capture filter"
            )
    matching = Progress("matching (pass 2 of 2)", show=show)
    state = _Matching((ingress, egress), ing_scan, eg_scan, options, chunk_packets, matching)
    with (
        matching,
        ParquetSink(output, schemas.PACKETS) as packets,
        ParquetSink(egress_only, schemas.EGRESS_ONLY) as alone,
    ):
        rest = state.run(packets, alone)
        reverse, guard = state.finish(packets, rest)
        renumber = _renumbering(state.flow_ids, reverse) if reverse else None
        if renumber is not None:
            state.flows.remap(renumber)
        summary = summary_of(
            ing_scan.point.info,
            eg_scan.info,
            ing_scan.point,
            eg_scan,
            state.counts,
            state.flows,
            reverse,
            state.span,
            guard,
            options,
        )
        provenance = {"summary": summary.to_dict()}
        # with flows to take out, the tables as written are only a step: kept aside
        aside = [_aside(output), _aside(egress_only)] if renumber is not None else [None, None]
        packets.commit(provenance, aside[0])
        alone.commit(provenance, aside[1])
    clock.lap("match")
    if renumber is not None:
        change = _renumber(renumber)
        with Progress("leaving out the flows that cross the taps the other way", show=show):
            for source, dest, schema in zip(
                aside, (output, egress_only), (schemas.PACKETS, schemas.EGRESS_ONLY), strict=True
            ):
                assert source is not None
                rewrite(source, dest, schema, change, provenance)
        clock.lap("reverse")
    if flows is not None:
        with Progress("writing the flow table", show=show):
            table = state.flows.table(lambda: _delays(output), state.max_delay_ns)
            write_parquet(table, flows, provenance)
        clock.lap("flows")
    return summary


class _Clock:
    def __init__(self, timings: dict[str, float] | None) -> None:
        self.timings = timings
        self.last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        if self.timings is not None:
            self.timings[name] = now - self.last
        self.last = now


def _append(buf: pl.DataFrame | None, chunk: pl.DataFrame, file_order: bool) -> pl.DataFrame:
    """Adds a chunk to a buffer kept in table order: file order, or (time, row)."""
    out = chunk if buf is None or buf.height == 0 else pl.concat([buf, chunk])
    if not file_order and not out["t_ns"].is_sorted(nulls_last=True):
        out = out.sort("t_ns", "_row", nulls_last=True)
    return out


def _first_needed(buf: pl.DataFrame, emitted: pl.DataFrame) -> int:
    """The first ingress row whose fate is still needed."""
    if buf.height:
        return int(buf["_row"].min())  # type: ignore[arg-type]
    return int(emitted["_row"].max()) + 1  # type: ignore[arg-type]


def _delays(path: Path) -> Iterator[pl.DataFrame]:
    """(flow_id, delay_ms) of a written packet table, in batches."""
    source = pq.ParquetFile(path)
    for batch in source.iter_batches(columns=["flow_id", "delay_ms"], batch_size=1 << 20):
        df = pl.from_arrow(batch)
        assert isinstance(df, pl.DataFrame)
        yield df


def _aside(path: Path) -> Path:
    return path.with_name(f".{path.name}.with-reverse-flows.partial")


def _renumbering(flow_ids: pl.DataFrame, reverse: set[int]) -> pl.DataFrame:
    """(flow_id, new_id) of the flows kept when the reverse ones are left out."""
    return (
        flow_ids.filter(~pl.col("flow_hash").is_in(sorted(reverse)))
        .sort("flow_id")
        .with_row_index("new_id")
        .select("flow_id", pl.col("new_id").cast(pl.UInt32))
    )


def _renumber(keep: pl.DataFrame) -> Any:
    def change(batch: pl.DataFrame) -> pl.DataFrame:
        kept = batch.filter(
            pl.col("flow_id").is_null() | pl.col("flow_id").is_in(keep["flow_id"].implode())
        )
        new = pl.col("flow_id").replace_strict(
            keep["flow_id"], keep["new_id"], default=None, return_dtype=pl.UInt32
        )
        return kept.with_columns(flow_id=new)

    return change
