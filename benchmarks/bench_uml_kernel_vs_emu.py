"""cga-emu against the Linux kernel's own qdiscs, side by side: same traffic, same schedule.

    sudo .venv/bin/python -m benchmarks.bench_uml_kernel_vs_emu [--repeat 2]
        [--time-scale 0.25] [--cases htb-cubic,htb-bbr,dualpi2-cubic,pfifo-cubic,fq_codel-cubic]
        [--out DIR] [--json F]

Each case is a TMA 2024 run (``configs/campaigns/tma2024.yaml``: the SCReAM CG flow in L4S
mode against iperf3 through 50 Mbit/s, 15 ms each way, the TMA schedule scaled by
``--time-scale``) run twice per repetition, one after the other:

- emulator: the ``netns`` testbed with ``backend: emulator`` (cga-emu bridges the router's
  interfaces; the delay is cga-emu's delay-only hop after the bottleneck);
- kernel: the ``uml`` testbed with ``backend: kernel`` (the router is a user-mode Linux
  kernel, ``bash scripts/build-uml.sh``: its HTB, SFQ, DualPI2, fq_codel and netem).

Cases: ``htb-cubic``, ``htb-bbr`` (TMA's HTB with the SFQ CG leaf), ``dualpi2-cubic``
(SCReAM's ECT(1) in the L queue), ``pfifo-cubic`` (drop-tail: the delay hop in the round
trip of both flows), ``fq_codel-cubic`` (an AQM of the extensions, kernel defaults).

Printed per case and metric: each plane's mean over the repetitions with its spread
(min-max), the emulator's difference from the kernel, and whether it meets the target
(CG mean queuing delay within 10 % or 0.3 ms, whichever is larger; rates within 5 %).
Also the UML router's own overhead: the idle delay floor through each router and the
TCP flow's minimum RTT (the delay hop: 30 ms of netem or cga-emu). Timing-sensitive: run
it alone on a quiet machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

CAMPAIGN = Path(__file__).resolve().parents[1] / "configs" / "campaigns" / "tma2024.yaml"
CASES = ("htb-cubic", "htb-bbr", "dualpi2-cubic", "pfifo-cubic", "fq_codel-cubic")
PLANES = ("emulator", "kernel")
#: (metric, role, key in the run's metrics, unit, target: relative, absolute floor)
METRICS: tuple[tuple[str, str, str, str, float, float], ...] = (
    ("CG mean queuing delay", "cg", "delay_mean_ms", "ms", 0.10, 0.3),
    ("CG mean bitrate", "cg", "bitrate_mean_mbps", "Mbit/s", 0.05, 0.0),
    ("TCP mean bitrate", "competitor", "bitrate_mean_mbps", "Mbit/s", 0.05, 0.0),
    ("TCP mean queuing delay", "competitor", "delay_mean_ms", "ms", 0.10, 0.3),
    ("CG loss rate", "cg", "loss_rate", "", 0.0, 0.0),
)


def _config(case: str, plane: str) -> Any:
    from cganalysis.experiment.campaign import load_campaign
    from cganalysis.experiment.config import TestbedRef
    from cganalysis.testbed.spec.config import parse_direction
    from cganalysis.testbed.spec.validate import Section

    qdisc, cca = case.split("-")
    base = "pfifo" if qdisc == "fq_codel" else qdisc
    run = next(
        r
        for r in load_campaign(CAMPAIGN).runs
        if r.levels == {"qdisc": base, "cca": cca} and r.repetition == 1
    )
    cfg = run.config
    b = cfg.bottleneck
    if qdisc == "fq_codel":
        d = parse_direction(
            Section({"rate_mbit": 50, "shaper": "htb", "qdisc": {"kind": "fq_codel"}}, case), 30.0
        )
        b = dataclasses.replace(b, forward=d)
    if plane == "kernel":
        b = dataclasses.replace(b, backend="kernel")
        return dataclasses.replace(cfg, bottleneck=b, testbed=TestbedRef("uml"))
    return dataclasses.replace(cfg, bottleneck=dataclasses.replace(b, backend="emulator"))


def _run(case: str, plane: str, rep: int, scale: float, out: Path) -> dict[str, Any]:
    from cganalysis import open_run
    from cganalysis.experiment.plan import RunOptions
    from cganalysis.experiment.runner import run_experiment

    run_dir = out / f"{case}-{plane}-r{rep:02d}"
    if not (run_dir / "meta.json").is_file():
        opts = RunOptions(run_id=run_dir.name, time_scale=scale, progress=lambda _m: None)
        run_experiment(_config(case, plane), run_dir, opts)
    run = open_run(run_dir)
    meta, metrics = run.meta, run.metrics
    rtts = [
        json.loads(p.read_text())["end"]["streams"][0]["sender"].get("min_rtt")
        for p in sorted(run_dir.glob("iperf3-step*.json"))
    ]
    rtts = [r / 1000 for r in rtts if r]
    return {
        "roles": {k: metrics["roles"].get(k, {}) for k in ("cg", "competitor")},
        "idle_floor_ms": (meta.get("calibration") or {}).get("idle_delay_floor", {}),
        "tcp_min_rtt_ms": min(rtts) if rtts else None,
        "capacity_measured_mbps": meta.get("capacity_measured_mbps"),
        "flags": meta.get("flags", []) + metrics.get("flags", []),
    }


def _spread(values: list[float]) -> str:
    if not values:
        return "-"
    mean = statistics.fmean(values)
    return f"{mean:8.3f} [{min(values):.3f}-{max(values):.3f}]"


def report(results: dict[str, dict[str, list[dict[str, Any]]]]) -> str:
    lines = []
    head = f"{'case':<15} {'metric':<24} {'emulator mean [min-max]':>26} "
    head += f"{'kernel mean [min-max]':>26} {'diff':>8}  target"
    lines.append(head)
    for case, planes in results.items():
        for name, role, key, unit, rel, floor in METRICS:
            got = {
                p: [
                    float(r["roles"][role][key])
                    for r in planes.get(p, [])
                    if key in r["roles"][role]
                ]
                for p in PLANES
            }
            emu, ker = got["emulator"], got["kernel"]
            verdict, diff = "", ""
            if emu and ker:
                e, k = statistics.fmean(emu), statistics.fmean(ker)
                diff = f"{(e - k) / k * 100:+.1f}%" if k else f"{e - k:+.3f}"
                if rel > 0:
                    verdict = "ok" if abs(e - k) <= max(rel * abs(k), floor) else "OFF"
            label = f"{name} ({unit})" if unit else name
            lines.append(
                f"{case:<15} {label:<24} {_spread(emu):>26} {_spread(ker):>26} {diff:>8}  {verdict}"
            )
        for p in PLANES:
            for r in planes.get(p, []):
                floor = r["idle_floor_ms"]
                lines.append(
                    f"{case:<15} {p + ' router':<24} idle floor median "
                    f"{floor.get('median_ms', float('nan')):.3f} ms, p99 "
                    f"{floor.get('p99_ms', float('nan')):.3f} ms; TCP min RTT "
                    f"{r['tcp_min_rtt_ms'] or float('nan'):.2f} ms; capacity "
                    f"{r['capacity_measured_mbps'] or float('nan'):.2f} Mbit/s"
                    + (f"; flags: {'; '.join(r['flags'])}" if r["flags"] else "")
                )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    fmt = argparse.RawTextHelpFormatter
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--time-scale", type=float, default=0.25)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--out", type=Path, default=Path("results/bench/uml-vs-emu"))
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    cases = [c for c in a.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error(f"--cases: unknown {', '.join(unknown)} (known: {', '.join(CASES)})")
    a.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    t0 = time.monotonic()
    total = len(cases) * len(PLANES) * a.repeat
    n = 0
    for rep in range(1, a.repeat + 1):
        for case in cases:
            for plane in PLANES:
                n += 1
                print(
                    f"[{time.monotonic() - t0:6.0f} s] {n}/{total}: {case} {plane} r{rep}",
                    flush=True,
                )
                res = _run(case, plane, rep, a.time_scale, a.out)
                results.setdefault(case, {}).setdefault(plane, []).append(res)
    text = report(results)
    print(text)
    if a.json is not None:
        a.json.write_text(json.dumps({"time_scale": a.time_scale, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
