"""The one folder a ``vm`` guest may write for a run: a fresh, empty staging folder.

The guest sees this machine's file system read-only; what it writes for a run goes to a
staging folder made for that run alone (:func:`new_share`, beside the run's final place,
so that committing it is a rename). The guest leaves its finished run there as one
folder named like the run; once the guest is gone, the host takes that folder only if
everything in it is a plain file or folder with a plain name (:func:`take_run`): no
symlink (the host reads the run as root afterwards), no device, fifo or hard link, no
name a shell or a later ``rglob`` could misread. The caller renames it into place.

The control folder (vm/testbed.py) is shared writable for the guest's whole life: the host
writes its files there with :func:`write_shared`, which follows no symlink the guest
may have planted (the host is root).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from cganalysis.testbed.shared.hosts import TestbedError

#: A file or folder name the guest may give inside the run (what runs write: meta.json,
#: ingress.pcap, iperf3-step01.json, ...): no leading dot, no separators, no spaces.
PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.,+=@-]{0,254}")


def new_share(out: Path) -> Path:
    """A fresh, empty folder beside ``out`` (same file system), for the guest alone."""
    out.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.vmshare-", dir=out.parent))


def take_run(share: Path, name: str) -> Path:
    """``share/name``, the run the guest left, once checked; a TestbedError (one line,
    naming the entry) if the share holds anything else."""
    entries = sorted(p.name for p in share.iterdir())
    if entries != [name]:
        raise TestbedError(
            f"vm testbed: the guest's staging folder {share} holds {entries[:5]!r}, not one "
            f"run folder {name!r}; the run is not taken (see the guest's output)"
        )
    run = share / name
    _check(run, want_dir=True)
    for folder, dirs, files in os.walk(run):  # never follows symlinks
        for entry in [*dirs, *files]:
            path = Path(folder) / entry
            if not PLAIN_NAME.fullmatch(entry):
                raise TestbedError(
                    f"vm testbed: {path}: a name the guest may not give in a run (letters, "
                    "digits and _.,+=@- only, no leading dot); the run is not taken"
                )
            _check(path, want_dir=entry in dirs)
    return run


def _check(path: Path, want_dir: bool) -> None:
    """A real folder, or a regular file with one link (os.walk lists a symlink to a folder
    among the folders: lstat tells)."""
    mode, links = (st := os.lstat(path)).st_mode, st.st_nlink
    plain = stat.S_ISDIR(mode) if want_dir else (stat.S_ISREG(mode) and links == 1)
    if not plain:
        raise TestbedError(
            f"vm testbed: {path}: not a plain file or folder (a symlink, device, fifo or hard "
            "link, written by the guest); the run is not taken"
        )


def open_for_write(path: Path) -> int:
    """A new file of the control folder, opened to write. The guest may have made its name,
    or its folder's (``req``), a symlink to anywhere on this host: neither is followed."""
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path.name, dir_fd=folder)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        return os.open(path.name, flags, 0o644, dir_fd=folder)
    finally:
        os.close(folder)


def write_shared(path: Path, text: str) -> None:
    """Writes a control-folder file (``open_for_write``), complete when it appears."""
    tmp = path.with_name(f".{path.name}.host")
    with os.fdopen(open_for_write(tmp), "w", encoding="utf-8") as fh:
        fh.write(text)
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:  # a rename replaces a symlink itself, never its target
        os.replace(tmp.name, path.name, src_dir_fd=folder, dst_dir_fd=folder)
    finally:
        os.close(folder)


def remove_share(share: Path) -> None:
    """Whatever is left of the staging folder (rmtree does not follow symlinks)."""
    shutil.rmtree(share, ignore_errors=True)
