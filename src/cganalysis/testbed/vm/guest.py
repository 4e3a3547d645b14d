"""The guest's side of the ``vm`` testbed (``python -m cganalysis.testbed.vm.guest CTL``).

Runs inside the VM that ``vm.Guest`` booted, as root on the guest's kernel, with the
control folder ``CTL`` shared writable with the host. It reads ``CTL/job.json``, says
``ready`` (with its kernel), then does the job:

- ``serve``: runs the commands the host drops into ``CTL/req/`` and answers in
  ``CTL/resp/`` (tests, ``testbed check``), until ``CTL/stop`` appears;
- ``experiment`` / ``calibration``: the function the job names as its ``entry``
  (``cganalysis.experiment.guestjob.run_vm_job``: the ordinary runner on the ``netns``
  testbed with the pickled run configuration); progress lines on stdout, the outcome in
  ``CTL/result.json``. The testbed only calls it: it does not know what a run is.

A watchdog ends the job when the host's heartbeat stops moving (the host process died):
SIGTERM to this process, so the runner tears its namespaces down and the guest powers off.
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from cganalysis.testbed.netns.testbed import NetnsTestbed
from cganalysis.testbed.shared.hosts import TIMEOUT_SCALE_ENV


class VmNetnsTestbed(NetnsTestbed):
    """The netns testbed, inside the guest: meta.json says vm, with the VM's facts."""

    kind = "vm"

    def describe(self) -> dict[str, Any]:
        vm = json.loads(os.environ.get("CGA_VM_GUEST") or "{}")
        vm["guest_kernel"] = platform.release()
        return {**super().describe(), "backend": "vm", "inner_backend": "netns", "vm": vm}


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _watchdog(ctl: Path, timeout_s: float, done: threading.Event) -> None:
    """SIGTERM to this process once the heartbeat has not changed for ``timeout_s``."""
    last, since = "", time.monotonic()
    while not done.wait(1.0):
        try:
            beat = (ctl / "heartbeat").read_text(encoding="utf-8")
        except OSError:
            beat = last
        if beat != last:
            last, since = beat, time.monotonic()
        elif time.monotonic() - since > timeout_s or (ctl / "stop").exists():
            print("vm guest: the host stopped (no heartbeat or stop file); ending", flush=True)
            os.kill(os.getpid(), signal.SIGTERM)
            return


def serve(ctl: Path, done: threading.Event) -> None:
    req, resp = ctl / "req", ctl / "resp"
    while not done.is_set() and not (ctl / "stop").exists():
        names = sorted(p.name for p in req.iterdir() if not p.name.startswith("."))
        if not names:
            time.sleep(0.01)
            continue
        for name in names:
            spec = json.loads((req / name).read_text(encoding="utf-8"))
            try:
                res = subprocess.run(
                    spec["argv"],
                    capture_output=True,
                    text=True,
                    timeout=spec.get("timeout_s", 60.0),
                    check=False,
                )
                out = {"returncode": res.returncode, "stdout": res.stdout, "stderr": res.stderr}
            except FileNotFoundError:
                out = {"returncode": 127, "stdout": "", "stderr": f"{spec['argv'][0]}: not found"}
            except subprocess.TimeoutExpired:
                out = {"returncode": 124, "stdout": "", "stderr": "timed out"}
            _write(resp / name, json.dumps(out))
            (req / name).unlink()


def run_job(ctl: Path, job: dict[str, Any]) -> dict[str, Any]:
    """The job the host handed over, run by the function it named (``module:function``):
    the testbed does not know what a run is (cganalysis.experiment.guestjob does)."""
    module, _, function = str(job["entry"]).partition(":")
    entry = getattr(importlib.import_module(module), function)
    result: dict[str, Any] = entry(ctl, job)
    return result


def main(argv: list[str]) -> int:
    ctl = Path(argv[1])
    job = json.loads((ctl / "job.json").read_text(encoding="utf-8"))
    os.environ.update(job.get("env", {}))
    os.environ["CGA_VM_GUEST"] = json.dumps(job.get("vm", {}))
    if job.get("vm", {}).get("accel") == "tcg":
        os.environ.setdefault(TIMEOUT_SCALE_ENV, "10")
    done = threading.Event()
    threading.Thread(
        target=_watchdog, args=(ctl, float(job["heartbeat_timeout_s"]), done), daemon=True
    ).start()
    _write(ctl / "ready", json.dumps({"kernel": platform.release(), "pid": os.getpid()}))
    try:
        if job["mode"] == "serve":
            # SIGTERM from the watchdog ends the loop (the default action would too).
            signal.signal(signal.SIGTERM, lambda *_: done.set())
            serve(ctl, done)
            return 0
        result = run_job(ctl, job)
        _write(ctl / "result.json", json.dumps(result))
        return 0 if result["ok"] else 1
    finally:
        done.set()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
