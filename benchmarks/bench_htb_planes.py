"""TMA 2024's HTB in four data planes, one traffic mix: which differences are HTB's own?

    sudo .venv/bin/python -m benchmarks.bench_htb_planes [--repeat 2] [--seconds 40]
        [--cg-mbit 25] [--leaf pfifo|sfq] [--planes host,emulator,uml,uml-normal] [--out DIR]

The bottleneck is TMA 2024's (``configs/campaigns/tma2024.yaml``): HTB at 50 Mbit/s, CG
class 1:10 rate 10 ceil 50 prio 0, best effort 1:20 rate 20 ceil 50 prio 1 (pfifo 250),
15 ms each way. The traffic is made repeatable: a constant-rate CG flow (``cga-cg --cc
none`` at ``--cg-mbit``, frames at 60 fps, ECT(1)) that needs to borrow, against an iperf3
Cubic bulk flow from 5 s. Planes:

- ``host``: this machine's kernel HTB (netns testbed, ``backend: kernel``): the Linux
  HTB on a kernel whose timers wake on time. Its CG leaf must be pfifo (no sfq here).
- ``emulator``: cga-emu's HTB (netns testbed, ``backend: emulator``).
- ``uml``: the user-mode Linux router's HTB, its process at SCHED_FIFO (the default).
- ``uml-normal``: the same with ``uml.realtime_priority: 0``: the ordinary scheduler, sharing
  the CPUs with the traffic generators and the captures.

Printed per plane: the CG flow's queuing delay (mean, p99, max), loss, bitrate, the TCP
flow's bitrate and delay, the link utilisation; each as the mean over the repetitions with
its min-max. Timing-sensitive: run it alone.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

PLANES = ("host", "emulator", "uml", "uml-normal")
#: (label, role, key, scale): what is printed per plane.
COLUMNS: tuple[tuple[str, str, str, float], ...] = (
    ("CG delay mean ms", "cg", "delay_mean_ms", 1.0),
    ("CG delay p99 ms", "cg", "delay_p99_ms", 1.0),
    ("CG delay max ms", "cg", "delay_max_ms", 1.0),
    ("CG loss %", "cg", "loss_rate", 100.0),
    ("CG Mbit/s", "cg", "bitrate_mean_mbps", 1.0),
    ("TCP Mbit/s", "competitor", "bitrate_mean_mbps", 1.0),
    ("TCP delay mean ms", "competitor", "delay_mean_ms", 1.0),
)


def _run_file(plane: str, leaf: str, seconds: int, cg_mbit: float, bed: Path) -> dict[str, Any]:
    leaf_cfg = {"kind": "sfq", "limit": 63} if leaf == "sfq" else {"kind": "pfifo", "limit": 63}
    testbed: str = {"host": "netns", "emulator": "netns", "uml": "uml"}.get(plane, str(bed))
    return {
        "name": f"htb-planes-{plane}",
        "description": "TMA 2024's HTB, constant-rate CG against Cubic",
        "testbed": testbed,
        "schedule": {
            "preset": "custom",
            "duration_s": seconds,
            "competitor": [
                {"t_s": 5, "rate_mbit": "bulk"},
                {"t_s": seconds - 1, "rate_mbit": "off"},
            ],
            "window_s": [10, seconds - 2],
        },
        "bottleneck": {
            "backend": "emulator" if plane == "emulator" else "kernel",
            "rate_mbit": 50,
            "qdisc": {
                "kind": "htb",
                "default": "20",
                "classes": [
                    {
                        "classid": "10",
                        "rate_mbit": 10,
                        "ceil_mbit": 50,
                        "prio": 0,
                        "leaf": leaf_cfg,
                        "match": {"proto": "udp", "port": 30002},
                    },
                    {
                        "classid": "20",
                        "rate_mbit": 20,
                        "ceil_mbit": 50,
                        "prio": 1,
                        "leaf": {"kind": "pfifo", "limit": 250},
                    },
                ],
            },
        },
        "propagation": {"forward_ms": 15, "reverse_ms": 15},
        "cg": {"source": "cga-cg", "cc": "none", "rate_mbit": cg_mbit, "ecn": "ect1"},
        "competitor": {"tool": "iperf3", "cca": "cubic"},
        "calibration": {"enabled": False},
    }


def _run(plane: str, rep: int, a: argparse.Namespace) -> dict[str, Any]:
    from cganalysis import open_run
    from cganalysis.experiment.config import parse_run
    from cganalysis.experiment.plan import RunOptions
    from cganalysis.experiment.runner import run_experiment

    bed = a.out / "uml-normal.yaml"
    bed.write_text("backend: uml\numl: {realtime_priority: 0}\n", encoding="utf-8")
    run_dir = a.out / f"{a.leaf}-{plane}-r{rep:02d}"
    if not (run_dir / "meta.json").is_file():
        data = _run_file(plane, a.leaf, a.seconds, a.cg_mbit, bed)
        cfg = parse_run(data, f"{plane} (bench_htb_planes)", a.out)
        run_experiment(cfg, run_dir, RunOptions(run_id=run_dir.name, progress=lambda _m: None))
    run = open_run(run_dir)
    return {
        "roles": {k: run.metrics["roles"].get(k, {}) for k in ("cg", "competitor")},
        "utilisation": run.metrics.get("utilisation_total"),
        "scheduling": ((run.meta.get("testbed") or {}).get("uml") or {}).get("scheduling"),
        "flags": run.meta.get("flags", []) + run.metrics.get("flags", []),
    }


def _cell(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.fmean(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


def report(results: dict[str, list[dict[str, Any]]]) -> str:
    planes = list(results)
    lines = [f"{'':<20}" + "".join(f"{p:>24}" for p in planes)]
    for label, role, key, scale in COLUMNS:
        cells = []
        for p in planes:
            vals = [
                float(r["roles"][role][key]) * scale
                for r in results[p]
                if r["roles"][role].get(key) is not None
            ]
            cells.append(_cell(vals))
        lines.append(f"{label:<20}" + "".join(f"{c:>24}" for c in cells))
    util = [_cell([100 * float(r["utilisation"]) for r in results[p]]) for p in planes]
    lines.append(f"{'utilisation %':<20}" + "".join(f"{c:>24}" for c in util))
    for p in planes:
        for i, r in enumerate(results[p], 1):
            extra = f" scheduling: {r['scheduling']};" if r["scheduling"] else ""
            flags = "; ".join(r["flags"]) or "none"
            lines.append(f"{p} r{i}:{extra} flags: {flags}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=40)
    ap.add_argument("--cg-mbit", type=float, default=25.0)
    ap.add_argument("--leaf", choices=("pfifo", "sfq"), default="pfifo")
    ap.add_argument("--planes", default=",".join(PLANES))
    ap.add_argument("--out", type=Path, default=Path("results/bench/htb-planes"))
    a = ap.parse_args(argv)
    planes = [p for p in a.planes.split(",") if p]
    unknown = [p for p in planes if p not in PLANES]
    if unknown:
        ap.error(f"--planes: unknown {', '.join(unknown)} (known: {', '.join(PLANES)})")
    if a.leaf == "sfq" and "host" in planes:
        ap.error("--leaf sfq: this machine's kernel has no sfq; drop the host plane")
    a.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[dict[str, Any]]] = {p: [] for p in planes}
    t0, n, total = time.monotonic(), 0, len(planes) * a.repeat
    for rep in range(1, a.repeat + 1):
        for plane in planes:
            n += 1
            print(f"[{time.monotonic() - t0:5.0f} s] {n}/{total}: {plane} r{rep}", flush=True)
            results[plane].append(_run(plane, rep, a))
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
