"""The reference reader: tshark (through pyshark) dissects, we only copy its fields.

Thousands of packets per second instead of millions, but its dissectors are written and
tested by other people, which is what makes it a useful check on the native reader. The
``flow_hash`` and ``l4_hash`` columns are computed here in Python; they are consistent
between captures read by this engine, not with the native engine's values.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import polars as pl

from cganalysis import schemas
from cganalysis.capture.model import CaptureInfo, InterfaceInfo
from cganalysis.errors import CaptureError

#: Dissect packets one at a time, as the native reader does (no reassembly), and try RTP
#: on every UDP payload (the per-stream classification decides afterwards).
TSHARK_PREFS = {
    "ip.defragment": "FALSE",
    "ipv6.defragment": "FALSE",
    "tcp.desegment_tcp_streams": "FALSE",
    "tcp.analyze_sequence_numbers": "FALSE",
    "rtp.heuristic_rtp": "TRUE",
}


def _hash(*parts: object) -> int:
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def _int(value: Any) -> int | None:
    if value is None:
        return None
    text = str(value)
    return int(text, 0) if text.startswith("0x") else int(float(text)) if "." in text else int(text)


def _field(layer: Any, *path: str) -> Any:
    """``layer.a.b...`` or None where a step is missing."""
    for name in path:
        layer = getattr(layer, name, None) if layer is not None else None
    return layer


def _hex_bytes(value: Any, limit: int = 16) -> bytes:
    if value is None:
        return b""
    text = str(value).replace(":", "")
    return bytes.fromhex(text)[:limit]


def _row(pkt: Any) -> dict[str, Any]:
    frame = pkt.frame_info
    epoch = str(frame.time_epoch)
    seconds, _, frac = epoch.partition(".")
    row: dict[str, Any] = {
        "t_ns": int(seconds) * 1_000_000_000 + int((frac + "000000000")[:9]),
        "interface_id": _int(_field(frame, "interface_id")) or 0,
        "wire_len_bytes": _int(frame.len),
        "truncated": "_ws.short" in pkt or "_ws.malformed" in pkt,
    }
    layers = {layer.layer_name for layer in pkt.layers}
    if "ip" in layers:
        ip = pkt.ip
        row |= {
            "ip_version": 4,
            "src": str(ip.src),
            "dst": str(ip.dst),
            "proto": _int(ip.proto),
            "ip_id": _int(ip.id),
            "size_bytes": _int(ip.len),
            "dscp": _int(ip.dsfield_tree.dscp),
            "ecn": _int(ip.dsfield_tree.ecn),
            "ttl": _int(ip.ttl),
        }
    elif "ipv6" in layers:
        ip6 = pkt.ipv6
        frag_id = _int(_field(ip6, "fraghdr", "ident"))
        row |= {
            "ip_version": 6,
            "src": str(ip6.src),
            "dst": str(ip6.dst),
            "proto": _int(_last_next_header(ip6)),
            "ip_id": frag_id,
            "size_bytes": (_int(ip6.plen) or 0) + 40,
            "dscp": _int(ip6.tclass_tree.dscp),
            "ecn": _int(ip6.tclass_tree.ecn),
            "ttl": _int(ip6.hlim),
        }
    else:
        return row
    if "udp" in layers:
        udp = pkt.udp
        row |= {"sport": _int(udp.srcport), "dport": _int(udp.dstport)}
        row["l4_hash"] = _hash("udp", _hex_bytes(_field(udp, "payload")))
    elif "tcp" in layers:
        tcp = pkt.tcp
        row |= {
            "sport": _int(tcp.srcport),
            "dport": _int(tcp.dstport),
            "tcp_seq": _int(tcp.seq_raw),
            "tcp_ack": _int(tcp.ack_raw),
            "tcp_flags": _int(tcp.flags),
            "tcp_payload_bytes": _int(tcp.len),
        }
        row["l4_hash"] = _hash(
            "tcp",
            _int(tcp.window_size_value),
            _int(_field(tcp, "urgent_pointer")),
            _hex_bytes(_field(tcp, "options"), 40),
            _hex_bytes(_field(tcp, "payload")),
        )
    if "rtp" in layers:
        rtp = pkt.rtp
        row |= {
            "rtp_ssrc": _int(rtp.ssrc),
            "rtp_seq": _int(rtp.seq),
            "rtp_ts": _int(rtp.timestamp),
            "rtp_marker": bool(_int(rtp.marker)),
            "rtp_pt": _int(rtp.p_type),
        }
    row["flow_hash"] = _hash(
        row["ip_version"], row["src"], row["dst"], row["proto"], row.get("sport"), row.get("dport")
    )
    return row


def _last_next_header(ip6: Any) -> Any:
    """The upper-layer protocol after any extension headers."""
    nxt = ip6.nxt
    for name in ("fraghdr", "hopopts", "routing", "dstopts"):
        sub = _field(ip6, name)
        if _field(sub, "nxt") is not None:
            nxt = _field(sub, "nxt")
    return nxt


def _format_of(path: Path) -> str:
    with path.open("rb") as fh:
        return "pcapng" if fh.read(4) == b"\n\r\r\n" else "pcap"


def read_pyshark(path: Path) -> tuple[pl.DataFrame, CaptureInfo]:
    """The CAPTURE table (without ``is_rtp``) as tshark dissects ``path``."""
    import pyshark

    capture = pyshark.FileCapture(
        str(path), use_json=True, keep_packets=False, override_prefs=TSHARK_PREFS
    )
    try:
        rows = [_row(pkt) for pkt in capture]
    except Exception as err:  # tshark's own complaint about the file
        raise CaptureError(path, f"tshark could not read it: {err}") from None
    finally:
        capture.close()
    schema = {k: v for k, v in schemas.CAPTURE.items() if k != "is_rtp"}
    table = pl.DataFrame(rows, schema=schema) if rows else schemas.empty(schema)
    table = table.with_columns(pl.col("l4_hash").fill_null(0), pl.col("truncated").fill_null(False))
    info = CaptureInfo(
        path=path,
        format=_format_of(path),
        engine="pyshark",
        interfaces=tuple(
            InterfaceInfo(interface_id=i, link_type=-1, name=None, snaplen=0, ts_resolution="?")
            for i in sorted(set(table["interface_id"].to_list()) or {0})
        ),
    )
    return table, info
