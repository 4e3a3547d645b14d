"""Packet counts that tcpdump prints when it stops, saved next to the capture.

tcpdump writes plain pcap, which has no statistics block, so its own report on stderr is
the only record of packets the kernel dropped before they reached the file. The testbed
saves that stderr as ``<capture>.log``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from cganalysis.capture.model import CaptureInfo, ToolLog

_COUNT = re.compile(
    r"^\s*(\d+)\s+packets?\s+(captured|received by filter|dropped by kernel|dropped by interface)",
    re.MULTILINE,
)


def log_path_for(capture: Path) -> Path:
    """Where the testbed saves the capture tool's stderr for ``capture``."""
    return capture.with_name(capture.name + ".log")


def with_saved_log(info: CaptureInfo) -> CaptureInfo:
    """``info`` with the capture tool's saved stderr (``<capture>.log``) when there is one."""
    log = log_path_for(info.path)
    return replace(info, tool_log=parse_tool_log(log)) if log.exists() else info


def parse_tool_log(path: Path) -> ToolLog:
    text = path.read_text(encoding="utf-8", errors="replace")
    found: dict[str, int] = {}
    for match in _COUNT.finditer(text):
        # The last report wins (a log may hold several runs' lines when appended).
        found[match.group(2)] = int(match.group(1))
    return ToolLog(
        path=path,
        captured=found.get("captured"),
        received_by_filter=found.get("received by filter"),
        dropped_by_kernel=found.get("dropped by kernel"),
        dropped_by_interface=found.get("dropped by interface"),
    )
