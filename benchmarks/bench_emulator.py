"""cga-emu's speed and timing accuracy on this machine, next to references measured in the
same run (run as root; about two minutes)::

    sudo .venv/bin/python -m benchmarks.bench_emulator [--seconds 10] [--json out.json]

On a three-namespace bed (``tests.support.netbed``: srv -- rtr -- cli, the
emulator or a Linux bridge with tc on rtr, taps on rtr's two interfaces) it prints:

1. Forwarding: packets per second forwarded by cga-emu (pass-through, small UDP packets
   from iperf3 as fast as it sends), per CPU-second of the emulator ("on one core") and
   per wall-clock second, next to the kernel bridge forwarding the same load. Target:
   >= 200,000 packets/s on one core.
2. Rate: delivered rate at the egress tap over ``--seconds`` at 50 Mbit/s (80 Mbit/s of
   UDP offered), cga-emu (pfifo 250) next to the kernel's HTB 50 Mbit/s + pfifo 250.
   Target: within 0.5 %.
3. Delay: median and spread of the time through a delay-only cga-emu (10 ms) for a paced
   flow, in its default mode, with --spin-us 50, and busy polling; next to the host's own
   timer lateness for a 100 us sleep measured in the same run. Target: median within 0.1 ms.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import polars as pl

from cganalysis.emulator import find_emulator, read_stats
from cganalysis.matching import match_files
from tests.support.netbed import Bed, bed, cpu_seconds, quantiles, steady, wait_ok, wire_mbit

RATE_MBIT = 50.0
DELAY_MS = 10.0
KERNEL_HTB_50 = [
    ["qdisc", "add", "dev", "r1", "root", "handle", "1:", "htb", "default", "1"],
    ["class", "add", "dev", "r1", "parent", "1:", "classid", "1:1", "htb", "rate", "50mbit",
     "ceil", "50mbit", "quantum", "1514"],
    ["qdisc", "add", "dev", "r1", "parent", "1:1", "handle", "10:", "pfifo", "limit", "250"],
]  # fmt: skip


def host_timer_lateness_us(n: int = 2000) -> dict[str, float]:
    """Overshoot of time.sleep(100 us), the reference for the emulator's added jitter."""
    late = []
    for _ in range(n):
        t0 = time.perf_counter()
        time.sleep(100e-6)
        late.append((time.perf_counter() - t0) * 1e6 - 100)
    return quantiles(pl.Series(late))


def link_tx_packets(net: Bed, dev: str) -> int:
    info = json.loads(net.ip("rtr", "ip", "-j", "-s", "link", "show", dev))
    return int(info[0]["stats64"]["tx"]["packets"])


def forwarding(net: Bed, work: Path, seconds: float) -> dict[str, Any]:
    """Small UDP packets as fast as iperf3 sends them: emulator vs kernel bridge."""
    args = ("-u", "-b", "0", "-l", "64")
    out: dict[str, Any] = {}
    d = work / "fwd_emu"
    d.mkdir()
    with net.emulator(d, {"qdisc": {"kind": "pfifo", "limit": 1000}}, events=False) as emu:
        assert emu.proc is not None
        pid = emu.proc.pid  # `ip netns exec` execs cga-emu in place: same pid
        c0, t0 = cpu_seconds(pid), time.monotonic()
        sent = json.loads(wait_ok(net.iperf(5701, seconds, *args), seconds + 30))
        c1, t1 = cpu_seconds(pid), time.monotonic()
    final = next(r for r in reversed(read_stats(d / "stats.jsonl")) if r["direction"] == "a_to_b")
    offered = sent["end"]["sum"]["packets"]
    out["emulator"] = {
        "offered_pps": round(offered / seconds),
        "forwarded_packets": final["tx_packets"],
        "ring_drops": final["rx_ring_drops"],
        "cpu_s": round(c1 - c0, 2),
        "wall_s": round(t1 - t0, 2),
        "pps_per_cpu_second": round(final["tx_packets"] / max(c1 - c0, 1e-9)),
        "pps_wall": round(final["tx_packets"] / seconds),
    }
    net.kernel_bridge([])
    try:
        before = link_tx_packets(net, "r1")
        sent = json.loads(wait_ok(net.iperf(5702, seconds, *args), seconds + 30))
        after = link_tx_packets(net, "r1")
    finally:
        net.unbridge()
    out["kernel_bridge"] = {
        "offered_pps": round(sent["end"]["sum"]["packets"] / seconds),
        "pps_wall": round((after - before) / seconds),
    }
    return out


