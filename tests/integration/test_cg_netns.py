"""The CG generator through a real kernel bottleneck (root; namespaces, tc, tcpdump).

One bottleneck for the module: TBF 20 Mbit/s (burst 32 kB) + pfifo 250 packets on the
router towards the client (cg_netns.py). Its real capacity is measured in the same module
(shapers here deliver less than configured, docs/testbed.md, Calibration): the `none` run offers 30
Mbit/s, more than the link takes, and what leaves the router is the capacity. Per-packet
queuing delay and loss come from the router's two taps through
`cganalysis.matching.match_files`.

- `none` at 30 Mbit/s fills the buffer (delay near 250 packets' worth) and loses packets;
- SCReAM alone uses most of the measured capacity with a mean queuing delay under 30 ms;
- SCReAM against iperf3 Cubic in the same pfifo yields (TMA 2024's drop-tail runs).

Each run lasts 8-20 s; the module takes about a minute.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from cganalysis.cg.binary import GeneratorNotFoundError, find_binary
from cganalysis.matching import match_files
from tests.conftest import need_root, need_tool
from tests.integration.cg_netns import CLI_IP, Bottleneck, stop

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]

CG_PORT = 30002
IPERF_PORT = 5201
RATE_MBIT = 20.0


def cga_cg() -> Path:
    try:
        return find_binary()
    except GeneratorNotFoundError as err:
        pytest.skip(str(err))


@dataclass(frozen=True)
class Stats:
    packets: int
    lost: int
    delivered_mbps: float
    offered_mbps: float
    delay_mean_ms: float
    delay_p50_ms: float
    delay_p95_ms: float

    @property
    def loss_rate(self) -> float:
        return self.lost / max(self.packets, 1)


def stats(packets: pl.DataFrame, flow: pl.Expr, start_s: float, end_s: float) -> Stats:
    """Statistics of one flow's packets that entered the bottleneck in [start, end)."""
    w = packets.filter(flow & (pl.col("t_s") >= start_s) & (pl.col("t_s") < end_s))
    ok = w.filter(pl.col("lost").not_())
    span = end_s - start_s

    def q(x: float) -> float:
        v = ok["delay_ms"].quantile(x)
        return float("nan") if v is None else float(v)

    mean = ok["delay_ms"].mean()
    return Stats(
        packets=w.height,
        lost=int(w["lost"].sum()),
        delivered_mbps=int(ok["size_bytes"].sum()) * 8 / span / 1e6,
        offered_mbps=int(w["size_bytes"].sum()) * 8 / span / 1e6,
        delay_mean_ms=float("nan") if mean is None else float(mean),  # type: ignore[arg-type]
        delay_p50_ms=q(0.5),
        delay_p95_ms=q(0.95),
    )


CG = (pl.col("proto") == 17) & (pl.col("dport") == CG_PORT)
TCP = (pl.col("proto") == 6) & (pl.col("dport") == IPERF_PORT)


class Runner:
    """Runs one experiment on the shared bottleneck and returns the matched packets."""

    def __init__(self, link: Bottleneck, root: Path, binary: Path) -> None:
        self.link, self.root, self.binary = link, root, binary

    def run(
        self, name: str, send_args: list[str], duration_s: float, cubic_from_s: float | None = None
    ) -> tuple[pl.DataFrame, dict[str, Any]]:
        out = self.root / name
        out.mkdir()
        link, b = self.link, str(self.binary)
        taps = link.start_taps(out)
        server = None
        if cubic_from_s is not None:
            server = link.spawn(
                "cli", f"iperf3 -s -1 -B {CLI_IP} -p {IPERF_PORT}", stdout=subprocess.DEVNULL
            )
        rx = link.spawn(
            "cli", [b, "receive", f"{CLI_IP}:{CG_PORT}", "--log", str(out / "rx"), "--quiet"]
        )
        time.sleep(0.3)
        q0 = link.qdisc_stats()
        t0 = time.monotonic()
        tx = link.spawn(
            "srv",
            [
                b,
                "send",
                f"{CLI_IP}:{CG_PORT}",
                "--duration",
                f"{duration_s:g}",
                "--quiet",
                "--log",
                str(out / "tx"),
                *send_args,
            ],
        )
        client = None
        if cubic_from_s is not None:
            time.sleep(cubic_from_s)
            t_cubic = duration_s - cubic_from_s
            with (out / "iperf3.json").open("wb") as fh:
                client = link.spawn(
                    "srv",
                    f"iperf3 -c {CLI_IP} -p {IPERF_PORT} -t {t_cubic:g} -C cubic -J",
                    stdout=fh,
                )
        assert tx.wait(duration_s + 30) == 0, "cga-cg send failed"
        if client is not None:
            assert client.wait(60) == 0, "iperf3 client failed"
        elapsed = time.monotonic() - t0
        q1 = link.qdisc_stats()
        time.sleep(0.5)  # the queue drains before the taps stop
        stop(rx)
        for t in taps:
            stop(t)
        if server is not None:
            stop(server)
        matched = match_files(out / "ingress.pcap", out / "egress.pcap")
        pk = matched.packets
        t_start = pk.filter(CG)["t_ingress_ns"].min()
        assert isinstance(t_start, int), "no CG packet reached the router"
        pk = pk.with_columns(t_s=(pl.col("t_ingress_ns") - t_start) / 1e9)
        info = {
            "qdisc_drops": q1["drops"] - q0["drops"],
            "qdisc_mbps": (q1["bytes"] - q0["bytes"]) * 8 / elapsed / 1e6,
            "capture_loss_suspect": matched.summary.loss_suspect,
        }
        return pk, info


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    need_root()
    need_tool("tc", "tcpdump", "ethtool", "iperf3", "ip")
    binary = cga_cg()
    with Bottleneck(rate_mbit=RATE_MBIT, limit_packets=250, shaper="tbf", burst="32k") as link:
        yield Runner(link, tmp_path_factory.mktemp("cg-netns"), binary)


