"""The project's table schemas, declared once: each column with its type and description.

Every table that crosses a module or file boundary is declared here (:func:`_table`) and
checked with :func:`check_schema` where it is produced. Units are in the column names
(``_ns``, ``_ms``, ``_bytes``, ``_mbps``: :data:`UNITS`); a column's description is its
table's where the table gives one, else the shared one (:data:`SHARED`). The datasheet
(``cganalysis.dataset.columns``) shows the same records, so the two never drift apart;
docs/matching.md documents the same tables for users.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from cganalysis.errors import SchemaError

DType = pl.DataType | type[pl.DataType]
Schema = Mapping[str, DType]

#: Column-name suffix -> unit (the first suffix that matches).
UNITS: tuple[tuple[str, str], ...] = (
    ("_ns", "ns (since the epoch for t_*)"),
    ("_us", "us"),
    ("_ms2", "ms^2"),
    ("_ms", "ms"),
    ("_s", "s"),
    ("_bytes", "bytes"),
    ("_mbps", "Mbit/s"),
    ("_bps", "bit/s"),
    ("_pct", "percent in [0, 100]"),
    ("_rate", "fraction in [0, 1]"),
)


def unit_of(name: str) -> str:
    """The unit a column's name declares ("" for counts, labels and flags)."""
    return next((unit for suffix, unit in UNITS if name.endswith(suffix)), "")


@dataclass(frozen=True)
class Column:
    name: str
    dtype: DType
    description: str

    @property
    def unit(self) -> str:
        return unit_of(self.name)


#: Descriptions of the columns several tables share, where a table gives none of its own.
SHARED: dict[str, str] = {
    "t_ns": "event time, wall clock ns since the epoch",
    "t_s": "seconds from the run's t0 (the bin's start)",
    "interface_id": "pcapng interface, 0 for pcap",
    "wire_len_bytes": "length on the wire (link layer included)",
    "truncated": "snaplen cut a header needed for this row's fields",
    "ttl": "IPv4 TTL or IPv6 hop limit",
    "dscp": "DSCP of the packet",
    "ecn": "ECN code point: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE",
    "is_rtp": "the packet belongs to a stream classified as RTP (per flow and SSRC)",
    "flow_id": "row of the flow table (directional 5-tuple and RTP SSRC)",
    "proto": "IP protocol number (6 TCP, 17 UDP)",
    "ip_version": "4 or 6",
    "src": "source IP address",
    "dst": "destination IP address",
    "sport": "source port (TCP/UDP)",
    "dport": "destination port (TCP/UDP)",
    "size_bytes": "IP total length as on the wire",
    "t_ingress_ns": "capture time entering the bottleneck",
    "ecn_ingress": "ECN code point entering the bottleneck",
    "ecn_egress": "ECN code point leaving it; null when not seen at egress",
    "dscp_ingress": "DSCP entering the bottleneck",
    "dscp_egress": "DSCP leaving it",
    "ip_id": "IPv4 identification",
    "tcp_seq": "TCP sequence number",
    "tcp_ack": "TCP acknowledgement number",
    "tcp_flags": "TCP flags",
    "tcp_payload_bytes": "TCP payload length",
    "rtp_ssrc": "RTP SSRC (null when not RTP)",
    "rtp_seq": "RTP sequence number",
    "rtp_ts": "RTP timestamp (90 kHz for video)",
    "rtp_marker": "RTP marker bit (last packet of a frame)",
    "rtp_pt": "RTP payload type",
    "packets_in": "packets seen entering the bottleneck",
    "bytes_in": "IP bytes entering the bottleneck",
    "bytes_out": "IP bytes of those seen again leaving it",
    "packets_lost": "packets that entered and never left",
    "t_first_ns": "first packet's time",
    "t_last_ns": "last packet's time",
    "delay_mean_ms": "mean one-way delay across the bottleneck",
    "delay_min_ms": "smallest one-way delay across the bottleneck",
    "delay_p50_ms": "median one-way delay across the bottleneck",
    "delay_p95_ms": "95th percentile of the one-way delay across the bottleneck",
    "delay_p99_ms": "99th percentile of the one-way delay across the bottleneck",
    "delay_max_ms": "largest one-way delay across the bottleneck",
    "ecn_not_ect_in": "packets entering as Not-ECT",
    "ecn_ect1_in": "packets entering as ECT(1)",
    "ecn_ect0_in": "packets entering as ECT(0)",
    "ecn_ce_in": "packets entering already CE",
    "bytes": "IP bytes in the bin",
    "role": "traffic role (cg, competitor, ...) the row is of",
    "run_id": "the run's name (its raw folder)",
    "campaign": "the campaign the run belongs to",
    "qdisc": "label: the bottleneck's queue discipline (pfifo, htb, dualpi2, ...)",
    "cca": "label: the competing TCP flow's congestion control",
    "system": "label: the CG sender (cg.source, or cg.source-<variant>)",
    "queue": "label: the queue's size or layout (250p, 2xBDP, sfq63+pfifo250, ...)",
    "repetition": "the run's repetition number in its campaign (1, 2, ...)",
    "frame_id": "the generator's frame number",
    "keyframe": "an I-frame",
    "packets": "packets of the frame",
    "marker": "RTP marker bit (last packet of a frame)",
    "ssrc": "RTP SSRC",
    "pt": "RTP payload type",
    "bytes_in_flight": "bytes sent and not yet acknowledged or declared lost",
    "target_bps": "the controller's target bitrate",
    "pace_bps": "the pacer's rate",
    "srtt_ms": "smoothed round-trip time",
    "rtt_sample_ms": "the last round-trip time sample",
    "packets_ce": "newly acknowledged packets that arrived CE-marked",
    "rtp_queue_bytes": "bytes in the sender's RTP queue",
    "rtp_queue_delay_ms": "age of the oldest packet in the sender's RTP queue",
    "bytes_expected": "bytes of the frame's packets, from its header (null when none arrived)",
    "bytes_received": "bytes of its packets that arrived",
    "packets_received": "packets of the frame that arrived",
    "complete": "every packet of the frame arrived",
}

