"""A real single-node SLURM cluster on localhost, for tests: Debian's slurm-wlm (slurmctld,
slurmd) and munge, started from a generated configuration in a scratch folder and torn
down afterwards, even on failure.

Without accounting (no slurmdbd) `sacct` has nothing to ask, as on a small lab cluster;
with it (`accounting=True`) a private MariaDB server and slurmdbd keep every job's record
(slurm_accounting). Everything the daemons write (state, spool, logs, the munge socket and
key, the database) is in the scratch folder; their ports are free ones, so a cluster
already running on the machine is not disturbed. Needs root (SlurmUser=root, and a mount
namespace for slurmd).

The compute node reads its configuration at the default path, /etc/slurm/slurm.conf, as
on a real cluster: Snakemake's jobstep plugin runs each job through `srun` with every
SLURM_* variable but the job's identity removed, SLURM_CONF among them
(snakemake-executor-plugin-slurm issue 164), so a job's `srun` finds the cluster only
there. slurmd runs in a private mount namespace where the scratch folder's configuration
is bind-mounted on /etc/slurm; the machine's /etc/slurm is never written. The submitting
side (sbatch, squeue, sinfo) reads it through SLURM_CONF, as a login node may.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from tests.integration.foreground_daemon import foreground_daemon, free_port
from tests.integration.slurm_accounting import accounting, slurm_conf_lines

#: The node's name in the generated configuration (and `slurmd -N`).
NODE = "localhost"
CLUSTER = "cgatest"
PARTITION = "debug"
#: slurmctld and slurmd start within a few seconds; a node still not idle after this is
#: a configuration error worth failing on.
START_TIMEOUT_S = 30


def node_line(min_memory_mb: int) -> str:
    """This machine as `slurmd -C` describes it, named localhost. RealMemory is raised to
    `min_memory_mb` where the machine has less, so that a profile's largest request (16 GB
    for `packets`) can be scheduled on a smaller CI machine; nothing enforces memory here
    (task/none, and slurmd is told to trust the configuration: config_overrides)."""
    described = subprocess.run(
        ["slurmd", "-C"], capture_output=True, text=True, check=True
    ).stdout.splitlines()[0]
    fields = dict(f.split("=", 1) for f in described.split())
    fields["RealMemory"] = str(max(int(fields["RealMemory"]), min_memory_mb))
    del fields["NodeName"]
    return " ".join(
        [f"NodeName={NODE} NodeAddr=127.0.0.1", *(f"{k}={v}" for k, v in fields.items())]
    )


def slurm_conf(folder: Path, munge_socket: Path, node: str, accounting: list[str]) -> str:
    """The cluster's slurm.conf; `accounting`: its accounting lines (none: no accounting)."""
    return "\n".join(
        [
            f"ClusterName={CLUSTER}",
            f"SlurmctldHost={NODE}",
            f"SlurmctldPort={free_port()}",
            f"SlurmdPort={free_port()}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={munge_socket}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SlurmdParameters=config_overrides",
            *(accounting or ["AccountingStorageType=accounting_storage/none"]),
            "JobAcctGatherType=jobacct_gather/none",
            "MpiDefault=none",
            "ReturnToService=2",
            # A job starts when submitted, not up to 3 s later (SLURM's default delay for
            # batch jobs, meant for clusters that take many submissions a second).
            "SchedulerParameters=batch_sched_delay=0",
            f"StateSaveLocation={folder / 'state'}",
            f"SlurmdSpoolDir={folder / 'spool'}",
            f"SlurmctldPidFile={folder / 'slurmctld.pid'}",
            f"SlurmdPidFile={folder / 'slurmd.pid'}",
            f"SlurmctldLogFile={folder / 'slurmctld.log'}",
            f"SlurmdLogFile={folder / 'slurmd.log'}",
            node,
            f"PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
    )


def _wait_for_idle_node(env: dict[str, str], daemons: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    state = ""
    while time.monotonic() < deadline:
        exited = [d.args for d in daemons if d.poll() is not None]
        assert not exited, f"SLURM daemon exited at start: {exited}"
        done = subprocess.run(
            ["sinfo", "--noheader", "--Node", "--format=%t"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        state = done.stdout.strip()
        if state == "idle":
            return
        time.sleep(0.5)
    raise AssertionError(f"node {NODE} not idle after {START_TIMEOUT_S} s: {state!r}")


def _cancel_jobs(env: dict[str, str]) -> None:
    """Jobs left by a failed test: cancelled before slurmd goes, so no job outlives it."""
    subprocess.run(["scancel", f"--partition={PARTITION}"], env=env, check=False)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        queue = subprocess.run(
            ["squeue", "--noheader"], capture_output=True, text=True, env=env, check=False
        )
        if queue.returncode != 0 or not queue.stdout.strip():
            return
        time.sleep(0.5)


@contextmanager
def single_node_cluster(
    min_memory_mb: int, *, accounting: bool = False
) -> Iterator[dict[str, str]]:
    """A running cluster, with slurmdbd and its database if `accounting`; yields the
    environment its client commands need (SLURM_CONF)."""
    # Not pytest's tmp_path: munged wants the socket's folder open to all (0755) and a
    # short path (a Unix socket's path is limited to 108 bytes).
    folder = Path(tempfile.mkdtemp(prefix="cga-slurm-"))
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, folder, ignore_errors=True)
        try:
            env = _start(stack, folder, min_memory_mb, accounting)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{_logs(folder)}") from None
        yield env


def _start(
    stack: ExitStack, folder: Path, min_memory_mb: int, with_accounting: bool
) -> dict[str, str]:
    folder.chmod(0o755)
    for name in ("state", "spool", "etc"):
        (folder / name).mkdir()
    key_folder = folder / "munge"
    key_folder.mkdir(mode=0o700)
    key = key_folder / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    munge_socket = folder / "munge.socket"
    dbd_port = free_port()
    conf = folder / "etc" / "slurm.conf"
    accounting_lines = slurm_conf_lines(dbd_port, munge_socket) if with_accounting else []
    conf.write_text(slurm_conf(folder, munge_socket, node_line(min_memory_mb), accounting_lines))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    munged = stack.enter_context(
        foreground_daemon(
            [
                "munged",
                "--foreground",
                f"--socket={munge_socket}",
                f"--key-file={key}",
                f"--pid-file={folder / 'munged.pid'}",
                f"--seed-file={folder / 'munged.seed'}",
                f"--log-file={folder / 'munged.log'}",
            ],
            env,
        )
    )
    daemons = [munged]
    if with_accounting:
        daemons += stack.enter_context(accounting(folder, munge_socket, dbd_port, CLUSTER, env))
    daemons.append(
        stack.enter_context(foreground_daemon(["slurmctld", "-D", "-i", "-f", str(conf)], env))
    )
    bind_and_run = f'mount --bind "$1" /etc/slurm && exec slurmd -D -N {NODE}'
    slurmd_argv = ["unshare", "--mount", "--propagation=private", "sh", "-c", bind_and_run]
    daemons.append(
        stack.enter_context(foreground_daemon([*slurmd_argv, "sh", str(folder / "etc")], env))
    )
    stack.callback(_cancel_jobs, env)
    _wait_for_idle_node(env, daemons)
    return env


def _logs(folder: Path) -> str:
    return "\n".join(
        f"--- {log.name}\n{log.read_text(errors='replace')[-2000:]}"
        for log in sorted(folder.glob("*.log"))
    )
