"""Raw runs shared between labs, run by the workflow as root: a hostile name in data/raw/
runs nothing and is refused in one line naming it, and a run another process finished is
never deleted by a Snakemake that planned it too (docs/security.md)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import need_tool
from tests.integration.test_workflow import NO_EXPERIMENTS, _workspace

RUN = Path("data/raw/example/htb-pfifo-cubic-r01")
PACKETS = "data/processed/example/htb-pfifo-cubic-r01/packets.parquet"
#: A file name cannot hold a '/': the command would touch MARKER in the job's folder.
EVIL_CAPTURE = "ingress$(touch MARKER).pcap"


def _snakemake(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """As test_workflow's, with targets before --configfile (which takes every word after
    it)."""
    return subprocess.run(
        ["snakemake", *args, "--cores", "2", *NO_EXPERIMENTS],
        cwd=work,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        check=False,
    )


def _refusal(done: subprocess.CompletedProcess[str], path: str) -> str:
    """The one line that refuses ``path`` (its repr: a newline in it stays on the line)."""
    lines = [line for line in (done.stdout + done.stderr).splitlines() if repr(path) in line]
    assert done.returncode != 0 and lines, (done.stdout + done.stderr)[-3000:]
    assert "rename or remove it" in lines[0]
    return lines[0]


def _no_marker(work: Path) -> None:
    found = list(work.rglob("MARKER*"))
    assert not found, f"a name in data/raw ran a command: {found}"


@pytest.mark.parametrize("beside_a_real_one", [True, False])
def test_a_hostile_capture_name_runs_nothing(
    tmp_path: Path, dualpoint_dir: Path, beside_a_real_one: bool
) -> None:
    need_tool("snakemake", "cganalysis")
    work = _workspace(tmp_path, dualpoint_dir)
    real = work / RUN / "ingress.pcap"
    # It sorts before ingress.pcap ('$' < '.'): the old glob picked it over the real one.
    (work / RUN / EVIL_CAPTURE).symlink_to(real.resolve())
    if not beside_a_real_one:
        real.unlink()
    for args in (["-n"], [PACKETS]):
        done = _snakemake(work, *args)
        _no_marker(work)
        assert "not a usable capture name" in _refusal(done, str(RUN / EVIL_CAPTURE))
        assert not (work / PACKETS).exists()


@pytest.mark.parametrize("name", ["run$(touch MARKER)", "-rf", "evil\n", "a;touch MARKER"])
def test_a_hostile_run_folder_runs_nothing(tmp_path: Path, dualpoint_dir: Path, name: str) -> None:
    need_tool("snakemake", "cganalysis")
    work = _workspace(tmp_path, dualpoint_dir)
    hostile = work / RUN.parent / name
    hostile.mkdir()
    for capture in (work / RUN).iterdir():
        (hostile / capture.name).symlink_to(capture.resolve())
    for args in (["-n"], []):
        done = _snakemake(work, *args)
        _no_marker(work)
        assert "not a usable run folder name" in _refusal(done, str(RUN.parent / name))
        assert not (work / PACKETS).exists()
    # Once it is gone, the real run is analysed with every shell line quoted.
    for path in hostile.iterdir():
        path.unlink()
    hostile.rmdir()
    done = _snakemake(work, PACKETS)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (work / PACKETS).stat().st_size > 0
    _no_marker(work)


# The second Snakemake planned the run while it was missing; the first one finished it
# right after (its onstart runs once the DAG is built, before any job starts).
RACE_SNAKEFILE = """\
import shutil

include: "Snakefile"

onstart:
    shutil.copytree("finished-elsewhere", "{run}", symlinks=True)
"""
CAMPAIGN = "configs/campaigns/quick-example.yaml"
PLANNED = "data/raw/quick-example/quick-example-htb-cubic-r01"


@pytest.mark.parametrize("profile", ["default", "none"])
def test_a_run_another_process_finished_survives_a_second_snakemake(
    tmp_path: Path, dualpoint_dir: Path, profile: str
) -> None:
    need_tool("snakemake", "cganalysis")
    work = _workspace(tmp_path, dualpoint_dir)
    (work / "race.smk").write_text(RACE_SNAKEFILE.format(run=PLANNED))
    (work / "plan.yaml").write_text(
        f"experiments: {{campaign_files: [{CAMPAIGN}], calibrate: false}}\n"
    )
    finished = work / "finished-elsewhere"
    finished.mkdir()
    for f in dualpoint_dir.iterdir():
        (finished / f.name).write_bytes(f.read_bytes())
    (finished / "qdisc-stats.jsonl").write_text("{}\n")
    before = {p.name: p.read_bytes() for p in finished.iterdir()}
    assert {"ingress.pcap", "egress.pcap", "meta.json"} <= set(before)
    done = subprocess.run(
        [
            *("snakemake", "-s", "race.smk", "--cores", "1", "--workflow-profile", profile),
            *(f"{PLANNED}/meta.json", "--configfile", "configs/config.yaml", "plan.yaml"),
        ],
        cwd=work,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore", "CGA_LOCK_DIR": str(tmp_path / "locks")},
        check=False,
    )
    log = (work / "logs/experiment/quick-example/quick-example-htb-cubic-r01.log").read_text()
    # The experiment job ran, and its runner refused before touching anything...
    assert done.returncode != 0, done.stderr[-3000:]
    assert re.search(rf"{PLANNED}.* exists", log), log
    # ...and nothing of the finished run was removed or changed by Snakemake either.
    after = {p.name: p.read_bytes() for p in (work / PLANNED).iterdir()}
    assert after == before, done.stderr[-3000:]
