"""Mounts inside a user-mode Linux guest, by the system call rather than ``mount(8)``.

A guest sees the host's files through hostfs with the owners the kernel's process sees.
The sim kernel runs in a user namespace of an ordinary user (:mod:`simuser`), where the
host's root-owned files belong to the overflow user: ``/usr/bin/mount``, set-user-ID root on
the host, is set-user-ID ``nobody`` in the guest and refuses ("must be superuser"). The
guest's init is root, so it calls ``mount(2)`` itself. Failures are ignored, as the tools
that need a mount say what is missing more precisely than a mount error would.
"""

from __future__ import annotations

import ctypes
import os

MS_BIND = 4096
_libc = ctypes.CDLL(None, use_errno=True)


def mount(
    source: str, target: str, fstype: str = "", data: str = "", *, bind: bool = False
) -> bool:
    """``mount -t FSTYPE -o DATA SOURCE TARGET`` (or ``--bind``); True when it worked."""
    ok = _libc.mount(
        os.fsencode(source),
        os.fsencode(target),
        fstype.encode() if fstype else None,
        MS_BIND if bind else 0,
        data.encode() if data else None,
    )
    return bool(ok == 0)
