"""``cga-cg``'s CSV logs to parquet tables with declared schemas.

The binary writes plain CSV (cheap on the data plane); the testbed keeps parquet. Each
file is read with its schema from :mod:`cganalysis.schemas`, checked, and written
atomically next to the CSV's destination; the summary JSON files are copied as they are.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import polars as pl

from cganalysis import schemas
from cganalysis.cg.lognames import LOG_FILES, SUMMARIES
from cganalysis.errors import CganalysisError, ConfigError
from cganalysis.io import write_parquet

_SCHEMAS: dict[str, schemas.Schema] = {
    "sender_packets.csv": schemas.CG_SENDER_PACKETS,
    "sender_frames.csv": schemas.CG_SENDER_FRAMES,
    "controller.csv": schemas.CG_CONTROLLER,
    "receiver_packets.csv": schemas.CG_RECEIVER_PACKETS,
    "receiver_frames.csv": schemas.CG_RECEIVER_FRAMES,
}
#: CSV file written by cga-cg -> (parquet file, schema, table name).
LOG_TABLES: dict[str, tuple[str, schemas.Schema, str]] = {
    csv: (parquet, _SCHEMAS[csv], table) for csv, (parquet, table) in LOG_FILES.items()
}


class LogError(CganalysisError):
    """A generator log cannot be read."""


def _derived(name: str, df: pl.DataFrame) -> pl.DataFrame:
    if name == "receiver_frames.csv":
        delay = (pl.col("t_last_ns") - pl.col("send_t_ns")).cast(pl.Float64) / 1e6
        df = df.with_columns(
            delivery_delay_ms=pl.when(pl.col("complete")).then(delay).otherwise(None)
        )
    return df


def read_log_csv(path: Path) -> pl.DataFrame:
    """One CSV log as its declared table."""
    name = path.name
    if name not in LOG_TABLES:
        raise LogError(f"{path}: not a cga-cg log (expected one of {sorted(LOG_TABLES)})")
    _, schema, table = LOG_TABLES[name]
    csv_schema = {k: v for k, v in schema.items() if k != "delivery_delay_ms"}
    try:
        df = pl.read_csv(path, schema=csv_schema)
    except (pl.exceptions.PolarsError, OSError) as err:
        raise LogError(f"{path}: cannot read as {table}: {err}") from err
    return schemas.check_schema(_derived(name, df), schema, table)


def convert_logs(
    csv_dir: Path, out_dir: Path, provenance: dict[str, Any] | None = None
) -> list[Path]:
    """Converts every log in ``csv_dir`` into ``out_dir``; returns the files written."""
    written: list[Path] = []
    for name, (parquet, _, _) in LOG_TABLES.items():
        src = csv_dir / name
        if src.exists():
            dest = out_dir / parquet
            write_parquet(read_log_csv(src), dest, provenance)
            written.append(dest)
    for name in SUMMARIES:
        src = csv_dir / name
        if src.exists():
            dest = out_dir / name
            shutil.copyfile(src, dest)
            written.append(dest)
    return written


def read_summary(path: Path) -> dict[str, Any]:
    """A run summary written by cga-cg (sender_summary.json or receiver_summary.json)."""
    from cganalysis.sharedinput import load_json

    try:
        data = load_json(path, "the generator summary")  # a raw run's: size and depth capped
    except ConfigError as err:
        raise LogError(str(err)) from err
    if not isinstance(data, dict):
        raise LogError(f"{path}: expected a JSON object")
    return data
