"""A whole run inside the ``vm`` testbed's guest: the host side hands it over, the guest
side runs it.

``runner.run_experiment`` / ``run_calibration`` come here for ``testbed: vm`` (outside the
guest): :func:`run_in_guest` boots the guest (:class:`cganalysis.testbed.backends.vm.Guest`)
and names :func:`cganalysis.experiment.guestjob.run_job` as the job's entry, which runs the
very same runner functions on the guest's ``netns`` testbed and copies the run directory
into a fresh staging folder, the only host folder the guest may write (vmshare.py); once
the guest is gone the host checks what it left there and renames the run into place, so
a vm run directory is an ordinary one; its meta.json says
``testbed.backend: vm`` with the VM's facts (KVM or TCG, guest kernel, QEMU). The host
holds the ``vm`` testbed lock for the whole run.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import fields
from pathlib import Path
from typing import Any

from cganalysis.errors import ConfigError
from cganalysis.experiment import rundir
from cganalysis.experiment.config import RunConfig
from cganalysis.interrupts import signals_ignored, signals_raise
from cganalysis.testbed.backends.hosts import TestbedError
from cganalysis.testbed.backends.vm import Guest, load_options
from cganalysis.testbed.backends.vmshare import new_share, remove_share, take_run

#: What the guest calls for the job (cganalysis.testbed.backends.vmguest.run_job): a name,
#: not an import, since the guest's side runs the runner, which comes here.
ENTRY = "cganalysis.experiment.guestjob:run_job"


def run_in_guest(mode: str, cfg: RunConfig, out: Path, opts: Any) -> dict[str, Any]:
    """``mode``: experiment or calibration; ``opts``: the runner's RunOptions. Returns
    meta.json (or calibration.json)."""
    out = out.resolve()
    rundir.check_new(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    vm_opts = load_options(cfg.testbed.path)
    plain = {f.name: getattr(opts, f.name) for f in fields(opts) if f.name != "progress"}
    what = opts.run_id if mode == "experiment" else f"calibration of {opts.run_id}"
    from cganalysis.testbed.backends.lock import testbed_lock

    with signals_raise(), testbed_lock(cfg.testbed.lock_name(), what, opts.progress):
        share = new_share(out)
        try:
            job = {"mode": mode, "pickle": "job.pkl", "entry": ENTRY, "share": str(share)}
            guest = Guest(job, vm_opts, [share], opts.progress)
            try:
                with (guest.ctl / "job.pkl").open("wb") as fh:
                    pickle.dump((cfg, out, plain), fh)
                guest.start()
                opts.progress(
                    f"vm: guest {guest.info['guest'].get('kernel', guest.version)} up in "
                    f"{guest.info['boot_s']:g} s ({guest.info['accel']})"
                )
                result = guest.wait_job()
            finally:
                with signals_ignored():
                    guest.stop()
            if not result.get("ok"):
                err = f"in the vm guest: {result.get('error')}"
                raise ConfigError(err) if result.get("kind") == "config" else TestbedError(err)
            # The guest is gone: what it left cannot change while it is checked and moved.
            rundir.commit(take_run(share, out.name), out)
        finally:
            remove_share(share)
    name = "meta.json" if mode == "experiment" else "calibration.json"
    data: dict[str, Any] = json.loads((out / name).read_text(encoding="utf-8"))
    return data
