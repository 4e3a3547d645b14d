"""profiles/slurm against a real single-node SLURM cluster (Debian's slurm-wlm, no
accounting daemon): every analysis job goes through `sbatch`, the run completes with the
profile's `slurm-status-command: squeue` although `sacct` fails on this cluster, and its
outputs are identical, file by file, to a local run of the same configuration.

The raw runs are the committed example campaign (data/raw/example), processed because it
is in data/raw (the profile's all_raw_campaigns), as after a `dvc pull`.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, need_root, need_tool
from tests.integration.slurm_cluster import single_node_cluster

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]

PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
#: The folders the workflow writes its products to (logs/ holds timings, not products).
PRODUCTS = ("data/processed", "results")
#: The plugin's first status check is 40 s after a submission, the next ones 10 s further
#: apart each time: a 15-s job is seen done after 40 s. Here the first check is after 5 s
#: (then 20, 45 s), which sees such a job after 20 s; the command that asks (squeue) is
#: still the profile's.
STATUS_CHECK_ARGS = ("--slurm-init-seconds-before-status-checks", "5")
RUN_TIMEOUT_S = 300


def _workspace(root: Path) -> Path:
    """The project's workflow over the committed example campaign, as a fresh clone."""
    root.mkdir()
    for name in ("Snakefile", "workflow", "configs", "profiles"):
        (root / name).symlink_to(REPO / name)
    (root / "data" / "raw").mkdir(parents=True)
    (root / "data" / "raw" / "example").symlink_to(REPO / "data" / "raw" / "example")
    (root / "data" / "traces").symlink_to(REPO / "data" / "traces")
    return root


def _snakemake(work: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["snakemake", *args],
        cwd=work,
        capture_output=True,
        text=True,
        env={**env, "PYTHONWARNINGS": "ignore"},
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


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


def test_the_slurm_profile_runs_the_analysis_on_a_cluster_without_accounting(
    tmp_path: Path,
) -> None:
    need_tool("snakemake", "slurmctld", "slurmd", "munged", "sbatch", "squeue", "unshare")
    need_root()
    local = _workspace(tmp_path / "local")
    configs = ("configs/config.yaml", "profiles/slurm/analysis.yaml")
    done = _snakemake(local, dict(os.environ), "--cores", "2", "--configfiles", *configs)
    assert done.returncode == 0, done.stderr[-3000:]
    expected = _products(local)
    assert any(p.startswith("results/tables/") for p in expected), sorted(expected)

    cluster = _workspace(tmp_path / "cluster")
    with single_node_cluster(_largest_memory_request_mb()) as env:
        # The case the profile's squeue is for: no slurmdbd, sacct has nothing to ask.
        sacct = subprocess.run(["sacct"], env=env, capture_output=True, check=False)
        assert sacct.returncode != 0, sacct.stdout
        done = _snakemake(cluster, env, "--profile", "profiles/slurm", *STATUS_CHECK_ARGS)
        out = done.stdout + done.stderr
        assert done.returncode == 0, out[-4000:]
        # packets, metrics, the run's figure and the campaign's table: each an sbatch job.
        submitted = re.findall(r"^Job \d+ has been submitted with SLURM jobid", out, re.M)
        assert len(submitted) >= 4, out[-4000:]
    assert _products(cluster) == expected
