"""Reading and matching speed on a ~2 million packet dual-point pair, next to dpkt.

    python -m benchmarks.bench_capture [--packets 2000000] [--dpkt-packets 200000]

Generates a synthetic ingress/egress pair (snaplen 128, RTP + TCP + UDP through a model
bottleneck), warms the page cache, then prints:
- the whole command as a user runs it: `cganalysis packets INGRESS EGRESS -o OUT` in a
  fresh process (start-up, reading, matching, writing parquet), packets of both captures
  per second next to dpkt's, with its peak memory (bytes per packet); and the start-up
  alone (`cganalysis --help`);
- per stage, packets per second for:
- the native reader alone (columns) and the whole `read_capture` (typed table with RTP
  classification), the issue's target being 10 M packets/s per core;
- dpkt parsing the same file (object parsing of Ethernet/IP/UDP/TCP, the same fields),
  on its first `--dpkt-packets` packets because it is ~100x slower;
- matching: identity keys and pairing (the native matcher), target 5 M packets/s per core;
  then the whole packet table with loss verdicts, the flow table on its own, and writing
  the packet table (parquet, as the command writes it).
Each figure is the median of `--repeat` runs. The reader and the matcher's sorts use a
second core for the second capture; polars may use it for parts of the tables.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dpkt  # type: ignore[import-untyped,unused-ignore]

from cganalysis import _native
from cganalysis.capture import read_capture
from cganalysis.io import write_parquet
from cganalysis.matching import match_captures
from cganalysis.matching.flows import flow_table
from cganalysis.matching.pairing import pair_packets
from tests.support.synthetic import Knobs, make_scenario


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


#: Runs the command line, then writes the process's peak memory (VmHWM, kB) to the file
#: named by argv[1]. Measured inside the child: a forked child's ru_maxrss also counts
#: the parent's pages it shared before exec (this benchmark holds a gigabyte of tables).
_PEAK_PROBE = """
import runpy, sys
peak_file = sys.argv.pop(1)
sys.argv[0] = "cganalysis"
try:
    runpy.run_module("cganalysis.cli", run_name="__main__")
finally:
    with open("/proc/self/status") as status, open(peak_file, "w") as out:
        out.write(next(line.split()[1] for line in status if line.startswith("VmHWM")))
