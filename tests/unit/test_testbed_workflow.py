"""What the Snakemake stage plans from the configuration, and the commands' argument
handling (no root needed: everything here stops before the testbed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cganalysis.cli import main
from cganalysis.errors import ConfigError
from cganalysis.experiment.workflow import WorkflowPlan

REPO = Path(__file__).resolve().parents[2]
CAMPAIGN = REPO / "configs" / "campaigns" / "quick-example.yaml"


def test_plan_from_config() -> None:
    plan = WorkflowPlan.from_config(
        {
            "experiments": {
                "campaign_files": [str(CAMPAIGN)],
                "campaign_suffix": "-quick",
                "max_duration_s": 30,
            }
        }
    )
    runs = plan.runs()
    assert len(runs) == 4
    assert all(c == "quick-example-quick" for c, _ in runs)
    assert plan.meta_files()[0] == (
        "data/raw/quick-example-quick/quick-example-htb-bbr-r01/meta.json"
    )
    job = plan.job("quick-example-quick", "quick-example-htb-cubic-r01")
    cal = plan.calibration_file("quick-example-quick", "quick-example-htb-cubic-r01")
    assert cal == [
        f"data/raw/quick-example-quick/_calibration/{job.calibration_key}/calibration.json"
    ]
    first = plan.calibration_job("quick-example-quick", job.calibration_key)
    assert first.calibration_key == job.calibration_key
    assert plan.experiment_flags(cal) == f"--max-duration-s 30 --calibration {cal[0]}"
    with pytest.raises(ConfigError, match="no configured campaign plans this run"):
        plan.job("quick-example", "quick-example-htb-cubic-r01")


def test_plan_without_calibration_or_campaigns() -> None:
    plan = WorkflowPlan.from_config(
        {"experiments": {"campaign_files": [str(CAMPAIGN)], "calibrate": False}}
    )
    c, r = plan.runs()[0]
    assert plan.calibration_file(c, r) == []
    assert plan.experiment_flags([]) == ""
    assert WorkflowPlan.from_config({}).runs() == []


def test_campaign_needs_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["experiment", str(CAMPAIGN), "-o", str(tmp_path / "x")]) == 2
    assert "is a campaign: say which run with --run" in capsys.readouterr().err
    assert main(["testbed", "calibrate", str(CAMPAIGN), "-o", str(tmp_path / "y")]) == 2
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_render_shows_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["testbed", "render", str(REPO / "configs/runs/quick-htb.yaml")]) == 0
    out = capsys.readouterr().out
    assert "tc qdisc replace dev rtr1 root handle 1: htb default 20" in out
    assert "match ip dport 30002 0xffff flowid 1:10" in out
    assert '"kind": "htb"' in out  # the emulator's configuration too
