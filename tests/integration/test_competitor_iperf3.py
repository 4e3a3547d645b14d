"""The competitor's command line as the real iperf3 takes it (loopback, no root needed).

`competitor.burst_blocks` must make iperf3 write in bursts at the same average rate: the
client's 0.1 s intervals then hold a whole burst or nothing, where its own pacing spreads
the same bytes over every interval.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from cganalysis.experiment.competitor import client_argv
from tests.conftest import need_tool

RATE_MBIT = 40.0
SECONDS = 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    """Whether a socket listens on ``port`` (from /proc: a probe connection would be the
    one test `iperf3 -s -1` serves)."""
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return any(r.split()[1].endswith(f":{port:04X}") and r.split()[3] == "0A" for r in rows)


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 10
    while not _listening(port):
        assert time.monotonic() < deadline, f"iperf3 -s on port {port} never listened"
        time.sleep(0.05)


def _run(burst_blocks: int | None) -> dict[str, Any]:
    port = _free_port()
    server = subprocess.Popen(
        ["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(port)
        argv = client_argv("127.0.0.1", port, SECONDS, RATE_MBIT, "cubic", burst_blocks)
        done = subprocess.run(
            [*argv, "-i", "0.1"], capture_output=True, text=True, timeout=30, check=False
        )
    finally:
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    report: dict[str, Any] = json.loads(done.stdout)
    assert "error" not in report, report.get("error")
    return report


def _interval_bytes(report: dict[str, Any]) -> list[int]:
    return [int(i["sum"]["bytes"]) for i in report["intervals"]]


def test_burst_mode_keeps_the_rate_and_sends_in_bursts() -> None:
    need_tool("iperf3")
    paced, bursty = _run(None), _run(16)
    for report in (paced, bursty):
        sent = report["end"]["sum_sent"]["bits_per_second"] / 1e6
        assert abs(sent - RATE_MBIT) / RATE_MBIT < 0.15, sent
    # 16 writes of 128 KB (2 MB) every 0.4 s against ~0.5 MB in every 0.1 s interval
    assert max(_interval_bytes(bursty)) >= 3 * max(_interval_bytes(paced))
    assert _interval_bytes(bursty).count(0) > _interval_bytes(paced).count(0)