#: Every table's columns in order, by the name of its schema constant (``"PACKETS"``).
TABLES: dict[str, tuple[Column, ...]] = {}


def _table(name: str, columns: Mapping[str, DType | tuple[DType, str] | Column]) -> Schema:
    """Declares table ``name``: each column's type, with its own description or the
    shared one; returns its schema (name -> type)."""
    declared: list[Column] = []
    for col, spec in columns.items():
        if isinstance(spec, Column):
            declared.append(spec)
        elif isinstance(spec, tuple):
            declared.append(Column(col, spec[0], spec[1]))
        else:
            declared.append(Column(col, spec, SHARED.get(col, "")))
    TABLES[name] = tuple(declared)
    return {c.name: c.dtype for c in declared}


#: One row per packet of one capture file (what the reader produces).
CAPTURE: Schema = _table(
    "CAPTURE",
    {
        "t_ns": (pl.Int64, "capture timestamp, ns since the epoch; null for a simple packet block"),
        "interface_id": (pl.UInt32, "pcapng interface, 0 for pcap"),
        "wire_len_bytes": (pl.UInt32, "length on the wire (link layer included)"),
        "ip_version": (pl.UInt8, "4 or 6; null when not IP"),
        "src": pl.String,
        "dst": pl.String,
        "proto": (pl.UInt8, "IP protocol number (6 TCP, 17 UDP, ...)"),
        "sport": (pl.UInt16, "null when not TCP/UDP"),
        "dport": pl.UInt16,
        "ip_id": (pl.UInt32, "IPv4 identification; IPv6 fragment id or null"),
        "size_bytes": (pl.UInt32, "IP total length as on the wire (not the snaplen)"),
        "dscp": pl.UInt8,
        "ecn": (pl.UInt8, "0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE"),
        "ttl": (pl.UInt8, "IPv4 TTL or IPv6 hop limit"),
        "tcp_seq": pl.UInt32,
        "tcp_ack": pl.UInt32,
        "tcp_flags": pl.UInt16,
        "tcp_payload_bytes": (pl.UInt32, "from the IP and TCP header lengths, not the snaplen"),
        # RTP header fields wherever the UDP payload parses as RTP version 2; `is_rtp` says
        # whether the packet belongs to a stream classified as RTP (per flow and SSRC).
        "rtp_ssrc": pl.UInt32,
        "rtp_seq": pl.UInt16,
        "rtp_ts": pl.UInt32,
        "rtp_marker": pl.Boolean,
        "rtp_pt": pl.UInt8,
        "is_rtp": pl.Boolean,
        "flow_hash": (pl.UInt64, "stable hash of the directional 5-tuple (same in every capture)"),
        "l4_hash": (pl.UInt64, "hash of invariant bytes after the L4 header (matching only)"),
        "truncated": (pl.Boolean, "snaplen cut a header needed for this row's fields"),
    },
)

