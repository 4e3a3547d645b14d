"""Writing results atomically: a reader never sees a partial file, an interrupted run
leaves no output behind, and an existing output is only replaced by a complete one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from cganalysis.partials import new_partial

if TYPE_CHECKING:
    import polars as pl

#: Parquet key-value metadata key under which a table's provenance JSON is stored.
METADATA_KEY = "cganalysis"


@contextmanager
def atomic_path(path: Path, partial: Path | None = None) -> Iterator[Path]:
    """Yields a temporary path in ``path``'s folder (``partial``: one already made by
    :func:`new_partial`), renamed to ``path`` on success and removed otherwise."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial or new_partial(path)
    try:
        yield tmp
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


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
    from cganalysis.errors import ConfigError

    if not path.is_file():
        raise ConfigError(f"{what} {path}: no such file")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ConfigError(f"{what} {path}: not valid JSON ({err})") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"{what} {path}: expected a JSON object at the top level")
    return obj


def sha256_file(path: Path) -> str:
    """The SHA-256 of a file, read in 1 MiB blocks (captures are large)."""
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_yaml(path: Path) -> Any:
    """A configuration file (run, campaign, testbed); unreadable or invalid YAML is a
    :class:`~cganalysis.errors.ConfigError` naming the file."""
    import yaml

    from cganalysis.errors import ConfigError

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
