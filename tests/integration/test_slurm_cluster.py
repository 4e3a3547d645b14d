"""profiles/slurm against a real single-node SLURM cluster (Debian's slurm-wlm), without
and with accounting: every analysis job goes through `sbatch`, the run completes, and its
outputs are identical, file by file, to a local run of the same configuration.

- Without accounting (no slurmdbd) the profile's `slurm-status-command: squeue` is what
  lets the run complete: `sacct`, the plugin's default, fails on such a cluster.
- With accounting (slurmdbd on a private MariaDB server, the cluster, an account and the
  user registered with sacctmgr, associations enforced) the run uses `sacct`, what the
  plugin picks where accounting works, and `sacct` lists every job the run submitted as
  completed under the registered account.

The three runs (local, and one on each cluster) go side by side in one module fixture: a
cluster run waits mostly on SLURM and on the plugin's status checks, so together they take
little more than one. The raw runs are the committed example campaign (data/raw/example),
processed because it is in data/raw (the profile's all_raw_campaigns), as after a `dvc
pull`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, need_root, need_tool
from tests.integration.slurm_accounting import ACCOUNT
from tests.integration.slurm_cluster import single_node_cluster

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]

PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
#: The folders the workflow writes its products to (logs/ holds timings, not products).
PRODUCTS = ("data/processed", "results")
#: The plugin checks the jobs' status `init` seconds after a submission, then each time 10 s
#: later than the previous interval (init, 2 init + 10, 3 init + 30 s...), starting over at
#: `init` once a job is seen done; Snakemake's exit waits one `init` more. The profile keeps
#: the plugin's 40 s (a real campaign's jobs take minutes). This campaign's jobs take 9-14 s
#: from submission on a 2-vCPU host, quiet or moderately loaded (25-35 s under load 7): a
#: first check after 3 s sees them done at 16 s (under load at 39 s), where 5 s sees them
#: at 20 s (45 s) and 12 s at 12 s or, for a 13-s job, 34 s. The command that asks is still
#: the profile's (or, with accounting, the plugin's default).
STATUS_CHECK_ARGS = ("--slurm-init-seconds-before-status-checks", "3")
RUN_TIMEOUT_S = 300
LOCAL_CONFIGS = ("--configfiles", "configs/config.yaml", "profiles/slurm/analysis.yaml")
CLUSTER_TOOLS = ("snakemake", "slurmctld", "slurmd", "munged", "sbatch", "squeue", "unshare")
ACCOUNTING_TOOLS = ("slurmdbd", "sacct", "sacctmgr", "mariadbd", "mariadb-install-db")
LOCAL, WITHOUT_ACCOUNTING, WITH_ACCOUNTING = "local", "without accounting", "with accounting"
#: Every job of the cluster's (fresh) database, one line each (sacct's default is today's).
SACCT_JOBS = ("sacct", "--allocations", "--noheader", "--parsable2", "--starttime=now-1hours")


def _workspace(root: Path) -> Path:
    """The project's workflow over the committed example campaign, as a fresh clone."""
    root.mkdir()
    for name in ("Snakefile", "workflow", "configs", "profiles"):
        (root / name).symlink_to(REPO / name)
    (root / "data" / "raw").mkdir(parents=True)
    (root / "data" / "raw" / "example").symlink_to(REPO / "data" / "raw" / "example")
    (root / "data" / "traces").symlink_to(REPO / "data" / "traces")
    return root


def _products(work: Path) -> dict[str, str]:
    return {
        str(p.relative_to(work)): hashlib.sha256(p.read_bytes()).hexdigest()
        for folder in PRODUCTS
        for p in sorted((work / folder).rglob("*"))
        if p.is_file()
    }


def _largest_memory_request_mb() -> int:
    profile = yaml.safe_load(PROFILE.read_text())
    requests = [profile["default-resources"]["mem_mb"]]
    requests += [r["mem_mb"] for r in profile["set-resources"].values() if "mem_mb" in r]
    return max(int(r) for r in requests)


