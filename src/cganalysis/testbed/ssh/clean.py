"""``cganalysis testbed clean`` for an ssh run that died: what its state file recorded.

The state file is read back as untrusted input (it outlives the run, pids are reused, it
may have been edited): each host is checked as a testbed file's would be, host keys are
checked with this machine's settings (not the file's), and a recorded process is killed
only if its pid is a positive integer that still carries the token it was started with
(procmark.py). Anything else is refused in one line and left alone.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

from cganalysis.testbed.shared.hosts import TestbedError
from cganalysis.testbed.shared.procmark import remote_kill_argv, valid_marker, valid_pid
from cganalysis.testbed.spec.validate import HOSTNAME, IFNAME, SAFE_PATH, USERNAME
from cganalysis.testbed.ssh.host import SshHost, SshTarget, control_dir, local_host_keys
from cganalysis.testbed.ssh.testbed import undo


def _target(raw: Any) -> SshTarget | None:
    """The recorded host, if every field is what a testbed file could have given."""
    if not isinstance(raw, dict):
        return None
    address, user, port = raw.get("address"), raw.get("user"), raw.get("port")
    identity, become, timeout = raw.get("identity"), raw.get("become"), raw.get("connect_timeout_s")
    if not (isinstance(address, str) and HOSTNAME.fullmatch(address)):
        return None  # e.g. "-oProxyCommand=...": ssh would read an option
    if not (isinstance(user, str) and USERNAME.fullmatch(user)) or become not in ("none", "sudo"):
        return None
    if identity is not None and not (isinstance(identity, str) and SAFE_PATH.fullmatch(identity)):
        return None
    if type(port) is not int or not 1 <= port <= 65535:
        return None
    if type(timeout) is not int or not 1 <= timeout <= 120:
        return None
    known_hosts, policy = local_host_keys()
    return SshTarget(address, user, port, identity, known_hosts, policy, str(become), timeout)


def _of(st: dict[str, Any], key: str, role: str, default: Any) -> Any:
    """``st[key][role]`` when the file has that shape and type, else ``default``."""
    value = st.get(key)
    found = value.get(role, default) if isinstance(value, dict) else default
    return found if isinstance(found, type(default)) else default


def _procs(st: dict[str, Any], role: str) -> tuple[list[tuple[int, str]], list[str]]:
    """The role's recorded processes that may be killed, and one line per refused entry."""
    good: list[tuple[int, str]] = []
    refused: list[str] = []
    for entry in _of(st, "procs", role, []):
        raw = entry if isinstance(entry, dict) else {"pid": entry}
        pid, marker = valid_pid(raw.get("pid")), valid_marker(raw.get("marker"))
        if pid is None or marker is None:
            refused.append(
                f"  {st.get('_path')}: procs.{role}: {entry!r} not killed: a process needs "
                "a positive integer pid and the token it was started with; check by hand"
            )
        else:
            good.append((pid, marker))
    if old := _of(st, "pids", role, []):  # an older state file: pids without their tokens
        refused.append(
            f"  {st.get('_path')}: pids.{role}: {old!r} not killed: recorded "
            "without the token that proves they are still ours; check by hand"
        )
    return good, refused


def clean_remote(st: dict[str, Any], dry_run: bool) -> Iterator[str]:
    """Undoes a dead ssh run recorded in a state file."""
    ctl = control_dir()
    try:
        hosts = st.get("hosts")
        for role, raw in (hosts if isinstance(hosts, dict) else {}).items():
            if role in st.get("vm_roles", []):
                continue  # a guest: its QEMU is killed through its own state file
            target = _target(raw)
            if target is None:
                yield (
                    f"{st.get('_path')}: hosts.{role}: not a valid host record, left alone "
                    "(edited by hand?); undo that host by hand"
                )
                continue
            procs, refused = _procs(st, role)
            yield (
                f"{'would clean' if dry_run else 'cleaning'} {role} {target.address}: "
                f"pids {[pid for pid, _ in procs]}, devs {_of(st, 'devs', role, [])}"
            )
            yield from refused
            if dry_run:
                continue
            host = SshHost(role, target, ctl)
            try:
                for pid, marker in procs:
                    if host.run(remote_kill_argv(pid, marker), check=False).returncode == 3:
                        yield f"  pid {pid} on {role}: not ours any more (gone, reused), left alone"
                devs = _of(st, "devs", role, [])
                undo(
                    host,
                    [d for d in devs if isinstance(d, str) and IFNAME.fullmatch(d)],
                    _of(st, "saved", role, {}),
                    _of(st, "remote_dirs", role, "") or None,
                )
                host.close()
            except TestbedError as err:
                yield f"  {err}"
    finally:
        shutil.rmtree(ctl, ignore_errors=True)
