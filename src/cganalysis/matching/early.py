"""Starting the native match (:mod:`cganalysis.matching.native`, in memory, or
:mod:`cganalysis.matching.streaming`) before anything else is imported: the captures are
read on their own threads while Python imports what it needs next (20 ms in memory, 60 ms
streaming, of a command that takes a few tenths of a second). ``cganalysis packets``
starts reading captures it will match in memory even before it imports its argument
parser (:func:`start_early`, 10 ms sooner), and the match takes its options once they are
parsed; otherwise it starts the match right after parsing its arguments. Imports nothing
but the native module (and, to stream, the partial files' naming)."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

# Not `typing.TYPE_CHECKING`, and pathlib only when type checking: both would be imported
# before the captures start to be read. The native module is imported when a match starts
# (not for `cganalysis packets --help`).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from cganalysis import _native

NS_PER_MS = 1_000_000
#: ``cganalysis packets`` matches captures larger than this together streaming, smaller
#: ones in memory (``--stream-above-mb``).
DEFAULT_STREAM_ABOVE_MB = 1024.0
#: The options of ``cganalysis packets`` that take one value and decide neither the engine
#: nor whether the match streams: a command line with only these may be read early.
_PLAIN_OPTIONS = frozenset(
    {"-o", "--output", "--flows", "--egress-only", "--summary", "--max-delay-ms", "--end-guard-ms"}
)

#: The captures being read since :func:`start_early`, not yet taken by :func:`start_match`
#: (at most one).
_early: list[tuple[str, str, _native.PendingMatch]] = []


def streams(size_bytes: int, stream_above_mb: float) -> bool:
    """Whether ``cganalysis packets`` matches captures of ``size_bytes`` together streaming
    (``--stream-above-mb``): the one rule, for the early start and the command alike."""
    return size_bytes > stream_above_mb * 1e6


def ms_to_ns(ms: float) -> int:
    return round(ms * NS_PER_MS)


def early_captures(words: Sequence[str]) -> tuple[str, str] | None:
    """The two captures of the command line ``cganalysis packets WORDS`` if it will match
    them in memory with the native engine, as far as can be told before its arguments are
    parsed: two regular files together no larger than the default streaming threshold,
    and no option but those of ``_PLAIN_OPTIONS`` (spelled out: argparse also takes their
    prefixes, and ``--engine`` or ``--stream-above-mb`` may be among those). None
    otherwise, and the command starts as usual."""
    captures: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-") and word != "-":
            name, has_value, _ = word.partition("=")
            if name not in _PLAIN_OPTIONS:
                return None
            i += 1 if has_value else 2
            continue
        captures.append(word)
        i += 1
    if len(captures) != 2:
        return None
    try:
        found = [os.stat(path) for path in captures]  # noqa: PTH116 (pathlib: 8 ms to import)
    except OSError:
        return None  # the command says what is wrong with it
    if not all(stat.S_ISREG(f.st_mode) for f in found):
        return None
    if streams(sum(f.st_size for f in found), DEFAULT_STREAM_ABOVE_MB):
        return None
    return captures[0], captures[1]


def start_early(words: Sequence[str]) -> None:
    """Starts reading the captures of ``cganalysis packets WORDS`` if
    :func:`early_captures` names them (a read started before and not taken is dropped)."""
    _early.clear()
    found = early_captures(words)
    if found is not None:
        from cganalysis import _native

        # A process that matches and exits: its C allocator may keep what it frees.
        _native.keep_freed_blocks()
        _early.append((*found, _native.start_read(*found)))


def discard_early() -> None:
    """Drops a read started by :func:`start_early` and not taken (the command ended before
    it matched): its threads end once they have read the captures."""
    _early.clear()


def _take_early(ingress: Path, egress: Path) -> _native.PendingMatch | None:
    if not _early:
        return None
    early = _early.pop()
    from pathlib import Path  # imported by the command by now

    if (Path(early[0]), Path(early[1])) != (Path(ingress), Path(egress)):
        return None  # dropped: its threads end once they have read the captures
    return early[2]


def start_match(
    ingress: Path, egress: Path, max_delay_ms: float, end_guard_ms: float | None
) -> _native.PendingMatch:
    """Starts reading and matching both captures (or, if :func:`start_early` started
    reading these, matching them once read); ``.result()`` waits for them."""
    from cganalysis import _native

    guard = None if end_guard_ms is None else ms_to_ns(end_guard_ms)
    pending = _take_early(ingress, egress)
    if pending is None:
        return _native.start_match(str(ingress), str(egress), ms_to_ns(max_delay_ms), guard)
    pending.match_with(ms_to_ns(max_delay_ms), guard)
    return pending


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
    from cganalysis import _native
    from cganalysis.partials import new_partial

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
