"""The CG traffic generator: driving the native ``cga-cg`` sender and receiver.

``cga-cg`` (Rust, ``native/cg``) is the data plane: an RTP video sender whose bitrate
SCReAM v2, a constant rate, TFRC or gTFRC drives, and a receiver returning RFC 8888
feedback. This package finds the binary, builds its command lines, runs it, turns its CSV
logs into parquet tables with declared schemas, and rebuilds frame-size traces from
captures of real RTP video so that real sessions can be replayed. See ``docs/cg.md``.
"""

from __future__ import annotations

import importlib
from typing import Any

# Exported lazily (PEP 562): ``cganalysis cg send`` imports this package on its way to
# starting cga-cg, and frames/logs pull in polars (see cganalysis.cg.lognames).
_EXPORTS = {
    "BINARY_ENV": "cganalysis.cg.binary",
    "find_binary": "cganalysis.cg.binary",
    "frames_from_capture": "cganalysis.cg.frames",
    "read_trace": "cganalysis.cg.frames",
    "write_trace": "cganalysis.cg.frames",
    "LOG_TABLES": "cganalysis.cg.logs",
    "convert_logs": "cganalysis.cg.logs",
    "ReceiveOptions": "cganalysis.cg.options",
    "SendOptions": "cganalysis.cg.options",
    "run_generator": "cganalysis.cg.runner",
}
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


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
