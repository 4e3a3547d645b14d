"""Progress of the long analysis commands on a terminal: one line on stderr, redrawn in
place, with how much was read of the total, the rate and the time left, then a last line
that says what was done and how long it took.

It shows only where someone watches: when stderr is a terminal, and ``CGANALYSIS_PROGRESS``
is not ``0``. A command whose stderr goes to a file or a pipe (Snakemake's logs, ``2>``,
``| tee``), a notebook or a test is silent, and the workflow sets the variable to ``0``
for its jobs besides (their stderr may be Snakemake's terminal, shared by parallel jobs).

The readers call :meth:`Progress.add` once per chunk they read (100k packets), never per
packet, and the line is redrawn at most every :data:`REDRAW_S`: it costs nothing
measurable. Imports nothing heavy (the command line imports it before polars).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Literal, TextIO

#: ``CGANALYSIS_PROGRESS=0`` silences the progress lines even on a terminal.
ENV = "CGANALYSIS_PROGRESS"
#: At most one redraw per this many seconds (5 a second).
REDRAW_S = 0.2
#: A step's last line ("... done in 12 s") stays only when the step took this long; a
#: quicker one's line is erased (a fast command prints what it always printed).
KEEP_AFTER_S = 1.0
#: Erases the terminal line the cursor is on (after a carriage return).
_CLEAR = "\r\x1b[K"

Unit = Literal["bytes", "runs"]


def wanted(stream: TextIO | None = None) -> bool:
    """Whether progress lines should go to ``stream`` (default: stderr)."""
    if os.environ.get(ENV, "").strip().lower() in ("0", "off", "no", "false"):
        return False
    if os.environ.get("TERM") == "dumb":  # no carriage return, no erase
        return False
    stream = sys.stderr if stream is None else stream
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def silence() -> None:
    """No progress lines from this process and the programs it starts (the workflow calls
    it for its jobs)."""
    os.environ[ENV] = "0"


def format_bytes(n: float) -> str:
    """``n`` bytes in GB, MB, kB or B, one decimal."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def _duration(seconds: float) -> str:
    s = round(seconds)
    if s < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{s} s"
    if s < 3600:
        return f"{s // 60}:{s % 60:02d}"
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class Progress:
    """``with Progress("scanning captures", total_bytes) as p: ... p.add(n) ...``.

    ``total`` None: the amount is unknown (no share, no time left). Safe to call from
    several threads (two captures read side by side add to one line). Silent, and nearly
    free, when :func:`wanted` says so (or ``show=False``). At the end, the line says how
    long the step took when it took :data:`KEEP_AFTER_S` or more; ``keep=False``: it is
    erased whatever the time (when the command says so itself).
    """

    def __init__(
        self,
        label: str,
        total: float | None = None,
        *,
        unit: Unit = "bytes",
        stream: TextIO | None = None,
        show: bool | None = None,
        keep: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.keep = keep
        self.total = total
        self.unit: Unit = unit
        self.stream = sys.stderr if stream is None else stream
        self.show = wanted(self.stream) if show is None else show
        self.done = 0.0
        self._clock = clock
        self._start = clock()
        self._drawn = self._start
        self._lock = threading.Lock()
        self._closed = False
        if self.show:
            self._write(f"{_CLEAR}{self.label} ...")

    def expect(self, amount: float) -> None:
        """``amount`` more to read than the total said (a file read once more)."""
        with self._lock:
            self.total = (self.total or 0) + amount

    def add(self, amount: float) -> None:
        """``amount`` more of the total was read (bytes, runs)."""
        if not self.show:
            return
        with self._lock:
            self.done += amount
            now = self._clock()
            if now - self._drawn < REDRAW_S or self._closed:
                return
            self._drawn = now
            self._write(_CLEAR + self._line(now))

    def _amount(self, n: float) -> str:
        return format_bytes(n) if self.unit == "bytes" else f"{n:.0f} {self.unit}"

    def _line(self, now: float) -> str:
        elapsed = now - self._start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        parts = [f"{self.label}: {self._amount(self.done)}"]
        # A total exceeded (a capture read once more, out of order) is no longer one.
        known = bool(self.total) and self.done <= (self.total or 0)
        if known and self.total:
            parts[0] += f" of {self._amount(self.total)}"
            parts.append(f"{100 * self.done / self.total:3.0f} %")
        if rate > 0:
            per_s = format_bytes(rate) if self.unit == "bytes" else f"{rate:.1f} {self.unit}"
            parts.append(f"{per_s}/s")
            if known and self.total and self.done < self.total:
                parts.append(f"{_duration((self.total - self.done) / rate)} left")
        return "  ".join(parts)

    def finish(self, note: str = "") -> None:
        """The last line: what was read, in how long (``note`` added, e.g. "in memory")."""
        if not self.show or self._closed:
            return
        with self._lock:
            elapsed = self._clock() - self._start
            if elapsed < KEEP_AFTER_S:
                self._closed = True
                self._write(_CLEAR)
                return
            self._closed = True
            what = f" {self._amount(self.done)}" if self.done else ""
            rate = ""
            if self.done and elapsed > 0:
                per_s = self.done / elapsed
                rate = f" ({format_bytes(per_s)}/s)" if self.unit == "bytes" else ""
            extra = f", {note}" if note else ""
            self._write(f"{_CLEAR}{self.label}:{what} done in {_duration(elapsed)}{rate}{extra}\n")

    def erase(self) -> None:
        """Erases the line (e.g. the command failed: its error says why)."""
        if self.show and not self._closed:
            self._closed = True
            self._write(_CLEAR)

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: progress is not worth a failure
            self.show = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if kind is None and self.keep:
            self.finish()
        else:
            self.erase()
