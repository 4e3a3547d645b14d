"""Tiny pcap/pcapng files built byte by byte, for records no real tool writes on demand
(TSO lengths, jumbograms, invalid timestamp fields, old versions, odd interfaces)."""

from __future__ import annotations

import struct

ETH_IPV4, ETH_IPV6 = 0x0800, 0x86DD


def eth(ethertype: int, payload: bytes) -> bytes:
    return bytes([2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]) + struct.pack(">H", ethertype) + payload


def tcp(payload: bytes, seq: int = 1) -> bytes:
    return struct.pack(">HHIIBBHHH", 40000, 5201, seq, 2, 5 << 4, 0x18, 512, 0, 0) + payload


def udp(payload: bytes, sport: int = 1, dport: int = 2) -> bytes:
    return struct.pack(">HHHH", sport, dport, 8 + len(payload), 0) + payload


def ipv4(proto: int, payload: bytes, *, total: int | None = None, ip_id: int = 7) -> bytes:
    total = 20 + len(payload) if total is None else total
    src, dst = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    header = struct.pack(">BBHHHBBH4s4s", 0x45, 0, total, ip_id, 0x4000, 64, proto, 0, src, dst)
    return header + payload


def ipv6(next_header: int, payload: bytes, *, plen: int | None = None) -> bytes:
    plen = len(payload) if plen is None else plen
    src, dst = bytes(15) + b"\x01", bytes(15) + b"\x02"
    return struct.pack(">IHBB", 0x6000_0000, plen, next_header, 64) + src + dst + payload


def jumbogram(segment: bytes) -> bytes:
    """IPv6 (payload length 0) + hop-by-hop Jumbo Payload option (RFC 2675) + ``segment``."""
    hop_by_hop = bytes([6, 0, 0xC2, 4]) + struct.pack(">I", 8 + len(segment))
    return ipv6(0, hop_by_hop + segment, plen=0)


#: One record: (seconds, sub-second field, captured bytes, length on the wire).
Record = tuple[int, int, bytes, int]


def record(sec: int, frac: int, frame: bytes, snaplen: int = 65535) -> Record:
    return (sec, frac, frame[:snaplen], len(frame))


def pcap(
    records: list[Record],
    *,
    nanosecond: bool = False,
    version: tuple[int, int] = (2, 4),
    snaplen: int = 65535,
    link_type: int = 1,
    swapped_lengths: bool = False,
) -> bytes:
    """A little-endian pcap file; ``swapped_lengths`` writes the wire length first (as
    versions 2.0-2.2 did)."""
    magic = 0xA1B23C4D if nanosecond else 0xA1B2C3D4
    out = struct.pack("<IHHiIII", magic, *version, 0, 0, snaplen, link_type)
    for sec, frac, data, wire in records:
        lengths = (wire, len(data)) if swapped_lengths else (len(data), wire)
        out += struct.pack("<IIII", sec, frac, *lengths) + data
    return out


def _block(block_type: int, body: bytes) -> bytes:
    body += bytes(-len(body) % 4)
    length = 12 + len(body)
    return struct.pack("<II", block_type, length) + body + struct.pack("<I", length)


def pcapng(
    link_types: list[int],
    packets: list[tuple[int, int, bytes]],
    *,
    version: tuple[int, int] = (1, 0),
) -> bytes:
    """A little-endian pcapng file: one interface per link type (microseconds), then
    enhanced packet blocks (interface, microseconds since the epoch, frame)."""
    shb = _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, *version, -1))
    idbs = b"".join(_block(1, struct.pack("<HHI", lt, 0, 0)) for lt in link_types)
    epbs = b"".join(
        _block(6, struct.pack("<IIIII", i, ts >> 32, ts & 0xFFFF_FFFF, len(f), len(f)) + f)
        for i, ts, f in packets
    )
    return shb + idbs + epbs
