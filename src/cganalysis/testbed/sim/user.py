"""Who the ``sim`` kernel runs as on the host: an ordinary user, never with privilege.

UML's seccomp userspace mode (``sim.userspace: seccomp``) lets the guest's processes reach
the kernel's own memory (the kernel says so at boot), so whatever the kernel's process may
do on the host, a guest process may too. It therefore runs without privilege:

- started by root: the mount namespace is set up as root, then the kernel drops to
  :data:`UNPRIVILEGED` and owns nothing but its job folder, which is handed back to root
  before the run is committed;
- started by anyone else: an unprivileged user namespace holds the mounts and the kernel
  runs as that user;
- either way the kernel is user 0 of a user namespace of its own with no capability, so the
  guest sees the same files the same way (the same packets); where the host forbids such
  namespaces, one line says which setting.

Either way the guest reads the host's files as that user: the interpreter, the package and
the kernel must be readable by every user (:func:`reveals` and :func:`unreadable` say which
is not).
"""

from __future__ import annotations

import os
import pwd
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cganalysis.testbed.shared.hosts import TestbedError
from cganalysis.testbed.shared.runtime import USERNS_SETTINGS

#: The host user a sim kernel started by root runs as.
UNPRIVILEGED = "nobody"


@dataclass(frozen=True)
class HostUser:
    """The host user the kernel's process runs as."""

    name: str
    uid: int
    gid: int
    #: Started by root, which drops to this user once the mounts are made.
    dropped: bool


def host_user() -> HostUser:
    uid = os.geteuid()
    if uid != 0:
        return HostUser(pwd.getpwuid(uid).pw_name, uid, os.getegid(), dropped=False)
    try:
        pw = pwd.getpwnam(UNPRIVILEGED)
    except KeyError:
        raise TestbedError(
            f"sim testbed: no user {UNPRIVILEGED!r} on this host for the kernel to run as "
            "(root never runs it); add it (`useradd --system nobody`)"
        ) from None
    return HostUser(pw.pw_name, pw.pw_uid, pw.pw_gid, dropped=True)


def namespace_argv(user: HostUser) -> list[str]:
    """The ``unshare`` that makes the kernel's mount namespace: root's own (root makes the
    mounts, then drops), else inside a user namespace the caller owns."""
    base = ["unshare", "--mount", "--propagation", "private"]
    return base if user.dropped else ["unshare", "--user", "--map-root-user", *base[1:]]


def drop_argv(user: HostUser) -> list[str]:
    """The words that become the kernel, after the mounts. Whoever started it, the kernel
    ends as user 0 of a user namespace of its own mapped to an ordinary user, with no
    capability (the bounding set emptied): so the guest sees its files the same way, and
    makes the same packets, under root and under an ordinary user. Root first drops to
    :data:`UNPRIVILEGED`. The kernel dies with the process that started it
    (``--pdeathsig``, set last: a change of user clears it)."""
    last = ["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--pdeathsig", "KILL"]
    if not user.dropped:
        return last
    return [*_become(user), "unshare", "--user", "--map-root-user", *last]


def _become(user: HostUser) -> list[str]:
    return ["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--clear-groups"]


def check_namespaces(user: HostUser) -> None:
    """The kernel's user needs a user namespace of its own: refuse in one line, naming the
    host's setting, where it cannot make one."""
    probe_argv = ["unshare", "--user", "--map-root-user", "--mount", "true"]
    if user.dropped:
        probe_argv = [*_become(user), *probe_argv]
    probe = subprocess.run(probe_argv, capture_output=True, text=True, check=False)
    if probe.returncode == 0:
        return
    settings = [
        f"{Path(p).name}={Path(p).read_text(encoding='utf-8').strip()}"
        for p in USERNS_SETTINGS
        if Path(p).is_file()
    ]
    raise TestbedError(
        f"sim testbed: this host does not let user {user.name} make a user namespace "
        f"({probe.stderr.strip()[-120:]}; {', '.join(settings) or 'no setting found'}): "
        "allow it (e.g. `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` on Ubuntu "
        "24.04, kernel.unprivileged_userns_clone=1 on older Debian)"
    )


def hand_over(folder: Path, user: HostUser) -> None:
    """``folder`` and what it holds become the kernel's user's (root's run only)."""
    if user.dropped:
        _chown_tree(folder, user.uid, user.gid)


def take_back(folder: Path, user: HostUser) -> None:
    """What the kernel wrote becomes the caller's again, so that no process of the unprivileged
    user (another run's guest among them) can change a committed run."""
    if user.dropped:
        _chown_tree(folder, os.geteuid(), os.getegid())


def _chown_tree(folder: Path, uid: int, gid: int) -> None:
    os.chown(folder, uid, gid, follow_symlinks=False)
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            os.chown(Path(root) / name, uid, gid, follow_symlinks=False)


def _allows(path: Path, user: HostUser, bit: int) -> bool:
    """Whether ``user`` may do ``bit`` (4 read, 1 search) on ``path`` by its mode (ACLs
    aside), as it would on its own, without root's override."""
    st = path.stat()
    shift = 6 if st.st_uid == user.uid else 3 if st.st_gid == user.gid else 0
    return bool((st.st_mode >> shift) & bit)


def reveals(user: HostUser, paths: list[Path]) -> tuple[list[tuple[str, str]], list[str]]:
    """For root's run: the folders the kernel's user cannot pass through on the way to
    ``paths`` (a checkout under a private /root or mktemp folder), each with the entry
    below it on the way, to be shown in the kernel's mount namespace (a tmpfs over the
    folder, the entry bound back: the same paths, nothing else of the folder); and the
    paths that stay unreadable even so (a second private folder deeper down, or a file
    without read permission)."""
    if not user.dropped:
        return [], []
    shown: set[tuple[str, str]] = set()
    refused: list[str] = []
    for path in paths:
        below = None
        for folder in reversed(path.parents):  # from / down
            if not _allows(folder, user, 1):
                if below is not None:
                    refused.append(str(folder))
                    break
                below = folder
                shown.add((str(folder), path.relative_to(folder).parts[0]))
        else:
            if not _allows(path, user, 4 | (1 if path.is_dir() else 0)):
                refused.append(str(path))
    return sorted(shown), refused


def unreadable(user: HostUser, paths: list[Path]) -> list[str]:
    """For root's run: the paths the kernel's user may not read (or enter) once bound into
    its mount namespace, where the folders above them no longer matter."""
    if not user.dropped:
        return []
    return [str(p) for p in paths if not _allows(p, user, 4 | (1 if p.is_dir() else 0))]
