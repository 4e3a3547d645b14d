"""Running a command as an ordinary user from a suite that runs as root (CI does).

The tests of issue 58 drop to ``nobody`` with setpriv, as a researcher without root would
run the command: no supplementary group, the environment kept but for the folders a user
has of their own (home, caches, traces), which point into a folder ``nobody`` owns.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

NOBODY = 65534
#: What ``nobody`` runs a command line with (setpriv keeps the rest of the environment).
DROP = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
#: Where runs not given ``XDG_RUNTIME_DIR`` keep their locks and state files (runtime.py).
RUNTIME_DIR = Path(f"/tmp/cganalysis-{NOBODY}")


@contextmanager
def nobody_folder() -> Iterator[Path]:
    """A folder every user may enter (pytest's tmp_path is root's and private), with
    ``user/`` belonging to ``nobody``: its home and where its runs write."""
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        top = Path(folder)
        top.chmod(0o755)
        (top / "user").mkdir()
        os.chown(top / "user", NOBODY, NOBODY)
        yield top


def nobody_env(home: Path) -> dict[str, str]:
    """This process's environment for ``nobody`` with ``home`` as its home: caches there,
    generated traces there (the suite's $CGA_TRACES is root's), and no runtime folder of
    root's (nobody's is then :data:`RUNTIME_DIR`)."""
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    env["CGA_TRACES"] = str(home / "traces")
    env.pop("XDG_RUNTIME_DIR", None)
    return env


def as_nobody(*argv: str | Path) -> list[str]:
    return [*DROP, *map(str, argv)]
