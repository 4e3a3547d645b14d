"""Reading a capture a chunk at a time: CAPTURE tables of at most N packets each, in file
order, with memory that does not grow with the file (only with its number of flows)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from cganalysis import _native
from cganalysis.capture.model import CaptureInfo
from cganalysis.capture.native import info_from_raw, native_errors, packets_from_raw
from cganalysis.capture.toollog import with_saved_log
from cganalysis.errors import CaptureError
from cganalysis.progress import Progress

#: Packets per chunk: large enough that per-chunk overheads vanish, small enough that a
#: chunk's tables (~200 bytes a packet) stay far below any machine's memory.
DEFAULT_CHUNK = 1 << 17


class CaptureChunks:
    """``for packets in CaptureChunks(path)``: CAPTURE tables without ``is_rtp``; after
    the last one, :attr:`info` says what the file says about itself."""

    def __init__(
        self,
        path: Path,
        chunk_packets: int = DEFAULT_CHUNK,
        *,
        addresses: bool = True,
        progress: Progress | None = None,
    ) -> None:
        """``addresses=False``: ``src`` and ``dst`` stay null (cheaper, when not needed).
        ``progress``: expects the file's size each time it is read, and is told the bytes
        each chunk read."""
        if chunk_packets <= 0:
            raise ValueError("chunk_packets must be positive")
        self.path = path
        self.chunk_packets = chunk_packets
        self.addresses = addresses
        self.progress = progress
        self._info: CaptureInfo | None = None

    def __iter__(self) -> Iterator[pl.DataFrame]:
        if not self.path.exists():
            raise CaptureError(self.path, "no such file")
        src = pl.Series("src", [], dtype=pl.String)
        dst = pl.Series("dst", [], dtype=pl.String)
        with native_errors(self.path):
            reader = _native.CaptureChunks(str(self.path))
        read = 0  # bytes
        if self.progress is not None:
            self.progress.expect(self.path.stat().st_size)
        while True:
            with native_errors(self.path):
                chunk = reader.next_chunk(self.chunk_packets)
            if self.progress is not None:
                self.progress.add(reader.bytes_read() - read)
                read = reader.bytes_read()
            if chunk is None:
                break
            if self.addresses:
                # Flow addresses come once, with the chunk that first sees the flow.
                new = chunk["flows"]
                src.append(pl.Series("src", new["src"], dtype=pl.String))
                dst.append(pl.Series("dst", new["dst"], dtype=pl.String))
            raw: dict[str, Any] = {"columns": chunk["columns"]}
            yield packets_from_raw(raw, (src, dst))
        with native_errors(self.path):
            raw_info = reader.finish()
        self._info = with_saved_log(info_from_raw(self.path, raw_info))

    @property
    def info(self) -> CaptureInfo:
        if self._info is None:
            raise RuntimeError(f"{self.path}: info is known once every chunk was read")
        return self._info
