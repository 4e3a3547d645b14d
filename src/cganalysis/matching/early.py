"""Starting the native match (:mod:`cganalysis.matching.native`, in memory, or
:mod:`cganalysis.matching.streaming`) before anything else is imported: ``cganalysis
packets`` starts it right after parsing its arguments, and the captures are read on their
own threads while Python imports what it needs next (20 ms in memory, 60 ms streaming, of
a command that takes a few tenths of a second). Imports nothing but the native module and
the partial files' naming."""

from __future__ import annotations

from pathlib import Path

from cganalysis import _native
from cganalysis.partials import new_partial

NS_PER_MS = 1_000_000


def ms_to_ns(ms: float) -> int:
    return round(ms * NS_PER_MS)


def start_match(
    ingress: Path, egress: Path, max_delay_ms: float, end_guard_ms: float | None
) -> _native.PendingMatch:
    """Starts reading and matching both captures; ``.result()`` waits for them."""
    guard = None if end_guard_ms is None else ms_to_ns(end_guard_ms)
    return _native.start_match(str(ingress), str(egress), ms_to_ns(max_delay_ms), guard)


class StartedStream:
    """A streaming match started (``_native.PendingStream``) and the partial files it
    writes the tables into, each renamed to its output when the match succeeds
    (:func:`cganalysis.matching.streaming.match_to_files`) and removed otherwise
    (:meth:`discard`)."""

    def __init__(self, pending: _native.PendingStream, partials: tuple[Path, Path]) -> None:
        self.pending = pending
        self.partials = partials

    def discard(self) -> None:
        """Removes the partial files left (none after a success); the match's threads end
        with the process."""
        for path in self.partials:
            path.unlink(missing_ok=True)


def start_stream(
    ingress: Path,
    egress: Path,
    outputs: tuple[Path, Path],
    *,
    max_delay_ms: float,
    end_guard_ms: float | None,
    chunk_packets: int,
    flows: bool,
    keep_delays: int | None = None,
    page_cache_bytes: int | None = None,
) -> StartedStream:
    """Starts matching both captures streaming into partial files next to ``outputs``
    (the packet table, the egress-only table); ``flows``: the flow table is made too."""
    for out in outputs:
        out.parent.mkdir(parents=True, exist_ok=True)
    partials = (new_partial(outputs[0]), new_partial(outputs[1]))
    guard = None if end_guard_ms is None else ms_to_ns(end_guard_ms)
    try:
        pending = _native.start_stream(
            str(ingress),
            str(egress),
            str(partials[0]),
            str(partials[1]),
            ms_to_ns(max_delay_ms),
            guard,
            chunk_packets,
            flows,
            **({} if keep_delays is None else {"keep_delays": keep_delays}),
            page_cache_bytes=page_cache_bytes,
        )
    except BaseException:
        for path in partials:
            path.unlink(missing_ok=True)
        raise
    return StartedStream(pending, partials)
