"""A run directory is written once: built next to its final place, renamed when complete.

``data/raw/<campaign>/<run_id>/`` never holds a partial run: the run writes into
``.<run_id>.tmp-<pid>/`` beside it and renames that into place only after the run
succeeded; a failed or interrupted run leaves nothing (``--keep-failed`` keeps the
temporary directory, renamed ``.<run_id>.failed-<time>``, for debugging). An existing run
directory is never overwritten (an empty one, as Snakemake creates before a job, is
replaced).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from cganalysis.errors import ConfigError
from cganalysis.io import sha256_file


def check_new(out: Path) -> None:
    """An empty directory is accepted (Snakemake makes its outputs' folders first)."""
    if out.is_dir() and not any(out.iterdir()):
        return
    if out.exists():
        raise ConfigError(
            f"{out} exists: run directories are never overwritten; pick another -o, "
            "or move the old run away first"
        )


def temp_dir(out: Path) -> Path:
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    tmp.mkdir(parents=True)
    return tmp


def commit(tmp: Path, out: Path) -> None:
    check_new(out)  # another run may have finished meanwhile
    if out.is_dir():
        out.rmdir()  # empty (check_new): nothing is lost
    tmp.rename(out)


def discard(tmp: Path, keep: bool) -> Path | None:
    if not tmp.exists():
        return None
    if keep:
        kept = tmp.with_name(
            tmp.name.split(".tmp-")[0] + f".failed-{time.strftime('%Y%m%dT%H%M%S')}"
        )
        tmp.rename(kept)
        return kept
    shutil.rmtree(tmp, ignore_errors=True)
    return None


def inventory(run_dir: Path) -> dict[str, dict[str, object]]:
    """Every file of the run with its size and SHA-256 (meta.json itself excluded)."""
    out: dict[str, dict[str, object]] = {}
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        rel = path.relative_to(run_dir).as_posix()
        if rel != "meta.json":
            out[rel] = {"bytes": path.stat().st_size, "sha256": sha256_file(path)}
    return out