@dataclass(frozen=True)
class Run:
    returncode: int
    #: Snakemake's output, stdout and stderr together.
    log: str
    products: dict[str, str]
    #: `sacct` listing the cluster's jobs after the run (None for the local run).
    sacct: subprocess.CompletedProcess[str] | None

    def submitted_job_ids(self) -> list[str]:
        return re.findall(r"^Job \d+ has been submitted with SLURM jobid (\d+)", self.log, re.M)


class _Snakemake:
    """A `snakemake` run started in `work`, its output in a file (the runs go side by side:
    a pipe nobody reads would stall one)."""

    def __init__(self, stack: ExitStack, work: Path, env: Mapping[str, str], *args: str):
        self.work = work
        self.log = work.parent / f"{work.name}.log"
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                ["snakemake", *args],
                cwd=work,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**env, "PYTHONWARNINGS": "ignore"},
            )
        stack.callback(self._kill)

    def _kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def finished(self, sacct_env: Mapping[str, str] | None) -> Run:
        try:
            self.process.wait(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._kill()
        sacct = None
        if sacct_env is not None:
            listing = [*SACCT_JOBS, "--format=JobID,State,Account"]
            sacct = subprocess.run(
                listing, env=sacct_env, capture_output=True, text=True, check=False
            )
        return Run(self.process.returncode, self.log.read_text(), _products(self.work), sacct)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """The local run (`--cores 2`) and `snakemake --profile profiles/slurm` on a cluster
    without accounting and, where slurmdbd and MariaDB are installed, on one with it."""
    need_tool(*CLUSTER_TOOLS)
    need_root()
    root = tmp_path_factory.mktemp("slurm")
    memory_mb = _largest_memory_request_mb()
    profile = ("--profile", "profiles/slurm", *STATUS_CHECK_ARGS)
    with ExitStack() as stack:
        local = _Snakemake(
            stack, _workspace(root / LOCAL), os.environ, "--cores", "2", *LOCAL_CONFIGS
        )
        plain_env = stack.enter_context(single_node_cluster(memory_mb))
        plain = _Snakemake(stack, _workspace(root / "plain"), plain_env, *profile)
        finished = {}
        if all(shutil.which(tool) for tool in ACCOUNTING_TOOLS):
            accounting_env = stack.enter_context(single_node_cluster(memory_mb, accounting=True))
            # sacct, as the plugin chooses where it works (the profile's squeue overridden).
            sacct_args = ("--slurm-status-command", "sacct")
            accounted = _Snakemake(
                stack, _workspace(root / "accounted"), accounting_env, *profile, *sacct_args
            )
            finished[WITH_ACCOUNTING] = accounted.finished(accounting_env)
        finished[WITHOUT_ACCOUNTING] = plain.finished(plain_env)
        finished[LOCAL] = local.finished(None)
    return finished


def _assert_ran_like_the_local_run(run: Run, local: Run) -> None:
    assert local.returncode == 0, local.log[-3000:]
    assert any(p.startswith("results/tables/") for p in local.products), sorted(local.products)
    assert run.returncode == 0, run.log[-4000:]
    # packets, metrics, the run's figure and the campaign's table: each an sbatch job.
    assert len(run.submitted_job_ids()) >= 4, run.log[-4000:]
    assert run.products == local.products


def test_the_slurm_profile_runs_the_analysis_on_a_cluster_without_accounting(
    runs: dict[str, Run],
) -> None:
    run = runs[WITHOUT_ACCOUNTING]
    # The case the profile's squeue is for: no slurmdbd, sacct has nothing to ask.
    assert run.sacct is not None and run.sacct.returncode != 0, run.sacct
    _assert_ran_like_the_local_run(run, runs[LOCAL])


def test_the_slurm_profile_runs_the_analysis_on_a_cluster_with_accounting(
    runs: dict[str, Run],
) -> None:
    need_tool(*ACCOUNTING_TOOLS)
    run = runs[WITH_ACCOUNTING]
    _assert_ran_like_the_local_run(run, runs[LOCAL])
    assert run.sacct is not None and run.sacct.returncode == 0, run.sacct
    expected = [f"{job}|COMPLETED|{ACCOUNT}" for job in run.submitted_job_ids()]
    assert sorted(run.sacct.stdout.split()) == sorted(expected)
