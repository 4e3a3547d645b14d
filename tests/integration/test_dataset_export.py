"""`cganalysis dataset export` on the example campaign (the committed dual-point run),
processed for real with `cganalysis packets` and `cganalysis metrics`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from cganalysis import schemas
from cganalysis.cli import main

RUN = "htb-pfifo-cubic-r01"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory, dualpoint_dir: Path) -> Path:
    root = tmp_path_factory.mktemp("ws")
    raw = root / "data/raw/example" / RUN
    raw.mkdir(parents=True)
    for f in dualpoint_dir.iterdir():
        (raw / f.name).symlink_to(f)
    (root / "data/raw/example/_calibration").mkdir()  # not a run
    out = root / "data/processed/example" / RUN
    out.mkdir(parents=True)
    assert (
        main(
            [
                "packets",
                str(raw / "ingress.pcap"),
                str(raw / "egress.pcap"),
                "-o",
                str(out / "packets.parquet"),
                "--flows",
                str(out / "flows.parquet"),
                "--summary",
                str(out / "match.json"),
            ]
        )
        == 0
    )
    metrics = root / "results/metrics/example" / f"{RUN}.json"
    metrics.parent.mkdir(parents=True)
    assert (
        main(
            [
                "metrics",
                str(out / "packets.parquet"),
                "-o",
                str(metrics),
                "--run",
                str(raw / "meta.json"),
                "--timeseries",
                str(metrics.with_suffix(".timeseries.parquet")),
            ]
        )
        == 0
    )
    return root


def test_export_writes_a_complete_dataset(workspace: Path, tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    rc = main(
        [
            "dataset",
            "export",
            "example",
            "-o",
            str(out),
            "--root",
            str(workspace),
            "--with-captures",
        ]
    )
    assert rc == 0
    packets = pl.read_parquet(out / "packets" / f"{RUN}.parquet")
    assert list(packets.schema) == list(schemas.PACKETS) and packets.height > 1000
    flows = pl.read_parquet(out / "flows" / f"{RUN}.parquet")
    assert list(flows.schema) == list(schemas.FLOWS)
    assert json.loads((out / "metrics" / f"{RUN}.json").read_text())["roles"]["cg"]["packets"] > 0
    assert (out / "meta" / f"{RUN}.json").is_file() and (out / "match" / f"{RUN}.json").is_file()
    assert (out / "captures" / RUN / "ingress.pcap").stat().st_size > 0
    runs = pl.read_csv(out / "runs.csv")
    assert runs.get_column("run_id").to_list() == [RUN]
    assert runs.get_column("cg_delay_mean_ms")[0] > 0
    sheet = (out / "datasheet.md").read_text()
    # Schemas with units and the schema module's own descriptions; provenance; citation.
    assert "| `delay_ms` | Float64 | ms | egress minus ingress" in sheet
    assert "| `t_ingress_ns` | Int64 | ns" in sheet
    assert "## How to cite" in sheet and "## Collection and provenance" in sheet
    doc = json.loads((out / "datasheet.json").read_text())
    assert doc["runs"] == [RUN]
    # The Python packages that computed the tables (the committed run predates the record).
    software = doc["provenance"]["python_software"]
    (env,) = software["environments"]
    assert env["packages"]["numpy"] == np.__version__ and env["runs"] == [RUN]
    assert env["steps"] == ["packets", "metrics"]
    assert software["not_recorded"] == {"experiment": [RUN]}
    assert f"numpy {np.__version__}, polars {pl.__version__}" in sheet
    assert {c["name"] for c in doc["schemas"]["packets/<run>.parquet"]} == set(schemas.PACKETS)
    # Every file is in SHA256SUMS with its digest.
    sums = dict(
        reversed(line.split("  ", 1)) for line in (out / "SHA256SUMS").read_text().splitlines()
    )
    files = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} - {"SHA256SUMS"}
    assert set(sums) == files
    for name, digest in sums.items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    assert not list(tmp_path.glob(".dataset.tmp-*"))


def test_export_refuses_what_it_cannot_do(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "x").write_text("keep me")
    assert main(["dataset", "export", "example", "-o", str(taken), "--root", str(workspace)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert (taken / "x").read_text() == "keep me"
    assert (
        main(["dataset", "export", "nosuch", "-o", str(tmp_path / "a"), "--root", str(workspace)])
        == 2
    )
    assert "no such campaign directory" in capsys.readouterr().err
    # A run without its processed tables: named, and nothing written.
    (workspace / "data/raw/example/unprocessed-r01").mkdir()
    (workspace / "data/raw/example/unprocessed-r01/meta.json").write_text("{}")
    try:
        assert (
            main(
                [
                    "dataset",
                    "export",
                    "example",
                    "-o",
                    str(tmp_path / "b"),
                    "--root",
                    str(workspace),
                ]
            )
            == 2
        )
        err = capsys.readouterr().err
        assert "unprocessed-r01/packets.parquet" in err and "snakemake" in err
        assert not (tmp_path / "b").exists()
    finally:
        (workspace / "data/raw/example/unprocessed-r01/meta.json").unlink()
        (workspace / "data/raw/example/unprocessed-r01").rmdir()


def test_published_export_is_small_dated_and_reads_back(workspace: Path) -> None:
    """The flavour datasets/ holds: no packets tables or captures, the run's time series;
    dated after the first run's start; opened again with its checksums and tables."""
    from cganalysis.dataset.reader import open_dataset

    assert main(["dataset", "export", "example", "--published", "--root", str(workspace)]) == 0
    (out,) = (workspace / "datasets").iterdir()
    assert out.name == "example-2026-11-22"  # the committed run's start_ns, UTC
    files = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert not any(f.startswith(("packets/", "captures/")) for f in files)
    assert {f"timeseries/{RUN}.parquet", f"flows/{RUN}.parquet", f"meta/{RUN}.json"} <= files
    # The committed run was made without a calibration: none is invented.
    assert not any(f.startswith("calibration/") for f in files)
    ds = open_dataset(out)
    series = ds.timeseries(RUN)
    assert set(series.get_column("role")) >= {"cg"}
    # One row per bin of the run's own analysis.bin_s (the metrics' resolution).
    steps = series.filter(pl.col("role") == "cg").get_column("t_s").diff().drop_nulls()
    assert steps.unique().to_list() == [ds.metrics[0]["inputs"]["bin_s"]]
    (table,) = ds.tables("tma_table2")
    assert ds.run_rows().height == 1 and table.rows[0].cells[0] is not None
    sheet = (out / "datasheet.md").read_text()
    assert "dvc pull data/raw/example" in sheet and "`packets/<run>.parquet`" not in sheet
    assert (
        main(
            [
                "dataset",
                "export",
                "example",
                "--published",
                "--with-captures",
                "-o",
                str(workspace / "x"),
                "--root",
                str(workspace),
            ]
        )
        == 2
    )


def test_published_export_refuses_runs_of_uncommitted_code(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A published dataset names the commit that made it: a run whose meta.json says the
    tree had uncommitted changes is refused, naming the run and the key."""
    import json

    raw = workspace / "data/raw/dirty" / RUN
    raw.mkdir(parents=True)
    meta = json.loads((workspace / "data/raw/example" / RUN / "meta.json").read_text())
    meta.setdefault("controller", {})["git"] = {"commit": "0" * 40, "dirty": True}
    (raw / "meta.json").write_text(json.dumps(meta))
    assert main(["dataset", "export", "dirty", "--published", "--root", str(workspace)]) == 2
    err = capsys.readouterr().err
    assert f"run {RUN}" in err and "controller.git.dirty" in err, err
    assert not (workspace / "datasets" / "dirty-2026-11-22").exists()
