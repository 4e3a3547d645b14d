"""What the ``sim`` testbed needs and where it is: its options, a kernel with time travel,
and the library that seeds the kernel's randomness.

The ``sim`` testbed runs a whole experiment inside one user-mode Linux kernel on simulated
time (``time-travel=inf-cpu``): its clock moves only when every process in it is idle, so
a run's timing is a function of the run file, not of the host's load. That needs a UML
kernel built with ``CONFIG_UML_TIME_TRAVEL_SUPPORT`` (``scripts/build-uml.sh``'s; Debian's
``user-mode-linux`` has none) and ``libcga_simrng.so`` (``native/simrng``, installed by
``scripts/install.sh``), which answers the kernel's requests for host randomness from the
run's seed. A testbed file only names the kernel (``kernelpath``); ``$CGA_SIM_KERNEL``
gives a path. Every lookup fails with one line naming what is missing and what installs it.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cganalysis.testbed.shared.hosts import TestbedError
from cganalysis.testbed.shared.kernelpath import parse_kernel_name
from cganalysis.testbed.sim.cpu import CpuSetting
from cganalysis.testbed.uml.config import (
    BUILT,
    KERNEL_NAMES,
    KNOWN,
    Kernel,
    UmlOptions,
    find_kernel,
)

if TYPE_CHECKING:
    from cganalysis.testbed.spec.validate import Section


#: Where scripts/install.sh puts the seeding library; $CGA_SIMRNG_LIB overrides it.
SIMRNG = BUILT.parent / "libcga_simrng.so"
SIMRNG_ENV = "CGA_SIMRNG_LIB"
#: Local configuration: the path of a UML kernel with time travel (checked: kernelpath).
KERNEL_ENV = "CGA_SIM_KERNEL"
#: The guest's wall clock at boot unless the testbed file says otherwise (any fixed value
#: does: two runs must start from the same one).
DEFAULT_START_UTC = "2026-01-01T00:00:00Z"
#: UML's ways of running the guest's processes (its ``seccomp=on|off`` boot option).
USERSPACE_MODES = ("seccomp", "ptrace")


@dataclass(frozen=True)
class SimOptions:
    """The ``sim`` section of a testbed file (configs/testbeds/sim.yaml)."""

    #: ``auto``/``built`` (scripts/build-uml.sh's kernel) or ``linux-RELEASE`` (one it
    #: installed); ``$CGA_SIM_KERNEL`` names any other kernel built with time travel.
    kernel: str = "auto"
    #: The guest's memory: its processes, the kernel's socket buffers and queues (the
    #: captures go straight to this machine's disk through hostfs).
    memory_mb: int = 2048
    #: The seed of every random choice in the guest (TCP sequence numbers, ports, SFQ's
    #: hash, DualPI2's marks, Python's hash); a campaign's repetition N runs with seed + N.
    seed: int = 1
    #: The guest's wall clock at boot (ISO 8601, UTC): packet times start there.
    start_utc: str = DEFAULT_START_UTC
    #: Wall-clock limit per simulated second (a guest that stops advancing its clock,
    #: e.g. a process spinning without system calls, is killed after this), plus a minute.
    wall_s_per_sim_s: float = 20.0
    #: How the kernel runs its guest's processes: ``seccomp`` (each process's system calls
    #: reach the kernel through a seccomp filter and a shared-memory stub: about 1.5x less
    #: host CPU per simulated second) or ``ptrace`` (traced one by one, as UML did before
    #: 6.17). The two give different packets (each deterministic), so a run records it.
    userspace: str = "seccomp"
    #: The host CPU the kernel and its stubs run on (:mod:`cganalysis.testbed.sim.cpu`):
    #: ``auto`` (the one with the fewest sim kernels), a CPU's number, or ``none``. Not
    #: part of the run's identity: it changes the host's cost, not the packets.
    cpu: CpuSetting = "auto"

    @property
    def start_ns(self) -> int:
        when = datetime.fromisoformat(self.start_utc.replace("Z", "+00:00"))
        return int(when.astimezone(UTC).timestamp()) * 1_000_000_000


def chosen_kernel(opts: SimOptions) -> Kernel:
    """The kernel ``$CGA_SIM_KERNEL`` or the testbed file names (``auto``: build-uml.sh's
    default), unchecked: its build facts (the .info) are read, nothing is run."""
    kernel_opt = "built" if opts.kernel == "auto" else opts.kernel
    try:
        return find_kernel(UmlOptions(kernel=kernel_opt), KERNEL_ENV, "sim.kernel")
    except TestbedError as e:
        raise TestbedError(f"sim testbed: {e}") from None


def find_sim_kernel(opts: SimOptions) -> Kernel:
    """The kernel, checked for time-travel support (its ``--help`` lists the option) and
    for booting on this host (``uml.boot``)."""
    from cganalysis.testbed.sim.probe import sim_boot_failure
    from cganalysis.testbed.uml.boot import FIX

    kernel = chosen_kernel(opts)
    try:
        text = subprocess.run(
            [str(kernel.path), "--help"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TestbedError(f"sim testbed: {kernel.path} does not run ({e})") from None
    if "time-travel=inf-cpu" not in text:
        raise TestbedError(
            f"sim testbed: {kernel.path} has no time-travel mode (CONFIG_UML_TIME_TRAVEL_SUPPORT); "
            "run `bash scripts/build-uml.sh`, whose kernel has it"
        )
    if opts.userspace == "seccomp" and "seccomp=" not in text:
        raise TestbedError(
            f"sim testbed: {kernel.path} has no seccomp userspace mode (UML before 6.17); "
            "run `bash scripts/build-uml.sh`, or set sim.userspace: ptrace in the testbed file"
        )
    why = sim_boot_failure(kernel, opts.userspace)
    if why is not None:
        named = f"${KERNEL_ENV}" if kernel.origin == "local" else f"sim.kernel {opts.kernel}"
        raise TestbedError(
            f"sim testbed: {named} ({kernel.path}) cannot boot on this host: {why}; "
            f"{FIX.format(key='sim.kernel')}"
        )
    return kernel


def find_simrng() -> Path:
    """``libcga_simrng.so``: ``$CGA_SIMRNG_LIB`` (a development build,
    target/release/libcga_simrng.so), else where scripts/install.sh puts it."""
    override = os.environ.get(SIMRNG_ENV)
    path = Path(override) if override else SIMRNG
    if not path.is_file():
        where = f"${SIMRNG_ENV} names {path}, which" if override else f"{path}"
        raise TestbedError(
            f"sim testbed: {where} is not there; `bash scripts/install.sh` builds native/simrng "
            "and installs it"
        )
    return path


def parse_options(data: Any, where: str) -> SimOptions:
    from cganalysis.testbed.spec.validate import Section

    sec = Section(data, where)
    sec.choice("backend", ("sim",))
    sim = sec.opt_sub("sim")
    sec.finish()
    if sim is None:
        return SimOptions()
    d = SimOptions()
    start = sim.string("start_utc", d.start_utc)
    try:
        datetime.fromisoformat(start.replace("Z", "+00:00"))
    except ValueError:
        raise sim.error(
            "start_utc", f"{start!r} is not a time (e.g. 2026-01-01T00:00:00Z)"
        ) from None
    opts = SimOptions(
        kernel=parse_kernel_name(sim, "kernel", KERNEL_NAMES, KNOWN, KERNEL_ENV) or "auto",
        memory_mb=sim.integer("memory_mb", d.memory_mb, minimum=256, maximum=65536),
        seed=sim.integer("seed", d.seed, minimum=0, maximum=2**63 - 1),
        start_utc=start,
        wall_s_per_sim_s=sim.number("wall_s_per_sim_s", d.wall_s_per_sim_s, minimum=1.0),
        userspace=sim.choice("userspace", USERSPACE_MODES, d.userspace),
        cpu=_cpu_setting(sim, d.cpu),
    )
    sim.finish()
    return opts


def _cpu_setting(sim: Section, default: CpuSetting) -> CpuSetting:
    value = sim.raw("cpu", default)
    if value == "auto":
        return "auto"
    if value == "none":
        return "none"
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise sim.error("cpu", f"{value!r} is not auto, none or a CPU's number (0, 1, ...)")
    return value


def load_options(path: Path | None) -> SimOptions:
    if path is None:
        return SimOptions()
    from cganalysis.io import read_yaml

    return parse_options(read_yaml(path), str(path))
