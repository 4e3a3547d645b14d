"""A parquet file written a batch at a time (row groups), atomically: renamed into place
only when :meth:`ParquetSink.commit` is called, its provenance added to the footer then."""

from __future__ import annotations

import json
from pathlib import Path
from types import TracebackType
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from cganalysis import schemas
from cganalysis.io import METADATA_KEY, new_partial

#: Rows gathered before a row group is written (small batches are merged).
ROW_GROUP = 1 << 17


class ParquetSink:
    """Rows of one schema, written as they come, with memory of about one row group."""

    def __init__(self, path: Path, schema: schemas.Schema, *, fast: bool = True) -> None:
        self.path = path
        self.rows = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = new_partial(path)
        self._arrow = schemas.empty(schema).to_arrow().schema
        # as cganalysis.io.write_parquet(fast=True): zstd level 1, no column statistics; and
        # dictionaries only for the address strings (for every column they took 2.5 times
        # as long to write, for a file 13% smaller)
        options: dict[str, Any] = {}
        if fast:
            strings = [c for c, t in schema.items() if t == pl.String]
            options = {"compression_level": 1, "write_statistics": False, "use_dictionary": strings}
        self._writer = pq.ParquetWriter(self._tmp, self._arrow, compression="zstd", **options)
        self._pending: list[pl.DataFrame] = []
        self._pending_rows = 0

    def write(self, df: pl.DataFrame) -> None:
        if df.height == 0:
            return
        self._pending.append(df)
        self._pending_rows += df.height
        self.rows += df.height
        if self._pending_rows >= ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        table = pl.concat(self._pending).to_arrow().cast(self._arrow)
        self._writer.write_table(table)
        self._pending, self._pending_rows = [], 0

    def commit(self, provenance: dict[str, Any] | None = None, to: Path | None = None) -> None:
        """Writes what is left and the footer, then renames the file into place (or to
        ``to``)."""
        self._flush()
        if provenance:
            self._writer.add_key_value_metadata({METADATA_KEY: json.dumps(provenance, default=str)})
        self._writer.close()
        self._tmp.replace(to or self.path)

    def abort(self) -> None:
        try:
            self._writer.close()
        finally:
            self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> ParquetSink:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if kind is not None or self._tmp.exists():
            self.abort()


def rewrite(
    source: Path, dest: Path, schema: schemas.Schema, change: Any, provenance: dict[str, Any]
) -> None:
    """Writes ``dest`` from ``source`` a row group at a time (``change(batch) -> batch``),
    then removes ``source``."""
    reader = pq.ParquetFile(source)
    try:
        with ParquetSink(dest, schema) as sink:
            for group in range(reader.num_row_groups):
                batch = pl.from_arrow(reader.read_row_group(group))
                assert isinstance(batch, pl.DataFrame)
                sink.write(change(batch))
            sink.commit(provenance)
    finally:
        reader.close()
        source.unlink(missing_ok=True)
