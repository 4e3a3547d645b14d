"""The tiny end-to-end workflow: `snakemake` on a copy of the layout with one real run, and
its report as a reader sees it, in a real (headless) browser."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import REPO, need_tool
from tests.support.reportcheck import check_report

#: Only the committed run: no campaign experiments (those have their own tests).
NO_EXPERIMENTS = ["--configfile", "no-experiments.yaml"]


def _workspace(tmp_path: Path, dualpoint_dir: Path) -> Path:
    for name in ("Snakefile", "workflow", "configs", "profiles"):
        (tmp_path / name).symlink_to(REPO / name)
    run = tmp_path / "data" / "raw" / "example" / "htb-pfifo-cubic-r01"
    run.mkdir(parents=True)
    for f in dualpoint_dir.iterdir():
        (run / f.name).symlink_to(f)
    (tmp_path / "no-experiments.yaml").write_text("experiments: {campaign_files: []}\n")
    return tmp_path


def _snakemake(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["snakemake", "--cores", "2", *NO_EXPERIMENTS, *args],
        cwd=work,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        check=False,
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, dualpoint_dir: Path) -> Path:
    """A workspace the whole workflow ran in (once for the module's tests)."""
    need_tool("snakemake", "cganalysis")
    work = _workspace(tmp_path_factory.mktemp("workflow"), dualpoint_dir)
    done = _snakemake(work, "--quiet")
    assert done.returncode == 0, done.stderr[-3000:]
    return work


def test_snakemake_builds_the_packet_tables(built: Path) -> None:
    work = built
    out = work / "data" / "processed" / "example" / "htb-pfifo-cubic-r01"
    packets = pl.read_parquet(out / "packets.parquet")
    summary = json.loads((out / "match.json").read_text())
    assert packets.height == summary["packets_in"] > 1000
    assert summary["packets_lost"] == int(packets["lost"].sum()) > 0
    assert (work / "logs" / "packets" / "example" / "htb-pfifo-cubic-r01.log").exists()
    metrics = json.loads((work / "results/metrics/example/htb-pfifo-cubic-r01.json").read_text())
    assert metrics["roles"]["cg"]["packets"] > 0
    assert (work / "results/figures/example/htb-pfifo-cubic-r01.timeseries.pdf").stat().st_size
    assert "Cubic" in (work / "results/tables/example/tma_table2.md").read_text()
    assert "<td>" in (work / "results/tables/example/tma_table2.html").read_text()
    # The jobs' logs hold no progress lines (cganalysis.progress: silent under Snakemake).
    for log in (work / "logs").rglob("*.log"):
        assert "\x1b[K" not in log.read_text(errors="replace"), log
    # Nothing to do the second time: outputs are up to date.
    again = _snakemake(work, "-n")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_pulled_captures_are_not_reanalysed_but_a_run_made_again_is(built: Path) -> None:
    run = built / "data" / "raw" / "example" / "htb-pfifo-cubic-r01"
    captures = sorted(p for p in run.iterdir() if p.suffix in (".pcap", ".pcapng"))
    assert len(captures) == 2
    originals = {p: p.resolve().read_bytes() for p in captures}

    def put(path: Path, data: bytes) -> None:  # a new file: a new modification time
        path.unlink()
        path.write_bytes(data)

    try:
        for path, data in originals.items():  # what a `dvc pull` leaves: same bytes, new times
            put(path, data)
        again = _snakemake(built, "-n")
        assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
        ingress = next(p for p in captures if p.name.startswith("ingress"))
        put(ingress, originals[ingress][:-64])  # the run made again: other bytes
        again = _snakemake(built, "-n")
        assert again.returncode == 0, again.stderr[-2000:]
        assert "rule packets" in again.stdout + again.stderr
    finally:
        for path, data in originals.items():
            put(path, data)
    again = _snakemake(built, "-n")
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.fixture(scope="module")
def report(built: Path) -> Path:
    done = _snakemake(built, "--report", "report.html")
    assert done.returncode == 0, done.stderr[-3000:]
    return built / "report.html"


def test_the_report_opens_in_a_browser_with_every_result_and_caption(
    built: Path, report: Path
) -> None:
    need_tool("chromium")
    walked = check_report(report, built)
    assert walked == {
        "Runs": ["results/report/example/htb-pfifo-cubic-r01.timeseries.png"],
        "TMA 2024": ["results/report/example/tma_table2.html"],
    }


def test_the_browser_check_sees_a_reference_to_a_missing_file(
    built: Path, report: Path, tmp_path: Path
) -> None:
    """The check can fail: a caption that points at a file next to the report (which a
    reader who got the report alone does not have) is caught."""
    need_tool("chromium")
    work = tmp_path / "work"
    shutil.copytree(built / "results" / "report", work / "results" / "report")
    html = report.read_text(encoding="utf-8")
    caption = '"caption": "<p>Run'
    assert caption in html
    broken = work / "report.html"
    broken.write_text(
        html.replace(caption, '"caption": "<p><img src=\\"figures/run.png\\"> Run', 1),
        encoding="utf-8",
    )
    with pytest.raises(AssertionError, match=r"refers to files outside it: \['figures/run.png'\]"):
        check_report(broken, work)
