"""The capture readers' entry points: a file (or a dual-point pair) to a
:class:`~cganalysis.capture.model.Capture` (CAPTURE table, capture info, RTP marked)."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from cganalysis import schemas
from cganalysis.capture.model import (
    ENGINES,
    Capture,
    CaptureInfo,
    Engine,
    ToolLog,
)
from cganalysis.capture.native import info_from_raw, packets_from_raw, read_raw
from cganalysis.capture.pyshark_engine import read_pyshark
from cganalysis.capture.rtp import RtpStream, classify_rtp_streams, mark_rtp
from cganalysis.capture.toollog import log_path_for, parse_tool_log
from cganalysis.errors import CaptureError

__all__ = ["ENGINES", "Engine", "RtpStream", "read_capture", "read_capture_pair"]


def read_capture(
    path: Path | str,
    *,
    engine: Engine = "native",
    rtp_streams: set[RtpStream] | None = None,
    tool_log: Path | None = None,
) -> Capture:
    """Reads ``path`` into the CAPTURE table.

    ``rtp_streams`` overrides the per-stream RTP classification (pass the ingress point's
    streams when reading the egress point, so both sides agree). ``tool_log`` is the
    capture tool's saved stderr; by default ``<path>.log`` is used when it exists.
    """
    return _read(Path(path), engine, rtp_streams, tool_log, None)


def read_capture_pair(
    ingress: Path | str, egress: Path | str, *, engine: Engine = "native"
) -> tuple[Capture, Capture]:
    """Reads the two points of a dual-point capture; the egress point's RTP streams are
    those found at ingress. The native reader parses the egress file on a second thread
    (it runs without the GIL) while the ingress table is built."""
    ingress, egress = Path(ingress), Path(egress)
    for path in (ingress, egress):  # before reading the other one
        if not path.exists():
            raise CaptureError(path, "no such file")
    if engine != "native":
        ing = read_capture(ingress, engine=engine)
        return ing, read_capture(egress, engine=engine, rtp_streams=rtp_streams_of(ing))

    with ThreadPoolExecutor(max_workers=1) as pool:
        eg_raw: Future[dict[str, Any]] = pool.submit(read_raw, egress)
        ing = read_capture(ingress, engine=engine)
        eg = _read(egress, engine, rtp_streams_of(ing), None, eg_raw.result())
    return ing, eg


def rtp_streams_of(capture: Capture) -> set[RtpStream]:
    """The RTP streams marked in a capture (``is_rtp``)."""
    rtp = capture.packets.filter(pl.col("is_rtp")).select("flow_hash", "rtp_ssrc").unique()
    return {(int(f), int(s)) for f, s in rtp.iter_rows()}


def _read(
    path: Path,
    engine: Engine,
    rtp_streams: set[RtpStream] | None,
    tool_log: Path | None,
    raw: dict[str, Any] | None,
) -> Capture:
    if not path.exists():
        raise CaptureError(path, "no such file")
    if engine == "native":
        raw = read_raw(path) if raw is None else raw
        packets = packets_from_raw(raw)
        info = info_from_raw(path, raw)
    elif engine == "pyshark":
        packets, info = read_pyshark(path)
    else:
        raise CaptureError(path, f"unknown engine {engine!r}; choose one of {ENGINES}")

    streams = classify_rtp_streams(packets) if rtp_streams is None else rtp_streams
    packets = schemas.check_schema(mark_rtp(packets, streams), schemas.CAPTURE, "capture")

    log = tool_log if tool_log is not None else log_path_for(path)
    if log.exists():
        info = _with_tool_log(info, parse_tool_log(log))
    elif tool_log is not None:
        raise CaptureError(tool_log, "capture tool log not found")
    return Capture(packets=packets, info=info)


def _with_tool_log(info: CaptureInfo, log: ToolLog) -> CaptureInfo:
    return replace(info, tool_log=log)
