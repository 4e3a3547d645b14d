"""The CG traffic generator: driving the native ``cga-cg`` sender and receiver.

``cga-cg`` (Rust, ``native/cg``) is the data plane: an RTP video sender whose bitrate
SCReAM v2, a constant rate, TFRC or gTFRC drives, and a receiver returning RFC 8888
feedback. This package finds the binary, builds its command lines, runs it, turns its CSV
logs into parquet tables with declared schemas, and rebuilds frame-size traces from
captures of real RTP video so that real sessions can be replayed. See ``docs/cg.md``.
"""

from __future__ import annotations

from cganalysis.cg.binary import BINARY_ENV, find_binary
from cganalysis.cg.frames import frames_from_capture, read_trace, write_trace
from cganalysis.cg.logs import LOG_TABLES, convert_logs
from cganalysis.cg.options import ReceiveOptions, SendOptions
from cganalysis.cg.runner import run_generator

__all__ = [
    "BINARY_ENV",
    "LOG_TABLES",
    "ReceiveOptions",
    "SendOptions",
    "convert_logs",
    "find_binary",
    "frames_from_capture",
    "read_trace",
    "run_generator",
    "write_trace",
]
