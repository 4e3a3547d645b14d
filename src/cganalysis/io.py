"""Writing results atomically: a reader never sees a partial file, an interrupted run
leaves no output behind, and an existing output is only replaced by a complete one."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from cganalysis.errors import ConfigError

if TYPE_CHECKING:
    import polars as pl

#: Parquet key-value metadata key under which a table's provenance JSON is stored.
METADATA_KEY = "cganalysis"
#: Numbers the partial files of this process.
_partials = itertools.count()


def new_partial(path: Path) -> Path:
    """A new empty file next to ``path``, ``.NAME.PID-N.partial``, readable as the umask
    allows (an ordinary result file, which tempfile's owner-only files are not). Created
    exclusively, so no two writers share one."""
    while True:
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{next(_partials)}.partial")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:  # left by an earlier process of the same pid
            continue
        return tmp


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yields a new partial file in ``path``'s folder (:func:`new_partial`), renamed to
    ``path`` on success and removed otherwise."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = new_partial(path)
    try:
        yield tmp
        fsync_path(tmp)  # on disk before it is named: a crash leaves the old file, not a hole
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def fsync_path(path: Path) -> None:
    """A file's (or a folder's: its entries) data on disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_parquet(
    df: pl.DataFrame,
    path: Path,
    provenance: dict[str, Any] | None = None,
    *,
    fast: bool = False,
) -> None:
    """Writes ``df`` to ``path`` atomically, with ``provenance`` as JSON metadata.

    ``fast``: for tables of millions of rows (the packet table), zstd at level 1 and no
    column statistics. Statistics (min/max per column chunk, the string columns above
    all) cost more than the compression, and the tables are read whole; level 1 makes the
    file ~10% larger than the default level.
    """
    metadata = {METADATA_KEY: json.dumps(provenance, default=str)} if provenance else None
    options: dict[str, Any] = {"compression_level": 1, "statistics": False} if fast else {}
    with atomic_path(path) as tmp:
        df.write_parquet(tmp, metadata=metadata, compression="zstd", **options)


def read_provenance(path: Path) -> dict[str, Any] | None:
    """The provenance stored by :func:`write_parquet`, or None."""
    import polars as pl

    meta = pl.read_parquet_metadata(path)
    raw = meta.get(METADATA_KEY)
    return None if raw is None else dict(json.loads(raw))


def write_json(obj: Any, path: Path) -> None:
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as fh:
        _dump(obj, fh)


def _dump(obj: Any, fh: IO[str]) -> None:
    json.dump(obj, fh, indent=2, sort_keys=False, default=str)
    fh.write("\n")


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    """A JSON file whose top level is an object; a missing file or bad JSON is a
    :class:`~cganalysis.errors.ConfigError` naming ``what`` and the file."""
    from cganalysis.sharedinput import load_json

    if not path.is_file():
        raise ConfigError(f"{what} {path}: no such file")
    obj = load_json(path, what)  # size capped; deep nesting is an error, not a crash
    if not isinstance(obj, dict):
        raise ConfigError(f"{what} {path}: expected a JSON object at the top level")
    return obj


def sha256_file(path: Path) -> str:
    """The SHA-256 of a file, read in 1 MiB blocks (captures are large)."""

    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_yaml(path: Path) -> Any:
    """A configuration file (run, campaign, testbed); unreadable or invalid YAML, a file
    over 1 MiB, an alias bomb or a huge integer is a
    :class:`~cganalysis.errors.ConfigError` naming the file (:mod:`cganalysis.sharedinput`)."""
    from cganalysis.sharedinput import load_yaml

    return load_yaml(path)
