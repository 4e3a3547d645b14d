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
    assert plan.experiment_flags(cal) == ["--max-duration-s", "30", "--calibration", cal[0]]
    with pytest.raises(ConfigError, match="no configured campaign plans this run"):
        plan.job("quick-example", "quick-example-htb-cubic-r01")


def test_plan_without_calibration_or_campaigns() -> None:
    plan = WorkflowPlan.from_config(
        {"experiments": {"campaign_files": [str(CAMPAIGN)], "calibrate": False}}
    )
    c, r = plan.runs()[0]
    assert plan.calibration_file(c, r) == []
    assert plan.experiment_flags([]) == []
    assert WorkflowPlan.from_config({}).runs() == []


def test_a_testbed_pool_reaches_every_experiment_and_calibration() -> None:
    pool = ["configs/testbeds/netns.yaml", "configs/testbeds/lab-example.yaml"]
    plan = WorkflowPlan.from_config(
        {"experiments": {"campaign_files": [str(CAMPAIGN)], "testbeds": pool}}
    )
    flags = ["--testbed", pool[0], "--testbed", pool[1]]
    assert plan.testbed_flags() == flags
    assert plan.experiment_flags(["cal.json"]) == [*flags, "--calibration", "cal.json"]
    # Without a pool every run keeps its run file's testbed.
    assert WorkflowPlan.from_config({"experiments": {}}).testbed_flags() == []


def test_a_pool_lists_each_testbed_once(tmp_path: Path) -> None:
    from cganalysis.experiment.pool import parse_pool

    named = tmp_path / "bed-a.yaml"
    named.write_text("backend: netns\nname: bed-a\n")
    pool = parse_pool(["netns", str(named), "configs/testbeds/lab-example.yaml"])
    assert [r.label for r in pool] == ["netns", "bed-a", "lab-example"]
    assert [r.lock_name() for r in pool][:2] == ["netns", "netns-bed-a"]
    # An unnamed netns testbed file is this machine's one netns testbed.
    plain = tmp_path / "plain.yaml"
    plain.write_text("backend: netns\n")
    with pytest.raises(ConfigError, match=r"--testbed .*plain\.yaml: the same testbed as netns"):
        parse_pool(["netns", str(plain)])
    typo = tmp_path / "typo.yaml"
    typo.write_text("backend: netns\nnmae: x\n")
    with pytest.raises(ConfigError, match="nmae"):
        parse_pool([str(typo)])


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


def test_render_and_check_take_a_campaign_run(capsys: pytest.CaptureFixture[str]) -> None:
    campaign = str(REPO / "configs/campaigns/tma2024-factors-buckets.yaml")
    run = "tma2024-factors-buckets-htb-be-10-ceil-20-b64k-cubic-r01"
    assert main(["testbed", "render", campaign, "--run", run]) == 0
    out = capsys.readouterr().out
    assert "classid 1:20 htb rate 10mbit ceil 20mbit prio 1 quantum 1514 burst 65536" in out
    # Without --run, the one line says what to add (and the option exists).
    assert main(["testbed", "render", campaign]) != 0
    assert "say which run with --run RUN_ID" in capsys.readouterr().err
    assert main(["testbed", "check", campaign, "--run", "no-such-run"]) != 0
    assert "no-such-run" in capsys.readouterr().err
