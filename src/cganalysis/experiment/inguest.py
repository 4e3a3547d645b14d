"""A whole run inside the ``vm`` testbed's guest: the host side hands it over, the guest
side runs it.

``runner.run_experiment`` / ``run_calibration`` come here for ``testbed: vm`` (outside the
guest): :func:`run_in_guest` boots the guest (:class:`cganalysis.testbed.vm.testbed.Guest`)
and names :func:`cganalysis.experiment.guestjob.run_vm_job` as the job's entry, which runs the
very same runner functions on the guest's ``netns`` testbed and copies the run directory
into a fresh staging folder, the only host folder the guest may write (vm/share.py); once
the guest is gone the host checks what it left there and renames the run into place, so
a vm run directory is an ordinary one; its meta.json says
``testbed.backend: vm`` with the VM's facts (KVM or TCG, guest kernel, QEMU). The host
holds the ``vm`` testbed lock for the whole run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cganalysis.experiment import rundir
from cganalysis.experiment.config import RunConfig
from cganalysis.experiment.handover import GuestJob, Mode, raise_for, write_job
from cganalysis.experiment.plan import RunOptions
from cganalysis.interrupts import signals_ignored, signals_raise
from cganalysis.testbed.vm.share import new_share, remove_share, take_run
from cganalysis.testbed.vm.testbed import Guest, load_options

#: What the guest calls for the job (cganalysis.testbed.vm.guest.run_job): a name,
#: not an import, since the guest's side runs the runner, which comes here.
ENTRY = "cganalysis.experiment.guestjob:run_vm_job"


def run_in_guest(mode: Mode, cfg: RunConfig, out: Path, opts: RunOptions) -> dict[str, Any]:
    """Returns meta.json (or calibration.json)."""
    out = out.resolve()
    rundir.check_new(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    vm_opts = load_options(cfg.testbed.path)
    what = opts.run_id if mode == "experiment" else f"calibration of {opts.run_id}"
    from cganalysis.testbed.shared.lock import testbed_lock

    with signals_raise(), testbed_lock(cfg.testbed.lock_name(), what, opts.progress):
        share = new_share(out)
        try:
            job = {"mode": mode, "entry": ENTRY, "share": str(share), "out_name": out.name}
            guest = Guest(job, vm_opts, [share], opts.progress)
            try:
                write_job(guest.ctl, GuestJob(mode, cfg, opts))
                guest.start()
                opts.progress(
                    f"vm: guest {guest.info['guest'].get('kernel', guest.version)} up in "
                    f"{guest.info['boot_s']:g} s ({guest.info['accel']})"
                )
                result = guest.wait_job()
            finally:
                with signals_ignored():
                    guest.stop()
            raise_for(result, "vm")
            # The guest is gone: what it left cannot change while it is checked and moved.
            rundir.commit(take_run(share, out.name), out)
        finally:
            remove_share(share)
    name = "meta.json" if mode == "experiment" else "calibration.json"
    data: dict[str, Any] = json.loads((out / name).read_text(encoding="utf-8"))
    return data
