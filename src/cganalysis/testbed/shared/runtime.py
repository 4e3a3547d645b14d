"""Where this process keeps its run-time state (testbed locks, testbed state files).

Root's is ``/run/cganalysis`` (shared by every root process on the host). An ordinary
user's is their own: ``$XDG_RUNTIME_DIR/cganalysis`` (``/run/user/UID``, made by the login
manager), else ``/tmp/cganalysis-UID``, which must be theirs and private: a folder another
user made there first is refused, never used.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from cganalysis.errors import CganalysisError


def runtime_dir() -> Path:
    if os.geteuid() == 0:
        return Path("/run/cganalysis")
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_absolute() and Path(xdg).is_dir():
        return Path(xdg) / "cganalysis"
    folder = Path(f"/tmp/cganalysis-{os.geteuid()}")
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise CganalysisError(
            f"{folder} is not a private folder of this user (another user may have made it): "
            "remove it, or set XDG_RUNTIME_DIR to a folder of yours"
        )
    return folder


#: Where a host says whether ordinary users may make user namespaces (Debian, Ubuntu).
USERNS_SETTINGS = (
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    "/proc/sys/user/max_user_namespaces",
)