#: One row per IP packet seen at the ingress capture point (the ``packets`` command).
PACKETS: Schema = _table(
    "PACKETS",
    {
        "flow_id": (pl.UInt32, "row of the flow table (directional 5-tuple and RTP SSRC)"),
        "proto": pl.UInt8,
        "ip_version": pl.UInt8,
        "src": pl.String,
        "dst": pl.String,
        "sport": pl.UInt16,
        "dport": pl.UInt16,
        "size_bytes": pl.UInt32,
        "t_ingress_ns": pl.Int64,
        "t_egress_ns": (pl.Int64, "null when not seen at egress"),
        "delay_ms": (pl.Float64, "egress minus ingress; null when not seen at egress"),
        "lost": (pl.Boolean, "null when unknown (outside the egress capture's span)"),
        "ecn_ingress": pl.UInt8,
        "ecn_egress": pl.UInt8,
        "ce_marked": (pl.Boolean, "became CE across the bottleneck; null when not seen at egress"),
        "dscp_ingress": pl.UInt8,
        "dscp_egress": pl.UInt8,
        "ip_id": pl.UInt32,
        "tcp_seq": pl.UInt32,
        "tcp_ack": pl.UInt32,
        "tcp_flags": pl.UInt16,
        "tcp_payload_bytes": pl.UInt32,
        "rtp_ssrc": pl.UInt32,
        "rtp_seq": pl.UInt16,
        "rtp_seq_ext": (pl.Int64, "RTP sequence unwrapped in ingress time order"),
        "rtp_ts": pl.UInt32,
        "rtp_marker": pl.Boolean,
        "rtp_pt": pl.UInt8,
    },
)

#: Packets seen only at the egress point (reported, never dropped silently).
EGRESS_ONLY: Schema = _table(
    "EGRESS_ONLY",
    {
        "flow_id": (pl.UInt32, "null when the flow was never seen at ingress"),
        **{
            c.name: c
            for c in TABLES["CAPTURE"]
            if c.name not in ("flow_id", "flow_hash", "l4_hash", "is_rtp")
        },
    },
)

#: One row per flow: directional 5-tuple plus RTP SSRC (null for non-RTP flows).
FLOWS: Schema = _table(
    "FLOWS",
    {
        "flow_id": pl.UInt32,
        "proto": pl.UInt8,
        "ip_version": pl.UInt8,
        "src": pl.String,
        "dst": pl.String,
        "sport": pl.UInt16,
        "dport": pl.UInt16,
        "rtp_ssrc": pl.UInt32,
        "packets_in": pl.UInt64,
        "packets_out": (pl.UInt64, "ingress packets seen again at egress"),
        "bytes_in": pl.UInt64,
        "bytes_out": pl.UInt64,
        "packets_lost": pl.UInt64,
        "packets_unknown": (pl.UInt64, "entered outside the egress capture's span"),
        "loss_rate": (pl.Float64, "lost / (in - unknown), in [0, 1]"),
        "delay_mean_ms": pl.Float64,
        "delay_min_ms": pl.Float64,
        "delay_p50_ms": pl.Float64,
        "delay_p95_ms": pl.Float64,
        "delay_p99_ms": pl.Float64,
        "delay_max_ms": pl.Float64,
        "ecn_not_ect_in": pl.UInt64,
        "ecn_ect1_in": pl.UInt64,
        "ecn_ect0_in": pl.UInt64,
        "ecn_ce_in": pl.UInt64,
        "ce_marked": (pl.UInt64, "packets that became CE across the bottleneck"),
        "t_first_ns": pl.Int64,
        "t_last_ns": pl.Int64,
        "rate_in_mbps": (pl.Float64, "ingress IP bytes over the flow's duration"),
    },
)


