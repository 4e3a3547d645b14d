"""Where a testbed's kernel may come from: a name in a testbed file, a path only from
local configuration.

Root boots the ``uml`` and ``sim`` kernels (and runs the sim kernel's ``--help``) and hands
the ``vm`` kernel to QEMU. Testbed files are shared between labs, so a file may only *name*
a kernel the install put in its own root-owned folders (``uml.config``, ``sim.config``,
``vm.config`` say which names); a kernel anywhere else comes from an environment variable of
the process that runs (``CGA_UML_KERNEL``, ``CGA_SIM_KERNEL``, ``CGA_VM_KERNEL``: a shared
file cannot set one), and is used only if no one but root or the invoking user could have
put it there.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from cganalysis.testbed.shared.hosts import TestbedError

if TYPE_CHECKING:
    from cganalysis.testbed.spec.validate import Section

DOCS = 'docs/testbed.md, "Kernels"'


def parse_kernel_name(
    sec: Section, key: str, names: re.Pattern[str], known: str, env: str
) -> str | None:
    """The testbed file's ``key``: a name matching ``names`` (``known`` lists them for the
    message), never a path."""
    value = sec.opt_string(key)
    if value is None or names.fullmatch(value):
        return value
    raise sec.error(
        key,
        f"{value!r} is not a kernel name ({known}); a testbed file is shared, so it may only "
        f"name a kernel this install provides: a kernel elsewhere is local configuration, "
        f"${env}=PATH ({DOCS})",
    )


def trusted_uids() -> set[int]:
    """Root and the invoking user (under sudo, the user who ran it too)."""
    uids = {0, os.getuid()}
    sudo = os.environ.get("SUDO_UID", "")
    if sudo.isdigit():
        uids.add(int(sudo))
    return uids


def unsafe_reason(path: Path) -> str | None:
    """Why someone other than root or the invoking user could have replaced ``path`` (an
    absolute path without symbolic links), or None: the file and every folder above it
    must be owned by one of them and writable by no group or other user."""
    uids = trusted_uids()
    for part in (path, *path.parents):
        st = part.lstat()
        if st.st_uid not in uids:
            return f"{part} is owned by uid {st.st_uid}, neither root nor you"
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return (
                f"{part} is writable by its group or others (mode {stat.S_IMODE(st.st_mode):04o})"
            )
    return None


def local_kernel(env: str) -> Path | None:
    """The kernel ``$env`` names (symbolic links resolved: the file that is checked is
    the file that runs), or None if unset; raises one line if it is missing or unsafe."""
    value = os.environ.get(env, "")
    if not value:
        return None
    path = Path(value)
    if not path.is_absolute():
        raise TestbedError(f"${env}: {value} is not an absolute path (a kernel binary; {DOCS})")
    try:
        real = path.resolve(strict=True)
    except OSError:
        raise TestbedError(f"${env}: {value} not found (a kernel binary; {DOCS})") from None
    if not real.is_file():
        raise TestbedError(f"${env}: {value} is not a file (a kernel binary; {DOCS})")
    why = unsafe_reason(real)
    if why is not None:
        raise TestbedError(
            f"${env}: {value} refused: {why}; root runs this kernel, so it and every folder "
            "above it must be owned by root or you and writable by no one else "
            "(chown, chmod go-w)"
        )
    return real
