"""Frame-size traces: rebuilt from a capture of an RTP video flow, read and written as CSV.

A video frame is the run of packets of one RTP stream that share an RTP timestamp; the
marker bit ends it (RFC 3550 5.1, as video payload formats use it), so a frame ends at a
marker or where the timestamp changes (when the marker packet was lost). A frame's size is
the sum of its RTP payloads; its time is its first packet's capture time. ``cga-cg send
--frames TRACE.csv`` replays such a trace, scaled to the controller's target bitrate.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from cganalysis import schemas
from cganalysis.capture import read_capture
from cganalysis.errors import CaptureError, CganalysisError
from cganalysis.io import atomic_path

UDP_HEADER_BYTES = 8
RTP_HEADER_BYTES = 12


class TraceError(CganalysisError):
    """A frame trace cannot be built or read."""


def _ip_header_bytes() -> pl.Expr:
    return pl.when(pl.col("ip_version") == 6).then(40).otherwise(20)


def frames_from_capture(
    path: Path | str, *, ssrc: int | None = None, dport: int | None = None
) -> pl.DataFrame:
    """The frame-size trace (``CG_FRAME_TRACE``) of one RTP stream in a capture.

    Without ``ssrc``/``dport`` the stream carrying the most bytes is used.
    """
    path = Path(path)
    packets = read_capture(path).packets
    rtp = packets.filter(pl.col("is_rtp") & pl.col("t_ns").is_not_null())
    if dport is not None:
        rtp = rtp.filter(pl.col("dport") == dport)
    if ssrc is not None:
        rtp = rtp.filter(pl.col("rtp_ssrc") == ssrc)
    if rtp.is_empty():
        sel = ", ".join(f"{k} {v}" for k, v in (("ssrc", ssrc), ("dport", dport)) if v is not None)
        raise CaptureError(path, "no RTP stream in the capture" + (f" with {sel}" if sel else ""))
    streams = (
        rtp.group_by("flow_hash", "rtp_ssrc")
        .agg(pl.col("size_bytes").sum().alias("bytes"))
        .sort("bytes", descending=True)
    )
    flow, stream_ssrc = streams.row(0)[:2]
    one = rtp.filter((pl.col("flow_hash") == flow) & (pl.col("rtp_ssrc") == stream_ssrc))
    payload = (
        pl.col("size_bytes").cast(pl.Int64)
        - _ip_header_bytes()
        - UDP_HEADER_BYTES
        - RTP_HEADER_BYTES
    ).clip(lower_bound=0)
    new_frame = (pl.col("rtp_ts") != pl.col("rtp_ts").shift(1)) | pl.col("rtp_marker").shift(
        1
    ).fill_null(False)
    frames = (
        one.sort("t_ns")
        .with_columns(payload=payload, frame=new_frame.fill_null(True).cum_sum())
        .group_by("frame", maintain_order=True)
        .agg(t_ns=pl.col("t_ns").min(), size_bytes=pl.col("payload").sum())
    )
    t0 = frames["t_ns"].min()
    assert isinstance(t0, int)
    trace = frames.select(
        t_s=(pl.col("t_ns") - t0).cast(pl.Float64) / 1e9, size_bytes=pl.col("size_bytes")
    )
    if trace.height < 2:
        raise CaptureError(path, "the RTP stream has fewer than two frames: no trace to replay")
    return schemas.check_schema(trace, schemas.CG_FRAME_TRACE, "frame trace")


def write_trace(trace: pl.DataFrame, path: Path) -> None:
    """Writes a trace as ``t_s,size_bytes`` CSV (atomically)."""
    trace = schemas.check_schema(trace, schemas.CG_FRAME_TRACE, "frame trace")
    with atomic_path(path) as tmp:
        trace.write_csv(tmp, float_precision=6)


def read_trace(path: Path) -> pl.DataFrame:
    """Reads a ``t_s,size_bytes`` CSV trace."""
    try:
        df = pl.read_csv(path, schema=dict(schemas.CG_FRAME_TRACE))
    except (pl.exceptions.PolarsError, OSError) as err:
        raise TraceError(
            f"{path}: cannot read as a frame trace (CSV with columns t_s,size_bytes): {err}"
        ) from err
    if df.height < 2:
        raise TraceError(f"{path}: a frame trace needs at least two frames")
    return schemas.check_schema(df, schemas.CG_FRAME_TRACE, "frame trace")
