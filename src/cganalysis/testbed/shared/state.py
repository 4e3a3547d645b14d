"""What a live testbed holds, on disk, so that ``cganalysis testbed clean`` can undo it.

Namespaces are named ``cgatb-<pid>-<random>-<role>``: the owner's pid is in the name, so a
namespace whose owner is gone is a leftover even if its state file was lost. Each testbed
also writes ``/run/cganalysis/testbeds/<pid>-<random>.json`` as it creates things
(namespaces; for ssh testbeds the hosts, remote pids, interfaces with a changed qdisc and
the remote work directory), and removes the file once it has taken everything down.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cganalysis.testbed.shared.procmark import valid_pid
from cganalysis.testbed.shared.runtime import runtime_dir

STATE_DIR = Path(os.environ.get("CGA_STATE_DIR") or runtime_dir() / "testbeds")
PREFIX = "cgatb"
_NS = re.compile(rf"^{PREFIX}-(\d+)-([0-9a-f]+)-([a-z]+)$")


def new_tag() -> str:
    """``<pid>-<random>``: unique per run, parallel runs and leftovers never collide."""
    return f"{os.getpid()}-{secrets.token_hex(2)}"


def ns_name(tag: str, role: str) -> str:
    return f"{PREFIX}-{tag}-{role}"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class StateFile:
    tag: str
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return STATE_DIR / f"{self.tag}.json"

    def update(self, **items: Any) -> None:
        self.data.update(items, tag=self.tag, pid=os.getpid())
        try:
            STATE_DIR.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data, indent=1) + "\n", encoding="utf-8")
            tmp.replace(self.path)
        except OSError:
            pass  # best effort: the namespace names alone still let `clean` find leftovers

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def list_namespaces() -> list[str]:
    res = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return [line.split()[0] for line in res.stdout.splitlines() if line.strip()]


def is_ours(ns: object) -> bool:
    """A namespace name this package makes (a state file may name anything)."""
    return isinstance(ns, str) and _NS.match(ns) is not None


def owner_pid(ns: str) -> int | None:
    m = _NS.match(ns)
    return int(m.group(1)) if m else None


def kill_namespace_pids(ns: str) -> list[int]:
    """SIGKILLs every process still inside ``ns`` (what remains after an orderly stop)."""
    res = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, check=False)
    pids = [int(p) for p in res.stdout.split() if p.isdigit()]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if pids:
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
            time.sleep(0.02)
    return pids


def delete_namespace(ns: str) -> bool:
    kill_namespace_pids(ns)
    res = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True, check=False)
    return res.returncode == 0


def leftover_namespaces(include_live: bool = False) -> list[str]:
    """Our namespaces whose owner process is gone (or all of ours with include_live)."""
    out = []
    for ns in list_namespaces():
        pid = owner_pid(ns)
        if pid is not None and (include_live or not pid_alive(pid)):
            out.append(ns)
    return out


def _state_files() -> list[tuple[Path, dict[str, Any] | None]]:
    """Each state file with its content (None: not a JSON object)."""
    if not STATE_DIR.is_dir():
        return []
    out: list[tuple[Path, dict[str, Any] | None]] = []
    for path in sorted(STATE_DIR.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
        out.append((path, data if isinstance(data, dict) else None))
    return out


def leftover_states(include_live: bool = False) -> list[dict[str, Any]]:
    out = []
    for path, data in _state_files():
        # 0 or -1 would ask os.kill about a group or everyone: such a file is not acted on.
        owner = valid_pid(data.get("pid")) if data is not None else None
        if data is not None and owner is not None and (include_live or not pid_alive(owner)):
            data["_path"] = str(path)
            out.append(data)
    return out


def refused_states() -> list[str]:
    """One line per state file ``clean`` leaves alone: unreadable, or its owner's pid is
    not a positive integer (edited by hand?)."""
    return [
        f"{path}: left alone: not a state file with a positive integer pid; remove it by hand"
        for path, data in _state_files()
        if data is None or valid_pid(data.get("pid")) is None
    ]
