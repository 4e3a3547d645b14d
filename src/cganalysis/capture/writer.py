"""Writing synthetic pcap files (Ethernet, IPv4, UDP/RTP and TCP), vectorised with numpy.

For tests and benchmarks: a table of packets with known fields becomes a real pcap that
any reader (ours, tshark, dpkt) can open, so that what the reader finds can be compared
with the truth. Frames are built column by column, never packet by packet, so millions of
packets take seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

#: Columns of the table :func:`write_pcap` takes (nulls not allowed; unused fields 0).
SYNTHETIC_COLUMNS: dict[str, type[pl.DataType]] = {
    "t_ns": pl.Int64,
    "src_ip": pl.UInt32,  # IPv4 address as an integer
    "dst_ip": pl.UInt32,
    "proto": pl.UInt8,  # 6 TCP or 17 UDP
    "sport": pl.UInt16,
    "dport": pl.UInt16,
    "ip_id": pl.UInt16,
    "size_bytes": pl.UInt16,  # IP total length
    "dscp": pl.UInt8,
    "ecn": pl.UInt8,
    "ttl": pl.UInt8,
    "tcp_seq": pl.UInt32,
    "tcp_ack": pl.UInt32,
    "tcp_flags": pl.UInt8,
    "is_rtp": pl.Boolean,  # UDP payload starts with an RTP header
    "rtp_ssrc": pl.UInt32,
    "rtp_seq": pl.UInt16,
    "rtp_ts": pl.UInt32,
    "rtp_marker": pl.Boolean,
    "rtp_pt": pl.UInt8,
    "payload_tag": pl.UInt32,  # written after the headers, so payloads differ
}

ETH_LEN, IP_LEN, UDP_LEN, TCP_LEN, RTP_LEN = 14, 20, 8, 20, 12


def _be(values: np.ndarray[Any, Any], width: int) -> np.ndarray[Any, Any]:
    """Big-endian bytes of each value, one row per value."""
    dtype = {1: ">u1", 2: ">u2", 4: ">u4"}[width]
    return values.astype(dtype).view(np.uint8).reshape(-1, width)


def _ipv4_checksum(header: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    words = header.reshape(len(header), -1, 2).astype(np.uint32)
    total: np.ndarray[Any, Any] = (words[:, :, 0] << 8 | words[:, :, 1]).sum(axis=1)
    while (total >> 16).any():
        total = (total & 0xFFFF) + (total >> 16)
    checksum: np.ndarray[Any, Any] = (~total & 0xFFFF).astype(np.uint16)
    return checksum


def build_frames(
    table: pl.DataFrame, snaplen: int
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Frames of the packets, cut at ``snaplen``: (n x width bytes, captured lengths)."""
    n = table.height
    col = {name: table[name].to_numpy() for name in SYNTHETIC_COLUMNS}
    is_tcp = col["proto"] == 6
    width = max(ETH_LEN + IP_LEN + TCP_LEN + RTP_LEN + 4, snaplen)
    frame = np.zeros((n, width), dtype=np.uint8)
    frame[:, 0:6] = (0x02, 0, 0, 0, 0, 0x02)
    frame[:, 6:12] = (0x02, 0, 0, 0, 0, 0x01)
    frame[:, 12:14] = (0x08, 0x00)
    ip = ETH_LEN
    frame[:, ip] = 0x45
    frame[:, ip + 1] = (col["dscp"].astype(np.uint8) << 2) | (col["ecn"].astype(np.uint8) & 3)
    frame[:, ip + 2 : ip + 4] = _be(col["size_bytes"], 2)
    frame[:, ip + 4 : ip + 6] = _be(col["ip_id"], 2)
    frame[:, ip + 6] = 0x40  # don't fragment
    frame[:, ip + 8] = col["ttl"]
    frame[:, ip + 9] = col["proto"]
    frame[:, ip + 12 : ip + 16] = _be(col["src_ip"], 4)
    frame[:, ip + 16 : ip + 20] = _be(col["dst_ip"], 4)
    frame[:, ip + 10 : ip + 12] = _be(_ipv4_checksum(frame[:, ip : ip + IP_LEN]), 2)
    l4 = ip + IP_LEN
    frame[:, l4 : l4 + 2] = _be(col["sport"], 2)
    frame[:, l4 + 2 : l4 + 4] = _be(col["dport"], 2)
    # UDP: length; TCP: seq, ack, data offset, flags, window.
    udp_len = col["size_bytes"].astype(np.int64) - IP_LEN
    frame[~is_tcp, l4 + 4 : l4 + 6] = _be(udp_len[~is_tcp], 2)
    frame[is_tcp, l4 + 4 : l4 + 8] = _be(col["tcp_seq"][is_tcp], 4)
    frame[is_tcp, l4 + 8 : l4 + 12] = _be(col["tcp_ack"][is_tcp], 4)
    frame[is_tcp, l4 + 12] = 5 << 4
    frame[is_tcp, l4 + 13] = col["tcp_flags"][is_tcp]
    frame[is_tcp, l4 + 14 : l4 + 16] = (0xFF, 0xFF)
    payload = np.where(is_tcp, l4 + TCP_LEN, l4 + UDP_LEN)
    rtp = col["is_rtp"] & ~is_tcp
    at = l4 + UDP_LEN
    frame[rtp, at] = 0x80
    frame[rtp, at + 1] = (col["rtp_marker"][rtp].astype(np.uint8) << 7) | (
        col["rtp_pt"][rtp] & 0x7F
    )
    frame[rtp, at + 2 : at + 4] = _be(col["rtp_seq"][rtp], 2)
    frame[rtp, at + 4 : at + 8] = _be(col["rtp_ts"][rtp], 4)
    frame[rtp, at + 8 : at + 12] = _be(col["rtp_ssrc"][rtp], 4)
    payload = np.where(rtp, at + RTP_LEN, payload)
    tag = _be(col["payload_tag"], 4)
    rows = np.arange(n)
    for k in range(4):
        frame[rows, payload + k] = tag[:, k]
    caplen = np.minimum(ETH_LEN + col["size_bytes"].astype(np.int64), snaplen)
    return frame, caplen