def check_schema(df: pl.DataFrame, schema: Schema, table: str) -> pl.DataFrame:
    """Returns ``df`` with its columns in schema order, or raises naming what differs."""
    missing = [c for c in schema if c not in df.columns]
    extra = [c for c in df.columns if c not in schema]
    wrong = [
        f"{c} is {df.schema[c]}, expected {schema[c]}"
        for c in schema
        if c in df.columns and df.schema[c] != schema[c]
    ]
    if missing or extra or wrong:
        parts = []
        if missing:
            parts.append(f"missing columns {missing}")
        if extra:
            parts.append(f"unexpected columns {extra}")
        parts.extend(wrong)
        raise SchemaError(f"{table} table does not match its schema: " + "; ".join(parts))
    return df.select(list(schema))


def empty(schema: Schema) -> pl.DataFrame:
    """An empty frame with the schema's columns and types."""
    return pl.DataFrame(schema=dict(schema))


# --- Metrics (cganalysis.metrics, cganalysis.report) -------------------------------------

#: Bitrate per role and time bin (``cganalysis.metrics.bitrate.bitrate_series``).
BITRATE_SERIES: Schema = _table(
    "BITRATE_SERIES",
    {
        "t_s": (pl.Float64, "bin start, seconds from the run's t0"),
        "role": (pl.String, "or flow_id (UInt32) when the series is per flow"),
        "point": (pl.String, '"egress" (delivered) or "ingress" (offered)'),
        "bytes": pl.Int64,
        "rate_mbps": (pl.Float64, "0 for a bin with no packet"),
    },
)

#: One run's per-role series for the time-series figures (``metrics.timeseries``).
RUN_TIMESERIES: Schema = _table(
    "RUN_TIMESERIES",
    {
        "t_s": pl.Float64,
        "role": pl.String,
        "rate_mbps": (pl.Float64, "delivered (by egress time; ingress time for a single capture)"),
        "offered_mbps": (pl.Float64, "by ingress time"),
        "delay_mean_ms": (pl.Float64, "of the packets that entered in the bin; null if none"),
        "delay_p95_ms": pl.Float64,
        "delay_max_ms": pl.Float64,
        "loss_pct": (pl.Float64, "in [0, 100]; null when no packet's fate is known"),
        "packets": (pl.Int64, "packets that entered in the bin"),
        "capacity_mbps": (pl.Float64, "null when not given"),
    },
)

#: What names a run in the metrics tables: its labels and the capacity it is filed under.
RUN_KEYS: Schema = _table(
    "RUN_KEYS",
    {
        "run_id": pl.String,
        "campaign": pl.String,
        "qdisc": pl.String,
        "cca": pl.String,
        "system": pl.String,
        "queue": pl.String,
        "repetition": pl.Int64,
        "capacity_mbps": (pl.Float64, "configured (the condition's name), else the one used"),
    },
)

# METRICS_RUNS and METRICS_ROLES, the metrics documents as table rows, derive from the
# metric registry: cganalysis.metrics.registry.


# --- CG traffic generator logs (cganalysis.cg; written by cga-cg, docs/cg.md) -------------

#: One row per RTP packet the generator sent.
CG_SENDER_PACKETS: Schema = _table(
    "CG_SENDER_PACKETS",
    {
        "t_ns": (pl.Int64, "send time, wall clock ns since the epoch (lines up with captures)"),
        "seq": (pl.Int64, "extended RTP sequence number (never wraps)"),
        "rtp_seq": pl.UInt16,
        "rtp_ts": (pl.UInt32, "90 kHz"),
        "frame_id": pl.UInt32,
        "size_bytes": (pl.UInt32, "RTP packet (UDP payload) bytes"),
        "marker": pl.Boolean,
        "ecn": (pl.UInt8, "codepoint set: 0 Not-ECT, 1 ECT(1), 2 ECT(0)"),
        "due_ns": (pl.Int64, "when the pacer scheduled it (send - due = pacing error)"),
        "queue_delay_us": (pl.Int64, "time in the sender's RTP queue"),
    },
)

