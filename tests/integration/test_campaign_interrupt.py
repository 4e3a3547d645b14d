"""Ctrl-C in the middle of a campaign, then the same command again: it resumes.

A terminal's Ctrl-C sends SIGINT to Snakemake's whole process group, the running
experiment included. The experiment tears its testbed down and discards its half-built run
(nothing in data/raw, no namespace, no testbed record), so Snakemake has no incomplete
output to complain about: the next start plans exactly the interrupted run and the ones
not yet run, and finishes the campaign.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import REPO, need_root, need_tool
from tests.integration.experiment_helpers import TOOLS, namespaces

CAMPAIGN = """\
campaign: interrupt
base: quick-pfifo.yaml
factors:
  cca:
    cubic: {competitor: {cca: cubic}}
    reno: {competitor: {cca: reno}}
"""
RUNS = ("interrupt-cubic-r01", "interrupt-reno-r01")
TARGETS = [f"data/raw/interrupt/{run}/meta.json" for run in RUNS]
# Targets before --configfile, which takes every word after it.
SNAKEMAKE = [
    "snakemake",
    *TARGETS,
    "--cores",
    "2",
    "--configfile",
    "configs/config.yaml",
    "campaign.yaml",
]


def _workspace(tmp: Path) -> Path:
    for name in ("Snakefile", "workflow", "configs", "profiles"):
        (tmp / name).symlink_to(REPO / name)
    # A campaign's base is a file beside it (docs/security.md).
    (tmp / "quick-pfifo.yaml").write_bytes((REPO / "configs/runs/quick-pfifo.yaml").read_bytes())
    (tmp / "interrupt.yaml").write_text(CAMPAIGN)
    (tmp / "campaign.yaml").write_text("experiments:\n  campaign_files: [interrupt.yaml]\n")
    return tmp


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONWARNINGS": "ignore"}


def _snakemake(work: Path, *extra: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SNAKEMAKE, *extra],
        cwd=work,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=timeout_s,
        check=False,
    )


def _testbed_up(
    work: Path, proc: subprocess.Popen[bytes], deadline: float
) -> tuple[str, dict[str, object]]:
    """Waits until an experiment has its testbed up and traffic running."""
    while time.monotonic() < deadline:
        assert proc.poll() is None, (work / "first.log").read_text(errors="replace")[-3000:]
        for log in (work / "logs/experiment/interrupt").glob("*.log"):
            text = log.read_text(errors="replace")
            if "testbed up:" in text and "CG stream" in text:
                line = text.split("testbed up:", 1)[1].splitlines()[0]
                return log.stem, json.loads(line)
        time.sleep(0.2)
    raise AssertionError("no experiment brought its testbed up")


def test_ctrl_c_then_the_same_command_resumes(tmp_path: Path) -> None:
    need_root()
    need_tool("snakemake", "cganalysis", *TOOLS)
    work = _workspace(tmp_path)
    out = (work / "first.log").open("w")
    # Its own process group, as a shell's foreground job: Ctrl-C reaches every process.
    proc = subprocess.Popen(
        SNAKEMAKE,
        cwd=work,
        stdout=out,
        stderr=subprocess.STDOUT,
        env=_env(),
        start_new_session=True,
    )
    try:
        run_id, up = _testbed_up(work, proc, time.monotonic() + 120)
        time.sleep(3.0)  # captures, CG and receivers running
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(90) != 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        out.close()
    first = (work / "first.log").read_text(errors="replace")

    # Nothing half-made survives: no run files, no temporary folder, no testbed.
    raw = work / "data/raw/interrupt"
    assert not [p for p in (raw / run_id).rglob("*") if p.is_file()], first[-3000:]
    assert not list(raw.glob(f".{run_id}.*")), "the temporary run directory was left"
    assert not set(up["namespaces"].values()) & namespaces()  # type: ignore[attr-defined]
    assert not Path(f"/run/cganalysis/testbeds/{up['tag']}.json").exists()
    assert "interrupted" in (work / "logs/experiment/interrupt" / f"{run_id}.log").read_text()

    # The same command again: no incomplete-files error, the interrupted run is planned.
    plan = _snakemake(work, "-n", timeout_s=300)
    text = plan.stdout + plan.stderr
    assert plan.returncode == 0 and "Incomplete" not in text, text[-3000:]
    assert f"data/raw/interrupt/{run_id}/meta.json" in text

    again = _snakemake(work, timeout_s=600)
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    for run in RUNS:
        meta = json.loads((raw / run / "meta.json").read_text())
        assert meta["run_id"] == run and (raw / run / "egress.pcap").stat().st_size > 0
