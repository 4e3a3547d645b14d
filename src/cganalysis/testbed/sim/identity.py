"""What a ``sim`` run's packets depend on besides its run file and seed, recorded in
meta.json (``testbed.sim.identity``) and compared before a run is made again
(``cganalysis dataset reproduce``).

On simulated time a run is a function of its inputs, and those are more than the run file:

- the kernel binary: its code, and its version string, which the kernel mixes into its
  random pool at boot (``scripts/build-uml.sh`` pins the build time and host for that);
- the programs the guest runs (iperf3, tcpdump, tc, cga-cg, the interpreter) and the
  Python packages: a different build takes other code paths, and UML mixes how each guest
  process ran into its random pool when the process ends;
- the CPU features the guest can see: its processes execute CPUID natively, so glibc,
  numpy and polars pick their routines from the host's CPU;
- the code of this project (the git commit, and whether the tree had changes);
- the paths of the interpreter and of the package: the interpreter's is on the kernel's
  command line (mixed into its random pool) and both are in every guest Python's search
  path, so the same files under another path make other packets (measured: the same venv
  through a symbolic link gave other captures). The guest therefore sees them at fixed
  paths (:mod:`.simcode`), recorded here; where they are on the host is recorded beside
  them (``host_paths``) as information. A run recorded with host paths (made before the
  fixed ones) is made again with its checkout shown at its recorded path
  (``cganalysis dataset reproduce``).

Each is recorded as a value to compare (a SHA-256, a version, a flag list) so that a
difference between two machines is named before anything runs.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cganalysis.io import sha256_file
from cganalysis.testbed.sim import code as simcode
from cganalysis.testbed.sim.code import GuestCode

CPUINFO = Path("/proc/cpuinfo")
#: The programs a sim run's guest starts, looked up on the guest's PATH.
GUEST_PROGRAMS = ("iperf3", "tcpdump", "tc", "cga-cg", "ethtool")


def cpu() -> dict[str, Any]:
    """The host CPU as the guest's processes see it: the model and its feature flags."""
    text = CPUINFO.read_text(encoding="utf-8", errors="replace") if CPUINFO.is_file() else ""
    model = re.search(r"^model name\s*:\s*(.*)$", text, re.MULTILINE)
    flags = re.search(r"^flags\s*:\s*(.*)$", text, re.MULTILINE)
    words = sorted(set(flags.group(1).split())) if flags else []
    return {
        "model": model.group(1).strip() if model else "",
        "flags_sha256": hashlib.sha256(" ".join(words).encode()).hexdigest(),
        "flags": words,
    }


def programs(path: str, builds: Mapping[str, str] | None = None) -> dict[str, dict[str, str]]:
    """Each of :data:`GUEST_PROGRAMS` found on ``path`` (the guest's PATH), or the file
    ``builds`` names for it (a build the guest is told to run instead, ``$CGA_CG_BIN``):
    where it is and its SHA-256 (a version string can hide a rebuild)."""
    out: dict[str, dict[str, str]] = {}
    for name in GUEST_PROGRAMS:
        found = (builds or {}).get(name) or shutil.which(name, path=path)
        if found is None:
            continue
        real = Path(found).resolve()
        out[name] = {"path": found, "sha256": sha256_file(real)}
    return out


def identity(
    kernel_path: Path,
    simrng: Path,
    code: GuestCode,
    guest_path: str,
    builds: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Everything above but the code's commit (meta.json's ``controller.git``). The paths
    compared are the guest's (:mod:`cganalysis.testbed.sim.code`'s fixed ones); the host's
    are information. ``builds``: :func:`programs`'."""
    return {
        "kernel_sha256": sha256_file(kernel_path.resolve()),
        "simrng_sha256": sha256_file(simrng.resolve()),
        "interpreter": {
            "path": simcode.PYTHON,
            "sha256": sha256_file(code.interpreter),
            "version": _version(code.interpreter),
        },
        "programs": programs(guest_path, builds),
        "cpu": cpu(),
        "package_path": f"{simcode.SOURCE}/cganalysis",
        "host_paths": code.host_paths(),
    }


def _version(interpreter: Path) -> str:
    try:
        out = subprocess.run(
            [str(interpreter), "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (out.stdout or out.stderr).strip()


def differences(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """One line per input that differs between a recorded run's identity and this host's;
    an empty list: the same inputs (the packets should be the same, bit for bit)."""
    lines = [
        f"sim.{key}: {recorded.get(key)!r} recorded, {current.get(key)!r} here"
        for key in ("userspace", "memory_mb", "start_utc", "seed")
        if recorded.get(key) != current.get(key)
    ]
    rec_id = recorded.get("identity") or {}
    cur_id = current.get("identity") or {}
    if not rec_id:
        return ["the run records no identity (made before identities were recorded)", *lines]
    for key, what in (("kernel_sha256", "the kernel binary"), ("simrng_sha256", "libcga_simrng")):
        if rec_id.get(key) != cur_id.get(key):
            lines.append(
                f"{what}: {_short(rec_id.get(key))} recorded, {_short(cur_id.get(key))} here"
            )
    rec_py, cur_py = rec_id.get("interpreter") or {}, cur_id.get("interpreter") or {}
    if rec_py.get("sha256") != cur_py.get("sha256"):
        lines.append(
            f"the interpreter: {rec_py.get('version')} ({_short(rec_py.get('sha256'))}) recorded, "
            f"{cur_py.get('version')} ({_short(cur_py.get('sha256'))}) here"
        )
    for what, a, b in (
        ("the interpreter's path", rec_py.get("path"), cur_py.get("path")),
        ("the package's path", rec_id.get("package_path"), cur_id.get("package_path")),
    ):
        if a is not None and a != b and not str(a).startswith("/"):
            # Runs made before the fixed paths recorded the interpreter as it was started
            # (`python`): where its venv was is unknown, so the difference cannot be told.
            lines.append(
                f"{what}: recorded as {a!r}, not a path (the run's venv folder is unknown); "
                f"{b} here: the run is the same only where that is the venv that made it"
            )
        elif a is not None and a != b:
            lines.append(f"{what}: {a} recorded, {b} here (paths reach the guest's randomness)")
    rec_p, cur_p = rec_id.get("programs") or {}, cur_id.get("programs") or {}
    for name in sorted(set(rec_p) | set(cur_p)):
        a, b = (rec_p.get(name) or {}).get("sha256"), (cur_p.get(name) or {}).get("sha256")
        if a != b:
            lines.append(f"program {name}: {_short(a)} recorded, {_short(b)} here")
    rec_cpu, cur_cpu = rec_id.get("cpu") or {}, cur_id.get("cpu") or {}
    if rec_cpu.get("flags_sha256") != cur_cpu.get("flags_sha256"):
        only_rec = sorted(set(rec_cpu.get("flags", [])) - set(cur_cpu.get("flags", [])))
        only_cur = sorted(set(cur_cpu.get("flags", [])) - set(rec_cpu.get("flags", [])))
        lines.append(
            f"CPU features: {rec_cpu.get('model')!r} recorded, {cur_cpu.get('model')!r} here; "
            f"only there: {' '.join(only_rec[:12]) or '-'}; "
            f"only here: {' '.join(only_cur[:12]) or '-'}"
        )
    return lines


def _short(value: object) -> str:
    return str(value)[:12] if value else "none"
