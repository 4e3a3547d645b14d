"""The ``sim`` testbed's guest: the first process of a UML kernel on simulated time
(``python -m cganalysis.testbed.sim.guest JOB``, started by :mod:`cganalysis.testbed.sim.kernel`).

It mounts what the run's tools need (``/proc``, ``/sys``, the job folder writable over the
read-only root, and a private ``/run``, ``/tmp`` and ``/dev/shm`` so that nothing the guest
makes lands in the host's, with the host paths the run needs under them bound back: its
interpreter, its packages, its programs), takes the environment the
host wrote into ``JOB/job.json``, calls the job's entry (``module:function``; the testbed
does not know what a run is, :mod:`cganalysis.experiment.insim` does), writes its outcome
to ``JOB/result.json`` and powers the kernel off. Progress lines go to the console, which
the host reads, marked with :data:`~cganalysis.testbed.sim.kernel.PROGRESS_MARK`.
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from contextlib import suppress
from pathlib import Path
from typing import Any

from cganalysis.testbed.netns.testbed import NetnsTestbed
from cganalysis.testbed.sim.kernel import ERROR_MARK, PROGRESS_MARK
from cganalysis.testbed.uml.agent import mount, private_tmpfs

#: Set in the guest: its facts as JSON (seed, clock, kernel); the planner's "am I inside".
GUEST_ENV = "CGA_SIM_GUEST"


def in_guest() -> bool:
    return GUEST_ENV in os.environ


class SimNetnsTestbed(NetnsTestbed):
    """The netns testbed, inside the sim guest: meta.json says sim, with its clock, seed
    and kernel (the host adds the wall time)."""

    kind = "sim"

    def describe(self) -> dict[str, Any]:
        sim = json.loads(os.environ.get(GUEST_ENV) or "{}")
        sim["guest_kernel"] = platform.release()
        return {**super().describe(), "backend": "sim", "inner_backend": "netns", "sim": sim}


def say(line: str) -> None:
    print(f"{PROGRESS_MARK}{line}", flush=True)


def host_paths(env: dict[str, str]) -> list[str]:
    """The host paths the run reads: this interpreter and its packages, and every absolute
    path in the job's environment (PATH, the CG source's programs)."""
    paths = [sys.prefix, sys.exec_prefix, sys.base_prefix, str(Path(sys.executable).parent)]
    paths += [p for p in sys.path if p]
    for value in env.values():
        paths += [part for part in value.split(":") if part.startswith("/")]
    return paths


def _prepare(ctl: Path, keep: list[str]) -> None:
    """The root (this machine's files) is read-only: the job folder is mounted writable,
    and /run, /tmp and /dev/shm are the guest's own."""
    mount("proc", "/proc", "proc")
    mount("sys", "/sys", "sysfs")
    mount("hostfs", str(ctl), "hostfs", str(ctl))
    mount("shm", "/dev/shm", "tmpfs")
    for point in ("/run", "/tmp"):
        private_tmpfs(point, keep)
    Path("/run/netns").mkdir(parents=True, exist_ok=True)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=False)


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _power_off() -> None:
    os.sync()
    Path("/proc/sysrq-trigger").write_text("o")
    # init must not exit (the kernel would panic): the power-off ends it.
    while True:
        time.sleep(3600)


def job(ctl: Path) -> int:
    """The job itself (a child of init: if the kernel kills it, out of memory say, init is
    still there to tell the host). Writes ``CTL/result.json``."""
    result: dict[str, Any]
    try:
        spec = json.loads((ctl / "job.json").read_text(encoding="utf-8"))
        module, _, function = str(spec["entry"]).partition(":")
        entry = getattr(importlib.import_module(module), function)
        t0 = time.monotonic()
        result = entry(ctl, spec)
        # The job's simulated length (set-up, calibration, traffic, teardown).
        result["sim_s"] = round(time.monotonic() - t0, 3)
    except BaseException as e:
        result = {"ok": False, "kind": "testbed", "error": f"{type(e).__name__}: {e}"}
        traceback.print_exc()
    _write(ctl / "result.json", json.dumps(result))
    return 0


def main(argv: list[str]) -> int:
    if argv[1] == "--job":
        return job(Path(argv[2]))
    ctl = Path(argv[1])
    try:
        spec = json.loads((ctl / "job.json").read_text(encoding="utf-8"))
        env = dict(spec.get("env", {}))
        os.environ.update(env)
        os.environ[GUEST_ENV] = json.dumps(spec.get("sim", {}))
        _prepare(ctl, host_paths(env))
        argv = [sys.executable, "-m", "cganalysis.testbed.sim.guest", "--job", str(ctl)]
        rc = subprocess.run(argv, check=False).returncode
        if not (ctl / "result.json").is_file():
            how = f"signal {-rc}" if rc < 0 else f"status {rc}"
            _fail(ctl, f"the run's process ended by {how}")
    except BaseException as e:
        # Said before the power-off, which no exception outlives: the host shows it.
        traceback.print_exc()
        _fail(ctl, f"the guest's init failed: {type(e).__name__}: {e}")
    finally:
        _power_off()
    return 0


def _fail(ctl: Path, error: str) -> None:
    """The guest's own error: in result.json, and on the console (where the host reads
    it if the job folder cannot be written)."""
    print(f"{ERROR_MARK}{error}", flush=True)
    with suppress(OSError):
        _write(ctl / "result.json", json.dumps({"ok": False, "kind": "testbed", "error": error}))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
