"""cga-cg CSV logs to parquet, and the write-once runner (cganalysis.cg.logs, .runner)."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest

from cganalysis import schemas
from cganalysis.cg.logs import LOG_TABLES, LogError, convert_logs, read_log_csv
from cganalysis.cg.runner import GeneratorError, run_generator
from cganalysis.io import read_provenance

FRAMES_CSV = """\
frame_id,rtp_ts,send_t_ns,t_first_ns,t_last_ns,packets_expected,packets_received,bytes_expected,bytes_received,complete,keyframe
0,1,1000000,1500000,4000000,3,3,3000,3000,true,true
1,,,,,,0,,0,false,false
2,3001,2000000,2500000,2600000,2,1,2000,1200,false,false
"""

CONTROLLER_CSV = (
    ",".join(schemas.CG_CONTROLLER)
    + "\n1,feedback,scream,3000.5,9000,1200,1e7,1.5e7,20.1,19.8,1.2,0.9,60,0.01,0,0,,,,7,1,0,0,0\n"
    + "2,tfrc_report,tfrc,,,0,5e6,7.5e6,30,,2,,,,,,0.01,4e6,4.5e6,,,,100,0.5\n"
)


def test_receiver_frames_with_nulls_and_delivery_delay(tmp_path: Path) -> None:
    path = tmp_path / "receiver_frames.csv"
    path.write_text(FRAMES_CSV)
    df = read_log_csv(path)
    assert df.schema == pl.Schema(dict(schemas.CG_RECEIVER_FRAMES))
    assert df["delivery_delay_ms"].to_list() == [3.0, None, None]
    assert df["packets_expected"].to_list() == [3, None, 2]
    assert df["complete"].to_list() == [True, False, False]


def test_controller_log_of_two_controllers(tmp_path: Path) -> None:
    path = tmp_path / "controller.csv"
    path.write_text(CONTROLLER_CSV)
    df = read_log_csv(path)
    assert df["cc"].to_list() == ["scream", "tfrc"]
    assert df["ref_wnd_bytes"].to_list() == [3000.5, None]
    assert df["loss_event_rate"].to_list() == [None, 0.01]


def test_bad_logs_are_named(tmp_path: Path) -> None:
    other = tmp_path / "something.csv"
    other.write_text("a\n1\n")
    with pytest.raises(LogError, match="not a cga-cg log"):
        read_log_csv(other)
    broken = tmp_path / "receiver_frames.csv"
    broken.write_text(FRAMES_CSV.replace("true,true", "yes,true"))
    with pytest.raises(LogError, match=r"receiver_frames\.csv"):
        read_log_csv(broken)


def test_convert_writes_parquet_with_provenance(tmp_path: Path) -> None:
    csv_dir, out = tmp_path / "csv", tmp_path / "out"
    csv_dir.mkdir()
    (csv_dir / "receiver_frames.csv").write_text(FRAMES_CSV)
    (csv_dir / "receiver_summary.json").write_text('{"role": "receiver"}')
    written = convert_logs(csv_dir, out, {"run": "r1"})
    assert sorted(p.name for p in written) == ["receiver_frames.parquet", "receiver_summary.json"]
    assert read_provenance(out / "receiver_frames.parquet") == {"run": "r1"}
    assert set(LOG_TABLES) >= {"sender_packets.csv", "controller.csv", "receiver_packets.csv"}


def _fake_generator(csv_dir: Path) -> list[str]:
    # A real process standing in for cga-cg: writes one log where it is told to.
    target = csv_dir / "receiver_frames.csv"
    script = f"import pathlib; pathlib.Path({str(target)!r}).write_text({FRAMES_CSV!r})"
    return [sys.executable, "-c", script]


def test_runner_converts_and_refuses_to_overwrite(tmp_path: Path) -> None:
    log = tmp_path / "log"
    written = run_generator(_fake_generator, log)
    assert [p.name for p in written] == ["receiver_frames.parquet"]
    assert sorted(p.name for p in log.iterdir()) == ["receiver_frames.parquet"]  # no CSV left
    with pytest.raises(GeneratorError, match="write-once"):
        run_generator(_fake_generator, log)


def test_runner_reports_a_failing_generator(tmp_path: Path) -> None:
    with pytest.raises(GeneratorError, match="status 3"):
        run_generator(lambda d: [sys.executable, "-c", "raise SystemExit(3)"], tmp_path / "l")
    assert list((tmp_path / "l").iterdir()) == []
