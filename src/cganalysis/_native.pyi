"""Type stub of ``cganalysis._native``, the Rust extension built from ``native/python``."""

import os
from typing import Any

import numpy as np
from numpy.typing import NDArray

def keep_freed_blocks() -> None:
    """For a process that matches captures and exits (the ``packets`` command): the C
    allocator keeps freed blocks for reuse (``cga_core::hugepages::keep_freed_blocks``)."""

def read_capture(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Reads a whole pcap or pcapng file (memory-mapped, one pass, GIL released).

    Returns a dict with the keys:

    - ``"format"``: ``"pcap"`` or ``"pcapng"``; ``"big_endian"``: bool (pcapng: of the
      first section); ``"nanosecond"``: bool for pcap, None for pcapng; ``"snaplen"``: int
      (pcapng: the largest interface snaplen).
    - ``"columns"``: dict of 1-D numpy arrays of one length (one row per packet record, in
      file order): ``t_ns`` int64 (``np.iinfo(np.int64).min`` when the block has no
      timestamp), ``interface_id`` uint32, ``wire_len`` uint32, ``cap_len`` uint32,
      ``ip_version`` uint8 (0: not IP or unreadable IP header), ``flow_idx`` uint32 (into
      ``"flows"``; 2**32 - 1 when not IP), ``flow_hash`` uint64 (0 when not IP),
      ``proto`` uint8, ``sport`` uint16, ``dport`` uint16, ``has_ports`` bool, ``ip_id``
      uint32, ``has_ip_id`` bool, ``ip_len`` uint32, ``dscp`` uint8, ``ecn`` uint8, ``ttl``
      uint8, ``tcp_seq`` uint32, ``tcp_ack`` uint32, ``tcp_flags`` uint16,
      ``tcp_payload_len`` uint32, ``has_tcp`` bool, ``has_rtp`` bool, ``rtp_ssrc`` uint32,
      ``rtp_seq`` uint16, ``rtp_ts`` uint32, ``rtp_marker`` bool, ``rtp_pt`` uint8,
      ``l4_hash`` uint64, ``truncated`` bool. Fields a packet lacks are 0 / False.
    - ``"flows"``: dict with ``"ip_version"`` (uint8 array), ``"src"``, ``"dst"``
      (list[str]), ``"proto"`` (uint8 array), ``"sport"``, ``"dport"`` (uint16 arrays).
    - ``"interfaces"``: list of dicts ``{"interface_id", "link_type", "name" (str | None),
      "snaplen", "ts_resolution" (e.g. "1e-6", "1e-9", "2^-20")}``.
    - ``"stats"``: list of dicts, one per interface with an interface statistics block (the
      last one wins): ``{"interface_id", "start_ns", "end_ns", "ifrecv", "ifdrop",
      "filteraccept", "osdrop", "usrdeliv"}``, each int or None.
    - ``"warnings"``: list[str] (e.g. a truncated last record).
    - ``"quirks"``: dict of counts of records read with a decision: ``len_from_frame`` (IP
      length field 0, TSO: the frame's length), ``jumbograms`` (IPv6 Jumbo Payload option),
      ``bad_timestamps`` (pcap sub-second field out of range: ``t_ns`` is the no-timestamp
      value) and ``first_bad_timestamp_at`` (byte offset or None), ``skipped_packets``
      (pcapng interfaces with a link type the reader cannot decode: no row).

    Raises ``OSError`` (``FileNotFoundError``, ``IsADirectoryError``, ...) when the file
    cannot be read, and ``ValueError(message, byte_offset)`` when it is not a readable
    capture.
    """

def identity_keys(
    kind: NDArray[np.uint8],
    flow_hash: NDArray[np.uint64],
    ip_id: NDArray[np.uint32],
    ip_len: NDArray[np.uint32],
    tcp_seq: NDArray[np.uint32],
    tcp_ack: NDArray[np.uint32],
    rtp_ssrc: NDArray[np.uint32],
    rtp_seq: NDArray[np.uint16],
    l4_hash: NDArray[np.uint64],
) -> NDArray[np.uint64]:
    """One identity key per packet (see ``native/core/src/keys.rs``).

    Raises ``ValueError`` when the columns differ in length.
    """

def running_jitter(abs_transit_diff: NDArray[np.float64]) -> NDArray[np.float64]:
    """The running RFC 3550 jitter after each packet from the transit-time differences
    ``|D|`` (RTP timestamp units): ``J_k = |D_k| / 16 + 15/16 J_(k-1)``, ``J_0 = 0`` (see
    ``native/core/src/jitter.rs``). The array must be contiguous."""

def match_points(
    in_key: NDArray[np.uint64],
    in_ts: NDArray[np.int64],
    eg_key: NDArray[np.uint64],
    eg_ts: NDArray[np.int64],
    max_delay_ns: int,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.bool_]]:
    """Pairs ingress and egress packets: ``(in_to_eg, eg_to_in, reverse_twin)``.

    See ``native/core/src/matcher.rs``. Raises ``ValueError`` on columns of unequal length
    or a negative ``max_delay_ns``.
    """

class CaptureChunks:
    """A capture read a chunk at a time, with the same decoding as :func:`read_capture`:
    memory-mapped, the pages read given back as it moves on, so memory does not grow with
    the file (only with its number of flows)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Opens the file and checks its header (errors as :func:`read_capture`)."""

    def next_chunk(self, max_packets: int) -> dict[str, Any] | None:
        """The next at most ``max_packets`` packet records in file order, or None at the
        end: ``{"columns": ..., "flows": ...}`` as in :func:`read_capture`, where
        ``"flows"`` holds only the flows first seen in this chunk (``flow_idx`` numbers
        them on from the earlier chunks')."""

    def bytes_read(self) -> int:
        """Bytes of the file decoded so far: where the next record starts (the file's
        length once read to its end, unless its last record is incomplete); 0 once
        finished."""

    def finish(self) -> dict[str, Any]:
        """After the last chunk: the dict of :func:`read_capture` without ``"columns"``
        and ``"flows"`` (format, interfaces, stats, warnings, quirks)."""

class StreamedTables:
    """The tables of a streaming match: every row written, the footers not yet."""

    def finish(self, metadata: str) -> None:
        """Writes both footers, each with ``metadata`` (JSON) under the key cganalysis."""
    def flow_table(self) -> dict[str, Any]:
        """The flow table's columns (``flows=True``; once)."""

class PendingStream:
    """A streaming match running on its own threads (``start_stream``)."""

    def progress(self) -> tuple[int, int, int, bool]:
        """(pass: 1 or 2, bytes of the ingress capture read, of the egress capture, whether
        the first pass reads the egress capture too: a classic pcap one is read only in
        the second)."""
    def done(self) -> bool: ...
    def result(self) -> tuple[StreamedTables | None, dict[str, Any]]:
        """As ``match_pair``'s result, once the match has ended."""

def start_stream(
    ingress: str,
    egress: str,
    packets: str,
    egress_only: str,
    max_delay_ns: int,
    end_guard_ns: int | None = None,
    chunk_packets: int = 131072,
    flows: bool = False,
    keep_delays: int = 16777216,
    page_cache_bytes: int | None = None,
) -> PendingStream:
    """Starts matching both captures streaming into the tables at ``packets`` and
    ``egress_only`` (``cga_core::streaming``) and returns at once. ``page_cache_bytes``:
    what the page cache may hold of the captures between the passes (default: the memory
    available, less a reserve)."""

class PairedTables:
    """The packet and egress-only tables of :func:`match_pair`, held natively."""

    def write(self, packets: str, egress_only: str, metadata: str) -> None:
        """Writes both as Parquet (``metadata``: JSON under the key ``cganalysis``)."""
    def flow_table(self) -> dict[str, Any]:
        """The flow table's columns (``cganalysis.schemas.FLOWS``)."""

class PendingMatch:
    """A match started by :func:`start_read` or :func:`start_match`, running on threads of
    its own."""

    def match_with(self, max_delay_ns: int, end_guard_ns: int | None = None) -> None:
        """Gives the match its options (once; :func:`start_match` has): it starts once both
        captures are read."""

    def result(self) -> tuple[PairedTables | None, dict[str, Any]]:
        """Waits for it; returns what :func:`match_pair` returns (once only). Raises
        ``RuntimeError`` if the match has no options yet."""

def start_read(ingress: str, egress: str) -> PendingMatch:
    """Starts reading both captures on threads of their own and returns at once; the match
    follows once :meth:`PendingMatch.match_with` gives it its options."""

def start_match(
    ingress: str, egress: str, max_delay_ns: int, end_guard_ns: int | None = None
) -> PendingMatch:
    """Starts :func:`match_pair` on threads of its own and returns at once."""

def match_pair(
    ingress: str, egress: str, max_delay_ns: int, end_guard_ns: int | None = None
) -> tuple[PairedTables | None, dict[str, Any]]:
    """Reads both captures (two threads), matches them and builds both tables
    (``native/core/src/table.rs``). The dict holds ``ingress`` and ``egress`` (as
    :func:`read_capture`'s without ``columns`` and ``flows``), ``counts``, ``span_ns`` and
    ``guard_ns``, or ``error``: ``("no_ip", 0 | 1)`` or ``("swapped", reverse, matched)``.
    Raises ``OSError`` naming the file, or ``ValueError(message, byte_offset, path)``."""
