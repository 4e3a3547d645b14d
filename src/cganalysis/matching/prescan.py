"""The first pass of the streaming match: what must be known about a whole capture before
any row can be written, gathered chunk by chunk with memory that grows only with the
number of flows and streams.

- **Watermarks**: for each chunk, the earliest time of any IP packet in it or after it.
  With them the matcher knows when a packet can no longer get a twin, and the packet
  table when a row's place in time order is final, whatever the capture's disorder.
- **Order**: whether the IP packets are in time order (then the packet table keeps the
  file's order, as :func:`cganalysis.matching.table.build_packet_table` does).
- **Egress span** (first and last IP packet, or the statistics blocks) for loss verdicts.
- At ingress, **RTP streams** (:mod:`cganalysis.capture.rtp`, decided on the whole
  capture) and **flow numbers** (by first appearance, as
  :func:`cganalysis.matching.table.assign_flow_ids` numbers them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from cganalysis.capture.chunks import CaptureChunks
from cganalysis.capture.model import CaptureInfo
from cganalysis.capture.rtp import RtpStream
from cganalysis.matching.rtpscan import RtpScan, classify_in_time_order, first_appearances

NO_WATERMARK = 2**63 - 1


@dataclass
class PointScan:
    """One capture, scanned."""

    info: CaptureInfo
    chunk_packets: int
    rows: int = 0  # packet records
    ip_rows: int = 0
    truncated_ip_rows: int = 0
    #: watermarks[c]: the earliest IP packet time in chunk c or later (NO_WATERMARK: none).
    watermarks: list[int] = field(default_factory=list)
    #: ``is_sorted()`` of the IP packets' times (nulls first), as the packet table asks.
    ip_in_order: bool = True
    #: ``is_sorted(nulls_last=True)`` of every packet's time, as the RTP rule asks.
    all_in_order_nulls_last: bool = True
    ip_t_min: int | None = None
    ip_t_max: int | None = None

    @property
    def span_ns(self) -> tuple[int, int] | None:
        """When the capture ran: its statistics blocks, else its first and last IP packet."""
        if self.info.span_ns is not None:
            return self.info.span_ns
        if self.ip_t_min is None or self.ip_t_max is None:
            return None
        return self.ip_t_min, self.ip_t_max


@dataclass
class IngressScan:
    point: PointScan
    rtp_streams: set[RtpStream]
    #: ``_fkey`` (see :func:`cganalysis.matching.table.flow_key`) -> flow_id, every flow.
    flow_ids: pl.DataFrame


class _Order:
    """Whether a column of times, seen a chunk at a time, is sorted (polars' semantics)."""

    def __init__(self, nulls_last: bool) -> None:
        self.nulls_last = nulls_last
        self.ok = True
        self.last: int | None = None
        self.seen_null = False
        self.seen_value = False

    def add(self, t: pl.Series) -> None:
        if not self.ok or t.len() == 0:
            return
        if not t.is_sorted(nulls_last=self.nulls_last):
            self.ok = False
            return
        values = t.drop_nulls()
        has_null = values.len() < t.len()
        if self.nulls_last:  # nulls may only follow every value
            bad = self.seen_null and values.len() > 0
        else:  # nulls may only precede every value
            bad = self.seen_value and has_null
        if values.len() and self.last is not None and int(values[0]) < self.last:
            bad = True
        self.ok = not bad
        self.seen_null |= has_null
        if values.len():
            self.seen_value = True
            self.last = int(values[-1])


def _scan_point(chunks: CaptureChunks, rtp: RtpScan | None) -> PointScan:
    scan = PointScan(info=None, chunk_packets=chunks.chunk_packets)  # type: ignore[arg-type]
    ip_order, all_order = _Order(nulls_last=False), _Order(nulls_last=True)
    minima: list[int] = []
    for packets in chunks:
        all_order.add(packets["t_ns"])
        ip = packets.filter(pl.col("ip_version").is_not_null())
        t = ip["t_ns"]
        ip_order.add(t)
        lo, hi = t.min(), t.max()
        minima.append(NO_WATERMARK if lo is None else int(lo))  # type: ignore[arg-type]
        if lo is not None:
            scan.ip_t_min = int(lo) if scan.ip_t_min is None else min(scan.ip_t_min, int(lo))  # type: ignore[arg-type]
            scan.ip_t_max = int(hi) if scan.ip_t_max is None else max(scan.ip_t_max, int(hi))  # type: ignore[arg-type]
        if rtp is not None:
            rtp.add(packets, ip, first_row=scan.ip_rows)
        scan.rows += packets.height
        scan.ip_rows += ip.height
        scan.truncated_ip_rows += int(ip["truncated"].sum())
    watermarks = [NO_WATERMARK] * (len(minima) + 1)
    for c in range(len(minima) - 1, -1, -1):
        watermarks[c] = min(minima[c], watermarks[c + 1])
    scan.watermarks = watermarks
    scan.ip_in_order, scan.all_in_order_nulls_last = ip_order.ok, all_order.ok
    scan.info = chunks.info
    return scan


def scan_egress(chunks: CaptureChunks) -> PointScan:
    return _scan_point(chunks, None)


def scan_ingress(chunks: CaptureChunks) -> IngressScan:
    rtp = RtpScan()
    point = _scan_point(chunks, rtp)
    if point.all_in_order_nulls_last:
        streams = rtp.streams()
    else:
        # The RTP rule reads each stream in time order: once more, in that order.
        streams = classify_in_time_order(chunks, point.watermarks)
    return IngressScan(
        point=point, rtp_streams=streams, flow_ids=first_appearances(rtp.firsts, streams)
    )
