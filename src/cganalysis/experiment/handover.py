"""The one hand-over of a run to a guest of its own (``vm``, ``sim``): what the host
writes, what the guest runs, what it answers.

The host's side (:mod:`.inguest` for vm, :mod:`.insim` for sim) boots its guest with a
:class:`GuestJob` pickled into the job folder (:func:`write_job`); the guest's side reads
it back (:func:`read_job`), runs the ordinary runner on the guest's ``netns`` testbed
(:mod:`.guestjob`) and answers a :class:`GuestResult`, which the host turns back into the
error a local run would have raised (:func:`raise_for`).
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, TypedDict

from cganalysis.errors import ConfigError
from cganalysis.experiment.config import RunConfig
from cganalysis.experiment.plan import Progress, RunOptions
from cganalysis.testbed.shared.hosts import TestbedError

Mode = Literal["experiment", "calibration"]
#: The job's file in the job folder the guest reads.
JOB_FILE = "job.pkl"


@dataclass(frozen=True)
class GuestJob:
    mode: Mode
    cfg: RunConfig
    #: The runner's options as the guest runs them (its own progress printer replaces
    #: ``progress``, which does not cross the boundary).
    options: RunOptions


class GuestResult(TypedDict, total=False):
    ok: bool
    #: ``config`` (a refusal of the run file), ``testbed`` or ``interrupted``.
    kind: str
    error: str


def write_job(ctl: Path, job: GuestJob) -> None:
    with (ctl / JOB_FILE).open("wb") as fh:
        pickle.dump(replace(job, options=replace(job.options, progress=print)), fh)


def read_job(ctl: Path, progress: Progress) -> GuestJob:
    """In the guest: the job the host wrote (its own runner wrote it for this guest:
    trusted input), with ``progress`` as the runner's printer."""
    with (ctl / JOB_FILE).open("rb") as fh:
        job = pickle.load(fh)
    if not isinstance(job, GuestJob):
        raise TypeError(f"{ctl / JOB_FILE}: not a guest job")
    return replace(job, options=replace(job.options, progress=progress))


def raise_for(result: Mapping[str, Any], guest: str, detail: str = "") -> None:
    """On the host: the guest's failure as the error a local run raises (a refused run
    file stays a ConfigError); ``detail`` is appended (e.g. the console's last lines)."""
    if result.get("ok"):
        return
    err = f"in the {guest} guest: {result.get('error')}{detail}"
    raise ConfigError(err) if result.get("kind") == "config" else TestbedError(err)
