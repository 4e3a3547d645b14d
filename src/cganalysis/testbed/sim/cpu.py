"""Which host CPU one ``sim`` run's kernel runs on (``sim.cpu``).

Most of a sim run's host CPU time is the host switching between the UML kernel's process
and the stub processes that run its guest's processes (seccomp mode): each guest system
call is a wake-up of the kernel and a wake-up back. On one CPU each such switch is a
same-CPU wake-up (no inter-processor interrupt, warm caches); spread over CPUs, each
costs an interrupt and a migration. Pinning the kernel (its stubs inherit the affinity)
cuts the host CPU per simulated second (docs/performance.md, "The sim testbed's cost")
and changes no packet: the guest's clock moves only when it is idle, whatever the host's
scheduler does.

``auto`` picks the allowed CPU with the fewest sim kernels already pinned to it, so the
workflow's two concurrent runs on a two-core machine take one core each. The choice takes
no lock: two runs starting at the same instant may pick the same CPU, which costs wall
time, never packets.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Literal

from cganalysis.testbed.shared.hosts import TestbedError

#: ``sim.cpu``: one host CPU by number, ``auto`` (the least used) or ``none`` (unpinned).
CpuSetting = int | Literal["auto", "none"]
#: Words of a sim kernel's command line (kernel.run_guest's): how its process is known.
KERNEL_WORDS = (b"umid=cga-sim", b"time-travel=inf-cpu")
PROC = Path("/proc")


def chosen_cpu(setting: CpuSetting) -> int | None:
    """The CPU to pin this run's kernel to, ``None`` for none."""
    if setting == "none":
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if isinstance(setting, int):
        if setting not in allowed:
            raise TestbedError(
                f"sim testbed: sim.cpu {setting} is not a CPU this process may use "
                f"({', '.join(map(str, allowed))}); use one of them, auto or none"
            )
        return setting
    pinned = pinned_kernels()
    fewest = min(pinned[cpu] for cpu in allowed)
    ties = [cpu for cpu in allowed if pinned[cpu] == fewest]
    # Two runs started together see the same counts: their process ids part them half
    # the time, and the next run that starts sees where they went.
    return ties[os.getpid() % len(ties)]


def pinned_kernels() -> Counter[int]:
    """How many running sim kernels are pinned to each CPU (unpinned ones count nowhere)."""
    counts: Counter[int] = Counter()
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
            if not all(w in words for w in KERNEL_WORDS):
                continue
            cpus = os.sched_getaffinity(int(entry.name))
        except OSError:  # ended meanwhile, or hidden from this user
            continue
        if len(cpus) == 1:
            counts[next(iter(cpus))] += 1
    return counts


def pin_argv(cpu: int | None) -> list[str]:
    """The words that start a command on ``cpu`` (its children inherit the affinity)."""
    return [] if cpu is None else ["taskset", "--cpu-list", str(cpu)]
