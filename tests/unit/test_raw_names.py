"""The names the workflow takes from data/raw/ (cganalysis.rawnames): a hostile run folder
or capture name is refused with one line naming it, and an accepted name is one plain
shell word that no command reads as an option."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cganalysis.errors import ConfigError
from cganalysis.rawnames import NAME, check_name, find_capture, run_folders

HOSTILE_CAPTURES = ["ingress$(touch MARKER).pcap", "ingress;rm -rf x.pcap", "ingress a.pcapng"]
HOSTILE_FOLDERS = ["run$(touch MARKER)", "-rf", "evil\n", "a b", "run`id`"]


def _run(folder: Path, *names: str) -> Path:
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_bytes(b"x")
    return folder


@pytest.mark.parametrize("hostile", HOSTILE_CAPTURES)
def test_a_hostile_capture_name_is_refused_even_beside_a_proper_one(
    tmp_path: Path, hostile: str
) -> None:
    run = _run(tmp_path / "r1", "ingress.pcap", "egress.pcap", hostile)
    with pytest.raises(ConfigError) as refused:
        find_capture(run, "ingress")
    message = str(refused.value)
    assert "\n" not in message and repr(str(run / hostile)) in message
    assert "not a usable capture name" in message
    assert find_capture(run, "egress") == run / "egress.pcap"


def test_the_exact_capture_name_is_preferred_then_pcapng_then_a_suffix(tmp_path: Path) -> None:
    # "ingress-a" sorts before "ingress.pcap" ('-' < '.'): the exact name still wins.
    run = _run(tmp_path / "r1", "ingress-a.pcap", "ingress.pcap", "ingress.pcapng")
    assert find_capture(run, "ingress") == run / "ingress.pcap"
    (run / "ingress.pcap").unlink()
    assert find_capture(run, "ingress") == run / "ingress.pcapng"
    (run / "ingress.pcapng").unlink()
    assert find_capture(run, "ingress") == run / "ingress-a.pcap"
    assert find_capture(run, "egress") is None
    assert find_capture(tmp_path / "missing", "egress") is None
    # Not a capture at all (other suffix): never used, so not refused either.
    (run / "ingress$(x).pcap.sha256").write_text("")
    assert find_capture(run, "ingress") == run / "ingress-a.pcap"


@pytest.mark.parametrize("hostile", HOSTILE_FOLDERS)
def test_a_hostile_run_folder_is_refused_in_one_line(tmp_path: Path, hostile: str) -> None:
    campaign = tmp_path / "c"
    _run(campaign / "good-r01", "ingress.pcap", "egress.pcap")
    _run(campaign / hostile, "ingress.pcap", "egress.pcap")
    with pytest.raises(ConfigError) as refused:
        run_folders(campaign)
    message = str(refused.value)
    assert "\n" not in message and repr(str(campaign / hostile)) in message
    assert "not a usable run folder name" in message


def test_the_runners_own_folders_are_not_runs(tmp_path: Path) -> None:
    campaign = tmp_path / "c"
    for name in ("r01", ".r02.tmp-12", ".r03.failed-x", "_calibration"):
        (campaign / name).mkdir(parents=True)
    (campaign / "notes.txt").write_text("")
    assert run_folders(campaign) == [campaign / "r01"]


@given(st.text(max_size=12))
def test_an_accepted_name_is_one_plain_shell_word_and_no_option(name: str) -> None:
    try:
        check_name(name, f"data/raw/{name}", "run folder")
    except ConfigError as refused:
        assert "\n" not in str(refused)
        return
    assert shlex.quote(name) == name and shlex.split(name) == [name]
    assert not name.startswith(("-", ".")) and "/" not in name


def test_the_grammar_is_the_workflows_wildcard_constraint() -> None:
    common = (Path(__file__).resolve().parents[2] / "workflow/rules/common.smk").read_text()
    assert "campaign=NAME," in common and "run_id=NAME," in common
    assert NAME == r"[A-Za-z0-9][A-Za-z0-9._-]*"


@pytest.mark.parametrize("suffix", ["$(touch MARKER)", "\n", " -rf"])
def test_a_planned_campaign_outside_the_grammar_is_refused(suffix: str) -> None:
    from cganalysis.experiment.workflow import WorkflowPlan

    campaign = Path(__file__).resolve().parents[2] / "configs/campaigns/quick-example.yaml"
    config = {"experiments": {"campaign_files": [str(campaign)], "campaign_suffix": suffix}}
    with pytest.raises(ConfigError) as refused:
        WorkflowPlan.from_config(config)
    message = str(refused.value)
    assert "\n" not in message
    assert f"campaign (with its campaign_suffix) name {'quick-example' + suffix!r}" in message