@pytest.fixture(scope="module")
def saturated(runner: Runner) -> tuple[Stats, dict[str, Any]]:
    """`none` at 30 Mbit/s for 8 s; its delivered rate is the link's real capacity."""
    pk, info = runner.run("none", ["--cc", "none", "--rate-mbps", "30"], 8.0)
    return stats(pk, CG, 2.0, 7.5), info


@pytest.fixture(scope="module")
def capacity_mbps(saturated: tuple[Stats, dict[str, Any]]) -> float:
    s, _ = saturated
    # Delivered IP bytes while the queue was full: what the shaper really lets through.
    assert 0.5 * RATE_MBIT < s.delivered_mbps < 1.1 * RATE_MBIT, s
    return s.delivered_mbps


def test_none_fills_the_buffer_and_loses(saturated: tuple[Stats, dict[str, Any]]) -> None:
    s, info = saturated
    assert not info["capture_loss_suspect"]
    # 30 Mbit/s offered into ~20: the pfifo stays full, so packets wait about 250 packets'
    # worth (~125 ms at 20 Mbit/s), and about a third is dropped.
    assert s.offered_mbps > 25.0, s
    assert s.delay_p50_ms > 80.0, s
    assert s.loss_rate > 0.1, s
    assert info["qdisc_drops"] > 0, info


def test_scream_alone_uses_the_link_with_low_delay(runner: Runner, capacity_mbps: float) -> None:
    pk, info = runner.run("scream", ["--cc", "scream"], 20.0)
    assert not info["capture_loss_suspect"]
    s = stats(pk, CG, 5.0, 19.5)  # after the ramp-up
    utilisation = s.delivered_mbps / capacity_mbps
    print(f"capacity {capacity_mbps:.2f} Mbit/s; SCReAM {s}; utilisation {utilisation:.2f}")
    assert utilisation > 0.7, (s, capacity_mbps)
    assert s.delay_mean_ms < 30.0, s
    # The buffer holds well over 100 ms (see the `none` run): the low delay is SCReAM's doing.
    assert s.delay_p95_ms < 100.0, s
    assert s.loss_rate < 0.01, s


def test_scream_yields_to_cubic_in_a_shared_fifo(runner: Runner, capacity_mbps: float) -> None:
    pk, _ = runner.run("scream-cubic", ["--cc", "scream"], 20.0, cubic_from_s=6.0)
    alone = stats(pk, CG, 2.0, 6.0)
    cg = stats(pk, CG, 10.0, 19.5)
    tcp = stats(pk, TCP, 10.0, 19.5)
    print(f"capacity {capacity_mbps:.2f}; SCReAM alone {alone}; with Cubic {cg}; Cubic {tcp}")
    # Cubic fills the pfifo, SCReAM reads the delay as congestion and backs off towards its
    # minimum (0.5 Mbit/s): it keeps a small share while Cubic takes most of the link.
    assert cg.delivered_mbps < 0.5 * alone.delivered_mbps, (alone, cg)
    assert cg.delivered_mbps < 0.3 * capacity_mbps, cg
    assert tcp.delivered_mbps > 0.6 * capacity_mbps, tcp
    assert cg.delay_mean_ms > 50.0, cg
