"""Starting the native match (:mod:`cganalysis.matching.native`) before anything else is
imported: ``cganalysis packets`` starts it right after parsing its arguments, and the
captures are read on their own threads while Python imports what it needs next (about
20 ms of a command that takes a few tenths of a second). Imports nothing but the native
module."""

from __future__ import annotations

from pathlib import Path

from cganalysis import _native

NS_PER_MS = 1_000_000


def ms_to_ns(ms: float) -> int:
    return round(ms * NS_PER_MS)


def start_match(
    ingress: Path, egress: Path, max_delay_ms: float, end_guard_ms: float | None
) -> _native.PendingMatch:
    """Starts reading and matching both captures; ``.result()`` waits for them."""
    guard = None if end_guard_ms is None else ms_to_ns(end_guard_ms)
    return _native.start_match(str(ingress), str(egress), ms_to_ns(max_delay_ms), guard)
