"""The ``netns`` and ``uml`` testbeds run by an ordinary user, in a user namespace of its own.

An ordinary user may make a user namespace and, in it, network namespaces, veths, qdiscs
and packet sockets: CAP_NET_ADMIN, CAP_NET_RAW (and CAP_SYS_ADMIN for ``ip netns``'s
mounts) then hold over what that user namespace owns, nothing of the host's. The command
that runs a netns experiment as such a user re-executes itself, the same process (its pid,
so signals, Ctrl-C and its run's lock behave as before), as::

    unshare --user --map-current-user --keep-caps --mount --propagation private --net -- ...

- ``--map-current-user``: the user keeps their uid, so every file of the run (the captures
  among them) is theirs; and tcpdump, not uid 0, keeps its capabilities rather than change
  to a user (``-Z``: initgroups) that an unprivileged user namespace cannot switch to;
- ``--keep-caps``: the capabilities are ambient, so ip, tc, tcpdump, iperf3 and the CG
  sender the runner starts have them too (in this namespace only);
- ``--net``: the runner's own network namespace is the user namespace's, so that
  ``ip netns add`` can switch back to it after making a namespace;
- ``--mount`` with a tmpfs over ``/run/netns`` (:func:`continue_inside`): ``ip netns add``
  names its namespaces there, unseen by the host and by root's ``ip netns``. Everything dies
  with the user namespace's last process; ``testbed clean`` ends those of a run that was
  killed (:func:`leftover_processes`).

The ``uml`` testbed is the netns testbed's server and client with a user-mode Linux
kernel as the router, an ordinary process started in the router's namespace: its raw
sockets on the veths need CAP_NET_RAW there, which the user namespace gives it, and
nothing of the host's. Only its real-time priority stays the host's to grant (RLIMIT_RTPRIO,
e.g. ``rtprio`` in /etc/security/limits.conf); without it the kernel runs at the ordinary
scheduler (recorded in meta.json).

Root keeps its own path (the host's ``/run/netns``), unchanged.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from cganalysis.testbed.shared import procmark
from cganalysis.testbed.shared.hosts import TestbedError
from cganalysis.testbed.shared.runtime import USERNS_SETTINGS

# Note: sim.user.check_namespaces words the same refusal for the sim testbed; it could use
# check_allowed's per-setting fix (not changed here: sim/user.py was being reworked).

#: Set to the runner's pid before it re-executes itself: the process that finds its own
#: pid there is the re-executed runner (its children, other pids, are not).
REEXEC_ENV = "CGA_USERNS_RUNNER"
NETNS_RUN_DIR = Path("/run/netns")
UNSHARE = [
    *("unshare", "--user", "--map-current-user", "--keep-caps"),
    *("--mount", "--propagation", "private", "--net", "--"),
]
#: Capability bits (linux/capability.h) the testbed needs in its namespace.
CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN = 12, 13, 21
#: How to allow unprivileged user namespaces, per setting (its value that forbids them).
_ALLOW = {
    "unprivileged_userns_clone": ("0", "sysctl -w kernel.unprivileged_userns_clone=1"),
    "apparmor_restrict_unprivileged_userns": (
        "1",
        "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 24.04's AppArmor)",
    ),
    "max_user_namespaces": ("0", "sysctl -w user.max_user_namespaces=10000"),
}


#: The testbeds whose hosts are network namespaces of this machine.
KINDS = ("netns", "uml")


def needed(kinds: list[str]) -> bool:
    """Whether a run on testbeds of ``kinds`` must first enter a user namespace."""
    return any(k in KINDS for k in kinds) and os.geteuid() != 0 and not inside()


def inside() -> bool:
    """An ordinary user with the testbed's capabilities: in a user namespace of its own."""
    try:
        status = Path("/proc/self/status").read_text(encoding="ascii")
    except OSError:
        return False
    effective = next((ln.split()[1] for ln in status.splitlines() if ln.startswith("CapEff:")), "0")
    need = (1 << CAP_NET_ADMIN) | (1 << CAP_NET_RAW) | (1 << CAP_SYS_ADMIN)
    return os.geteuid() != 0 and int(effective, 16) & need == need


