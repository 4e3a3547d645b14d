"""One experiment, or one calibration, end to end: the two lifecycles.

The output folder's own lock for the whole run (:func:`.rundir.claimed`: a second process
that planned the same run stops at once, or finds it finished), checks (:mod:`.plan`),
then under the testbed's lock: testbed up, the run (:mod:`.session`) or the calibration,
teardown, the file that describes it, and the run directory renamed into place.
Everything that can be refused is refused before anything is touched; from the moment
the testbed comes up, teardown runs whatever happens: success, error, SIGINT or SIGTERM
(:mod:`cganalysis.interrupts`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cganalysis.errors import ConfigError
from cganalysis.experiment import inguest, insim, rundir
from cganalysis.experiment.build import make_testbed, network_up
from cganalysis.experiment.config import RunConfig
from cganalysis.experiment.handover import Mode
from cganalysis.experiment.meta import build_meta
from cganalysis.experiment.plan import Plan, RunOptions, check, guest_host_side
from cganalysis.experiment.session import Session
from cganalysis.interrupts import signals_ignored, signals_raise
from cganalysis.io import write_json
from cganalysis.testbed.dataplane import calibration
from cganalysis.testbed.measure import provenance
from cganalysis.testbed.shared.lock import testbed_lock
from cganalysis.testbed.shared.topology import Testbed


@contextmanager
def _run_dir(cfg: RunConfig, out: Path, what: str, opts: RunOptions) -> Iterator[Path]:
    """A directory beside ``out`` for the block, under the testbed's lock (one run at a
    time per testbed, waiting if need be): renamed to ``out`` when the block succeeds,
    discarded (or kept with --keep-failed) when it does not."""
    tmp: Path | None = None
    ok = False
    try:
        with signals_raise(), testbed_lock(cfg.testbed.lock_name(), what, opts.progress):
            rundir.check_new(out)  # again: the wait for the testbed may have been long
            tmp = rundir.temp_dir(out)
            yield tmp
            rundir.commit(tmp, out)
            ok = True
    finally:
        if not ok and tmp is not None:
            with signals_ignored():
                kept = rundir.discard(tmp, opts.keep_failed)
            if kept:
                opts.progress(f"kept the failed run's files in {kept}")


@contextmanager
def _testbed(cfg: RunConfig, p: Plan, workdir: Path, opts: RunOptions) -> Iterator[Testbed]:
    """The testbed for the block, torn down after it whatever happened (a second Ctrl-C
    must not leave half a testbed behind)."""
    bed = make_testbed(cfg, p, workdir)
    try:
        yield bed
    finally:
        with signals_ignored():
            bed.down()
            opts.progress("testbed down")


HandOver = Callable[[Mode, RunConfig, Path, RunOptions], dict[str, Any]]
#: What hands a run to its own guest on this host, per testbed type whose run happens in a
#: guest (its ``guest_builds``): a VM, a kernel on simulated time.
HAND_OVER: dict[str, HandOver] = {"vm": inguest.run_in_guest, "sim": insim.run_in_sim}


def run_experiment(cfg: RunConfig, out: Path, opts: RunOptions) -> dict[str, Any]:
    """Runs one experiment into ``out`` (created; never overwritten). Returns meta.json."""
    with rundir.claimed(out, opts.run_id):
        return _experiment(cfg, out, opts)


def _experiment(cfg: RunConfig, out: Path, opts: RunOptions) -> dict[str, Any]:
    if guest_host_side(cfg):
        return HAND_OVER[cfg.testbed.kind]("experiment", cfg, out, opts)
    p = check(cfg, opts)
    opts.progress(
        f"run {opts.run_id}: bottleneck {p.resolution.bottleneck.name} ({p.resolution.reason}), "
        f"delay {p.resolution.delay}, {p.schedule.duration_s:g} s"
    )
    with _run_dir(cfg, out, opts.run_id, opts) as tmp:
        session = Session(p, opts, tmp)
        with _testbed(cfg, p, tmp, opts) as bed:
            record = session.execute(bed)
        meta = build_meta(cfg, p, opts, session, record, tmp)
        write_json(meta, tmp / "meta.json")
    for flag in meta["flags"]:
        opts.progress(f"FLAG: {flag}")
    opts.progress(f"wrote {out}")
    return meta


def run_calibration(cfg: RunConfig, out: Path, opts: RunOptions) -> dict[str, Any]:
    """Calibrates ``cfg``'s bottleneck alone into directory ``out`` (calibration.json and
    its captures); experiments then take it with ``--calibration out/calibration.json``."""
    if cfg.bottleneck.forward.trace is not None:
        raise ConfigError(
            f"{cfg.source}: bottleneck.trace: a trace-driven link has no constant capacity to "
            "calibrate; its runs skip calibration and the metrics use the trace"
        )
    with rundir.claimed(out, f"calibration of {opts.run_id}"):
        return _calibration(cfg, out, opts)


def _calibration(cfg: RunConfig, out: Path, opts: RunOptions) -> dict[str, Any]:
    if guest_host_side(cfg):
        return HAND_OVER[cfg.testbed.kind]("calibration", cfg, out, opts)
    p = check(cfg, opts)
    with _run_dir(cfg, out, f"calibration of {opts.run_id}", opts) as tmp:
        with _testbed(cfg, p, tmp, opts) as bed:
            topo, _, bn = network_up(bed, p, tmp)
            calib, bn = calibration.calibrate(
                topo, bn, cfg.capture, cfg.calibration, tmp, opts.progress
            )
            calib.update(
                bottleneck=cfg.bottleneck.to_dict(),
                propagation=cfg.propagation.to_dict(),
                backend=p.resolution.bottleneck.name,
                created_utc=datetime.now(UTC).isoformat(),
                qdisc=bn.dump(),
                testbed=bed.describe(),
                controller=provenance.controller(),
            )
        write_json(calib, tmp / "calibration.json")
    opts.progress(f"wrote {out / 'calibration.json'}")
    return calib
