"""The run API (cganalysis.open_run / open_campaign) on the committed real run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

import cganalysis
from cganalysis.errors import ConfigError
from cganalysis.matching import match_files
from cganalysis.metrics.compute import run_metrics
from cganalysis.metrics.io import read_run_facts
from cganalysis.metrics.rows import WINDOW_PHASE
from tests.conftest import REPO

STYLE = REPO / "configs" / "plotting.yaml"
RUN_FILES = ("ingress.pcap", "egress.pcap", "meta.json")


def project_with_run(
    root: Path, dualpoint_dir: Path, campaign: str = "c", run: str = "r01"
) -> Path:
    """A project folder (data/raw/<campaign>/<run>) holding a copy of the fixture run."""
    folder = root / "data" / "raw" / campaign / run
    folder.mkdir(parents=True)
    for name in RUN_FILES:
        shutil.copyfile(dualpoint_dir / name, folder / name)
    return folder


def test_a_run_outside_the_workflow_is_matched_and_measured_here(
    tmp_path: Path, dualpoint_dir: Path
) -> None:
    folder = project_with_run(tmp_path, dualpoint_dir)
    run = cganalysis.open_run(folder, style=STYLE)
    assert run.project == tmp_path
    matched = match_files(dualpoint_dir / "ingress.pcap", dualpoint_dir / "egress.pcap")
    assert run.packets.equals(matched.packets)
    expected = run_metrics(matched.packets, read_run_facts(dualpoint_dir / "meta.json"))
    assert run.metrics["roles"] == expected["roles"]
    assert run.spec is run.facts  # the older name, for notebooks that use it
    assert set(run.timeseries["role"].unique()) == {"cg", "competitor"}
    assert len(run.timeseries_figure().axes) >= 3


def test_what_the_workflow_made_is_read_not_redone(tmp_path: Path, dualpoint_dir: Path) -> None:
    folder = project_with_run(tmp_path, dualpoint_dir)
    matched = match_files(dualpoint_dir / "ingress.pcap", dualpoint_dir / "egress.pcap")
    packets = matched.packets
    # A processed table that differs from what matching gives: the API must return it.
    made = tmp_path / "data" / "processed" / "c" / "r01"
    made.mkdir(parents=True)
    half = packets.head(packets.height // 2)
    half.write_parquet(made / "packets.parquet")
    assert matched.flows is not None
    matched.flows.write_parquet(made / "flows.parquet")
    metrics = tmp_path / "results" / "metrics" / "c"
    metrics.mkdir(parents=True)
    doc = run_metrics(half, read_run_facts(folder / "meta.json"))
    # A flag the metrics derived (meta.json has none): run.flags lists it, as the tables do.
    derived = "CG flow: no packet at the ingress tap from its scheduled start at 0.0 s on"
    doc["flags"] = [*doc["flags"], derived]
    # A marker the computation never writes (the schema refuses an undeclared key).
    doc["warnings"] = [*doc["warnings"], "from the workflow"]
    (metrics / "r01.json").write_text(json.dumps(doc))
    # The workflow's time series (one bin, as made elsewhere): read, not recomputed.
    series = cganalysis.open_run(folder, style=STYLE).timeseries.head(1)
    series.write_parquet(metrics / "r01.timeseries.parquet")
    run = cganalysis.open_run(folder, style=STYLE)
    assert run.packets.height == half.height
    assert run.flows is not None and run.flows.equals(matched.flows.select(run.flows.columns))
    assert "from the workflow" in run.metrics["warnings"]
    assert derived in run.flags and not run.meta.get("flags")
    assert run.timeseries.equals(series)


def test_a_campaign_compares_its_runs_and_skips_calibrations(
    tmp_path: Path, dualpoint_dir: Path
) -> None:
    for run_id in ("r01", "r02"):
        project_with_run(tmp_path, dualpoint_dir, run=run_id)
    (tmp_path / "data" / "raw" / "c" / "_calibration" / "cal-1").mkdir(parents=True)
    (tmp_path / "data" / "raw" / "c" / "_calibration" / "meta.json").write_text("{}")
    campaign = cganalysis.open_campaign(tmp_path / "data" / "raw" / "c", style=STYLE)
    assert len(campaign) == 2
    roles = campaign.role_rows()
    in_window = roles.filter(pl.col("phase") == WINDOW_PHASE, pl.col("role") == "cg")
    assert in_window.height == 2
    table = campaign.tma_table2()
    assert table.rows  # one condition, both runs averaged into it
    # Every run's time series in one frame, each row with its run and labels.
    series = campaign.timeseries()
    assert series.height == sum(r.timeseries.height for r in campaign)
    assert set(series["run_id"].unique()) == {r.run_id for r in campaign}
    assert set(series["qdisc"].unique()) == {"htb"} and set(series["cca"].unique()) == {"cubic"}


def test_bad_folders_are_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no meta\.json"):
        cganalysis.open_run(tmp_path)
    with pytest.raises(ConfigError, match="no run folders"):
        cganalysis.open_campaign(tmp_path)
