"""One experiment or calibration at a time per testbed, whatever starts them.

Two runs on one testbed share its CPUs, links and timers: each would measure the other.
Snakemake's workflow profile caps its own jobs (``resources: testbed=1``), but a profile
that is not found, a second Snakemake, or a hand-started run would not be capped. The
runner therefore takes an exclusive lock per testbed (``/run/cganalysis/locks/<name>.lock``,
an flock: the kernel releases it when the holder exits, even if killed) and waits,
saying for whom, while another run holds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

LOCK_DIR = Path(os.environ.get("CGA_LOCK_DIR", "/run/cganalysis/locks"))
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
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    path = LOCK_DIR / f"{name}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        waited_since: float | None = None
        last_report = 0.0
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                now = time.monotonic()
                if waited_since is None or now - last_report >= REPORT_EVERY_S:
                    progress(f"waiting for testbed {name}: held by {_holder(path)}")
                    waited_since = waited_since or now
                    last_report = now
                time.sleep(0.5)
        if waited_since is not None:
            progress(f"testbed {name} free after {time.monotonic() - waited_since:.0f} s")
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "what": what}).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
