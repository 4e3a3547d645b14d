"""Reading a parquet table after checking its columns against the declared schema.

Every reader of a table file (packets, flows, time series) goes through :func:`read_table`,
so that a table made elsewhere, or by an older version, stops the command with one line
naming the file and the column, instead of a polars error deep in a computation. The check
reads only the file's footer; no data is read before it passes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import polars as pl

from cganalysis.errors import SchemaError
from cganalysis.schemas import Schema


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def check_table_file(
    path: Path,
    schema: Schema,
    table: str,
    *,
    required: Iterable[str] | None = None,
    make_with: str = "",
) -> list[str]:
    """Checks the parquet file ``path`` against ``schema`` from its footer alone.

    Every column in ``required`` (default: the whole schema) must be present, and every
    schema column present must have the declared type; columns the schema does not know
    are ignored. Returns the schema's columns the file has, in schema order. ``table``
    names the table in messages ("packets table"), ``make_with`` says what writes it.
    """
    hint = f" ({make_with})" if make_with else ""
    if not path.is_file():
        raise SchemaError(f"{table} {path}: no such file{hint}")
    try:
        found = pl.read_parquet_schema(path)
    except Exception as err:  # polars raises several kinds for a file that is not parquet
        raise SchemaError(
            f"{table} {path}: not a readable parquet file ({_first_line(err)}){hint}"
        ) from None
    needed = list(schema) if required is None else list(required)
    missing = [c for c in needed if c not in found]
    wrong = [
        f"column {c!r} is {found[c]}, expected {schema[c]}"
        for c in schema
        if c in found and found[c] != schema[c]
    ]
    if missing or wrong:
        parts = [f"lacks column(s) {', '.join(repr(c) for c in missing)}"] if missing else []
        parts.extend(wrong)
        raise SchemaError(f"{table} {path}: {'; '.join(parts)}{hint}")
    return [c for c in schema if c in found]


def read_table(
    path: Path,
    schema: Schema,
    table: str,
    *,
    required: Iterable[str] | None = None,
    make_with: str = "",
    only: Iterable[str] | None = None,
) -> pl.DataFrame:
    """The schema's columns of the parquet file ``path``, after :func:`check_table_file`;
    ``only``: of those, these (a reader that needs a few columns of a wide table)."""
    columns = check_table_file(path, schema, table, required=required, make_with=make_with)
    if only is not None:
        wanted = set(only)
        columns = [c for c in columns if c in wanted]
    try:
        return pl.read_parquet(path, columns=columns)
    except Exception as err:  # a footer that reads but data that does not: a damaged file
        raise SchemaError(f"{table} {path}: unreadable data ({_first_line(err)})") from None