"""


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_process(argv: list[str]) -> float:
    """Wall time of one child process."""
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stderr.decode()}")
    return seconds


def whole_command(ingress: Path, egress: Path, out: Path, repeat: int) -> tuple[float, float, int]:
    """Median wall time, median CPU time (all threads) and largest peak memory (bytes) of
    `cganalysis packets` as a user runs it, each run in a fresh process. On a machine
    shared with other jobs the CPU time says what the wall time would be on a quiet one."""
    peak_file = out.with_name("peak-kb.txt")
    argv = [sys.executable, "-c", _PEAK_PROBE, str(peak_file), "packets"]
    argv += [str(ingress), str(egress), "-o", str(out)]
    times, cpus, peaks = [], [], []
    for _ in range(repeat):
        cpu = _children_cpu_s()
        times.append(run_process(argv))
        cpus.append(_children_cpu_s() - cpu)
        peaks.append(int(peak_file.read_text()) * 1024)
    return statistics.median(times), statistics.median(cpus), max(peaks)


def dpkt_read(path: Path, limit: int) -> int:
    """The reference: dpkt objects, extracting what our reader extracts."""
    rows = []
    with path.open("rb") as fh:
        for i, (ts, buf) in enumerate(dpkt.pcap.Reader(fh)):
            if i >= limit:
                break
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            if not isinstance(ip, dpkt.ip.IP):
                continue
            l4 = ip.data
            row: tuple[Any, ...] = (ts, ip.src, ip.dst, ip.p, ip.id, ip.len, ip.tos, ip.ttl)
            if isinstance(l4, dpkt.tcp.TCP):
                row += (l4.sport, l4.dport, l4.seq, l4.ack, l4.flags)
            elif isinstance(l4, dpkt.udp.UDP):
                row += (l4.sport, l4.dport)
            rows.append(row)
    return min(limit, i + 1)


def stages(ingress: Path, egress: Path, args: argparse.Namespace) -> list[tuple[str, int, float]]:
    """Per-stage figures, in this process: (what, packets, median seconds)."""
    n_in = read_capture(ingress).packets.height
    rows: list[tuple[str, int, float]] = []
    t, _ = timed(lambda: _native.read_capture(str(ingress)), args.repeat)
    rows.append(("native reader (columns)", n_in, t))
    t, ing = timed(lambda: read_capture(ingress), args.repeat)
    rows.append(("read_capture (typed table)", n_in, t))
    n_dpkt = min(args.dpkt_packets, n_in)
    t, _ = timed(lambda: dpkt_read(ingress, n_dpkt), max(1, args.repeat // 2))
    rows.append((f"dpkt (first {n_dpkt:,} packets)", n_dpkt, t))
    eg = read_capture(egress)
    t, _ = timed(lambda: pair_packets(ing.packets, eg.packets, 2_000_000_000), args.repeat)
    rows.append(("matching: keys + pairing", n_in, t))
    t, matched = timed(lambda: match_captures(ing, eg), args.repeat)
    rows.append(("matching: packet table, verdicts", n_in, t))
    t, _ = timed(lambda: flow_table(matched.packets), args.repeat)
    rows.append(("flow table (--flows)", n_in, t))
    out = ingress.with_name("stage.parquet")
    t, _ = timed(lambda: write_parquet(matched.packets, out, fast=True), args.repeat)
    rows.append(("writing the packet table", n_in, t))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=2_000_000)
    parser.add_argument("--dpkt-packets", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    third = args.packets // 3
    print(f"generating a {args.packets:,} packet dual-point pair ...", flush=True)
    scenario = make_scenario(
        Knobs(seed=1, n_rtp=third, n_tcp=third, n_udp=args.packets - 2 * third, p_dup=0.0)
    )
    n_both = scenario.ingress.height + scenario.egress.height
    with tempfile.TemporaryDirectory() as tmp:
        ingress, egress = scenario.write(Path(tmp))
        del scenario
        size_mb = ingress.stat().st_size / 1e6
        print(f"ingress: {size_mb:.0f} MB; both captures: {n_both:,} packets", flush=True)
        ingress.read_bytes()  # into the page cache
        egress.read_bytes()
        rows = stages(ingress, egress, args)
        help_argv = [sys.executable, "-m", "cganalysis.cli", "--help"]
        startup = statistics.median(run_process(help_argv) for _ in range(args.repeat))
        whole, cpu, peak = whole_command(ingress, egress, Path(tmp) / "out.parquet", args.repeat)
        rows.append(("whole `cganalysis packets` (both)", n_both, whole))

    print(f"\n{'what':<34} {'packets':>11} {'seconds':>9} {'M packets/s':>12}")
    for name, n, seconds in rows:
        print(f"{name:<34} {n:>11,} {seconds:>9.3f} {n / seconds / 1e6:>12.2f}")
    native = rows[0][1] / rows[0][2]
    reference = rows[2][1] / rows[2][2]
    print(f"\nnative reader / dpkt: {native / reference:,.0f}x")
    print(f"whole command / dpkt: {n_both / whole / reference:,.0f}x (target 100x)")
    print(f"whole command CPU time (user + sys, all threads): {cpu:.2f} s")
    print(f"start-up (cganalysis --help): {startup:.3f} s (target < 0.3 s)")
    print(
        f"peak memory of the whole command: {peak / 1e6:,.0f} MB, "
        f"{peak / n_both:,.0f} bytes per packet of both captures"
    )


if __name__ == "__main__":
    main()
