"""Reading and matching speed on a ~2 million packet dual-point pair, next to dpkt.

    python benchmarks/bench_capture.py [--packets 2000000] [--dpkt-packets 200000]

Generates a synthetic ingress/egress pair (snaplen 128, RTP + TCP + UDP through a model
bottleneck), warms the page cache, then prints packets per second for:
- the native reader alone (columns) and the whole `read_capture` (typed table with RTP
  classification), the issue's target being 10 M packets/s per core;
- dpkt parsing the same file (object parsing of Ethernet/IP/UDP/TCP, the same fields),
  on its first `--dpkt-packets` packets because it is ~100x slower;
- matching: identity keys and pairing (the native matcher), target 5 M packets/s per core;
  then the whole packet table with loss verdicts, and the flow table on its own.
Each figure is the median of `--repeat` runs. Everything runs on one core: the reader and
the matcher are single-threaded; polars may use a second core for parts of the tables.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dpkt  # type: ignore[import-untyped]

from cganalysis import _native
from cganalysis.capture import read_capture
from cganalysis.matching import match_captures
from cganalysis.matching.flows import flow_table
from cganalysis.matching.pairing import pair_packets
from cganalysis.synthetic import Knobs, make_scenario


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


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
            row = (ts, ip.src, ip.dst, ip.p, ip.id, ip.len, ip.tos, ip.ttl)
            if isinstance(l4, dpkt.tcp.TCP):
                row += (l4.sport, l4.dport, l4.seq, l4.ack, l4.flags)
            elif isinstance(l4, dpkt.udp.UDP):
                row += (l4.sport, l4.dport)
            rows.append(row)
    return min(limit, i + 1)


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
    with tempfile.TemporaryDirectory() as tmp:
        ingress, egress = scenario.write(Path(tmp))
        n_in = scenario.ingress.height
        size_mb = ingress.stat().st_size / 1e6
        print(f"ingress: {n_in:,} packets, {size_mb:.0f} MB; egress: {scenario.egress.height:,}")
        ingress.read_bytes()  # into the page cache
        egress.read_bytes()

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

    print(f"\n{'what':<34} {'packets':>11} {'seconds':>9} {'M packets/s':>12}")
    for name, n, seconds in rows:
        print(f"{name:<34} {n:>11,} {seconds:>9.3f} {n / seconds / 1e6:>12.2f}")
    native = rows[0][1] / rows[0][2]
    reference = rows[2][1] / rows[2][2]
    print(f"\nnative reader / dpkt: {native / reference:,.0f}x")


if __name__ == "__main__":
    main()
