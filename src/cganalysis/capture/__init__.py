"""Reading capture files (pcap, pcapng) into packet tables.

Two engines give the same :data:`~cganalysis.schemas.CAPTURE` table: ``native`` (the Rust
reader, the default: millions of packets per second) and ``pyshark`` (tshark underneath,
thousands per second), kept as an independent reference to check the fast one against.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cganalysis.capture.model import (
        Capture,
        CaptureInfo,
        InterfaceInfo,
        InterfaceStats,
        ToolLog,
    )
    from cganalysis.capture.reader import (
        ENGINES,
        Engine,
        RtpStream,
        read_capture,
        read_capture_pair,
    )

__all__ = [
    "ENGINES",
    "Capture",
    "CaptureInfo",
    "Engine",
    "InterfaceInfo",
    "InterfaceStats",
    "RtpStream",
    "ToolLog",
    "read_capture",
    "read_capture_pair",
]


def __getattr__(name: str) -> Any:
    # Imported when first asked for, so that importing one submodule (say, the capture
    # model for the native match) does not import polars and every reader.
    if name in __all__:
        from cganalysis.capture import model, reader

        return getattr(reader if name in reader.__all__ else model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
