"""What the ``vm`` testbed needs and where it is: options, the guest kernel, QEMU, vng.

``scripts/install-vm.sh`` installs all of it; every lookup here fails with one line naming
what is missing and that script. A testbed file only names the guest kernel by its version
(``kernelpath``: files are shared); ``$CGA_VM_KERNEL`` gives a vmlinuz path.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cganalysis.testbed.shared.hosts import TestbedError
from cganalysis.testbed.shared.kernelpath import local_kernel, parse_kernel_name

if TYPE_CHECKING:
    from cganalysis.testbed.spec.validate import Section

MODULES = Path("/usr/lib/modules")
MARKER = ".cganalysis-vm"
INSTALL = "run `bash scripts/install-vm.sh` (as root)"
#: Set in the guest (JSON: the VM's facts for meta.json); its presence means "inside".
GUEST_ENV = "CGA_VM_GUEST"
#: The guest stops its job when the heartbeat has not moved for this long (guest time).
HEARTBEAT_TIMEOUT_S = 30.0
ACCELS = ("auto", "kvm", "tcg")
#: What a testbed file may say: a kernel version, a folder name under MODULES.
KERNEL_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z._+~-]*")
#: Local configuration: the path of any other vmlinuz (checked: kernelpath).
KERNEL_ENV = "CGA_VM_KERNEL"


def in_guest() -> bool:
    return GUEST_ENV in os.environ


@dataclass(frozen=True)
class VmOptions:
    """The ``vm`` section of a testbed file (configs/testbeds/vm.yaml)."""

    memory_mb: int = 2048
    #: One vCPU: two under TCG sometimes panic at boot on this machine kind.
    cpus: int = 1
    accel: str = "auto"
    boot_timeout_s: float = 180.0
    #: A kernel version under /usr/lib/modules (None: the newest that
    #: scripts/install-vm.sh installed); $CGA_VM_KERNEL names a vmlinuz elsewhere.
    kernel: str | None = None


def parse_options(data: Any, where: str) -> VmOptions:
    from cganalysis.testbed.spec.validate import Section

    sec = Section(data, where)
    sec.choice("backend", ("vm",))
    vm = sec.opt_sub("vm")
    sec.finish()
    return VmOptions() if vm is None else parse_vm_section(vm)


def parse_vm_section(vm: Section) -> VmOptions:
    """A ``vm`` mapping (the vm testbed's, or an ssh testbed's VM router's)."""
    known = f"a kernel version under {MODULES}"
    opts = VmOptions(
        memory_mb=vm.integer("memory_mb", 2048, minimum=512, maximum=65536),
        cpus=vm.integer("cpus", 1, minimum=1, maximum=64),
        accel=vm.choice("accel", ACCELS, "auto"),
        boot_timeout_s=vm.number("boot_timeout_s", 180.0, minimum=5.0),
        kernel=parse_kernel_name(vm, "kernel", KERNEL_VERSION, known, KERNEL_ENV),
    )
    vm.finish()
    return opts


def load_options(path: Path | None) -> VmOptions:
    if path is None:
        return VmOptions()
    from cganalysis.io import read_yaml

    return parse_options(read_yaml(path), str(path))


def find_kernel(opts: VmOptions) -> tuple[str, Path]:
    """(version, vmlinuz) of the guest kernel: ``$CGA_VM_KERNEL``'s, else the version the
    testbed file names, else the newest installed; raises naming what to install."""
    local = local_kernel(KERNEL_ENV)
    if local is not None:
        return local.parent.name, local
    if opts.kernel:
        versions = [opts.kernel]
    else:
        versions = sorted(
            (m.parent.name for m in MODULES.glob(f"*/{MARKER}")),
            key=lambda v: [int(x) if x.isdigit() else x for x in v.replace("+", ".").split(".")],
        )
    if not versions:
        raise TestbedError(
            f"vm testbed: no guest kernel ({MODULES}/*/{MARKER} not found); {INSTALL}: it "
            "fetches Debian's trixie-backports kernel"
        )
    vmlinuz = MODULES / versions[-1] / "vmlinuz"
    if not vmlinuz.is_file():
        raise TestbedError(f"vm testbed: kernel image {vmlinuz} not found; {INSTALL}")
    return versions[-1], vmlinuz


def find_tools() -> tuple[str, str]:
    """(vng, qemu-system-x86_64) paths; raises naming the package that provides each."""
    qemu = shutil.which("qemu-system-x86_64")
    if qemu is None:
        raise TestbedError(
            f"vm testbed: qemu-system-x86_64 not found; {INSTALL} (installs Debian's "
            "qemu-system-x86)"
        )
    if shutil.which("busybox") is None:
        raise TestbedError(
            f"vm testbed: busybox not found (virtme-ng builds the guest's initramfs with it); "
            f"{INSTALL} (installs Debian's busybox-static)"
        )
    # The project's own environment first: install-vm.sh puts virtme-ng there.
    here = Path(sys.executable).parent / "vng"
    vng = str(here) if here.is_file() else shutil.which("vng")
    if vng is None:
        raise TestbedError(
            f"vm testbed: virtme-ng's vng not found next to {sys.executable} nor on the PATH; "
            f"{INSTALL} (installs virtme-ng with that Python's pip)"
        )
    return vng, qemu
