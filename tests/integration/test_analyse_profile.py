"""After `dvc pull`: `snakemake --profile profiles/analyse` analyses every campaign in
data/raw/ (none named in the configuration) and runs no experiment, and the default job
never plans an experiment whose raw run is already there (docs/datasets.md, "Analysing
what was pulled"). On a copy of the layout with the committed real run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from tests.conftest import REPO, need_tool

PULLED = "lab-campaign"  # a campaign no configuration names


def _workspace(tmp_path: Path, dualpoint_dir: Path) -> Path:
    for name in ("Snakefile", "workflow", "configs", "profiles"):
        (tmp_path / name).symlink_to(REPO / name)
    (tmp_path / "data" / "raw").mkdir(parents=True)
    return tmp_path


def _pull(work: Path, dualpoint_dir: Path, campaign: str, run_id: str) -> None:
    """A run as `dvc pull` leaves it: real files, read-only."""
    run = work / "data" / "raw" / campaign / run_id
    shutil.copytree(dualpoint_dir, run)
    for f in run.iterdir():
        f.chmod(0o444)


def _snakemake(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["snakemake", *args],
        cwd=work,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        check=False,
    )


def _planned_experiments(dry_run: str) -> set[str]:
    """The run ids of the dry run's `experiment` jobs (other rules have the wildcards too)."""
    job = r"rule experiment:\n(?:    .*\n)*?    wildcards: campaign=tma2024, run_id=([\w.-]+)"
    return set(re.findall(job, dry_run))


def test_the_analyse_profile_processes_what_was_pulled_and_runs_no_experiment(
    tmp_path: Path, dualpoint_dir: Path
) -> None:
    need_tool("snakemake", "cganalysis")
    work = _workspace(tmp_path, dualpoint_dir)
    _pull(work, dualpoint_dir, PULLED, f"{PULLED}-htb-cubic-r01")
    done = _snakemake(work, "--profile", "profiles/analyse", "--cores", "2", "--quiet")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (work / "results" / "metrics" / PULLED / f"{PULLED}-htb-cubic-r01.json").is_file()
    assert "rule experiment" not in done.stdout + done.stderr
    assert not (work / "data" / "raw" / "tma2024").exists()


def test_the_default_job_never_plans_an_experiment_whose_run_was_pulled(
    tmp_path: Path, dualpoint_dir: Path
) -> None:
    need_tool("snakemake", "cganalysis")
    work = _workspace(tmp_path, dualpoint_dir)
    before = _snakemake(work, "-n", "--cores", "1")
    assert before.returncode == 0, before.stderr[-3000:]
    planned = _planned_experiments(before.stdout)
    assert len(planned) >= 2, before.stdout[-2000:]
    pulled = sorted(planned)[0]
    _pull(work, dualpoint_dir, "tma2024", pulled)
    after = _snakemake(work, "-n", "--cores", "1")
    assert after.returncode == 0, after.stderr[-3000:]
    assert _planned_experiments(after.stdout) == planned - {pulled}
