"""The project's table schemas, declared once.

Every table that crosses a module or file boundary is described here and checked with
:func:`check_schema` where it is produced. Units are in the column names (``_ns``,
``_ms``, ``_bytes``, ``_mbps``). docs/matching.md documents the same tables for users.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from cganalysis.errors import SchemaError

Schema = Mapping[str, pl.DataType | type[pl.DataType]]

#: One row per packet of one capture file (what the reader produces).
CAPTURE: Schema = {
    "t_ns": pl.Int64,  # capture timestamp, ns since the epoch; null for a simple packet block
    "interface_id": pl.UInt32,  # pcapng interface, 0 for pcap
    "wire_len_bytes": pl.UInt32,  # length on the wire (link layer included)
    "ip_version": pl.UInt8,  # 4 or 6; null when not IP
    "src": pl.String,
    "dst": pl.String,
    "proto": pl.UInt8,  # IP protocol number (6 TCP, 17 UDP, ...)
    "sport": pl.UInt16,  # null when not TCP/UDP
    "dport": pl.UInt16,
    "ip_id": pl.UInt32,  # IPv4 identification; IPv6 fragment id or null
    "size_bytes": pl.UInt32,  # IP total length as on the wire (not the snaplen)
    "dscp": pl.UInt8,
    "ecn": pl.UInt8,  # 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE
    "ttl": pl.UInt8,  # IPv4 TTL or IPv6 hop limit
    "tcp_seq": pl.UInt32,
    "tcp_ack": pl.UInt32,
    "tcp_flags": pl.UInt16,
    "tcp_payload_bytes": pl.UInt32,  # from the IP and TCP header lengths, not the snaplen
    # RTP header fields wherever the UDP payload parses as RTP version 2; `is_rtp` says
    # whether the packet belongs to a stream classified as RTP (per flow and SSRC).
    "rtp_ssrc": pl.UInt32,
    "rtp_seq": pl.UInt16,
    "rtp_ts": pl.UInt32,
    "rtp_marker": pl.Boolean,
    "rtp_pt": pl.UInt8,
    "is_rtp": pl.Boolean,
    "flow_hash": pl.UInt64,  # stable hash of the directional 5-tuple (same in every capture)
    "l4_hash": pl.UInt64,  # hash of invariant bytes after the L4 header (matching only)
    "truncated": pl.Boolean,  # snaplen cut a header needed for this row's fields
}

#: One row per IP packet seen at the ingress capture point (the ``packets`` command).
PACKETS: Schema = {
    "flow_id": pl.UInt32,  # row of the flow table (directional 5-tuple and RTP SSRC)
    "proto": pl.UInt8,
    "ip_version": pl.UInt8,
    "src": pl.String,
    "dst": pl.String,
    "sport": pl.UInt16,
    "dport": pl.UInt16,
    "size_bytes": pl.UInt32,
    "t_ingress_ns": pl.Int64,
    "t_egress_ns": pl.Int64,  # null when not seen at egress
    "delay_ms": pl.Float64,  # egress minus ingress; null when not seen at egress
    "lost": pl.Boolean,  # null when unknown (outside the egress capture's span)
    "ecn_ingress": pl.UInt8,
    "ecn_egress": pl.UInt8,
    "ce_marked": pl.Boolean,  # became CE across the bottleneck; null when not seen at egress
    "dscp_ingress": pl.UInt8,
    "dscp_egress": pl.UInt8,
    "ip_id": pl.UInt32,
    "tcp_seq": pl.UInt32,
    "tcp_ack": pl.UInt32,
    "tcp_flags": pl.UInt16,
    "tcp_payload_bytes": pl.UInt32,
    "rtp_ssrc": pl.UInt32,
    "rtp_seq": pl.UInt16,
    "rtp_seq_ext": pl.Int64,  # RTP sequence unwrapped in ingress time order
    "rtp_ts": pl.UInt32,
    "rtp_marker": pl.Boolean,
    "rtp_pt": pl.UInt8,
}

#: Packets seen only at the egress point (reported, never dropped silently).
EGRESS_ONLY: Schema = {
    "flow_id": pl.UInt32,  # null when the flow was never seen at ingress
    **{k: v for k, v in CAPTURE.items() if k not in ("flow_hash", "l4_hash", "is_rtp")},
}

#: One row per flow: directional 5-tuple plus RTP SSRC (null for non-RTP flows).
FLOWS: Schema = {
    "flow_id": pl.UInt32,
    "proto": pl.UInt8,
    "ip_version": pl.UInt8,
    "src": pl.String,
    "dst": pl.String,
    "sport": pl.UInt16,
    "dport": pl.UInt16,
    "rtp_ssrc": pl.UInt32,
    "packets_in": pl.UInt64,
    "packets_out": pl.UInt64,  # ingress packets seen again at egress
    "bytes_in": pl.UInt64,
    "bytes_out": pl.UInt64,
    "packets_lost": pl.UInt64,
    "packets_unknown": pl.UInt64,  # entered outside the egress capture's span
    "loss_rate": pl.Float64,  # lost / (in - unknown), in [0, 1]
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
    "ce_marked": pl.UInt64,  # packets that became CE across the bottleneck
    "t_first_ns": pl.Int64,
    "t_last_ns": pl.Int64,
    "rate_in_mbps": pl.Float64,  # ingress IP bytes over the flow's duration
}


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
BITRATE_SERIES: Schema = {
    "t_s": pl.Float64,  # bin start, seconds from the run's t0
    "role": pl.String,  # or flow_id (UInt32) when the series is per flow
    "point": pl.String,  # "egress" (delivered) or "ingress" (offered)
    "bytes": pl.Int64,
    "rate_mbps": pl.Float64,  # 0 for a bin with no packet
}

#: One run's per-role series for the time-series figures (``metrics.timeseries``).
RUN_TIMESERIES: Schema = {
    "t_s": pl.Float64,
    "role": pl.String,
    "rate_mbps": pl.Float64,  # delivered (by egress time; ingress time for a single capture)
    "offered_mbps": pl.Float64,  # by ingress time
    "delay_mean_ms": pl.Float64,  # of the packets that entered in the bin; null if none
    "delay_p95_ms": pl.Float64,
    "delay_max_ms": pl.Float64,
    "loss_pct": pl.Float64,  # in [0, 100]; null when no packet's fate is known
    "packets": pl.Int64,  # packets that entered in the bin
    "capacity_mbps": pl.Float64,  # null when not given
}

#: What names a run in the metrics tables: its labels and the capacity it is filed under.
RUN_KEYS: Schema = {
    "run_id": pl.String,
    "campaign": pl.String,
    "qdisc": pl.String,
    "cca": pl.String,
    "system": pl.String,
    "queue": pl.String,
    "repetition": pl.Int64,
    "capacity_mbps": pl.Float64,  # configured (the condition's name), else the one used
}

# METRICS_RUNS and METRICS_ROLES, the metrics documents as table rows, derive from the
# metric registry: cganalysis.metrics.registry.


# --- CG traffic generator logs (cganalysis.cg; written by cga-cg, docs/cg.md) -------------

#: One row per RTP packet the generator sent.
CG_SENDER_PACKETS: Schema = {
    "t_ns": pl.Int64,  # send time, wall clock ns since the epoch (lines up with captures)
    "seq": pl.Int64,  # extended RTP sequence number (never wraps)
    "rtp_seq": pl.UInt16,
    "rtp_ts": pl.UInt32,  # 90 kHz
    "frame_id": pl.UInt32,
    "size_bytes": pl.UInt32,  # RTP packet (UDP payload) bytes
    "marker": pl.Boolean,
    "ecn": pl.UInt8,  # codepoint set: 0 Not-ECT, 1 ECT(1), 2 ECT(0)
    "due_ns": pl.Int64,  # when the pacer scheduled it (send - due = pacing error)
    "queue_delay_us": pl.Int64,  # time in the sender's RTP queue
}

#: One row per frame the encoder (model or trace) produced.
CG_SENDER_FRAMES: Schema = {
    "frame_id": pl.UInt32,
    "t_ns": pl.Int64,  # capture time of the frame
    "size_bytes": pl.UInt32,
    "packets": pl.UInt32,
    "keyframe": pl.Boolean,
    "target_bps": pl.Float64,  # controller's target when the frame was made
    "encoder_bps": pl.Float64,  # rate the encoder produced (follows the target with a lag)
}

#: One row per feedback (or timer event) the sender's controller processed.
CG_CONTROLLER: Schema = {
    "t_ns": pl.Int64,
    "event": pl.String,  # feedback, tfrc_report, loss_timer, feedback_timeout
    "cc": pl.String,  # scream, none, tfrc, gtfrc
    "ref_wnd_bytes": pl.Float64,  # SCReAM only
    "send_wnd_bytes": pl.Float64,  # SCReAM only
    "bytes_in_flight": pl.Int64,
    "target_bps": pl.Float64,
    "pace_bps": pl.Float64,
    "srtt_ms": pl.Float64,
    "rtt_sample_ms": pl.Float64,
    "qdelay_ms": pl.Float64,  # one-way delay over its minimum, as the sender estimates it
    "qdelay_avg_ms": pl.Float64,  # SCReAM only
    "qdelay_target_ms": pl.Float64,  # SCReAM only
    "l4s_alpha": pl.Float64,  # SCReAM only, [0, 1]
    "l4s_alpha_v": pl.Float64,  # SCReAM delay-based "virtual CE" fraction, [0, 1]
    "loss_rate": pl.Float64,  # SCReAM only, [0, 1]
    "loss_event_rate": pl.Float64,  # TFRC p, [0, 1]
    "x_recv_bps": pl.Float64,  # TFRC receive rate
    "x_calc_bps": pl.Float64,  # TFRC equation rate
    "packets_acked": pl.Int64,  # newly acknowledged by this report
    "packets_ce": pl.Int64,
    "packets_lost": pl.Int64,  # newly declared lost
    "rtp_queue_bytes": pl.Int64,
    "rtp_queue_delay_ms": pl.Float64,
}

#: One row per RTP packet the receiver got.
CG_RECEIVER_PACKETS: Schema = {
    "t_ns": pl.Int64,  # kernel arrival time, wall clock ns since the epoch
    "ssrc": pl.UInt32,
    "rtp_seq": pl.UInt16,
    "seq": pl.Int64,  # extended sequence number
    "rtp_ts": pl.UInt32,
    "marker": pl.Boolean,
    "pt": pl.UInt8,
    "size_bytes": pl.UInt32,  # RTP packet (UDP payload) bytes
    "ecn": pl.UInt8,  # as received: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE
    "frame_id": pl.UInt32,  # null for packets without the generator's payload header
    "send_t_ns": pl.Int64,  # sender's clock when sent (same host: one-way delay)
}

#: One row per frame at the receiver (complete or not; entirely lost frames included).
CG_RECEIVER_FRAMES: Schema = {
    "frame_id": pl.UInt32,
    "rtp_ts": pl.UInt32,  # null when no packet of the frame arrived
    "send_t_ns": pl.Int64,  # when its first packet left the sender
    "t_first_ns": pl.Int64,
    "t_last_ns": pl.Int64,  # delivery time when complete
    "packets_expected": pl.UInt32,  # null when no packet arrived
    "packets_received": pl.UInt32,
    "bytes_expected": pl.UInt32,
    "bytes_received": pl.Int64,
    "complete": pl.Boolean,
    "keyframe": pl.Boolean,
    "delivery_delay_ms": pl.Float64,  # t_last - send_t for complete frames, else null
}

#: A frame-size trace (``cganalysis cg frames-from-capture``; ``cga-cg send --frames``).
CG_FRAME_TRACE: Schema = {
    "t_s": pl.Float64,  # frame time, seconds from the first frame
    "size_bytes": pl.Int64,  # RTP payload bytes of the frame
}
