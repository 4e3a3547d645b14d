"""A run directory is written once: built next to its final place, renamed when complete.

``data/raw/<campaign>/<run_id>/`` never holds a partial run: the run writes into
``.<run_id>.tmp-<pid>/`` beside it and renames that into place only after the run
succeeded; a failed or interrupted run leaves nothing (``--keep-failed`` keeps the
temporary directory, renamed ``.<run_id>.failed-<time>``, for debugging). An existing run
directory is never overwritten (an empty one, as Snakemake creates before a job, is
replaced).

Two processes may plan the same run (a second Snakemake with ``--nolock``, another clone
on the same data): the one that comes second must refuse before it touches anything.
:func:`claimed` holds the run's own lock for the whole run, so the second one refuses at
once while the first is running, and finds the finished run afterwards; the commit's
rename never replaces a non-empty directory, whoever else writes there. A committed run
is on disk (fsync of every file and folder before the rename, of the parent after it)
and read-only (files 0444, folders 0555): root may still write, but nothing that
respects modes will.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from cganalysis.errors import ConfigError
from cganalysis.io import fsync_path, sha256_file
from cganalysis.testbed.shared.lock import LockHeldError, hold_now

#: A committed run's modes: nobody writes into it.
FILE_MODE, DIR_MODE = 0o444, 0o555


@contextmanager
def claimed(out: Path, what: str) -> Iterator[None]:
    """Holds ``out`` for the block (the lock follows the folder's real path, so two
    clones on one data folder share it) and checks that it is new under that lock; a
    ConfigError at once when another process holds it."""
    key = hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:16]
    with ExitStack() as held:
        try:
            held.enter_context(hold_now(f"run-{key}", what))
        except LockHeldError as busy:
            raise ConfigError(
                f"{out}: {busy.holder} is making this run now; this one stops (a second "
                "Snakemake or clone planned it too): let that one finish"
            ) from None
        check_new(out)
        yield


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
    """Seals ``tmp`` (on disk, read-only) and renames it to ``out``. The rename replaces
    an empty ``out`` (Snakemake's) atomically and fails on a non-empty one: a run another
    process finished meanwhile is never replaced, even by one that took no lock."""
    check_new(out)
    # The folder itself last: moving a folder to another parent changes its "..", which
    # an ordinary user may do only while the folder is writable (root always may).
    seal(tmp, top=False)
    try:
        tmp.rename(out)
    except OSError as err:
        unseal(tmp)  # so that discard() can remove it
        if err.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
            raise ConfigError(
                f"{out} exists: another process finished this run meanwhile; it stays "
                "as it is and this one is discarded"
            ) from None
        raise
    out.chmod(DIR_MODE)
    fsync_path(out)
    fsync_path(out.parent)  # the rename itself


def seal(folder: Path, *, top: bool = True) -> None:
    """Every file and folder under ``folder`` on disk and read-only, deepest first (a
    folder's entries are final before it is); ``folder`` itself too unless ``top`` is
    False. Symlinks are left alone (chmod would follow them; os.walk does not enter
    them)."""
    for here, _, files in os.walk(folder, topdown=False):
        for name in files:
            path = Path(here) / name
            if not path.is_symlink():
                fsync_path(path)
                path.chmod(FILE_MODE)
        fsync_path(Path(here))
        if top or Path(here) != folder:
            Path(here).chmod(DIR_MODE)


def unseal(folder: Path) -> None:
    """Folders under ``folder`` writable again (to remove it, or to add a file)."""
    for top, _, _ in os.walk(folder):
        Path(top).chmod(0o755)


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
