"""Whether a UML kernel boots as the ``sim`` testbed boots it: as its unprivileged user
(:mod:`simuser`), in its userspace mode, with time travel. The first process is
``/bin/true``: a kernel that starts it and sees it end ("Attempted to kill init!
exitcode=0x00000000") boots; any other end is a failed boot, its console explained by
:func:`cganalysis.testbed.uml.console.diagnose` (the AMX case among them). The
verdict is cached with the uml testbed's (:mod:`umlboot`), per userspace mode.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from cganalysis.testbed.sim import user as simuser
from cganalysis.testbed.uml.boot import boot_failure
from cganalysis.testbed.uml.config import Kernel

#: What the kernel prints when its first process ended with status 0.
INIT_RAN = "exitcode=0x00000000"


def sim_boot_failure(kernel: Kernel, userspace: str) -> str | None:
    """Why ``kernel`` cannot boot as a sim run boots it; None if it can."""
    return boot_failure(kernel, lambda k: _boot(k, userspace), mode=f"sim-{userspace}")


def _boot(kernel: Kernel, userspace: str) -> str | None:
    user = simuser.host_user()
    simuser.check_namespaces(user)
    with tempfile.TemporaryDirectory(prefix="cga-sim-probe-") as tmp:
        job = Path(tmp)
        simuser.hand_over(job, user)
        argv = [
            *simuser.namespace_argv(user),
            *simuser.drop_argv(user),
            str(kernel.path), "mem=64M", "umid=cga-probe", f"uml_dir={job}",
            "rootfstype=hostfs", "rootflags=/", "ro", "con=null", "con0=null,fd:1",
            "time-travel=inf-cpu", f"seccomp={'on' if userspace == 'seccomp' else 'off'}",
            "init=/bin/true",
        ]  # fmt: skip
        try:
            out = subprocess.run(
                argv, capture_output=True, text=True, errors="replace", timeout=60, check=False
            )
        except subprocess.TimeoutExpired as e:
            return f"no end within 60 s ({str(e.stdout or '')[-200:]})"
        console = out.stdout + out.stderr
        return None if INIT_RAN in console else console