def reexec(program_argv: list[str], kind: str = "netns") -> NoReturn:
    """Becomes ``python -m cganalysis.cli PROGRAM_ARGV`` inside a new user namespace (same
    pid), or raises in one line why the host does not allow it."""
    if not NETNS_RUN_DIR.is_dir():
        raise TestbedError(
            f"{kind} testbed: {NETNS_RUN_DIR} does not exist on this host, and an ordinary user "
            f"cannot make it: `sudo mkdir {NETNS_RUN_DIR}` (scripts/install.sh makes it at boot)"
        )
    check_allowed(kind)
    os.environ[REEXEC_ENV] = str(os.getpid())
    # Every process of the run carries this mark: `testbed clean` kills only those.
    os.environ.setdefault(procmark.MARKER_ENV, procmark.new_marker())
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp(UNSHARE[0], [*UNSHARE, sys.executable, "-m", "cganalysis.cli", *program_argv])


#: Where Debian puts ip, tc and ethtool: on root's PATH, not on an ordinary user's.
SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")


def enter(kinds: list[str], program_argv: list[str] | None) -> None:
    """For a command that sets up a testbed of ``kinds`` (an experiment, a calibration):
    not root, on a netns or uml testbed, this command again inside a user namespace that owns the
    testbed's network namespaces; there, a private /run/netns. ``program_argv``: the
    command's own arguments (None: called as a library, which cannot be re-executed).
    The system folders of ip, tc and ethtool join PATH (after the user's own), for this
    process and every tool it starts."""
    path = os.environ.get("PATH", "").split(":")
    os.environ["PATH"] = ":".join([*filter(None, path), *(d for d in SBIN if d not in path)])
    if needed(kinds):
        if program_argv is None:  # main() called in a process that must keep running
            raise TestbedError("a netns or uml run as an ordinary user runs as a program only")
        reexec(program_argv, next(k for k in kinds if k in KINDS))
    continue_inside()


def check_allowed(kind: str = "netns") -> None:
    """Refuses in one line, naming the host's setting and how to change it, where this user
    cannot make a user namespace with a network namespace it administers."""
    probe = subprocess.run(
        [*UNSHARE, "ip", "link", "set", "lo", "up"], capture_output=True, text=True, check=False
    )
    if probe.returncode == 0:
        return
    values = {
        Path(p).name: Path(p).read_text(encoding="utf-8").strip()
        for p in USERNS_SETTINGS
        if Path(p).is_file()
    }
    blocking = [(k, v) for k, v in values.items() if k in _ALLOW and v == _ALLOW[k][0]]
    settings = ", ".join(f"{k}={v}" for k, v in (blocking or list(values.items())))
    fix = "; ".join(_ALLOW[k][1] for k, _ in blocking) or "allow unprivileged user namespaces"
    try:
        user = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        user = str(os.geteuid())
    raise TestbedError(
        f"{kind} testbed: this host does not let user {user} run it in a user namespace "
        f"({probe.stderr.strip()[-120:]}; {settings or 'no setting found'}): as root, "
        f"{fix} (persistently: a file in /etc/sysctl.d), or run the experiment as root"
    )


def continue_inside() -> None:
    """In the re-executed runner: a private ``/run/netns`` (a tmpfs in this mount
    namespace only) for ``ip netns`` to name namespaces in; once."""
    if os.environ.get(REEXEC_ENV) != str(os.getpid()):
        return
    del os.environ[REEXEC_ENV]
    libc = ctypes.CDLL(None, use_errno=True)
    ms_nosuid, ms_nodev, ms_noexec = 2, 4, 8
    flags = ms_nosuid | ms_nodev | ms_noexec
    target = str(NETNS_RUN_DIR).encode()
    if libc.mount(b"tmpfs", target, b"tmpfs", flags, b"mode=0755") != 0:
        err = ctypes.get_errno()
        raise TestbedError(f"netns testbed: a private {NETNS_RUN_DIR}: {os.strerror(err)}")


def identity() -> dict[str, Any]:
    """What the state file records so that ``testbed clean`` finds the run's processes."""
    return {
        "user_namespace": Path("/proc/self/ns/user").stat().st_ino,
        "proc_mark": os.environ.get(procmark.MARKER_ENV),
    }


def leftover_processes(state: dict[str, Any]) -> list[int]:
    """This user's processes still in a dead run's user namespace, carrying its mark."""
    inode = state.get("user_namespace")
    marker = procmark.valid_marker(state.get("proc_mark"))
    if isinstance(inode, bool) or not isinstance(inode, int) or inode <= 0 or marker is None:
        return []
    return [pid for pid in _own_pids() if _in(pid, inode, marker)]


def _own_pids() -> Iterator[int]:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == os.geteuid():
                    yield int(entry.name)
            except OSError:
                continue


def _in(pid: int, inode: int, marker: str) -> bool:
    try:
        return Path(f"/proc/{pid}/ns/user").stat().st_ino == inode and procmark.is_ours(pid, marker)
    except OSError:
        return False


def kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
