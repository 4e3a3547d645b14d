"""mahimahi's mm-link against cga-emu's trace link, side by side: same trace, same traffic.

    sudo .venv/bin/python -m benchmarks.bench_mahimahi_vs_emu [--duration-s 30]
        [--trace cga-lte-s1-60s] [--cases udp-mean,udp-over,scream,cubic] [--out DIR]
        [--json F]

Each case is one run per data plane on the ``netns`` testbed, one after the other, with the
same run file but ``bottleneck.backend``: ``mahimahi`` (mm-link and mm-delay between
router and client, as an unprivileged user) or ``emulator`` (cga-emu bridging the router,
its delay-only hop after it). Link: the trace's ``.down`` / ``.up`` (the project's LTE-like
model by default), drop-tail 250 packets each way (mahimahi's ``droptail packets=250``),
15 ms each way. Cases: ``udp-mean`` / ``udp-over`` (constant-rate UDP, the rtp-cbr
stand-in, at the trace's mean and at 1.5 x it), ``scream`` (cga-cg's SCReAM, ECT(1),
0.5-30 Mbit/s), ``cubic`` (bulk iperf3 Cubic alone, with a 0.5 Mbit/s UDP probe).

Printed per case: each plane's delivered rate of the case's flow (mean over the window,
and the per-second series' correlation between the planes), its queuing delay (mean,
median, p95; egress minus ingress capture, one clock), its loss, and whether the emulator
meets the target against mahimahi: rates within 5 %, mean queuing delay within 10 %
(or 2 ms, mahimahi's clock counting whole milliseconds). Needs root and mahimahi; takes
about (duration + 25 s) per run, plus the wait for the testbed lock.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

PLANES = ("mahimahi", "emulator")
CASES = ("udp-mean", "udp-over", "scream", "cubic")


def run_doc(case: str, plane: str, trace: str, mean_mbit: float, duration_s: int) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": f"mm-vs-emu-{case}",
        "testbed": "netns",
        "schedule": {
            "preset": "custom",
            "duration_s": duration_s,
            "competitor": [{"t_s": 0, "rate_mbit": "bulk"}] if case == "cubic" else [],
            "window_s": [3, duration_s - 1],
        },
        "bottleneck": {
            "backend": plane,
            "trace": f"{trace}.down",
            "qdisc": {"kind": "pfifo", "limit": 250},
            "reverse": {"trace": f"{trace}.up", "qdisc": {"kind": "pfifo", "limit": 250}},
        },
        "propagation": {"forward_ms": 15, "reverse_ms": 15},
        "competitor": {"tool": "iperf3", "cca": "cubic"},
        "calibration": {"enabled": False},
    }
    if case in ("udp-mean", "udp-over", "cubic"):
        rate = {"udp-mean": mean_mbit, "udp-over": 1.5 * mean_mbit, "cubic": 0.5}[case]
        doc["cg"] = {"source": "rtp-cbr", "cc": "none", "rate_mbit": round(rate, 3)}
    else:
        doc["cg"] = {
            "source": "cga-cg",
            "cc": "scream",
            "ecn": "ect1",
            "rate_mbit": 10,
            "min_mbit": 0.5,
            "max_mbit": 30,
        }
    return doc


def measure(run_dir: Path, role: str, window_s: tuple[float, float]) -> dict[str, Any]:
    import polars as pl

    from cganalysis import open_run

    run = open_run(run_dir)
    roles = run.metrics["roles"].get(role, {})
    pk = run.packets
    # Seconds of the trace, not of the run: each plane starts its trace at its own time
    # before the traffic (capacity_trace_offset_s), so trace time lines the two up.
    trace_t0 = run.meta["start_ns"] + round(run.meta["capacity_trace_offset_s"] * 1e9)
    proto = 6 if role == "competitor" else 17
    flow = pk.filter(pl.col("proto") == proto)
    got = (
        flow.filter(pl.col("lost").not_())
        .with_columns(s=((pl.col("t_egress_ns") - trace_t0) // 1_000_000_000).cast(pl.Int64))
        .filter((pl.col("s") >= window_s[0]) & (pl.col("s") < window_s[1]))
        .group_by("s")
        .agg(pl.col("size_bytes").sum())
        .sort("s")
    )
    per_s = dict(zip(got["s"].to_list(), got["size_bytes"].to_list(), strict=True))
    seconds = range(int(window_s[0]), int(window_s[1]))
    series = [per_s.get(s, 0) * 8 / 1e6 for s in seconds]
    times = run.trace_ms
    assert times is not None
    # What the trace offers in those seconds, in 1500-byte IP packets (one per opportunity).
    cap = [
        np.count_nonzero((times >= s * 1000) & (times < (s + 1) * 1000)) * 0.012 for s in seconds
    ]
    return {
        "rate_mbps": float(np.mean(series)),
        "capacity_mbps": float(np.mean(cap)),
        "per_s_mbps": series,
        "delay_mean_ms": roles.get("delay_mean_ms"),
        "delay_p50_ms": roles.get("delay_p50_ms"),
        "delay_p95_ms": roles.get("delay_p95_ms"),
        "loss_rate": roles.get("loss_rate"),
        "flags": run.meta.get("flags", []) + run.metrics.get("flags", []),
    }


def _run(case: str, plane: str, args: argparse.Namespace, mean: float, out: Path) -> Path:
    import yaml

    from cganalysis.experiment.config import load_run
    from cganalysis.experiment.plan import RunOptions
    from cganalysis.experiment.runner import run_experiment

    run_dir = out / f"{case}-{plane}"
    if not (run_dir / "meta.json").is_file():
        path = out / f"{case}-{plane}.yaml"
        path.write_text(yaml.safe_dump(run_doc(case, plane, args.trace, mean, args.duration_s)))
        opts = RunOptions(run_id=run_dir.name, progress=lambda m: print(f"  {m}", flush=True))
        run_experiment(load_run(path), run_dir, opts)
    return run_dir


def verdict(mm: dict[str, Any], emu: dict[str, Any]) -> str:
    rate = emu["rate_mbps"] / mm["rate_mbps"] - 1 if mm["rate_mbps"] else float("nan")
    d_mm, d_emu = mm["delay_mean_ms"] or 0.0, emu["delay_mean_ms"] or 0.0
    delay = (d_emu - d_mm) / d_mm if d_mm else float("nan")
    ok = abs(rate) <= 0.05 and (abs(delay) <= 0.10 or abs(d_emu - d_mm) <= 2.0)
    return f"rate {100 * rate:+.1f} %, delay {100 * delay:+.1f} % -> {'ok' if ok else 'MISS'}"


def report(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    lines = [
        f"{'case':<10} {'plane':<9} {'rate':>7} {'of cap':>6} {'corr':>5} {'delay mean':>10} "
        f"{'p50':>7} {'p95':>7} {'loss %':>7}"
    ]
    for case, planes in results.items():
        mm, emu = planes["mahimahi"], planes["emulator"]
        corr = float(np.corrcoef(mm["per_s_mbps"], emu["per_s_mbps"])[0, 1])
        for plane, r in planes.items():
            lines.append(
                f"{case:<10} {plane:<9} {r['rate_mbps']:7.2f} "
                f"{r['rate_mbps'] / r['capacity_mbps']:6.3f} "
                f"{corr if plane == 'emulator' else float('nan'):5.2f} "
                f"{r['delay_mean_ms'] or 0:10.2f} {r['delay_p50_ms'] or 0:7.2f} "
                f"{r['delay_p95_ms'] or 0:7.2f} {100 * (r['loss_rate'] or 0):7.2f}"
            )
        lines.append(f"{'':<10} {verdict(mm, emu)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration-s", type=int, default=30)
    ap.add_argument("--trace", default="cga-lte-s1-60s", help="NAME: NAME.down / NAME.up")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--out", type=Path, default=Path("bench-mahimahi"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    from cganalysis.metrics.io import read_trace
    from cganalysis.traces.find import find_trace
    from cganalysis.traces.mahimahi import trace_stats

    trace = find_trace(f"{args.trace}.down", Path.cwd())
    stats = trace_stats(read_trace(trace))
    # The mean of the part the runs replay (from about 1 s before t0 to the end).
    mean = stats.mean_rate_mbps
    print(f"trace {trace}: " + "; ".join(stats.lines()), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    window = (3.0, float(args.duration_s - 1))  # seconds of the trace
    for case in args.cases.split(","):
        role = "competitor" if case == "cubic" else "cg"
        results[case] = {}
        for plane in PLANES:
            print(f"{case} on {plane}", flush=True)
            run_dir = _run(case, plane, args, mean, args.out)
            results[case][plane] = measure(run_dir, role, window)
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
