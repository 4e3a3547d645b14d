"""Every command that reads a table checks it against its declared schema first: a wrong
or missing column, or a file that is not parquet, ends the real command line with one
line naming the file and the column, a non-zero exit and no traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import FIXTURES

DUAL = FIXTURES / "dualpoint"
RUN = "htb-pfifo-cubic-r01"


def cganalysis(*args: str | Path) -> subprocess.CompletedProcess[str]:
    # The once-per-process note about root (tests/unit/test_root_note.py) is not the
    # refusal's line: said already, as it is when an earlier test ran a command in-process.
    return subprocess.run(
        [sys.executable, "-m", "cganalysis.cli", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "CGA_ROOT_NOTED": "1"},
    )


def refused(proc: subprocess.CompletedProcess[str], command: str, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"cganalysis {command}: error: "), lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with the example run processed for real: packets, flows, metrics and
    its time series."""
    root = tmp_path_factory.mktemp("ws")
    raw = root / "data/raw/example" / RUN
    raw.mkdir(parents=True)
    for f in DUAL.iterdir():
        (raw / f.name).symlink_to(f)
    out = root / "data/processed/example" / RUN
    packets = out / "packets.parquet"
    proc = cganalysis(
        *("packets", raw / "ingress.pcap", raw / "egress.pcap", "-o", packets),
        *("--flows", out / "flows.parquet", "--summary", out / "match.json"),
    )
    assert proc.returncode == 0, proc.stderr
    metrics = root / "results/metrics/example" / f"{RUN}.json"
    proc = cganalysis(
        *("metrics", packets, "-o", metrics, "--run", raw / "meta.json"),
        *("--timeseries", root / "timeseries.parquet"),
    )
    assert proc.returncode == 0, proc.stderr
    return root


def _packets(made: Path) -> Path:
    return made / "data/processed/example" / RUN / "packets.parquet"


def _metrics(made: Path, tmp_path: Path, packets: Path) -> subprocess.CompletedProcess[str]:
    meta = made / "data/raw/example" / RUN / "meta.json"
    return cganalysis("metrics", packets, "-o", tmp_path / "m.json", "--run", meta)


def test_metrics_names_a_column_of_the_wrong_type(made: Path, tmp_path: Path) -> None:
    bad = tmp_path / "proto-as-string.parquet"
    pl.read_parquet(_packets(made)).with_columns(pl.col("proto").cast(pl.String)).write_parquet(bad)
    refused(_metrics(made, tmp_path, bad), "metrics", str(bad), "'proto' is String", "UInt8")
    assert not (tmp_path / "m.json").exists()


def test_metrics_names_a_missing_column(made: Path, tmp_path: Path) -> None:
    bad = tmp_path / "no-delay.parquet"
    pl.read_parquet(_packets(made)).drop("delay_ms").write_parquet(bad)
    refused(_metrics(made, tmp_path, bad), "metrics", str(bad), "'delay_ms'", "cganalysis packets")


def test_metrics_refuses_a_file_that_is_not_parquet(made: Path, tmp_path: Path) -> None:
    bad = tmp_path / "packets.parquet"
    bad.write_text("flow_id,proto\n1,17\n")
    refused(_metrics(made, tmp_path, bad), "metrics", str(bad), "not a readable parquet file")
    refused(_metrics(made, tmp_path, tmp_path / "nope.parquet"), "metrics", "no such file")


def test_metrics_accepts_extra_columns(made: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra.parquet"
    pl.read_parquet(_packets(made)).with_columns(note=pl.lit("x")).write_parquet(extra)
    proc = _metrics(made, tmp_path, extra)
    assert proc.returncode == 0, proc.stderr


def test_figures_names_a_time_series_column(made: Path, tmp_path: Path) -> None:
    series = pl.read_parquet(made / "timeseries.parquet")
    column = series.columns[-1]
    bad = tmp_path / "timeseries.parquet"
    series.with_columns(pl.col(column).cast(pl.String)).write_parquet(bad)
    metrics = made / "results/metrics/example" / f"{RUN}.json"
    proc = cganalysis("figures", "timeseries", bad, "--metrics", metrics, "-o", tmp_path / "f")
    refused(proc, "figures", str(bad), f"'{column}' is String")
    assert not list(tmp_path.glob("f*"))


@pytest.mark.parametrize("table", ["packets", "flows"])
def test_dataset_export_checks_the_tables_it_publishes(
    made: Path, tmp_path: Path, table: str
) -> None:
    root = tmp_path / "ws"
    shutil.copytree(made, root, symlinks=True)
    path = root / "data/processed/example" / RUN / f"{table}.parquet"
    pl.read_parquet(path).with_columns(pl.col("src").cast(pl.Categorical)).write_parquet(path)
    out = tmp_path / "dataset"
    proc = cganalysis("dataset", "export", "example", "-o", out, "--root", root)
    refused(proc, "dataset", str(path), "'src' is Categorical")
    assert not out.exists()
