"""What the ``uml`` testbed needs and where it is: its options and the UML kernel.

Two kernels can be the router: the one ``scripts/build-uml.sh`` builds from Debian's
kernel source (every qdisc built in, DualPI2 included; the default when installed), and
Debian's ``user-mode-linux`` package (6.1, modules for htb, sfq, netem, fq_codel, cake,
...; no DualPI2). Every lookup fails with one line naming what is missing and the script
or package that provides it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cganalysis.testbed.backends.hosts import TestbedError

#: Where scripts/build-uml.sh installs its kernel (``linux`` links to the newest).
BUILT = Path("/usr/local/lib/cganalysis/uml")
#: Debian's user-mode-linux package.
DEBIAN = Path("/usr/bin/linux.uml")
KERNELS = ("auto", "built", "debian")


@dataclass(frozen=True)
class UmlOptions:
    """The ``uml`` section of a testbed file (configs/testbeds/uml.yaml)."""

    #: ``auto`` (the built kernel if installed, else Debian's), ``built``, ``debian``, or
    #: the path of a UML kernel binary.
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
    #: "built" (scripts/build-uml.sh), "debian" (user-mode-linux) or "path".
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


def find_kernel(opts: UmlOptions) -> Kernel:
    built = BUILT / "linux"
    if opts.kernel in ("auto", "built") and built.is_file():
        return Kernel(built.resolve(), "built", _info(built))
    if opts.kernel == "built":
        raise TestbedError(
            f"uml.kernel built: {built} not found; run `bash scripts/build-uml.sh` (as root, "
            "~9 min: a UML kernel with DualPI2 from Debian's kernel source)"
        )
    if opts.kernel in ("auto", "debian"):
        debian = DEBIAN if DEBIAN.is_file() else None
        found = shutil.which("linux.uml")
        if debian is None and found:
            debian = Path(found)
        if debian is not None:
            return Kernel(debian, "debian", {})
        raise TestbedError(
            "uml testbed: no user-mode Linux kernel: install Debian's user-mode-linux "
            "(`bash scripts/install.sh` does), or build one with DualPI2: "
            "`bash scripts/build-uml.sh`"
        )
    path = Path(opts.kernel)
    if not path.is_file():
        raise TestbedError(f"uml.kernel: {path} not found (a UML kernel binary, built, debian)")
    return Kernel(path, "path", _info(path))


def parse_options(data: Any, where: str) -> UmlOptions:
    from cganalysis.testbed.spec.validate import SAFE_PATH, Section

    sec = Section(data, where)
    sec.choice("backend", ("uml",))
    uml = sec.opt_sub("uml")
    sec.finish()
    if uml is None:
        return UmlOptions()
    kernel = uml.opt_string("kernel", pattern=SAFE_PATH) or "auto"
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
