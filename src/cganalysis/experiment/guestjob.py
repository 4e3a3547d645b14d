"""The guest's side of a run handed over to a guest of its own (:mod:`.handover`): the job
the host wrote, run by the ordinary runner on the guest's ``netns`` testbed.

- ``vm`` (:mod:`.inguest` is the host's side): the run is built in the guest's memory and
  copied once complete into the staging folder the host shared for it (the only host
  folder the guest may write; the host checks it and moves the run into place).
- ``sim`` (:mod:`.insim`): the run is written into the job folder, which the host renames
  into place.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from cganalysis.errors import CganalysisError, ConfigError
from cganalysis.experiment import insim, runner
from cganalysis.experiment.handover import GuestJob, GuestResult, read_job


def run(job: GuestJob, out: Path) -> GuestResult:
    """The run into ``out`` by the ordinary runner, its error as a result."""
    try:
        if job.mode == "experiment":
            runner.run_experiment(job.cfg, out, job.options)
        else:
            runner.run_calibration(job.cfg, out, job.options)
    except ConfigError as e:
        return {"ok": False, "kind": "config", "error": str(e)}
    except CganalysisError as e:
        return {"ok": False, "kind": "testbed", "error": str(e)}
    except KeyboardInterrupt as e:
        return {"ok": False, "kind": "interrupted", "error": f"interrupted ({e})"}
    return {"ok": True}


def run_vm_job(ctl: Path, job: dict[str, Any]) -> GuestResult:
    """In the vm guest: the job in ``ctl``, copied to the share once complete."""
    guest_job = read_job(ctl, lambda m: print(m, flush=True))
    out_name = str(job["out_name"])
    # Built on the guest's own /tmp (memory): captures written straight to the 9p share
    # cost the guest's one vCPU, and 9p reads of a file being written can fail (ENODATA).
    local = Path(tempfile.mkdtemp(prefix="cga-vm-run-", dir="/tmp")) / out_name
    try:
        result = run(guest_job, local)
        if result.get("ok"):
            share = Path(job["share"])
            partial = share / f".{out_name}.partial"  # the host takes only the renamed folder
            shutil.copytree(local, partial)
            partial.rename(share / out_name)
        return result
    finally:
        shutil.rmtree(local.parent, ignore_errors=True)


def run_sim_job(ctl: Path, job: dict[str, Any]) -> GuestResult:
    """In the sim kernel: the job in ``ctl``, written into its run folder there."""
    from cganalysis.testbed.sim.guest import say  # the guest's console printer

    return run(read_job(ctl, say), ctl / insim.RUN)
