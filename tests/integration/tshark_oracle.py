"""tshark as an independent oracle: its dissection of a capture as a polars table."""

from __future__ import annotations

import subprocess
from pathlib import Path

import polars as pl

FIELDS = [
    "frame.time_epoch",
    "frame.interface_id",
    "frame.len",
    "ip.src",
    "ip.dst",
    "ip.proto",
    "ip.id",
    "ip.len",
    "ip.dsfield.dscp",
    "ip.dsfield.ecn",
    "ip.ttl",
    "ip.flags.mf",
    "ip.frag_offset",
    "ipv6.src",
    "ipv6.dst",
    "ipv6.plen",
    "ipv6.tclass.dscp",
    "ipv6.tclass.ecn",
    "ipv6.hlim",
    "ipv6.fraghdr.ident",
    "udp.srcport",
    "udp.dstport",
    "tcp.srcport",
    "tcp.dstport",
    "tcp.seq_raw",
    "tcp.ack_raw",
    "tcp.flags",
    "tcp.len",
    "rtp.ssrc",
    "rtp.seq",
    "rtp.timestamp",
    "rtp.marker",
    "rtp.p_type",
]

PREFS = [
    "ip.defragment:FALSE",
    "ipv6.defragment:FALSE",
    "tcp.desegment_tcp_streams:FALSE",
    "rtp.heuristic_rtp:TRUE",
]


def _first(value: str) -> str | None:
    """The outer header's value (ICMP errors quote an inner header: 'outer,inner')."""
    if value == "":
        return None
    return value.split(",", maxsplit=1)[0]


def _int(value: str | None) -> int | None:
    """A field's integer; tshark 4.2 and later print a boolean field (``ip.flags.mf``) as
    ``True`` / ``False`` where 4.0 (Debian 12's) prints ``1`` / ``0``."""
    if value is None:
        return None
    if value in ("True", "False"):
        return int(value == "True")
    return int(value, 0) if value.startswith("0x") else int(value)


def _epoch_ns(value: str) -> int:
    seconds, _, frac = value.partition(".")
    return int(seconds) * 1_000_000_000 + int((frac + "000000000")[:9])


def tshark_table(path: Path) -> pl.DataFrame:
    """One row per frame, in file order, with the columns named like the CAPTURE table."""
    cmd = ["tshark", "-r", str(path), "-n", "-T", "fields", "-E", "separator=/t"]
    for pref in PREFS:
        cmd += ["-o", pref]
    for field in FIELDS:
        cmd += ["-e", field]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        v = dict(zip(FIELDS, (_first(x) for x in line.split("\t")), strict=True))
        v4 = v["ip.src"] is not None
        v6 = v["ipv6.src"] is not None and not v4
        rows.append(
            {
                "t_ns": _epoch_ns(v["frame.time_epoch"] or "0"),
                "interface_id": _int(v["frame.interface_id"]) or 0,
                "wire_len_bytes": _int(v["frame.len"]),
                "ip_version": 4 if v4 else 6 if v6 else None,
                "src": v["ip.src"] if v4 else v["ipv6.src"],
                "dst": v["ip.dst"] if v4 else v["ipv6.dst"],
                "ip_id": _int(v["ip.id"]) if v4 else _int(v["ipv6.fraghdr.ident"]),
                "size_bytes": _int(v["ip.len"])
                if v4
                else (_int(v["ipv6.plen"]) or 0) + 40
                if v6
                else None,
                "dscp": _int(v["ip.dsfield.dscp"] if v4 else v["ipv6.tclass.dscp"]),
                "ecn": _int(v["ip.dsfield.ecn"] if v4 else v["ipv6.tclass.ecn"]),
                "ttl": _int(v["ip.ttl"] if v4 else v["ipv6.hlim"]),
                "fragment": bool(_int(v["ip.flags.mf"]) or _int(v["ip.frag_offset"]))
                or v["ipv6.fraghdr.ident"] is not None,
                "sport": _int(v["udp.srcport"] or v["tcp.srcport"]),
                "dport": _int(v["udp.dstport"] or v["tcp.dstport"]),
                "ip_proto": _int(v["ip.proto"]),
                "tcp_seq": _int(v["tcp.seq_raw"]),
                "tcp_ack": _int(v["tcp.ack_raw"]),
                "tcp_flags": _int(v["tcp.flags"]),
                "tcp_payload_bytes": _int(v["tcp.len"]),
                "rtp_ssrc": _int(v["rtp.ssrc"]),
                "rtp_seq": _int(v["rtp.seq"]),
                "rtp_ts": _int(v["rtp.timestamp"]),
                "rtp_marker": None if v["rtp.marker"] is None else v["rtp.marker"] in ("1", "True"),
                "rtp_pt": _int(v["rtp.p_type"]),
            }
        )
    return pl.DataFrame(rows, infer_schema_length=None)
