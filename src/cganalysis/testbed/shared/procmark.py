"""Knowing that a recorded pid is still a process we started, before signalling it.

A state file (state.py) outlives its run, and pids are reused: a pid read back from it
may by then be anyone's (or the file may have been edited). Every process the testbeds
record for ``cganalysis testbed clean`` is started with ``CGA_PROC_MARK=<random token>``
in its environment; exec keeps the pid and the environment we gave, and no other process
carries the token. ``clean`` signals a pid only if ``/proc/PID/environ`` still holds the
token recorded with it, and only a positive pid (``kill`` reads 0 as "my process group"
and -1 as "every process").
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path

#: The environment variable that carries a process's token.
MARKER_ENV = "CGA_PROC_MARK"
_MARKER = re.compile(r"[0-9a-f]{32}")
#: Linux's largest pid_max (2^22): a larger number is no pid.
PID_MAX = 1 << 22


def new_marker() -> str:
    return secrets.token_hex(16)


def valid_pid(value: object) -> int | None:
    """``value`` as a pid, or None unless it is an integer 1..PID_MAX (not a bool, not a
    string: JSON wrote it as a number)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 < value <= PID_MAX else None


def valid_marker(value: object) -> str | None:
    return value if isinstance(value, str) and _MARKER.fullmatch(value) else None


def environ_has(environ: bytes, marker: str) -> bool:
    """Whether a ``/proc/PID/environ`` (NUL-separated) carries ``marker``."""
    return f"{MARKER_ENV}={marker}".encode() in environ.split(b"\0")


def is_ours(pid: int, marker: str) -> bool:
    """A local process: ``pid`` is alive and still carries ``marker``."""
    try:
        return environ_has(Path(f"/proc/{pid}/environ").read_bytes(), marker)
    except OSError:
        return False


def remote_kill_argv(pid: int, marker: str) -> list[str]:
    """A remote command that SIGKILLs ``pid`` only if it carries ``marker``; exits 3 if it
    does not (gone, or another process now). Both were validated (valid_pid, valid_marker)."""
    script = (
        'tr "\\000" "\\n" < "/proc/$1/environ" 2>/dev/null | grep -qxF -- "$2" || exit 3; '
        'kill -s KILL "$1"'
    )
    return ["sh", "-c", script, "sh", str(pid), f"{MARKER_ENV}={marker}"]
