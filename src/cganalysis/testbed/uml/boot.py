"""Whether a UML kernel boots on this host, decided by booting it once.

UML keeps a process's floating-point registers in a buffer whose size was fixed when the
kernel was built and hands it to the host with ptrace. Where the CPU's extended state
(XSAVE) is larger, as on Intel Xeons with AMX, the host refuses (EFAULT) and UML 6.1
(Debian 12's user-mode-linux) panics as its first process starts::

    userspace - ptrace set fp regs failed, errno = 14
    Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b

while the kernel ``scripts/build-uml.sh`` builds (7.x) sizes the buffer from the host and
boots. That is not guessed from the CPU's flags: the candidate kernel is booted once with
the router's agent (about a second), a failed boot's console says why (:func:`diagnose`),
and the verdict is cached per kernel binary and CPU (:data:`CACHE`). ``auto`` takes the
first candidate that boots; a kernel named explicitly that cannot boot is refused in one
line before anything runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from cganalysis.testbed.shared.hosts import TestbedError
from cganalysis.testbed.uml.config import (
    KERNEL_ENV,
    Kernel,
    UmlOptions,
    candidates,
    find_kernel,
    load_options,
)
from cganalysis.testbed.uml.console import CPUINFO, cpu_flags, diagnose
from cganalysis.testbed.uml.host import KernelStoppedError, UmlHost, UmlKernel

#: Verdicts: {"<kernel sha256>/<cpu key>": {"boots": bool, "reason": str, ...}}.
CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "cganalysis"
    / ("uml-boot.json")
)
FIX = "run `bash scripts/build-uml.sh` and set {key}: auto (or built)"


def _cpu_key() -> str:
    """This host's CPU as the verdict depends on it: its model, its flags, the host kernel
    (which sizes the extended state it hands ptrace)."""
    text = CPUINFO.read_text(encoding="utf-8", errors="replace") if CPUINFO.is_file() else ""
    model = re.search(r"^model name\s*:(.*)$", text, re.MULTILINE)
    parts = [model.group(1).strip() if model else "", *cpu_flags(), os.uname().release]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _kernel_key(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def _read_cache() -> dict[str, dict[str, object]]:
    try:
        data = json.loads(CACHE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _store(key: str, kernel: Kernel, reason: str | None) -> None:
    data = _read_cache()
    data[key] = {
        "boots": reason is None,
        "reason": reason or "",
        "path": str(kernel.path),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    try:
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        tmp = CACHE.with_name(f".{CACHE.name}.{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        tmp.replace(CACHE)
    except OSError:
        pass  # an unwritable cache only costs the next run the same boot


def boot_failure(
    kernel: Kernel, probe: Callable[[Kernel], str | None] | None = None, mode: str = "uml"
) -> str | None:
    """Why ``kernel`` cannot boot on this host, None if it boots (booted once per kernel
    binary, CPU and ``mode``). ``probe`` boots it and returns the console of a failed boot,
    None for a good one (default: the uml router's agent). A boot that timed out, or failed
    for no known reason, raises: it is not a verdict to keep."""
    key = f"{_kernel_key(kernel.path)}/{_cpu_key()}" + ("" if mode == "uml" else f"/{mode}")
    cached = _read_cache().get(key)
    if isinstance(cached, dict) and isinstance(cached.get("boots"), bool):
        return None if cached["boots"] else str(cached.get("reason") or "it did not boot")
    console = (probe or _agent_boot)(kernel)
    reason = None if console is None else diagnose(console)
    if console is not None and reason is None:
        raise TestbedError(f"{kernel.path} did not boot, for no known reason: {console[-300:]}")
    _store(key, kernel, reason)
    return reason


def _agent_boot(kernel: Kernel) -> str | None:
    try:
        with UmlKernel(UmlOptions(realtime_priority=0), kernel=kernel):
            pass
    except KernelStoppedError as e:
        if diagnose(e.console) is None:
            raise
        return e.console
    return None


def usable_kernel(opts: UmlOptions, env: str = KERNEL_ENV, key: str = "uml.kernel") -> Kernel:
    """The kernel to boot: ``$env``'s, else the first the name allows that boots here;
    raises one line naming the kernel, why it cannot boot and what to do."""
    local = bool(os.environ.get(env))
    kernels = [find_kernel(opts, env, key)] if local else candidates(opts, key, env)
    first: tuple[Kernel, str] | None = None
    for kernel in kernels:
        why = boot_failure(kernel)
        if why is None:
            return kernel
        first = first or (kernel, why)
    assert first is not None
    kernel, why = first
    named = f"${env} ({kernel.path})" if local else f"{key} {opts.kernel} ({kernel.path})"
    fix = f"unset ${env}, {FIX.format(key=key)}" if local else FIX.format(key=key)
    raise TestbedError(f"{named} cannot boot on this host: {why}; {fix}")


def verdicts() -> dict[str, str]:
    """Each installed UML kernel and whether it boots here (``cganalysis testbed probe``)."""
    try:
        kernels = candidates(UmlOptions(kernel="auto"))
    except TestbedError as e:
        return {"-": str(e)}
    out: dict[str, str] = {}
    for kernel in kernels:
        try:
            why = boot_failure(kernel)
        except TestbedError as e:
            why = str(e)
        out[f"{kernel.origin} {kernel.path}"] = "boots" if why is None else f"cannot boot: {why}"
    return out


@contextmanager
def probing_uml(testbed_file: Path | None) -> Iterator[UmlHost]:
    """A UML kernel of the testbed's kind that boots here, booted without interfaces, to
    probe: which qdiscs it accepts decides the run's data plane before anything is built
    (~1-3 s)."""
    opts = load_options(testbed_file)
    with UmlKernel(opts, kernel=usable_kernel(opts)) as kernel:
        yield UmlHost(f"uml router ({kernel.kernel.path})", kernel, Path(kernel.ctl))
