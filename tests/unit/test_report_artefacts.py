"""The registry of tables and figures is the one place they are named and made."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from cganalysis.commands import figures as figures_command
from cganalysis.commands import tables as tables_command
from cganalysis.errors import ConfigError
from cganalysis.report import artefacts, runfigures
from tests.conftest import REPO

STYLE = REPO / "configs" / "plotting.yaml"


def test_names_are_unique_and_every_artefact_has_a_command_line_kind() -> None:
    names = [a.name for a in artefacts.ARTEFACTS]
    clis = [a.cli for a in artefacts.ARTEFACTS]
    assert len(set(names)) == len(names) and len(set(clis)) == len(clis)
    assert set(tables_command.KINDS) == {a.cli for a in artefacts.of_kind("table")}
    assert set(figures_command.KINDS) == {f.cli for f in runfigures.RUN_FIGURES} | {
        a.cli for a in artefacts.of_kind("figure")
    }
    assert [f.name for f in runfigures.RUN_FIGURES] == ["timeseries"]
    for a in artefacts.ARTEFACTS:
        assert artefacts.by_name(a.name) is a is artefacts.by_name(a.cli)
    with pytest.raises(KeyError):
        artefacts.by_name("tma-table3")


def test_the_workflow_config_names_only_registry_groups() -> None:
    config = yaml.safe_load((REPO / "configs" / "config.yaml").read_text())
    used = {g for groups in config["artefacts"].values() for g in groups}
    assert used <= set(artefacts.GROUPS)
    for group in artefacts.GROUPS:
        assert artefacts.in_group(group), group


def test_every_artefact_has_a_report_caption_category() -> None:
    # rules/report.smk has one caption per paper and kind: an artefact outside them would
    # be rendered but never reach the report.
    covered = {("TMA 2024", "table"), ("Xu & Claypool 2022", "table")}
    covered |= {("TMA 2024", "figure"), ("Xu & Claypool 2022", "figure")}
    assert {(a.paper, a.kind) for a in artefacts.ARTEFACTS} <= covered


def test_the_command_line_and_the_workflow_make_the_same_files(
    tmp_path: Path, dualpoint_dir: Path
) -> None:
    import cganalysis
    from cganalysis.cli import main

    doc = cganalysis.open_run(dualpoint_dir, style=STYLE).metrics
    metrics = tmp_path / "run.json"
    metrics.write_text(json.dumps(doc))
    cli_stem, workflow_stem = tmp_path / "cli" / "t2", tmp_path / "wf" / "t2"
    args = ["tables", "tma-table2", str(metrics), "-o", str(cli_stem), "--style", str(STYLE)]
    assert main(args) == 0
    written = artefacts.write_from_files("tma_table2", [metrics], STYLE, workflow_stem)
    assert [p.name for p in written] == ["t2.csv", "t2.md", "t2.tex", "t2.html"]
    for path in written:
        assert path.read_text() == (cli_stem.parent / path.name).read_text(), path.name


def test_a_run_figure_from_the_command_line_and_the_workflow(
    tmp_path: Path, dualpoint_dir: Path
) -> None:
    """The per-run time series is in the registry: `figures timeseries` and the workflow's
    run_figure_<figure>_<campaign> rules make it through the same entry, to the paths the
    workflow expects."""
    import cganalysis
    from cganalysis.cli import main

    run = cganalysis.open_run(dualpoint_dir, style=STYLE)
    metrics, series = tmp_path / "run.json", tmp_path / "run.timeseries.parquet"
    metrics.write_text(json.dumps(run.metrics))
    run.timeseries.write_parquet(series)
    figure = runfigures.run_figure("timeseries")
    assert runfigures.run_output_files(figure, "c", "r1") == [
        "results/figures/c/r1.timeseries.pdf",
        "results/figures/c/r1.timeseries.png",
    ]
    cli_stem = tmp_path / "cli" / "r1.timeseries"
    args = ["figures", "timeseries", str(series), "--metrics", str(metrics), "-o", str(cli_stem)]
    assert main([*args, "--style", str(STYLE)]) == 0
    written = runfigures.write_run_from_files(
        "timeseries", series, metrics, STYLE, tmp_path / "wf" / "r1.timeseries"
    )
    assert [p.name for p in written] == ["r1.timeseries.pdf", "r1.timeseries.png"]
    for path in written:
        assert path.stat().st_size > 0 and (cli_stem.parent / path.name).stat().st_size > 0
    # The workflow's job per campaign: each run's figure, the same files as one at a time.
    log = io.StringIO()
    stems = [tmp_path / "campaign" / f"r{i}.timeseries" for i in (1, 2)]
    runfigures.write_runs_from_files(
        "timeseries", [(series, metrics, stem) for stem in stems], STYLE, log
    )
    assert [line.split(":")[0] for line in log.getvalue().splitlines()] == [
        "[1/2] r1.timeseries",
        "[2/2] r2.timeseries",
    ]
    for stem in stems:
        for ext in ("pdf", "png"):
            made = stem.with_name(f"{stem.name}.{ext}").read_bytes()
            assert made == (tmp_path / "wf" / f"r1.timeseries.{ext}").read_bytes()
    broken = [(series, metrics, stems[0]), (series, tmp_path / "nope.json", stems[1])]
    with pytest.raises(ConfigError, match=r"r2.timeseries .*nope.json"):
        runfigures.write_runs_from_files("timeseries", broken, STYLE, log)
