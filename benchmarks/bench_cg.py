"""CPU cost and pacing accuracy of the CG generator at 30 Mbit/s, next to the host's timers.

    python -m benchmarks.bench_cg [--duration 15] [--rate-mbps 30] [--mode auto|netns|loopback]

The issue's targets: sender and receiver each at most 10 % of one core at 30 Mbit/s, and a
pacing error (|send time - scheduled time|) of at most 1 ms at the 99th percentile. As the
reference, measured in the same run: how late this host wakes a sleeping thread (`cga-cg
timer-lateness`, 200 us sleeps, with the kernel's default 50 us timer slack and with the
1 ns slack the sender asks for), before and after the runs.

Runs, each `--duration` seconds, sender and receiver as separate processes:
- `none` at `--rate-mbps` (constant bitrate; 60 fps frames paced at 1.5x);
- `scream` with `--max-mbps` = `--rate-mbps` on an unshaped link (it runs at its maximum);
- `none` again with `--burst-us 0` (one wake-up per packet, no microbursts), to show what
  the default 500 us microbursts save.
As root the two ends sit in two network namespaces joined by a veth pair (offloads off),
as in the testbed; otherwise they use the loopback interface. CPU figures are the
processes' own CPU time (user + system) over their wall time, as the binary reports it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cganalysis.cg.binary import find_binary

PORT = 30002


@contextmanager
def endpoints(mode: str) -> Iterator[tuple[list[str], list[str], str]]:
    """(sender command prefix, receiver command prefix, receiver IP)."""
    if mode == "loopback":
        yield [], [], "127.0.0.1"
        return
    tag = f"cgb{os.getpid()}"
    tx_ns, rx_ns = f"{tag}t", f"{tag}r"

    def sh(*cmd: str) -> None:
        subprocess.run(cmd, check=True, capture_output=True)

    try:
        sh("ip", "netns", "add", tx_ns)
        sh("ip", "netns", "add", rx_ns)
        sh(
            "ip",
            "-n",
            tx_ns,
            "link",
            "add",
            "b0",
            "type",
            "veth",
            "peer",
            "name",
            "b1",
            "netns",
            rx_ns,
        )
        for ns, dev, addr in ((tx_ns, "b0", "10.90.0.1/24"), (rx_ns, "b1", "10.90.0.2/24")):
            sh(
                "ip",
                "netns",
                "exec",
                ns,
                "ethtool",
                "-K",
                dev,
                "tso",
                "off",
                "gso",
                "off",
                "gro",
                "off",
            )
            sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        yield ["ip", "netns", "exec", tx_ns], ["ip", "netns", "exec", rx_ns], "10.90.0.2"
    finally:
        for ns in (tx_ns, rx_ns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def timer_lateness(binary: Path) -> dict[str, float]:
    out = subprocess.run(
        [str(binary), "timer-lateness", "--samples", "5000", "--interval-us", "200"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    data: dict[str, float] = json.loads(out)
    return data


def run_pair(
    binary: Path, tx: list[str], rx: list[str], ip: str, args: list[str], duration: float
) -> tuple[dict[str, Any], dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="bench-cg-") as tmp:
        d = Path(tmp)
        receiver = subprocess.Popen(
            [*rx, str(binary), "receive", f"{ip}:{PORT}", "--duration", f"{duration + 1.5:g}",
             "--quiet", "--log", str(d / "rx")]
        )  # fmt: skip
        time.sleep(0.5)
        subprocess.run(
            [*tx, str(binary), "send", f"{ip}:{PORT}", "--duration", f"{duration:g}", "--quiet",
             "--log", str(d / "tx"), *args],
            check=True,
        )  # fmt: skip
        if receiver.wait(duration + 30) != 0:
            raise RuntimeError("cga-cg receive failed")
        tx_summary = json.loads((d / "tx" / "sender_summary.json").read_text())
        rx_summary = json.loads((d / "rx" / "receiver_summary.json").read_text())
    return tx_summary, rx_summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=15.0)
    ap.add_argument("--rate-mbps", type=float, default=30.0)
    ap.add_argument("--mode", choices=("auto", "netns", "loopback"), default="auto")
    a = ap.parse_args()
    mode = a.mode if a.mode != "auto" else ("netns" if os.geteuid() == 0 else "loopback")
    binary = find_binary()
    rate = f"{a.rate_mbps:g}"
    runs = [
        ("none", ["--cc", "none", "--rate-mbps", rate]),
        ("scream", ["--cc", "scream", "--max-mbps", rate]),
        ("none, --burst-us 0", ["--cc", "none", "--rate-mbps", rate, "--burst-us", "0"]),
    ]
    print(f"cga-cg at {rate} Mbit/s, {a.duration:g} s per run, {mode}, {os.cpu_count()} CPUs")
    before = timer_lateness(binary)
    results = []
    with endpoints(mode) as (tx, rx, ip):
        for name, args in runs:
            results.append((name, *run_pair(binary, tx, rx, ip, args, a.duration)))
    after = timer_lateness(binary)

    print("\nreference: host timer lateness for 200 us sleeps (p50 / p99 / max, us)")
    for label, t in (("before", before), ("after", after)):
        print(
            f"  {label:6s} default 50 us slack: {t['default_slack_p50_us']:7.0f} "
            f"{t['default_slack_p99_us']:7.0f} {t['default_slack_max_us']:7.0f}   "
            f"1 ns slack: {t['slack_1ns_p50_us']:7.0f} {t['slack_1ns_p99_us']:7.0f} "
            f"{t['slack_1ns_max_us']:7.0f}"
        )
    print(
        "\nrun                  rate   sender  receiver  pacing |error| us      lateness us"
        "\n                   Mbit/s   %core     %core   p50    p99    max     p50    p99"
    )
    for name, s, r in results:
        print(
            f"{name:18s} {s['mean_rate_mbps']:6.1f} {s['cpu_pct_one_core']:7.1f} "
            f"{r['cpu_pct_one_core']:9.1f} {s['pacing_error_p50_us']:5.0f} "
            f"{s['pacing_error_p99_us']:6.0f} {s['pacing_error_max_us']:6.0f} "
            f"{s['pacing_lateness_p50_us']:7.0f} {s['pacing_lateness_p99_us']:6.0f}"
        )
    print(
        "\ntargets: sender and receiver <= 10 % of one core each, pacing error p99 <= 1000 us. "
        "Packets due within the microburst window (--burst-us, default 500) leave together, "
        "up to that much early; lateness is how late the rest leave."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
