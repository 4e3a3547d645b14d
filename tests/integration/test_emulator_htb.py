"""The same experiment through the kernel's HTB + pfifo and through cga-emu's HTB + pfifo,
on this machine: delivered rates and queueing-delay distributions, measured from the
router's two captures. The emulator must deliver its configured rate; the kernel's HTB here
delivers less (timers wake late, docs/testbed.md, Calibration), so each is checked against its own
measured rate: a full pfifo of N packets of S bytes delays by N S / rate. The printed table
is what docs/emulator.md reports."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from cganalysis.matching import match_files
from tests.conftest import need_root, need_tool
from tests.integration.emu_helpers import need_emulator
from tests.support.netbed import Bed, bed, quantiles, steady, wait_ok, wire_mbit

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]

RATE_MBIT = 10.0
LIMIT = 100
KERNEL_TC = [
    ["qdisc", "add", "dev", "r1", "root", "handle", "1:", "htb", "default", "1"],
    ["class", "add", "dev", "r1", "parent", "1:", "classid", "1:1", "htb", "rate",
     f"{RATE_MBIT:g}mbit", "ceil", f"{RATE_MBIT:g}mbit", "quantum", "1514"],
    ["qdisc", "add", "dev", "r1", "parent", "1:1", "handle", "10:", "pfifo", "limit", str(LIMIT)],
]  # fmt: skip
EMU_PIPELINE = {
    "rate": {"mbit": RATE_MBIT},
    "qdisc": {
        "kind": "htb",
        "default": "1",
        "classes": [
            {"classid": "1", "rate_mbit": RATE_MBIT, "ceil_mbit": RATE_MBIT,
             "leaf": {"kind": "pfifo", "limit": LIMIT}},
        ],
    },
}  # fmt: skip


@pytest.fixture(scope="module")
def net() -> Iterator[Bed]:
    need_root()
    need_tool("tcpdump", "iperf3", "ethtool")
    need_emulator()
    with bed("htb") as b:
        yield b


def run(net: Bed, workdir: Path, backend: str, port: int, *iperf_args: str) -> dict[str, Any]:
    workdir.mkdir()
    if backend == "kernel":
        net.kernel_bridge(KERNEL_TC)
        try:
            with net.taps(workdir) as taps:
                out = wait_ok(net.iperf(port, 4, *iperf_args), 40)
        finally:
            net.unbridge()
    else:
        with net.emulator(workdir, EMU_PIPELINE, events=False), net.taps(workdir) as taps:
            out = wait_ok(net.iperf(port, 4, *iperf_args), 40)
    m = match_files(taps.ingress, taps.egress)
    flow = m.packets.filter((pl.col("dport") == port) & (pl.col("size_bytes") > 500))
    ok = steady(flow.filter(pl.col("lost").not_()))
    frame_bytes = float(ok["size_bytes"].median()) + 14  # type: ignore[arg-type]
    rate = wire_mbit(ok)
    return {
        "backend": backend,
        "rate_mbit": round(rate, 2),
        "delay_ms": quantiles(ok["delay_ms"]),
        "full_buffer_ms": round(LIMIT * frame_bytes * 8 / (rate * 1e6) * 1e3, 1),
        "loss": round(float(steady(flow)["lost"].mean()), 3),  # type: ignore[arg-type]
        "iperf3": json.loads(out)["end"],
    }


@pytest.mark.parametrize("traffic", ["udp", "cubic"])
def test_kernel_and_emulator_htb_agree(net: Bed, tmp_path: Path, traffic: str) -> None:
    args = ("-u", "-b", "15M", "-l", "1000") if traffic == "udp" else ("-C", "cubic")
    port = 5401 if traffic == "udp" else 5402
    kernel = run(net, tmp_path / "kernel", "kernel", port, *args)
    emu = run(net, tmp_path / "emu", "emulator", port + 10, *args)
    for r in (kernel, emu):
        print(traffic, r["backend"], {k: v for k, v in r.items() if k != "iperf3"})
    # The emulator delivers the configured rate; the kernel's HTB at most that.
    assert abs(emu["rate_mbit"] / RATE_MBIT - 1) < 0.02
    assert 0.3 < kernel["rate_mbit"] / RATE_MBIT < 1.03
    for r in (kernel, emu):
        if traffic == "udp":
            # A saturating UDP flow keeps the pfifo full: delay = the buffer's drain time.
            assert 0.8 < r["delay_ms"]["p50"] / r["full_buffer_ms"] < 1.1, r
            assert r["loss"] > 0.2
        else:
            # Cubic fills the buffer and backs off: delays between empty and full buffer.
            assert 0.2 < r["delay_ms"]["p50"] / r["full_buffer_ms"] < 1.1, r
