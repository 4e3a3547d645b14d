"""Reading a mahimahi trace that a run file named: checked here, on this machine, before
it is staged on a router or handed to mahimahi or the link emulator.

The format (:mod:`.mahimahi`): one whole number of milliseconds per line, never
decreasing, the last one above 0. An error names the file and the line number and says
what is wrong, never the line's text: a run file from elsewhere may point at a file that
is not a trace, and its content must not reach a message or a log.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from cganalysis.errors import ConfigError
from cganalysis.sharedinput import read_capped

#: Larger than a day of a 1 Gbit/s trace would be refused anyway by the emulators' memory;
#: the project's 360 s 5G traces are ~20 MB.
MAX_TRACE_BYTES = 256 << 20
#: A line: a time in ms (up to ~115 days); an optional carriage return is tolerated.
LINE = re.compile(rb"[0-9]{1,10}\r?")
_WHOLE = re.compile(rb"(?:[0-9]{1,10}\r?\n)*[0-9]{1,10}\r?\n?")


def _first_bad_line(lines: list[bytes]) -> int:
    for number, line in enumerate(lines, 1):
        if not LINE.fullmatch(line):
            return number
    return len(lines)


def parse_trace(data: bytes, where: str) -> np.ndarray:
    """The opportunity times (ms) of a trace's bytes; ``where`` names it in errors."""
    if not data.strip():
        raise ConfigError(f"{where}: empty; a trace has one time in ms per line")
    if not _WHOLE.fullmatch(data):
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        number = _first_bad_line(lines)
        raise ConfigError(
            f"{where}: line {number} is not a whole number of milliseconds (a mahimahi "
            "trace has one per line)"
        )
    times = np.array(data.split(), dtype=np.int64)
    steps = np.diff(times)
    if steps.size and steps.min() < 0:
        number = int(np.argmax(steps < 0)) + 2
        raise ConfigError(f"{where}: line {number} goes back in time (times never decrease)")
    if times[-1] <= 0:
        raise ConfigError(f"{where}: its last time is 0; the last line is the period (> 0 ms)")
    return times


def read_trace_times(path: Path, where: str) -> np.ndarray:
    """A trace file's times, read with a size cap; ConfigError naming ``where``."""
    return parse_trace(read_capped(path, MAX_TRACE_BYTES, where), where)


@lru_cache(maxsize=64)
def _checked(path: Path, size: int, mtime_ns: int) -> str | None:
    """None when the trace is good, else the message's end (cached: a campaign names one
    trace in hundreds of runs)."""
    try:
        read_trace_times(path, "trace")
    except ConfigError as err:
        return str(err).removeprefix("trace: ")
    return None


def check_trace(path: Path, where: str) -> None:
    """Refuses a file that is not a mahimahi trace (one line naming ``where``, the trace's
    name and the line; never the file's content)."""
    try:
        st = path.stat()
    except OSError as err:
        raise ConfigError(f"{where}: {path.name}: cannot read: {err.strerror}") from None
    problem = _checked(path, st.st_size, st.st_mtime_ns)
    if problem is not None:
        raise ConfigError(f"{where}: trace {path.name}: {problem}")
