"""A run directory is committed once, on disk and read-only, and a second process that
planned the same run never replaces or removes the finished one (experiment.rundir)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cganalysis.cli import main
from cganalysis.errors import ConfigError
from cganalysis.experiment import rundir
from cganalysis.testbed.shared import lock

REPO = Path(__file__).resolve().parents[2]
RUN_FILE = REPO / "configs" / "runs" / "quick-htb.yaml"


@pytest.fixture(autouse=True)
def _locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lock, "LOCK_DIR", tmp_path / "locks")


def _finished(out: Path) -> dict[str, bytes]:
    """A finished run as the first process committed it."""
    tmp = rundir.temp_dir(out)
    files = _finished_in(tmp)
    rundir.commit(tmp, out)
    return files


def _contents(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def test_commit_writes_the_run_on_disk_and_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:  # the real fsync, noting what it was called on
        synced.append(str(Path(f"/proc/self/fd/{fd}").readlink()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    out = tmp_path / "raw" / "c" / "r01"
    out.mkdir(parents=True)  # the empty folder Snakemake makes first
    tmp = rundir.temp_dir(out)
    (tmp / "sub").mkdir()
    (tmp / "sub" / "qdisc.jsonl").write_text("{}\n")
    files = _finished_in(tmp)
    rundir.commit(tmp, out)
    assert not tmp.exists()
    assert {n: (out / n).read_bytes() for n in files} == files
    for path in [out, out / "sub"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o555, path
    for path in [*(out / n for n in files), out / "sub" / "qdisc.jsonl"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o444, path
    # Every file and folder was synced before the rename (under the temporary name), then
    # the parent after it.
    for name in [*files, "sub/qdisc.jsonl", "sub", ""]:
        assert str(tmp / name).rstrip("/") in synced, name
    assert synced[-1] == str(out.parent)


def _finished_in(tmp: Path) -> dict[str, bytes]:
    files = {"ingress.pcap": b"in" * 100, "egress.pcap": b"eg" * 90, "meta.json": b"{}\n"}
    for name, data in files.items():
        (tmp / name).write_bytes(data)
    return files


def test_a_run_finished_meanwhile_is_never_replaced(tmp_path: Path) -> None:
    out = tmp_path / "c" / "r01"
    out.mkdir(parents=True)
    second = rundir.temp_dir(out)  # the second process started while the folder was empty
    _finished_in(second)
    first = tmp_path / "first"
    first.mkdir()
    finished = _finished(first)
    out.rmdir()
    first.rename(out)  # ...and the first one committed the run before the second did
    with pytest.raises(ConfigError, match="exists"):
        rundir.commit(second, out)
    assert _contents(out) == finished
    assert rundir.discard(second, keep=False) is None and not second.exists()


def test_a_second_process_stops_at_once_while_the_first_makes_the_run(tmp_path: Path) -> None:
    out = tmp_path / "c" / "r01"
    with (
        rundir.claimed(out, "r01"),
        pytest.raises(ConfigError) as refused,
        rundir.claimed(out, "r01 again"),
    ):
        pass
    message = str(refused.value)
    assert "\n" not in message and str(out) in message
    assert f"pid {os.getpid()} (r01) is making this run now" in message
    with rundir.claimed(out, "r01"):  # released: the next one may
        pass


def test_the_runner_refuses_a_run_another_process_holds_or_finished(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c" / "r01"
    with rundir.claimed(out, "r01"):
        assert main(["experiment", str(RUN_FILE), "-o", str(out)]) == 2
    assert "is making this run now" in capsys.readouterr().err
    assert not out.exists()
    finished = _finished(out)
    assert main(["experiment", str(RUN_FILE), "-o", str(out)]) == 2
    assert f"{out} exists" in capsys.readouterr().err
    assert _contents(out) == finished
