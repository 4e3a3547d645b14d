"""DVC versions a raw campaign: add, push to a local remote, lose it, pull it back.

Everything happens in a temporary git repository with its own DVC cache and remote, so
the project's cache and remote are never touched. The project's own .dvc/config must
name a default remote outside the repository (docs/datasets.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, need_tool


def _run(cwd: Path, *argv: str) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, f"{argv}: {done.stdout}{done.stderr}"
    return done.stdout


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_project_has_a_default_local_remote() -> None:
    need_tool("dvc")
    name = _run(REPO, "dvc", "remote", "default").strip()
    remotes = dict(line.split(None, 1) for line in _run(REPO, "dvc", "remote", "list").splitlines())
    url = remotes[name].split()[0]
    assert Path(url).is_absolute() and not Path(url).is_relative_to(REPO.resolve()), url


def test_the_committed_config_turns_analytics_off() -> None:
    """DVC's analytics daemon starts with each command unless the project says no; what
    DVC itself reads from the committed config, not a text search of it."""
    need_tool("dvc")
    assert _run(REPO, "dvc", "config", "--project", "core.analytics").strip() == "false"


def test_add_push_pull_roundtrip(tmp_path: Path, dualpoint_dir: Path) -> None:
    need_tool("dvc", "git")
    repo, remote = tmp_path / "repo", tmp_path / "remote"
    repo.mkdir()
    _run(repo, "git", "init", "-q")
    _run(repo, "dvc", "init", "-q")
    _run(repo, "dvc", "remote", "add", "-d", "local", str(remote))
    _run(repo, "dvc", "config", "cache.dir", str(tmp_path / "cache"))
    run = repo / "data" / "raw" / "tiny" / "run-r01"
    run.mkdir(parents=True)
    for name in ("meta.json", "ingress.pcap"):
        src = dualpoint_dir / name
        shutil.copyfile(src if src.exists() else next(dualpoint_dir.iterdir()), run / name)
    before = _digest(repo / "data" / "raw" / "tiny")
    _run(repo, "dvc", "add", "data/raw/tiny")
    assert (repo / "data" / "raw" / "tiny.dvc").is_file()
    _run(repo, "dvc", "push")
    assert any(p.is_file() for p in remote.rglob("*"))
    # Lose the data and the cache; the remote alone brings it back.
    shutil.rmtree(repo / "data" / "raw" / "tiny")
    shutil.rmtree(tmp_path / "cache")
    _run(repo, "dvc", "pull")
    assert _digest(repo / "data" / "raw" / "tiny") == before


def test_reference_campaign_stage_says_what_is_missing_then_round_trips(
    tmp_path: Path, dualpoint_dir: Path
) -> None:
    """The project's dvc.yaml on a clone with a published dataset but no raw runs: `dvc
    repro raw-<campaign>` names the folder, the dataset and how to get the runs; with the
    runs there it records them, and they go to a remote and come back."""
    need_tool("dvc", "git")
    campaign, run_id = "tma2024-kernel", "tma2024-kernel-pfifo-cubic-r01"
    repo, remote = tmp_path / "repo", tmp_path / "remote"
    repo.mkdir()
    _run(repo, "git", "init", "-q")
    _run(repo, "dvc", "init", "-q")
    _run(repo, "dvc", "remote", "add", "-d", "local", str(remote))
    _run(repo, "dvc", "config", "cache.dir", str(tmp_path / "cache"))
    shutil.copyfile(REPO / "dvc.yaml", repo / "dvc.yaml")
    shutil.copytree(REPO / "profiles", repo / "profiles")
    sheet = repo / "datasets" / f"{campaign}-2026-11-26" / "datasheet.json"
    sheet.parent.mkdir(parents=True)
    sheet.write_text(json.dumps({"campaign": campaign, "runs": [run_id]}))
    # The stage's command is the package's: the interpreter running the tests has it.
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "GIT_CONFIG_NOSYSTEM": "1"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    stage = ["dvc", "repro", f"raw-{campaign}"]
    failed = subprocess.run(stage, cwd=repo, capture_output=True, text=True, env=env, check=False)
    assert failed.returncode != 0
    message = failed.stdout + failed.stderr
    assert f"data/raw/{campaign}/: missing" in message, message
    assert f"datasets/{campaign}-2026-11-26" in message
    assert f"dvc pull raw-{campaign}" in message and "--profile profiles/kernel" in message
    run = repo / "data" / "raw" / campaign / run_id
    run.mkdir(parents=True)
    shutil.copyfile(dualpoint_dir / "ingress.pcap", run / "ingress.pcap")
    (run / "meta.json").write_text(json.dumps({"run_id": run_id}))
    done = subprocess.run(stage, cwd=repo, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"data/raw/{campaign}" in (repo / "dvc.lock").read_text()
    before = _digest(repo / "data" / "raw" / campaign)
    _run(repo, "dvc", "push", f"raw-{campaign}")
    shutil.rmtree(repo / "data" / "raw" / campaign)
    shutil.rmtree(tmp_path / "cache")
    _run(repo, "dvc", "pull", f"raw-{campaign}")
    assert _digest(repo / "data" / "raw" / campaign) == before
