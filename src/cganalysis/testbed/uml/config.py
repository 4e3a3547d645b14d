"""What the ``uml`` testbed needs and where it is: its options and the UML kernel.

Two kernels can be the router: the one ``scripts/build-uml.sh`` builds from Debian's
kernel source (every qdisc built in, DualPI2 included; the default when installed), and
Debian's ``user-mode-linux`` package (6.1, modules for htb, sfq, netem, fq_codel, cake,
...; no DualPI2). A testbed file only names one of them (``kernelpath``: files are
shared); ``$CGA_UML_KERNEL`` names any other. Every lookup fails with one line naming what
is missing and the script or package that provides it. Whether the kernel boots on this
host's CPU is ``uml.boot``'s question.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cganalysis.testbed.shared.hosts import TestbedError
from cganalysis.testbed.shared.kernelpath import local_kernel, parse_kernel_name

#: Where scripts/build-uml.sh installs its kernel (``linux`` links to the newest).
BUILT = Path("/usr/local/lib/cganalysis/uml")
#: Debian's user-mode-linux package.
DEBIAN = Path("/usr/bin/linux.uml")
KERNELS = ("auto", "built", "debian")
#: What a testbed file may say: one of KERNELS, or a kernel build-uml.sh installed in
#: BUILT by its file name (``linux-7.3.4``).
KERNEL_NAMES = re.compile(r"auto|built|debian|linux-[0-9A-Za-z][0-9A-Za-z._+-]*")
KNOWN = f"auto, built, debian, or linux-RELEASE installed in {BUILT}"
#: Local configuration: the path of any other UML kernel (checked: kernelpath).
KERNEL_ENV = "CGA_UML_KERNEL"


@dataclass(frozen=True)
class UmlOptions:
    """The ``uml`` section of a testbed file (configs/testbeds/uml.yaml)."""

    #: ``auto`` (the built kernel if installed and bootable here, else Debian's),
    #: ``built``, ``debian``, or ``linux-RELEASE`` (one build-uml.sh installed).
    kernel: str = "auto"
    memory_mb: int = 256
    boot_timeout_s: float = 60.0
    #: SCHED_FIFO priority of the kernel's process (1-99), or 0 for the ordinary scheduler.
    #: A router has a CPU of its own; this one shares the host's with the traffic
    #: generators and the capture, and an HTB whose watchdog wakes late loses the tokens
    #: its 1600-byte buckets cannot hold: 25 % of the link under load (docs/testbed.md).
    realtime_priority: int = 20


@dataclass(frozen=True)
class Kernel:
    path: Path
    #: "built" (scripts/build-uml.sh), "debian" (user-mode-linux) or "local" (the
    #: environment variable's).
    origin: str
    #: build-uml.sh's facts (source package, version, configuration hash), if any.
    info: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "origin": self.origin, **self.info}


def _info(binary: Path) -> dict[str, str]:
    info = binary.resolve().with_name(binary.resolve().name + ".info")
    out: dict[str, str] = {}
    if info.is_file():
        for line in info.read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(" ")
            out[key] = value
    return out


def find_kernel(opts: UmlOptions, env: str = KERNEL_ENV, key: str = "uml.kernel") -> Kernel:
    """The kernel ``$env`` names, else the one the testbed file names (``auto``: the
    built kernel if installed, else Debian's)."""
    local = local_kernel(env)
    if local is not None:
        return Kernel(local, "local", _info(local))
    return candidates(opts, key, env)[0]


def candidates(opts: UmlOptions, key: str = "uml.kernel", env: str = KERNEL_ENV) -> list[Kernel]:
    """The installed kernels the name allows, best first (``auto``: both, built first);
    raises naming what installs one if there is none."""
    if not KERNEL_NAMES.fullmatch(opts.kernel):
        raise TestbedError(
            f"{key} {opts.kernel}: not a kernel name ({KNOWN}); a kernel's path is local "
            f"configuration: ${env}"
        )
    built = BUILT / "linux"
    if opts.kernel.startswith("linux-"):
        named = BUILT / opts.kernel
        if named not in installed():
            raise TestbedError(
                f"{key} {opts.kernel}: {named} not found (installed: "
                f"{', '.join(sorted(p.name for p in installed())) or 'none'}); "
                "`bash scripts/build-uml.sh` installs the newest"
            )
        return [Kernel(named, "built", _info(named))]
    found: list[Kernel] = []
    if opts.kernel in ("auto", "built") and built.is_file():
        found.append(Kernel(built.resolve(), "built", _info(built)))
    if opts.kernel == "built" and not found:
        raise TestbedError(
            f"{key} built: {built} not found; run `bash scripts/build-uml.sh` (as root, "
            "~9 min: a UML kernel with DualPI2 from Debian's kernel source)"
        )
    if opts.kernel in ("auto", "debian"):
        debian = DEBIAN if DEBIAN.is_file() else None
        on_path = shutil.which("linux.uml")
        if debian is None and on_path:
            debian = Path(on_path)
        if debian is not None:
            found.append(Kernel(debian, "debian", {}))
    if not found:
        raise TestbedError(
            "uml testbed: no user-mode Linux kernel: install Debian's user-mode-linux "
            "(`bash scripts/install.sh` does), or build one with DualPI2: "
            "`bash scripts/build-uml.sh`"
        )
    return found


def installed() -> list[Path]:
    """The kernels build-uml.sh installed (``linux-RELEASE``, without their .info)."""
    if not BUILT.is_dir():
        return []
    return [
        p
        for p in BUILT.glob("linux-*")
        if p.is_file() and not p.name.endswith((".info", ".partial"))
    ]


def parse_options(data: Any, where: str) -> UmlOptions:
    from cganalysis.testbed.spec.validate import Section

    sec = Section(data, where)
    sec.choice("backend", ("uml",))
    uml = sec.opt_sub("uml")
    sec.finish()
    if uml is None:
        return UmlOptions()
    kernel = parse_kernel_name(uml, "kernel", KERNEL_NAMES, KNOWN, KERNEL_ENV) or "auto"
    opts = UmlOptions(
        kernel=kernel,
        memory_mb=uml.integer("memory_mb", 256, minimum=64, maximum=65536),
        boot_timeout_s=uml.number("boot_timeout_s", 60.0, minimum=2.0),
        realtime_priority=uml.integer("realtime_priority", 20, minimum=0, maximum=99),
    )
    uml.finish()
    return opts


def load_options(path: Path | None) -> UmlOptions:
    if path is None:
        return UmlOptions()
    from cganalysis.io import read_yaml

    return parse_options(read_yaml(path), str(path))
