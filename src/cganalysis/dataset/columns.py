"""Column documentation for the datasheet, read from :mod:`cganalysis.schemas` itself.

The schemas declare each column once with its type and a trailing comment; the datasheet
shows the same text, so the two never drift apart. Units come from the column-name
suffixes the project uses (``_ns``, ``_ms``, ``_bytes``, ``_mbps``, ...).
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

from cganalysis import schemas

#: Column-name suffix -> unit.
UNITS: tuple[tuple[str, str], ...] = (
    ("_ns", "ns (since the epoch for t_*)"),
    ("_us", "us"),
    ("_ms2", "ms^2"),
    ("_ms", "ms"),
    ("_s", "s"),
    ("_bytes", "bytes"),
    ("_mbps", "Mbit/s"),
    ("_rate", "fraction in [0, 1]"),
)

#: Descriptions of the columns whose declaration carries no comment (a comment wins).
FALLBACK: dict[str, str] = {
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
    "t_first_ns": "first packet's ingress time",
    "t_last_ns": "last packet's ingress time",
}

_LINE = re.compile(r'^\s*"(?P<name>\w+)":\s*(?P<type>pl\.\w+)[^#]*(?:#\s*(?P<doc>.*))?$')


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str
    unit: str
    description: str


def unit_of(name: str) -> str:
    for suffix, unit in UNITS:
        if name.endswith(suffix):
            return unit
    return ""


def _comments(schema_name: str) -> dict[str, str]:
    """Trailing comments of ``schemas.<schema_name>``'s lines, by column."""
    source = inspect.getsource(schemas)
    start = source.find(f"\n{schema_name}: Schema = {{")
    if start < 0:
        return {}
    end = source.find("\n}", start)
    out: dict[str, str] = {}
    for line in source[start:end].splitlines():
        m = _LINE.match(line)
        if m and m["doc"]:
            out[m["name"]] = m["doc"].strip()
    return out


def describe(schema_name: str) -> list[Column]:
    """Every column of the named schema (e.g. ``"PACKETS"``) with type, unit and text."""
    schema = getattr(schemas, schema_name)
    docs = _comments(schema_name)
    return [
        Column(name, str(dtype), unit_of(name), docs.get(name, ""))
        for name, dtype in schema.items()
    ]
