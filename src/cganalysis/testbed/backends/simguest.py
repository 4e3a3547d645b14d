"""The ``sim`` testbed's guest: the first process of a UML kernel on simulated time
(``python -m cganalysis.testbed.backends.simguest JOB``, started by :mod:`.simkernel`).

It mounts what the run's tools need (``/proc``, ``/sys``, and a private ``/run`` and
``/tmp`` so that nothing the guest makes lands in the host's), takes the environment the
host wrote into ``JOB/job.json``, calls the job's entry (``module:function``; the testbed
does not know what a run is, :mod:`cganalysis.experiment.insim` does), writes its outcome
to ``JOB/result.json`` and powers the kernel off. Progress lines go to the console, which
the host reads, marked with :data:`~.simkernel.PROGRESS_MARK`.
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
from pathlib import Path
from typing import Any

from cganalysis.testbed.backends.netns import NetnsTestbed
from cganalysis.testbed.backends.simkernel import PROGRESS_MARK

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


def _prepare() -> None:
    for argv in (
        ["mount", "-t", "proc", "proc", "/proc"],
        ["mount", "-t", "sysfs", "sys", "/sys"],
        ["mount", "-t", "tmpfs", "run", "/run"],
        ["mount", "-t", "tmpfs", "tmp", "/tmp"],
    ):
        subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
        os.environ.update(spec.get("env", {}))
        os.environ[GUEST_ENV] = json.dumps(spec.get("sim", {}))
        _prepare()
        argv = [sys.executable, "-m", "cganalysis.testbed.backends.simguest", "--job", str(ctl)]
        rc = subprocess.run(argv, check=False).returncode
        if not (ctl / "result.json").is_file():
            how = f"signal {-rc}" if rc < 0 else f"status {rc}"
            error = f"the run's process ended by {how}"
            result = {"ok": False, "kind": "testbed", "error": error}
            _write(ctl / "result.json", json.dumps(result))
    finally:
        _power_off()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
