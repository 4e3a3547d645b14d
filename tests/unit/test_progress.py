"""Progress lines: on a terminal (a real pseudo-terminal here) they show, redrawn in place
and rate-limited; to a file, a pipe, or with CGANALYSIS_PROGRESS=0, nothing is written."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pytest

from cganalysis.capture.chunks import CaptureChunks
from cganalysis.progress import ENV, REDRAW_S, Progress, silence, wanted
from tests.conftest import FIXTURES

DUALPOINT = FIXTURES / "dualpoint"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def terminal() -> Iterator[tuple[TextIO, int]]:
    """A pseudo-terminal: the stream a command would have as stderr, and the master end
    that reads what it shows."""
    master, slave = pty.openpty()
    stream = os.fdopen(slave, "w", encoding="utf-8")
    try:
        yield stream, master
    finally:
        stream.close()
        os.close(master)


def _shown(master: int) -> str:
    """What the terminal received so far."""
    out = b""
    while select.select([master], [], [], 0.05)[0]:
        try:
            data = os.read(master, 65536)
        except OSError:  # the other end closed
            break
        if not data:
            break
        out += data
    return out.decode()


def test_on_a_terminal_the_line_is_drawn_and_ends_with_the_time(
    terminal: tuple[TextIO, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("TERM", "xterm")
    stream, master = terminal
    assert wanted(stream)
    clock = Clock()
    with Progress("reading", 4e9, stream=stream, clock=clock) as p:
        clock.now += 10.0
        p.add(1e9)
    shown = _shown(master)
    # The first line at once, then one redraw, then the last line, each over the one before.
    assert shown.startswith("\r\x1b[Kreading ...")
    assert "reading: 1.0 GB of 4.0 GB   25 %  100.0 MB/s  30 s left" in shown
    assert shown.endswith("\r\x1b[Kreading: 1.0 GB done in 10 s (100.0 MB/s)\r\n")


def test_redraws_are_rate_limited(
    terminal: tuple[TextIO, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("TERM", "xterm")
    stream, master = terminal
    clock = Clock()
    p = Progress("runs", 2000, unit="runs", stream=stream, clock=clock)
    for _ in range(1000):  # 1000 chunks within one redraw interval: no redraw
        clock.now += REDRAW_S / 2000
        p.add(1)
    assert _shown(master).count("\x1b[K") == 1
    clock.now += REDRAW_S
    p.add(1)
    assert "runs: 1001 runs of 2000 runs   50 %" in _shown(master)
    assert p.done == 1001


def test_a_quick_step_leaves_no_line(
    terminal: tuple[TextIO, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("TERM", "xterm")
    stream, master = terminal
    clock = Clock()
    with Progress("quick", stream=stream, clock=clock):
        clock.now += 0.1
    assert _shown(master) == "\r\x1b[Kquick ...\r\x1b[K"


@pytest.mark.parametrize("setting", ["0", "off"])
def test_the_variable_silences_a_terminal(
    terminal: tuple[TextIO, int], monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    monkeypatch.setenv(ENV, setting)
    stream, master = terminal
    assert not wanted(stream)
    with Progress("reading", 10, stream=stream) as p:
        p.add(5)
    assert _shown(master) == ""


def test_the_workflow_silences_its_jobs(
    terminal: tuple[TextIO, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, "1")  # restored after the test
    monkeypatch.setenv("TERM", "xterm")
    assert wanted(terminal[0])
    silence()
    assert not wanted(terminal[0])


def test_silent_to_a_file_or_a_pipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    with (tmp_path / "log").open("w") as log:
        assert not wanted(log)
        Progress("reading", 10, stream=log).finish()
    assert (tmp_path / "log").read_text() == ""
    assert not wanted(io.StringIO())


def test_threads_add_up() -> None:
    p = Progress("two captures", stream=io.StringIO(), show=True)
    p.expect(2 * 50_000)

    def read() -> None:
        for _ in range(50_000):
            p.add(1)

    threads = [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert p.done == p.total == 100_000


def test_the_chunked_reader_reports_every_byte_of_the_file() -> None:
    path = DUALPOINT / "ingress.pcap"
    p = Progress("reading", stream=io.StringIO(), show=True)
    chunks = CaptureChunks(path, 100, progress=p)
    n = sum(1 for _ in chunks)
    assert n > 5
    assert p.done == p.total == path.stat().st_size
    for _ in chunks:  # read once more (as the out-of-order scan does): expected once more
        pass
    assert p.done == p.total == 2 * path.stat().st_size


def _packets(tmp_path: Path, stderr_fd: int | None) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "cganalysis.cli",
            "packets",
            str(DUALPOINT / "ingress.pcap"),
            str(DUALPOINT / "egress.pcap"),
            "-o",
            str(tmp_path / "packets.parquet"),
            "--flows",
            str(tmp_path / "flows.parquet"),
            "--stream-above-mb",
            "0",
            "--chunk-packets",
            "200",
        ],
        stderr=stderr_fd if stderr_fd is not None else subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env={**env, "TERM": "xterm"},
        check=True,
    )


def test_the_packets_command_shows_its_passes_on_a_terminal_only(tmp_path: Path) -> None:
    master, slave = pty.openpty()
    try:
        _packets(tmp_path, slave)
        os.close(slave)
        shown = _shown(master)
    finally:
        os.close(master)
    # a pcap egress capture is read only in the second pass
    assert "\r\x1b[Kreading the ingress capture (pass 1 of 2) ..." in shown
    assert "\r\x1b[Kmatching (pass 2 of 2) ..." in shown
    assert "matched 1349 ingress packets" in shown
    piped = _packets(tmp_path, None).stderr.decode()
    assert piped.startswith("matched 1349 ingress packets")
    assert "\x1b" not in piped and "pass 1 of 2" not in piped
