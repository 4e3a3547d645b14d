"""The fast reader: the native extension parses the file, this turns its columns into the
:data:`~cganalysis.schemas.CAPTURE` table (nulls where a field does not apply)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from cganalysis import _native
from cganalysis.capture.nativeinfo import info_from_raw, native_errors

__all__ = ["info_from_raw", "native_errors", "packets_from_raw", "read_raw"]

NO_TIMESTAMP = np.iinfo(np.int64).min


def read_raw(path: Path) -> dict[str, Any]:
    """Calls the native reader, turning its errors into :class:`CaptureError`."""
    with native_errors(path):
        return _native.read_capture(str(path))


def _nullable(name: str, valid: str) -> pl.Expr:
    return pl.when(pl.col(valid)).then(pl.col(name)).otherwise(None)


_IS_IP = pl.col("ip_version") != 0

#: The CAPTURE columns (without ``is_rtp``) made from the reader's columns, in groups:
#: each group's reader columns (the second item) are released once the group is made, so
#: that a capture is never held twice over (the numeric numpy columns are shared with
#: polars without a copy; a masked column is a copy).
_GROUPS: tuple[tuple[dict[str, pl.Expr], tuple[str, ...]], ...] = (
    (
        {
            "sport": _nullable("sport", "has_ports"),
            "dport": _nullable("dport", "has_ports"),
            "ip_id": _nullable("ip_id", "has_ip_id"),
        },
        ("sport", "dport", "has_ports", "ip_id", "has_ip_id"),
    ),
    (
        {
            "tcp_seq": _nullable("tcp_seq", "has_tcp"),
            "tcp_ack": _nullable("tcp_ack", "has_tcp"),
            "tcp_flags": _nullable("tcp_flags", "has_tcp"),
            "tcp_payload_bytes": _nullable("tcp_payload_len", "has_tcp"),
        },
        ("tcp_seq", "tcp_ack", "tcp_flags", "tcp_payload_len", "has_tcp"),
    ),
    (
        {
            "rtp_ssrc": _nullable("rtp_ssrc", "has_rtp"),
            "rtp_seq": _nullable("rtp_seq", "has_rtp"),
            "rtp_ts": _nullable("rtp_ts", "has_rtp"),
            "rtp_marker": _nullable("rtp_marker", "has_rtp"),
            "rtp_pt": _nullable("rtp_pt", "has_rtp"),
        },
        ("rtp_ssrc", "rtp_seq", "rtp_ts", "rtp_marker", "rtp_pt", "has_rtp"),
    ),
    (
        {
            "src": pl.when(_IS_IP).then(pl.col("src")),
            "dst": pl.when(_IS_IP).then(pl.col("dst")),
            "proto": pl.when(_IS_IP).then(pl.col("proto")),
            "size_bytes": pl.when(_IS_IP).then(pl.col("ip_len")),
            "dscp": pl.when(_IS_IP).then(pl.col("dscp")),
            "ecn": pl.when(_IS_IP).then(pl.col("ecn")),
            "ttl": pl.when(_IS_IP).then(pl.col("ttl")),
            "flow_hash": pl.when(_IS_IP).then(pl.col("flow_hash")),
            "ip_version": pl.when(_IS_IP).then(pl.col("ip_version")),
        },
        ("src", "dst", "proto", "ip_len", "dscp", "ecn", "ttl", "flow_hash", "ip_version"),
    ),
    (
        {
            "t_ns": pl.when(pl.col("t_ns") == NO_TIMESTAMP).then(None).otherwise(pl.col("t_ns")),
            "interface_id": pl.col("interface_id"),
            "wire_len_bytes": pl.col("wire_len"),
            "l4_hash": pl.col("l4_hash"),
            "truncated": pl.col("truncated"),
        },
        ("t_ns", "interface_id", "wire_len", "l4_hash", "truncated"),
    ),
)

_ORDER = [
    "t_ns",
    "interface_id",
    "wire_len_bytes",
    "ip_version",
    "src",
    "dst",
    "proto",
    "sport",
    "dport",
    "ip_id",
    "size_bytes",
    "dscp",
    "ecn",
    "ttl",
    "tcp_seq",
    "tcp_ack",
    "tcp_flags",
    "tcp_payload_bytes",
    "rtp_ssrc",
    "rtp_seq",
    "rtp_ts",
    "rtp_marker",
    "rtp_pt",
    "flow_hash",
    "l4_hash",
    "truncated",
]


def packets_from_raw(
    raw: dict[str, Any], addresses: tuple[pl.Series, pl.Series] | None = None
) -> pl.DataFrame:
    """The CAPTURE table (without ``is_rtp``) from the native reader's columns, which are
    taken out of ``raw`` (so that they can be freed as soon as they are converted).

    ``addresses``: each flow's source and destination (default: ``raw["flows"]``'s); empty
    Series leave ``src`` and ``dst`` null (when they are not needed)."""
    cols: dict[str, np.ndarray[Any, Any]] = raw["columns"]
    frame = pl.DataFrame([pl.Series(name, cols.pop(name)) for name in list(cols)])
    if addresses is None:
        flows = raw["flows"]
        addresses = (
            pl.Series("src", flows["src"], dtype=pl.String),
            pl.Series("dst", flows["dst"], dtype=pl.String),
        )
    # Addresses are interned per flow by the reader; expand them with one gather each.
    n_flows = addresses[0].len()
    if n_flows:
        index = frame["flow_idx"].clip(0, n_flows - 1)
        src = addresses[0].gather(index).alias("src")
        dst = addresses[1].gather(index).alias("dst")
    else:
        src = pl.repeat(None, frame.height, dtype=pl.String, eager=True).alias("src")
        dst = pl.repeat(None, frame.height, dtype=pl.String, eager=True).alias("dst")
    frame = frame.drop("flow_idx").with_columns(src, dst)
    out: dict[str, pl.Series] = {}
    for exprs, used in _GROUPS:
        out.update((s.name, s) for s in frame.select(**exprs).iter_columns())
        frame = frame.drop(used)
    return pl.DataFrame([out[name] for name in _ORDER])
