"""What a UML kernel's console says when it cannot boot on this host.

Pure text reading, apart from the host's CPU flags that a message names: the boot probe
(``uml.boot``) and the running kernel (``uml.host``) both explain a failed boot with it.
"""

from __future__ import annotations

import re
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
#: CPU flags of extended-state components that make XSAVE's area large (AMX: 8 KiB more).
BIG_XSTATE_FLAGS = ("amx_tile", "amx_int8", "amx_bf16", "amx_fp16", "amx_complex")
#: Console text of a failed boot -> why, for the ones whose cause is known.
KNOWN_FAILURES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"ptrace set fp regs failed, errno = (\d+)"),
        "its floating-point register buffer is smaller than this CPU's extended state "
        "(XSAVE{flags}): ptrace set fp regs failed, errno = {0}, and init was killed",
    ),
    (
        re.compile(r"check_ptrace\s*:\s*(.+)"),
        "this host does not let it trace its processes (ptrace: {0})",
    ),
    (
        re.compile(r"Out of memory and no killable processes|Kernel panic - not syncing: (.+)"),
        "it panicked at boot ({0})",
    ),
)


def cpu_flags() -> list[str]:
    """The first CPU's flags (/proc/cpuinfo), empty where there is no such file."""
    try:
        text = CPUINFO.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    m = re.search(r"^flags\s*:(.*)$", text, re.MULTILINE)
    return m.group(1).split() if m else []


def diagnose(console: str, flags: list[str] | None = None) -> str | None:
    """Why a boot failed, from its console text, or None if no known cause is in it."""
    flags = cpu_flags() if flags is None else flags
    big = [f for f in BIG_XSTATE_FLAGS if f in flags]
    shown = f"; this CPU has {' '.join(big)}" if big else ""
    for pattern, why in KNOWN_FAILURES:
        m = pattern.search(console)
        if m is not None:
            groups = [g.strip() for g in m.groups() if g] or [m.group(0).strip()]
            return why.format(*groups, flags=shown)
    return None
