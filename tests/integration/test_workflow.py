"""The tiny end-to-end workflow: `snakemake` on a copy of the layout with one real run."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import polars as pl

from tests.conftest import REPO, need_tool


def _workspace(tmp_path: Path, dualpoint_dir: Path) -> Path:
    for name in ("Snakefile", "workflow", "configs", "profiles"):
        (tmp_path / name).symlink_to(REPO / name)
    run = tmp_path / "data" / "raw" / "example" / "htb-pfifo-cubic-r01"
    run.mkdir(parents=True)
    for f in dualpoint_dir.iterdir():
        (run / f.name).symlink_to(f)
    return tmp_path


def test_snakemake_builds_the_packet_tables(tmp_path: Path, dualpoint_dir: Path) -> None:
    need_tool("snakemake", "cganalysis")
    work = _workspace(tmp_path, dualpoint_dir)
    # Only the committed run: no campaign experiments (those have their own tests).
    (work / "no-experiments.yaml").write_text("experiments: {campaign_files: []}\n")
    done = subprocess.run(
        ["snakemake", "--cores", "2", "--quiet", "--configfile", "no-experiments.yaml"],
        cwd=work,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
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
    # Nothing to do the second time: outputs are up to date.
    again = subprocess.run(
        ["snakemake", "--cores", "2", "-n", "--configfile", "no-experiments.yaml"],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
