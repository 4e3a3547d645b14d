"""A whole run on the ``sim`` testbed: inside one user-mode Linux kernel on simulated time.

``runner.run_experiment`` / ``run_calibration`` come here for ``testbed: sim`` (outside
the kernel): :func:`run_in_sim` writes a job folder beside the run directory, boots the
kernel on it (:func:`cganalysis.testbed.sim.kernel.run_guest`), and the guest calls
:func:`run_job`, which runs the very same runner on the guest's ``netns`` testbed (its
namespaces, the kernel's own qdiscs, ``cga-cg``, iperf3 and both captures all inside the
kernel) into the job folder. The run directory is then renamed into place: an ordinary
one, whose meta.json says ``testbed.backend: sim`` with the clock, the seed and the wall
time it took.

The guest sees a canonical job: run id ``run``, no campaign, the run file named
``run.yaml``, the run directory at one fixed path. Names reach the guest's random pool
(:mod:`cganalysis.testbed.sim.kernel`), so two runs of one run file under different
names would otherwise draw different port numbers and sequence numbers; the host writes
the real names into meta.json afterwards. The seed is the testbed file's ``sim.seed``
plus the repetition number: repetitions of a campaign are different draws, a run file
run twice is the same run.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from cganalysis.cg.binary import BINARY_ENV, BINARY_NAME
from cganalysis.errors import ConfigError
from cganalysis.experiment import rundir
from cganalysis.experiment.config import RunConfig
from cganalysis.experiment.handover import (
    GuestJob,
    Mode,
    raise_for,
    write_job,
)
from cganalysis.experiment.plan import RunOptions
from cganalysis.experiment.sources import SOURCES
from cganalysis.interrupts import signals_raise
from cganalysis.io import write_json
from cganalysis.testbed import ccaname
from cganalysis.testbed.measure.provenance import git_state
from cganalysis.testbed.shared.hosts import TestbedError
from cganalysis.testbed.sim import code as simcode
from cganalysis.testbed.sim import user as simuser
from cganalysis.testbed.sim.config import SimOptions, chosen_kernel, load_options
from cganalysis.testbed.sim.kernel import GUEST_JOB, console_tail, run_guest
from cganalysis.testbed.spec.config import Direction
from cganalysis.testbed.uml.agent import KERNEL_TOOLS

#: What the guest calls for the job (a name: the guest's side imports the runner, which
#: imports this module).
ENTRY = "cganalysis.experiment.guestjob:run_sim_job"
#: The run directory's name inside the job folder.
RUN = "run"


def guest_env(cfg: RunConfig) -> dict[str, str]:
    """PATH for the guest: the kernel tools (a tc that knows DualPI2), the guest's
    interpreter's folder (simcode: a fixed path), then the system's; and the CG source's
    programs as this machine finds them (a user's build on their PATH is not on the
    guest's)."""
    path = [KERNEL_TOOLS, str(Path(simcode.PYTHON).parent)]
    path += ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
    return {
        "PATH": ":".join(path),
        "CGANALYSIS_PROGRESS": "0",
        "LANG": "C.UTF-8",
        "HOME": "/root",
        **SOURCES[cfg.cg.source].program_env(),
    }


def guest_builds(env: dict[str, str]) -> dict[str, str]:
    """The programs the guest runs from a file of their own (``$CGA_CG_BIN``, a build), not
    from its PATH: the run's identity records those files."""
    return {BINARY_NAME: env[BINARY_ENV]} if env.get(BINARY_ENV) else {}


def run_in_sim(mode: Mode, cfg: RunConfig, out: Path, opts: RunOptions) -> dict[str, Any]:
    """Returns meta.json (or calibration.json)."""
    out = out.absolute()
    sim = load_options(cfg.testbed.path)
    _refuse_missing_cca(cfg, sim)
    rundir.check_new(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    seed = sim.seed + (opts.repetition or 0)
    # SIGINT / SIGTERM unwind (the kernel is killed, the job folder removed) instead of
    # ending this process on the spot and leaving the folder behind.
    with signals_raise():
        ctl = Path(tempfile.mkdtemp(prefix=f".{out.name}.sim-", dir=out.parent))
        return _run(mode, cfg, out, opts, ctl, seed, sim)


def _run(
    mode: Mode,
    cfg: RunConfig,
    out: Path,
    opts: RunOptions,
    ctl: Path,
    seed: int,
    sim: SimOptions,
) -> dict[str, Any]:
    try:
        guest_opts = replace(opts, run_id=RUN, campaign=None, repetition=None)
        if opts.calibration_file is not None:
            shutil.copyfile(opts.calibration_file, ctl / "calibration.json")
            guest_opts = replace(guest_opts, calibration_file=Path(GUEST_JOB) / "calibration.json")
        write_job(ctl, GuestJob(mode, replace(staged(cfg, ctl), source="run.yaml"), guest_opts))
        facts = {"seed": seed, "start_utc": sim.start_utc, "clock": "time-travel=inf-cpu"}
        env = guest_env(cfg)
        job = {"entry": ENTRY, "env": env, "sim": facts}
        (ctl / "job.json").write_text(json.dumps(job), encoding="utf-8")
        schedule = cfg.schedule.scaled(opts.time_scale).fit(opts.max_duration_s)
        # The guest's own span: the schedule, calibration and set-up (a generous bound).
        sim_s = schedule.duration_s + 60.0
        opts.progress(f"sim: booting a kernel on simulated time (seed {seed})")
        facts = run_guest(ctl, sim, seed, sim_s, opts.progress, env["PATH"], guest_builds(env))
        simuser.take_back(ctl, simuser.host_user())
        result_file = ctl / "result.json"
        if not result_file.is_file():
            tail = console_tail(ctl / "console.log")
            raise TestbedError(f"sim testbed: the guest ended without a result ({tail})")
        result = json.loads(result_file.read_text(encoding="utf-8"))
        crashed = str(result.get("error", "")).startswith("the run's process ended")
        console = f" (console: {console_tail(ctl / 'console.log')})" if crashed else ""
        raise_for(result, "sim", console)
        if result.get("sim_s"):
            facts["sim_s"] = result["sim_s"]
            facts["wall_s_per_sim_s"] = round(facts["wall_s"] / result["sim_s"], 3)
            facts["host_cpu_s_per_sim_s"] = round(facts["host_cpu_s"] / result["sim_s"], 3)
        name = "meta.json" if mode == "experiment" else "calibration.json"
        data: dict[str, Any] = json.loads((ctl / RUN / name).read_text(encoding="utf-8"))
        # The code's commit, from here: the guest sees the checkout owned by another user
        # (its user namespace's overflow user), and git refuses such a folder.
        data.setdefault("controller", {})["git"] = git_state()
        data = _named(data, cfg, opts, facts) if mode == "experiment" else _facts(data, facts)
        rundir.unseal(ctl / RUN)  # the guest's runner committed it read-only
        write_json(data, ctl / RUN / name)
        rundir.commit(ctl / RUN, out)  # sealed again; never over a run made meanwhile
        opts.progress(
            f"sim: {facts.get('sim_s', '?')} simulated s in {facts['wall_s']:g} s of wall time"
        )
        return data
    finally:
        shutil.rmtree(ctl, ignore_errors=True)


def _refuse_missing_cca(cfg: RunConfig, sim: SimOptions) -> None:
    """competitor.cca refused on this host, before the kernel boots, where the kernel's
    build recorded its congestion controls and the cca is not among them (``bbr3`` on a
    mainline kernel); the guest's own plan checks a kernel that recorded none."""
    kernel = chosen_kernel(sim)
    label = f"the sim kernel {kernel.path.name} ({kernel.path})"
    why = ccaname.recorded_refusal(cfg.source, cfg.competitor.cca, label, kernel.info)
    if why is not None:
        raise ConfigError(why)


def staged(cfg: RunConfig, ctl: Path) -> RunConfig:
    """``cfg`` as the guest gets it: its testbed file and traces copied into the job folder
    and named where the guest sees them. A host path in the job reaches the guest's
    processes, which UML mixes into its random pool: the same run file from another folder
    would make other packets."""
    bn = cfg.bottleneck
    testbed = cfg.testbed
    if testbed.path is not None:
        (ctl / "testbed").mkdir()
        shutil.copyfile(testbed.path, ctl / "testbed" / testbed.path.name)
        testbed = replace(testbed, path=Path(GUEST_JOB) / "testbed" / testbed.path.name)
    forward = _staged_trace(bn.forward, ctl, "forward")
    reverse = None if bn.reverse is None else _staged_trace(bn.reverse, ctl, "reverse")
    return replace(cfg, testbed=testbed, bottleneck=replace(bn, forward=forward, reverse=reverse))


def _staged_trace(direction: Direction, ctl: Path, name: str) -> Direction:
    if direction.trace is None:
        return direction
    (ctl / "traces").mkdir(exist_ok=True)
    shutil.copyfile(direction.trace, ctl / "traces" / name)
    return replace(direction, trace=f"{GUEST_JOB}/traces/{name}")


def _facts(data: dict[str, Any], facts: dict[str, Any]) -> dict[str, Any]:
    bed = data.setdefault("testbed", {})
    bed["sim"] = {**bed.get("sim", {}), **facts}
    return data


def _named(
    meta: dict[str, Any], cfg: RunConfig, opts: RunOptions, facts: dict[str, Any]
) -> dict[str, Any]:
    """meta.json with the run's real names (the guest ran the canonical job)."""
    meta["run_id"] = opts.run_id
    for key, value in (("campaign", opts.campaign), ("repetition", opts.repetition)):
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
    meta["config"]["source"] = cfg.source
    # The host's names of what the guest got staged (its testbed file, its traces).
    meta["config"]["testbed"] = cfg.to_dict()["testbed"]
    meta["config"]["bottleneck"] = cfg.bottleneck.to_dict()
    meta["controller"]["argv"] = sys.argv
    return _facts(meta, facts)
