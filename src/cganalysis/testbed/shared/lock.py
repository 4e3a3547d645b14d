"""One experiment or calibration at a time per testbed, whatever starts them.

Two runs on one testbed share its CPUs, links and timers: each would measure the other.
Snakemake's workflow profile caps its own jobs (``resources: testbed=1``), but a profile
that is not found, a second Snakemake, or a hand-started run would not be capped. The
runner therefore takes an exclusive lock per testbed (``/run/cganalysis/locks/<name>.lock``,
an ordinary user's under :mod:`runtime`'s folder; an flock: the kernel releases it when
the holder exits, even if killed) and waits, saying for whom, while another run holds it.
A pool of testbeds (several machines,
ssh host sets or VMs: one campaign over all of them) is a list of such locks, and a run
takes the first free one (:func:`hold_one_of`). The same lock folder holds the locks a
run takes on its own output folder (:func:`hold_now`: two processes that planned the same
run must not both make it).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from cganalysis.testbed.shared.runtime import runtime_dir

LOCK_DIR = Path(os.environ.get("CGA_LOCK_DIR") or runtime_dir() / "locks")
#: Testbeds this process holds: a run that took its testbed from a pool (the command
#: holds it) must not wait for itself when the runner asks for the same testbed.
_HELD: set[str] = set()
#: How often a waiting run says that it is still waiting (s).
REPORT_EVERY_S = 60.0


def lock_name(kind: str, path: Path | None) -> str:
    """``netns`` for the namespaces of this machine; ``ssh-<hash>`` per testbed file."""
    if path is None:
        return kind
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:10]
    return f"{kind}-{digest}"


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return "another run"
    return f"pid {info.get('pid', '?')} ({info.get('what', 'a run')})"


@contextlib.contextmanager
def testbed_lock(name: str, what: str, progress: Callable[[str], None]) -> Iterator[None]:
    """Holds the testbed ``name`` for the block; ``what`` says who holds it (run id)."""
    if name in _HELD:  # this process holds it already (a pool member): nothing to wait for
        yield
        return
    with hold_one_of([name], what, progress):
        yield


@contextlib.contextmanager
def hold_one_of(names: Sequence[str], what: str, progress: Callable[[str], None]) -> Iterator[int]:
    """Holds the first free testbed of a pool for the block and yields its index in
    ``names``; while every one is held, waits (first come, first tried: a pool is filled in
    its order, so a pool of one behaves as :func:`testbed_lock`)."""
    if not names:
        raise ValueError("an empty testbed pool")
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    paths = [LOCK_DIR / f"{name}.lock" for name in names]
    fds = [os.open(path, os.O_RDWR | os.O_CREAT, 0o644) for path in paths]
    try:
        waited_since: float | None = None
        last_report = 0.0
        while (got := _try_each(fds)) is None:
            now = time.monotonic()
            if waited_since is None or now - last_report >= REPORT_EVERY_S:
                pairs = zip(names, paths, strict=True)
                held = "; ".join(f"{n}: held by {_holder(p)}" for n, p in pairs)
                progress(f"waiting for testbed {held}")
                waited_since = waited_since or now
                last_report = now
            time.sleep(0.5)
        if waited_since is not None:
            progress(f"testbed {names[got]} free after {time.monotonic() - waited_since:.0f} s")
        fd = fds[got]
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "what": what}).encode(), 0)
        _HELD.add(names[got])
        try:
            yield got
        finally:
            _HELD.discard(names[got])
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        for fd in fds:
            os.close(fd)


class LockHeldError(Exception):
    """Another process holds the lock; ``holder`` says who (pid and what)."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


@contextlib.contextmanager
def hold_now(name: str, what: str) -> Iterator[None]:
    """Holds the lock ``name`` for the block, or raises :class:`LockHeldError` at once: for
    work that must be done once, where waiting for the holder would only end in
    finding it done."""
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    path = LOCK_DIR / f"{name}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if _try_each([fd]) is None:
            raise LockHeldError(_holder(path))
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "what": what}).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _try_each(fds: Sequence[int]) -> int | None:
    for i, fd in enumerate(fds):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue
        return i
    return None