def rate_accuracy(net: Bed, work: Path, seconds: float) -> dict[str, Any]:
    args = ("-u", "-b", "80M", "-l", "1472")
    res: dict[str, Any] = {}
    for backend in ("emulator", "kernel_htb"):
        d = work / f"rate_{backend}"
        d.mkdir()
        if backend == "emulator":
            pipe = {"rate": {"mbit": RATE_MBIT}, "qdisc": {"kind": "pfifo", "limit": 250}}
            with net.emulator(d, pipe, events=False), net.taps(d) as taps:
                wait_ok(net.iperf(5711, seconds + 1, *args), seconds + 40)
        else:
            net.kernel_bridge(KERNEL_HTB_50)
            try:
                with net.taps(d) as taps:
                    wait_ok(net.iperf(5712, seconds + 1, *args), seconds + 40)
            finally:
                net.unbridge()
        m = match_files(taps.ingress, taps.egress)
        flow = m.packets.filter(pl.col("dport").is_in([5711, 5712]) & (pl.col("proto") == 17))
        ok = steady(flow.filter(pl.col("lost").not_()), 0.5, 0.5)
        rate = wire_mbit(ok)
        span_ns = int(ok["t_egress_ns"].max()) - int(ok["t_egress_ns"].min())  # type: ignore[arg-type]
        res[backend] = {
            "configured_mbit": RATE_MBIT,
            "delivered_mbit": round(rate, 3),
            "error_pct": round((rate / RATE_MBIT - 1) * 100, 3),
            "window_s": round(span_ns / 1e9, 2),
            "queue_delay_ms": quantiles(ok["delay_ms"]),
            # unknown (no capture log) when either is
            "capture_drops": None
            if m.summary.capture_drops_ingress is None or m.summary.capture_drops_egress is None
            else m.summary.capture_drops_ingress + m.summary.capture_drops_egress,
        }
    return res


def delay_accuracy(net: Bed, work: Path, seconds: float) -> dict[str, Any]:
    res: dict[str, Any] = {}
    modes: dict[str, tuple[tuple[str, ...], bool]] = {
        "default": ((), False),
        "spin_50us": (("--spin-us", "50"), False),
        "busy_poll": ((), True),
    }
    for name, (extra, busy) in modes.items():
        d = work / f"delay_{name}"
        d.mkdir()
        with (
            net.emulator(d, {"delay_ms": DELAY_MS}, extra_args=extra, busy_poll=busy) as emu,
            net.taps(d) as taps,
        ):
            assert emu.proc is not None
            pid = emu.proc.pid
            c0 = cpu_seconds(pid)
            wait_ok(net.paced_udp(5721, 4.0, seconds, size=1000), seconds + 30)
            cpu = cpu_seconds(pid) - c0
        m = match_files(taps.ingress, taps.egress)
        ok = m.packets.filter((pl.col("dport") == 5721) & pl.col("lost").not_())
        err_us = (ok["delay_ms"] - DELAY_MS) * 1e3
        res[name] = {
            "configured_ms": DELAY_MS,
            "median_ms": round(float(ok["delay_ms"].median()), 4),  # type: ignore[arg-type]
            "added_us": quantiles(err_us),
            "added_std_us": round(float(err_us.std()), 1),  # type: ignore[arg-type]
            "emulator_cpu_pct": round(cpu / seconds * 100, 1),
            "packets": ok.height,
        }
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0, help="rate run length (default 10)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    print(f"cga-emu: {find_emulator()}")
    results: dict[str, Any] = {"host_sleep_100us_late_us": host_timer_lateness_us()}
    with tempfile.TemporaryDirectory(prefix="bench_emu.") as tmp, bed("bench") as net:
        work = Path(tmp)
        results["forwarding"] = forwarding(net, work, 5.0)
        results["rate_50mbit"] = rate_accuracy(net, work, args.seconds)
        results["delay_10ms"] = delay_accuracy(net, work, 5.0)
    results["host_sleep_100us_late_us_after"] = host_timer_lateness_us()

    f = results["forwarding"]
    print("\n1. forwarding (64-byte UDP payloads)")
    print(f"   cga-emu       {f['emulator']['pps_per_cpu_second']:>10,} packets/s per CPU-second "
          f"({f['emulator']['pps_wall']:,}/s wall, {f['emulator']['cpu_s']} CPU-s in "
          f"{f['emulator']['wall_s']} s; offered {f['emulator']['offered_pps']:,}/s, ring drops "
          f"{f['emulator']['ring_drops']:,})")  # fmt: skip
    print(f"   kernel bridge {f['kernel_bridge']['pps_wall']:>10,} packets/s wall "
          f"(offered {f['kernel_bridge']['offered_pps']:,}/s)")  # fmt: skip
    print(f"\n2. delivered rate, {RATE_MBIT:g} Mbit/s configured, 80 Mbit/s of UDP offered")
    for k, r in results["rate_50mbit"].items():
        print(f"   {k:<13} {r['delivered_mbit']:>8.3f} Mbit/s ({r['error_pct']:+.3f} %) over "
              f"{r['window_s']} s; queue delay {r['queue_delay_ms']}")  # fmt: skip
    print(f"\n3. delay-only cga-emu, {DELAY_MS:g} ms configured (paced 4 Mbit/s flow)")
    for k, r in results["delay_10ms"].items():
        print(f"   {k:<10} median {r['median_ms']:.4f} ms; added us {r['added_us']}, "
              f"std {r['added_std_us']} us; emulator CPU {r['emulator_cpu_pct']} %")  # fmt: skip
    print(f"   host: time.sleep(100 us) late by (us) {results['host_sleep_100us_late_us']} "
          f"before, {results['host_sleep_100us_late_us_after']} after")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
