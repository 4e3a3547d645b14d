"""What the native reader says about a capture besides its packets (format, interfaces,
statistics, quirks, warnings), and its errors as :class:`CaptureError`. Free of polars, so
that the native match (cganalysis.matching.native) starts fast."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cganalysis.capture.model import (
    LINK_TYPE_NAMES,
    CaptureInfo,
    CaptureQuirks,
    InterfaceInfo,
    InterfaceStats,
)
from cganalysis.errors import CaptureError


@contextmanager
def native_errors(path: Path) -> Iterator[None]:
    """Turns the native reader's errors about ``path`` into :class:`CaptureError`."""
    try:
        yield
    except FileNotFoundError:
        raise CaptureError(path, "no such file") from None
    except IsADirectoryError:
        raise CaptureError(path, "is a directory, not a capture file") from None
    except PermissionError:
        raise CaptureError(path, "permission denied") from None
    except ValueError as err:
        # The native reader raises ValueError(message, byte_offset).
        message, offset = err.args if len(err.args) == 2 else (str(err), None)
        hint = ""
        if "magic" in str(message) or "empty file" in str(message):
            hint = " (expected a pcap or pcapng file, e.g. from tcpdump -w or dumpcap)"
        raise CaptureError(path, f"{message}{hint}", offset) from None


def info_from_raw(path: Path, raw: dict[str, Any]) -> CaptureInfo:
    interfaces = tuple(
        InterfaceInfo(
            interface_id=int(i["interface_id"]),
            link_type=int(i["link_type"]),
            name=i.get("name"),
            snaplen=int(i["snaplen"]),
            ts_resolution=str(i["ts_resolution"]),
        )
        for i in raw["interfaces"]
    )
    stats = tuple(
        InterfaceStats(
            interface_id=int(s["interface_id"]),
            start_ns=s.get("start_ns"),
            end_ns=s.get("end_ns"),
            received=s.get("ifrecv"),
            dropped_by_interface=s.get("ifdrop"),
            dropped_by_os=s.get("osdrop"),
            accepted_by_filter=s.get("filteraccept"),
            delivered_to_user=s.get("usrdeliv"),
        )
        for s in raw["stats"]
    )
    q = raw["quirks"]
    quirks = CaptureQuirks(
        len_from_frame=int(q["len_from_frame"]),
        jumbograms=int(q["jumbograms"]),
        bad_timestamps=int(q["bad_timestamps"]),
        first_bad_timestamp_at=q["first_bad_timestamp_at"],
        skipped_packets=int(q["skipped_packets"]),
    )
    skipped = sorted(
        {
            f"{i.interface_id}: {i.link_type_name}"
            for i in interfaces
            if i.link_type not in LINK_TYPE_NAMES
        }
    )
    return CaptureInfo(
        path=path,
        format=str(raw["format"]),
        engine="native",
        interfaces=interfaces,
        stats=stats,
        warnings=(*(str(w) for w in raw["warnings"]), *quirks.warnings(skipped)),
        nanosecond=raw.get("nanosecond"),
        big_endian=bool(raw.get("big_endian", False)),
        quirks=quirks,
    )
