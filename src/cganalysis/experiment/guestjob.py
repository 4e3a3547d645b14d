"""The guest's side of a vm run (:mod:`cganalysis.experiment.inguest` is the host's): the
run the host pickled, run by the ordinary runner on the guest's ``netns`` testbed, and
copied once complete into the staging folder the host shared for it (the only host
folder the guest may write; the host checks it and moves the run into place)."""

from __future__ import annotations

import pickle
import shutil
import tempfile
from pathlib import Path
from typing import Any

from cganalysis.errors import CganalysisError, ConfigError
from cganalysis.experiment import runner
from cganalysis.experiment.plan import RunOptions


def run_job(ctl: Path, job: dict[str, Any]) -> dict[str, Any]:
    """In the guest: the run the host pickled into ``ctl``, as ``{"ok": ...}``."""
    # Written by the host's own runner for this guest (run_in_guest): trusted input.
    with (ctl / job["pickle"]).open("rb") as fh:
        cfg, out, plain = pickle.load(fh)
    opts = RunOptions(**plain, progress=lambda m: print(m, flush=True))
    # The run is built on the guest's own /tmp (memory) and copied to the staging folder
    # once complete: captures written straight to the 9p share cost the guest's one vCPU
    # and 9p reads of a file being written can fail (ENODATA).
    local = Path(tempfile.mkdtemp(prefix="cga-vm-run-", dir="/tmp")) / out.name
    try:
        if job["mode"] == "experiment":
            runner.run_experiment(cfg, local, opts)
        else:
            runner.run_calibration(cfg, local, opts)
        share = Path(job["share"])
        partial = share / f".{out.name}.partial"  # the host takes only the renamed folder
        shutil.copytree(local, partial)
        partial.rename(share / out.name)
    except ConfigError as e:
        return {"ok": False, "kind": "config", "error": str(e)}
    except CganalysisError as e:
        return {"ok": False, "kind": "testbed", "error": str(e)}
    except KeyboardInterrupt as e:
        return {"ok": False, "kind": "interrupted", "error": f"interrupted ({e})"}
    finally:
        shutil.rmtree(local.parent, ignore_errors=True)
    return {"ok": True}
