"""Identity keys per packet and their pairing across the two capture points."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from cganalysis import _native

KIND_RTP, KIND_TCP, KIND_OTHER = 0, 1, 2

NO_TIMESTAMP = np.iinfo(np.int64).min


def _column(df: pl.DataFrame, name: str, dtype: type[np.generic]) -> np.ndarray[Any, Any]:
    return df[name].fill_null(0).to_numpy().astype(dtype, copy=False)


def identity_keys(packets: pl.DataFrame) -> np.ndarray[Any, np.dtype[np.uint64]]:
    """One 64-bit identity per packet from the fields a router leaves alone.

    RTP packets are known by stream and sequence number, TCP segments by seq, ack, IP ID,
    length and the bytes after the checksum, anything else by IP ID, length and its first
    payload bytes; always within the directional 5-tuple. TTL, checksums, ECN and DSCP never
    enter a key (a bottleneck may change them).
    """
    kind = packets.select(
        pl.when(pl.col("is_rtp"))
        .then(KIND_RTP)
        .when(pl.col("tcp_seq").is_not_null())
        .then(KIND_TCP)
        .otherwise(KIND_OTHER)
        .cast(pl.UInt8)
    ).to_series()
    return _native.identity_keys(
        kind.to_numpy(),
        _column(packets, "flow_hash", np.uint64),
        _column(packets, "ip_id", np.uint32),
        _column(packets, "size_bytes", np.uint32),
        _column(packets, "tcp_seq", np.uint32),
        _column(packets, "tcp_ack", np.uint32),
        _column(packets, "rtp_ssrc", np.uint32),
        _column(packets, "rtp_seq", np.uint16),
        _column(packets, "l4_hash", np.uint64),
    )


@dataclass(frozen=True)
class Pairing:
    #: Row of the egress twin of each ingress packet, -1 when none.
    in_to_eg: np.ndarray[Any, np.dtype[np.int64]]
    #: Row of the ingress twin of each egress packet, -1 when none.
    eg_to_in: np.ndarray[Any, np.dtype[np.int64]]
    #: Egress packets whose only twin at ingress comes *after* them.
    reverse_twin: np.ndarray[Any, np.dtype[np.bool_]]


def _timestamps(packets: pl.DataFrame) -> np.ndarray[Any, np.dtype[np.int64]]:
    return packets["t_ns"].fill_null(NO_TIMESTAMP).to_numpy().astype(np.int64, copy=False)


def pair_packets(ingress: pl.DataFrame, egress: pl.DataFrame, max_delay_ns: int) -> Pairing:
    """Pairs each egress packet with its ingress twin (see ``native/core/src/matcher.rs``)."""
    in_to_eg, eg_to_in, reverse_twin = _native.match_points(
        identity_keys(ingress),
        _timestamps(ingress),
        identity_keys(egress),
        _timestamps(egress),
        max_delay_ns,
    )
    return Pairing(in_to_eg=in_to_eg, eg_to_in=eg_to_in, reverse_twin=reverse_twin)