#: One row per frame the encoder (model or trace) produced.
CG_SENDER_FRAMES: Schema = _table(
    "CG_SENDER_FRAMES",
    {
        "frame_id": pl.UInt32,
        "t_ns": (pl.Int64, "capture time of the frame"),
        "size_bytes": pl.UInt32,
        "packets": pl.UInt32,
        "keyframe": pl.Boolean,
        "target_bps": (pl.Float64, "controller's target when the frame was made"),
        "encoder_bps": (pl.Float64, "rate the encoder produced (follows the target with a lag)"),
    },
)

#: One row per feedback (or timer event) the sender's controller processed.
CG_CONTROLLER: Schema = _table(
    "CG_CONTROLLER",
    {
        "t_ns": pl.Int64,
        "event": (pl.String, "feedback, tfrc_report, loss_timer, feedback_timeout"),
        "cc": (pl.String, "scream, none, tfrc, gtfrc"),
        "ref_wnd_bytes": (pl.Float64, "SCReAM only"),
        "send_wnd_bytes": (pl.Float64, "SCReAM only"),
        "bytes_in_flight": pl.Int64,
        "target_bps": pl.Float64,
        "pace_bps": pl.Float64,
        "srtt_ms": pl.Float64,
        "rtt_sample_ms": pl.Float64,
        "qdelay_ms": (pl.Float64, "one-way delay over its minimum, as the sender estimates it"),
        "qdelay_avg_ms": (pl.Float64, "SCReAM only"),
        "qdelay_target_ms": (pl.Float64, "SCReAM only"),
        "l4s_alpha": (pl.Float64, "SCReAM only, [0, 1]"),
        "l4s_alpha_v": (pl.Float64, 'SCReAM delay-based "virtual CE" fraction, [0, 1]'),
        "loss_rate": (pl.Float64, "SCReAM only, [0, 1]"),
        "loss_event_rate": (pl.Float64, "TFRC p, [0, 1]"),
        "x_recv_bps": (pl.Float64, "TFRC receive rate"),
        "x_calc_bps": (pl.Float64, "TFRC equation rate"),
        "packets_acked": (pl.Int64, "newly acknowledged by this report"),
        "packets_ce": pl.Int64,
        "packets_lost": (pl.Int64, "newly declared lost"),
        "rtp_queue_bytes": pl.Int64,
        "rtp_queue_delay_ms": pl.Float64,
    },
)

#: One row per RTP packet the receiver got.
CG_RECEIVER_PACKETS: Schema = _table(
    "CG_RECEIVER_PACKETS",
    {
        "t_ns": (pl.Int64, "kernel arrival time, wall clock ns since the epoch"),
        "ssrc": pl.UInt32,
        "rtp_seq": pl.UInt16,
        "seq": (pl.Int64, "extended sequence number"),
        "rtp_ts": pl.UInt32,
        "marker": pl.Boolean,
        "pt": pl.UInt8,
        "size_bytes": (pl.UInt32, "RTP packet (UDP payload) bytes"),
        "ecn": (pl.UInt8, "as received: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE"),
        "frame_id": (pl.UInt32, "null for packets without the generator's payload header"),
        "send_t_ns": (pl.Int64, "sender's clock when sent (same host: one-way delay)"),
    },
)

#: One row per frame at the receiver (complete or not; entirely lost frames included).
CG_RECEIVER_FRAMES: Schema = _table(
    "CG_RECEIVER_FRAMES",
    {
        "frame_id": pl.UInt32,
        "rtp_ts": (pl.UInt32, "null when no packet of the frame arrived"),
        "send_t_ns": (pl.Int64, "when its first packet left the sender"),
        "t_first_ns": pl.Int64,
        "t_last_ns": (pl.Int64, "delivery time when complete"),
        "packets_expected": (pl.UInt32, "null when no packet arrived"),
        "packets_received": pl.UInt32,
        "bytes_expected": pl.UInt32,
        "bytes_received": pl.Int64,
        "complete": pl.Boolean,
        "keyframe": pl.Boolean,
        "delivery_delay_ms": (pl.Float64, "t_last - send_t for complete frames, else null"),
    },
)

#: A frame-size trace (``cganalysis cg frames-from-capture``; ``cga-cg send --frames``).
CG_FRAME_TRACE: Schema = _table(
    "CG_FRAME_TRACE",
    {
        "t_s": (pl.Float64, "frame time, seconds from the first frame"),
        "size_bytes": (pl.Int64, "RTP payload bytes of the frame"),
    },
)