def pcap_header(*, snaplen: int = 128, nanosecond: bool = True, big_endian: bool = False) -> bytes:
    """The 24-byte pcap file header (Ethernet link type)."""
    order = ">" if big_endian else "<"
    magic = 0xA1B23C4D if nanosecond else 0xA1B2C3D4
    header = np.array(
        [(magic, 2, 4, 0, 0, snaplen, 1)],
        dtype=[
            ("m", f"{order}u4"),
            ("maj", f"{order}u2"),
            ("min", f"{order}u2"),
            ("tz", f"{order}i4"),
            ("sig", f"{order}u4"),
            ("snap", f"{order}u4"),
            ("lt", f"{order}u4"),
        ],
    )
    return header.tobytes()


def pcap_records(
    table: pl.DataFrame,
    *,
    snaplen: int = 128,
    nanosecond: bool = True,
    big_endian: bool = False,
) -> bytes:
    """The records of ``table`` (:data:`SYNTHETIC_COLUMNS`), to follow a :func:`pcap_header`
    (so that a large file can be written a slice at a time)."""
    missing = [c for c in SYNTHETIC_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"synthetic packet table lacks columns {missing}")
    frame, caplen = build_frames(table, snaplen)
    n = table.height
    order = ">" if big_endian else "<"
    t = table["t_ns"].to_numpy().astype(np.int64)
    frac = t % 1_000_000_000 if nanosecond else (t % 1_000_000_000) // 1000
    rec = np.zeros(
        n,
        dtype=[
            ("s", f"{order}u4"),
            ("f", f"{order}u4"),
            ("cap", f"{order}u4"),
            ("len", f"{order}u4"),
        ],
    )
    rec["s"], rec["f"] = t // 1_000_000_000, frac
    rec["cap"], rec["len"] = caplen, ETH_LEN + table["size_bytes"].to_numpy().astype(np.int64)
    # Each record as a row (16-byte header, then the frame); the captured bytes of the rows,
    # in row-major order, are the records back to back.
    rows = np.concatenate([rec.view(np.uint8).reshape(n, 16), frame], axis=1)
    keep = np.arange(rows.shape[1]) < (16 + caplen)[:, None]
    return rows[keep].tobytes()


def write_pcap(
    path: Path,
    table: pl.DataFrame,
    *,
    snaplen: int = 128,
    nanosecond: bool = True,
    big_endian: bool = False,
) -> None:
    """Writes ``table`` (:data:`SYNTHETIC_COLUMNS`) as a pcap file, in the table's order."""
    options: dict[str, Any] = {
        "snaplen": snaplen,
        "nanosecond": nanosecond,
        "big_endian": big_endian,
    }
    records = pcap_records(table, **options)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as fh:
        fh.write(pcap_header(**options))
        fh.write(records)
    tmp.replace(path)


def synthetic_table(rows: dict[str, Any]) -> pl.DataFrame:
    """A synthetic packet table from column lists, unused columns filled with zeros."""
    n = len(next(iter(rows.values())))
    data = {
        name: pl.Series(
            name, rows.get(name, [0] * n if dtype is not pl.Boolean else [False] * n)
        ).cast(dtype)
        for name, dtype in SYNTHETIC_COLUMNS.items()
    }
    return pl.DataFrame(data)
