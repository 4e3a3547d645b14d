"""``cganalysis metrics``: flags, META.json, overrides, atomic output, errors."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from cganalysis.commands import metrics as metrics_cmd
from cganalysis.errors import ConfigError, SchemaError
from cganalysis.metrics.docschema import validate_metrics
from cganalysis.schemas import RUN_TIMESERIES
from tests.unit.synthetic import T0_NS, cbr, table


def cli(argv: list[str]) -> int:
    """The metrics subcommand as cli.main wires it (without importing the other commands)."""
    parser = argparse.ArgumentParser(prog="cganalysis")
    metrics_cmd.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    status: int = args.run(args)
    return status


@pytest.fixture
def packets(tmp_path: Path) -> Path:
    cg = cbr(20, 0, 30, dport=30002, delay_ms=5.0)
    tcp = cbr(20, 10, 30, proto=6, flow_id=1, sport=5201, dport=1, delay_ms=30.0)
    path = tmp_path / "packets.parquet"
    table(cg, tcp).write_parquet(path)
    return path


def read(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def test_flags(packets: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "m.json"
    argv = ["metrics", str(packets), "-o", str(out), "--capacity-mbps", "50"]
    argv += ["--window", "10:30", "--role", "cg=udp:30002", "--role", "competitor=tcp"]
    argv += ["--step", "10:bulk", "--label", "run_id=r1", "--label", "repetition=2"]
    assert cli(argv) == 0
    doc = read(out)
    validate_metrics(doc)
    assert doc["run"] == {"run_id": "r1", "repetition": 2}
    assert doc["roles"]["cg"]["bitrate_mean_mbps"] == pytest.approx(20.0, abs=0.05)
    assert doc["fairness_ratio"] == pytest.approx(0.0, abs=0.01)
    assert doc["inputs"]["spec_source"] == "flags"
    assert list(out.parent.iterdir()) == [out]  # no temporary file left behind


def write_meta(tmp_path: Path, **over: Any) -> Path:
    meta: dict[str, Any] = {
        "run_id": "tma2024-htb-cubic-r01",
        "qdisc": "htb",
        "cca": "cubic",
        "start_ns": T0_NS,
        "capacity_mbps": 50,
        "capacity_measured_mbps": 40,
        "roles": {"cg": "udp:30002", "competitor": "tcp"},
        "schedule": [{"t_s": 10, "rate_mbps": 20}],
        "analysis": {"window_s": [10, 30]},
    }
    meta.update(over)
    path = tmp_path / "META.json"
    path.write_text(json.dumps(meta))
    return path


def test_meta_and_flag_override(packets: Path, tmp_path: Path) -> None:
    meta = write_meta(tmp_path)
    out = tmp_path / "m.json"
    ts = tmp_path / "ts.parquet"
    assert cli(["metrics", str(packets), "-o", str(out), "--run", str(meta)]) == 0
    doc = read(out)
    assert doc["run"]["qdisc"] == "htb"
    assert doc["inputs"]["capacity"]["source"] == "measured"
    assert doc["roles"]["cg"]["utilisation"] == pytest.approx(0.5, abs=0.01)  # 20 of 40
    argv = ["metrics", str(packets), "-o", str(out), "--run", str(meta)]
    argv += ["--capacity-source", "configured", "--window", "20:30", "--timeseries", str(ts)]
    assert cli(argv) == 0
    doc = read(out)
    assert doc["inputs"]["capacity"]["source"] == "configured"
    assert doc["roles"]["cg"]["utilisation"] == pytest.approx(0.4, abs=0.01)
    assert doc["inputs"]["window_s"] == [20.0, 30.0]
    assert doc["inputs"]["spec_source"].endswith("+ flags")
    assert pl.read_parquet(ts).schema == pl.Schema(dict(RUN_TIMESERIES))


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ([], "give --capacity-mbps"),
        (["--capacity-mbps", "50"], "--window, --role"),
        (["--capacity-mbps", "50", "--window", "x", "--role", "cg=udp"], "--window 'x'"),
        (["--capacity-mbps", "50", "--window", "0:", "--role", "cg=quic"], "unknown protocol"),
        (["--capacity-mbps", "50", "--window", "99:", "--role", "cg=udp"], "outside the data"),
        (["--capacity-mbps", "50", "--window", "0:", "--role", "cg=udp", "--step", "5"], "--step"),
    ],
)
def test_bad_flags_name_the_flag(
    packets: Path, tmp_path: Path, extra: list[str], says: str
) -> None:
    out = tmp_path / "m.json"
    with pytest.raises(ConfigError, match=says.replace("(", r"\(")):
        cli(["metrics", str(packets), "-o", str(out), *extra])
    assert not out.exists()


def test_bad_meta_names_the_key(packets: Path, tmp_path: Path) -> None:
    meta = write_meta(tmp_path, analysis={"bin_s": 1})
    with pytest.raises(ConfigError, match=r"key analysis\.window_s"):
        cli(["metrics", str(packets), "-o", str(tmp_path / "m.json"), "--run", str(meta)])


def test_missing_column_or_file(tmp_path: Path, packets: Path) -> None:
    bad = tmp_path / "bad.parquet"
    pl.read_parquet(packets).drop("lost").write_parquet(bad)
    argv = ["--capacity-mbps", "50", "--window", "0:", "--role", "cg=udp"]
    with pytest.raises(SchemaError, match=r"lacks column.*lost"):
        cli(["metrics", str(bad), "-o", str(tmp_path / "m.json"), *argv])
    with pytest.raises(SchemaError, match="no such file"):
        cli(["metrics", str(tmp_path / "nope.parquet"), "-o", str(tmp_path / "m.json"), *argv])


def test_registered_in_the_cli() -> None:
    from cganalysis import cli as cli_module

    assert "metrics" in cli_module.COMMANDS


def test_capacity_trace_flag(packets: Path, tmp_path: Path) -> None:
    trace = tmp_path / "flat.down"
    trace.write_text("".join(f"{ms}\n" for ms in range(1, 1001)))  # 12 Mbit/s
    out = tmp_path / "m.json"
    argv = ["metrics", str(packets), "-o", str(out), "--capacity-trace", str(trace)]
    argv += ["--window", "10:30", "--role", "cg=udp:30002", "--role", "competitor=tcp"]
    assert cli(argv) == 0
    doc = read(out)
    assert doc["inputs"]["capacity"]["source"] == "trace"
    assert doc["inputs"]["capacity"]["mbps"] == pytest.approx(12.0)
    assert doc["inputs"]["capacity"]["trace"] == str(trace)


def test_the_metrics_schema_is_checked_on_write_and_on_read(packets: Path, tmp_path: Path) -> None:
    from cganalysis.metrics.io import read_metrics, write_metrics

    out = tmp_path / "m.json"
    argv = ["metrics", str(packets), "-o", str(out), "--capacity-mbps", "50"]
    assert (
        cli([*argv, "--window", "10:30", "--role", "cg=udp:30002", "--role", "competitor=tcp"]) == 0
    )
    doc = read(out)
    doc["roles"]["cg"]["loss_rate"] = 1.5  # a rate above 1: no writer may produce it
    bad = tmp_path / "bad.json"
    with pytest.raises(SchemaError, match=r"bad\.json .*key roles\.cg\.loss_rate"):
        write_metrics(doc, bad)
    assert not bad.exists()
    bad.write_text(json.dumps(doc))  # as if made by hand or by another tool
    with pytest.raises(SchemaError, match=r"metrics file .*bad\.json: key roles\.cg\.loss_rate"):
        read_metrics([bad])


def test_a_campaigns_runs_in_one_process_give_each_runs_own_files(
    packets: Path, tmp_path: Path
) -> None:
    """metrics_of_runs (the workflow's job per campaign) writes for each run what the
    command writes for it alone, and a run that fails stops it with the run's name."""
    import io

    from cganalysis.metrics.io import RunFiles, metrics_of_runs

    other = tmp_path / "other"
    other.mkdir()
    slower = cbr(10, 0, 30, dport=30002, delay_ms=5.0)
    table(slower, cbr(20, 10, 30, proto=6, flow_id=1, sport=5201, dport=1)).write_parquet(
        other / "packets.parquet"
    )
    meta = write_meta(tmp_path)
    runs = [
        RunFiles(p, meta, tmp_path / "out" / f"r{i}.json", tmp_path / "out" / f"r{i}.ts.parquet")
        for i, p in enumerate([packets, other / "packets.parquet"])
    ]
    log = io.StringIO()
    metrics_of_runs(runs, log)
    assert [line.split(":")[0] for line in log.getvalue().splitlines()] == ["[1/2] r0", "[2/2] r1"]
    # Two at a time (threads): the same files, the log in the runs' order.
    two = tmp_path / "two"
    both = [RunFiles(r.packets, meta, two / r.metrics.name, two / r.timeseries.name) for r in runs]
    log = io.StringIO()
    metrics_of_runs(both, log, workers=2)
    assert [line.split(":")[0] for line in log.getvalue().splitlines()] == ["[1/2] r0", "[2/2] r1"]
    for alone_run, paired_run in zip(runs, both, strict=True):
        assert read(alone_run.metrics) == read(paired_run.metrics)
        alone_series = pl.read_parquet(alone_run.timeseries)
        assert alone_series.equals(pl.read_parquet(paired_run.timeseries))
    for run in runs:
        alone = tmp_path / "alone.json"
        assert cli(["metrics", str(run.packets), "-o", str(alone), "--run", str(meta)]) == 0
        mine, theirs = read(run.metrics), read(alone)
        for doc in (mine, theirs):
            doc.pop("software")
            doc["inputs"].pop("packets")
        assert mine == theirs
        assert pl.read_parquet(run.timeseries).height > 0
    assert read(runs[0].metrics)["roles"]["cg"]["bitrate_mean_mbps"] == pytest.approx(20, 0.01)
    assert read(runs[1].metrics)["roles"]["cg"]["bitrate_mean_mbps"] == pytest.approx(10, 0.01)

    broken = RunFiles(tmp_path / "missing.parquet", meta, tmp_path / "x.json", tmp_path / "x.ts")
    for workers in (1, 2):
        with pytest.raises(ConfigError, match=r"run x \(.*missing.parquet\)"):
            metrics_of_runs([runs[0], broken], io.StringIO(), workers=workers)


def test_a_campaigns_runs_go_two_at_a_time_only_while_two_fit_in_memory(
    packets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """runs_at_once: as many as asked while that many copies of the biggest run's peak
    take at most half the memory available; one at least, and one for one run."""
    from cganalysis.metrics import io as metrics_io
    from cganalysis.metrics.io import PEAK_BYTES_PER_PACKET, RunFiles, runs_at_once

    rows = pl.read_parquet(packets).height
    meta = write_meta(tmp_path)
    runs = [
        RunFiles(packets, meta, tmp_path / f"r{i}.json", tmp_path / f"r{i}.ts") for i in (0, 1, 2)
    ]
    peak = rows * PEAK_BYTES_PER_PACKET
    for available, workers, expected in [
        (4 * peak, 2, 2),  # two peaks in half of it
        (4 * peak - 1, 2, 1),
        (100 * peak, 8, 3),  # no more threads than runs
        (0, 2, 1),
        (100 * peak, 1, 1),
    ]:
        monkeypatch.setattr(metrics_io, "_memory_available_bytes", lambda a=available: a)
        assert runs_at_once(runs, workers) == expected, (available, workers)
    assert runs_at_once(runs[:1], 4) == 1
    # The real figure: a positive number of bytes.
    monkeypatch.undo()
    assert metrics_io._memory_available_bytes() > 0
