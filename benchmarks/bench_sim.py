"""What simulated time costs, and what it buys: the ``sim`` testbed's wall time per
simulated second by bottleneck rate, and the same run quiet and loaded.

    .venv/bin/python -m benchmarks.bench_sim [--rates 10,50,100] [--seconds 20]
        [--userspace seccomp,ptrace] [--loaded] [--campaign data/raw/tma2024-sim]
        [--cg-bin OLD,NEW [--repeat 2]] [--pin none,auto [--tma] [--repeat 3]] [--out DIR]

- **Rates**: a bulk iperf3 Cubic flow and a 1 Mbit/s RTP stream through an HTB + pfifo
  bottleneck at each rate (15 ms each way), ``--seconds`` of traffic. Printed per rate: the
  run's simulated span (set-up, traffic, teardown), its wall time, wall seconds per
  simulated second, the packets both taps saw, and wall microseconds per packet.
- **Userspace modes** (``--userspace``): each rate in each of UML's modes (``sim.userspace``:
  ``seccomp``, the default, and ``ptrace``), one after the other in the same invocation, so
  the two costs are measured on the same host at the same time of day.
- **Loaded** (``--loaded``): the 50 Mbit/s run again while every host core runs a busy
  loop: its wall time beside the quiet one's, and whether its packet table is identical.
- **CG binaries** (``--cg-bin A,B``): a TMA-like run (cga-cg SCReAM up to 30 Mbit/s and
  iperf3 Cubic at 40 Mbit/s through 50 Mbit/s HTB + pfifo 250, ``--seconds`` of traffic)
  with each ``cga-cg`` build in turn (``$CGA_CG_BIN``), ``--repeat`` rounds, so builds are
  compared on the same host at the same time; then whether each build's packet tables are
  identical across rounds (the run is deterministic) and to the first build's (``--rates ''``
  skips the rate runs).
- **Pinning** (``--pin none,auto``): each ``--rates`` run, and with ``--tma`` the TMA-like
  run of ``--cg-bin``, with each ``sim.cpu`` setting in turn (``none``: unpinned; ``auto``
  or a CPU's number: the kernel and its stubs on one host CPU), ``--repeat`` rounds, the
  settings alternating within each round; then per run and setting the median host CPU
  and wall seconds per simulated second, and whether every packet table is identical
  across settings and rounds (pinning must change no packet).
- **Campaign** (``--campaign DIR``): wall time per simulated minute of the TMA schedule,
  read from a finished campaign's meta.json files (``profiles/sim`` writes
  data/raw/tma2024-sim).

The host's load average is printed with each run: wall times depend on it, the results
do not.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any


def _testbed(out: Path, userspace: str, cpu: str = "auto") -> str:
    path = out / f"sim-{userspace}-cpu-{cpu}.yaml"
    path.write_text(
        f"backend: sim\nsim:\n  userspace: {userspace}\n  cpu: {cpu}\n", encoding="utf-8"
    )
    return str(path)


def _run_file(rate_mbit: float, seconds: int, testbed: str) -> dict[str, Any]:
    return {
        "name": f"sim-bench-{rate_mbit:g}",
        "description": "bulk Cubic and a 1 Mbit/s RTP stream through HTB + pfifo",
        "testbed": testbed,
        "schedule": {
            "preset": "custom",
            "duration_s": seconds + 2,
            "competitor": [
                {"t_s": 1, "rate_mbit": "bulk"},
                {"t_s": seconds + 1, "rate_mbit": "off"},
            ],
            "window_s": [2, seconds + 1],
        },
        "bottleneck": {
            "backend": "kernel",
            "rate_mbit": rate_mbit,
            "shaper": "htb",
            "qdisc": {"kind": "pfifo", "limit": 250},
        },
        "propagation": {"forward_ms": 15, "reverse_ms": 15},
        "cg": {"source": "rtp-cbr", "rate_mbit": 1.0, "port": 30002, "ecn": "ect1"},
        "competitor": {"tool": "iperf3", "cca": "cubic"},
        "calibration": {"enabled": False},
    }


def _tma_run_file(seconds: int, testbed: str = "sim") -> dict[str, Any]:
    """The TMA drop-tail cell, shortened: the CG flow alone, then iperf3 at 40 Mbit/s."""
    return {
        "name": "sim-bench-cg-bin",
        "description": "cga-cg SCReAM and iperf3 Cubic at 40 Mbit/s through HTB + pfifo",
        "testbed": testbed,
        "schedule": {
            "preset": "custom",
            "duration_s": seconds + 2,
            "competitor": [
                {"t_s": 2, "rate_mbit": 40},
                {"t_s": seconds + 1, "rate_mbit": "off"},
            ],
            "window_s": [2, seconds + 1],
        },
        "bottleneck": {
            "backend": "kernel",
            "rate_mbit": 50,
            "shaper": "htb",
            "qdisc": {"kind": "pfifo", "limit": 250},
        },
        "propagation": {"forward_ms": 15, "reverse_ms": 15},
        "cg": {
            "source": "cga-cg",
            "cc": "scream",
            "ecn": "ect1",
            "rate_mbit": 10,
            "min_mbit": 0.5,
            "max_mbit": 30,
            "encoder": "constant",
        },
        "competitor": {"tool": "iperf3", "cca": "cubic"},
        "calibration": {"enabled": False},
    }


def _burn(stop: Any) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def _measure(run_file: dict[str, Any], a: argparse.Namespace, name: str) -> dict[str, Any]:
    from cganalysis.experiment.config import parse_run
    from cganalysis.experiment.plan import RunOptions
    from cganalysis.experiment.runner import run_experiment
    from cganalysis.matching import match_files

    run_dir = a.out / name
    if not (run_dir / "meta.json").is_file():
        cfg = parse_run(run_file, f"{name} (bench_sim)", a.out)
        run_experiment(cfg, run_dir, RunOptions(run_id=name, progress=lambda _m: None))
    meta = json.loads((run_dir / "meta.json").read_text(encoding="utf-8"))
    sim = meta["testbed"]["sim"]
    table = match_files(run_dir / "ingress.pcap", run_dir / "egress.pcap").packets
    packets = table.height + int((~table["lost"]).sum())  # seen at ingress + at egress
    return {
        "sim_s": float(sim["sim_s"]),
        "wall_s": float(sim["wall_s"]),
        "cpu_s": float(sim.get("host_cpu_s", "nan")),
        "packets": packets,
        "load": os.getloadavg()[0],
        "table": table,
        "pinned_cpu": sim.get("pinned_cpu"),
    }


def _one(rate: float, a: argparse.Namespace, name: str, userspace: str) -> dict[str, Any]:
    return _measure(_run_file(rate, a.seconds, _testbed(a.out, userspace)), a, name)


def cg_bin_report(a: argparse.Namespace) -> list[str]:
    """The TMA-like run with each ``cga-cg`` build, builds alternating within each round."""
    builds = [Path(p).resolve() for p in a.cg_bin.split(",")]
    lines = ["", "CG builds: " + ", ".join(f"#{i} {b}" for i, b in enumerate(builds))]
    tables: dict[int, list[Any]] = {i: [] for i in range(len(builds))}
    before = os.environ.get("CGA_CG_BIN")
    try:
        for round_ in range(1, a.repeat + 1):
            for i, build in enumerate(builds):
                os.environ["CGA_CG_BIN"] = str(build)
                r = _measure(_tma_run_file(a.seconds), a, f"cg-bin{i}-round{round_}")
                tables[i].append(r["table"])
                lines.append(_row(r, f"build #{i}, round {round_}"))
                print(lines[-1], flush=True)
    finally:
        if before is None:
            os.environ.pop("CGA_CG_BIN", None)
        else:
            os.environ["CGA_CG_BIN"] = before
    for i, ts in tables.items():
        repeatable = all(t.equals(ts[0]) for t in ts)
        same = ts[0].equals(tables[0][0])
        lines.append(
            f"build #{i}: packet tables identical across rounds: {repeatable}; "
            f"to build #0's: {same}"
        )
    return lines


def pin_report(a: argparse.Namespace) -> list[str]:
    """Each run with each ``sim.cpu`` setting, the settings alternating within each round."""
    settings = a.pin.split(",")
    runs: dict[str, Callable[[str], dict[str, Any]]] = {
        f"{rate:g} Mbit/s": partial(_run_file, rate, a.seconds)
        for rate in (float(x) for x in a.rates.split(",") if x)
    }
    if a.tma:
        runs["TMA-like"] = partial(_tma_run_file, a.seconds)
    lines = ["", f"Pinning (sim.cpu): {', '.join(settings)}; {a.repeat} rounds"]
    got: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for round_ in range(1, a.repeat + 1):
        for label, make in runs.items():
            for cpu in settings:
                name = f"pin-{label.split()[0]}-cpu-{cpu}-round{round_}"
                r = _measure(make(_testbed(a.out, "seccomp", cpu)), a, name)
                got.setdefault((label, cpu), []).append(r)
                on = "" if r["pinned_cpu"] is None else f" ({r['pinned_cpu']})"
                lines.append(_row(r, f"{label}, cpu {cpu}{on}, #{round_}"))
                print(lines[-1], flush=True)
    lines.append("")
    for label in runs:
        for cpu in settings:
            rs = got[(label, cpu)]
            lines.append(
                f"{label}, cpu {cpu} (n={len(rs)}): per sim s, host CPU s "
                f"{_spread([r['cpu_s'] / r['sim_s'] for r in rs])}, wall s "
                f"{_spread([r['wall_s'] / r['sim_s'] for r in rs])}"
            )
        tables = [r["table"] for cpu in settings for r in got[(label, cpu)]]
        same = all(t.equals(tables[0]) for t in tables)
        lines.append(f"{label}: packet tables identical across settings and rounds: {same}")
    return lines


def _spread(values: list[float]) -> str:
    v = sorted(values)
    return f"median {statistics.median(v):.3f} (range {v[0]:.3f}-{v[-1]:.3f})"


def _row(r: dict[str, Any], label: str) -> str:
    per_s = r["wall_s"] / r["sim_s"]
    cpu_per_s = r["cpu_s"] / r["sim_s"]
    us_per_packet = 1e6 * r["cpu_s"] / max(1, r["packets"])
    return (
        f"{label:<30}{r['sim_s']:>8.1f}{r['wall_s']:>9.1f}{per_s:>10.2f}{r['cpu_s']:>9.1f}"
        f"{cpu_per_s:>10.2f}{r['packets']:>12,}{us_per_packet:>12.1f}{r['load']:>7.2f}"
    )


#: wall/sim: wall seconds per simulated second (depends on the host's load); cpu/sim: the
#: kernel's host CPU seconds per simulated second (its cost, whatever the load); cpu
#: us/pkt: host CPU per packet seen by the two taps.
HEADER = (
    f"{'run':<30}{'sim s':>8}{'wall s':>9}{'wall/sim':>10}{'cpu s':>9}{'cpu/sim':>10}"
    f"{'packets':>12}{'cpu us/pkt':>12}{'load':>7}"
)


def campaign_report(folder: Path) -> list[str]:
    lines = ["", f"TMA schedule ({folder}): wall time per simulated minute"]
    for meta_file in sorted(folder.glob("*/meta.json")):
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        sim = (meta.get("testbed") or {}).get("sim") or {}
        if sim.get("sim_s"):
            per_min = 60.0 * float(sim["wall_s"]) / float(sim["sim_s"])
            cpu = float(sim.get("host_cpu_s", "nan"))
            lines.append(
                f"  {meta['run_id']:<36} {float(sim['sim_s']):>7.1f} sim s "
                f"{float(sim['wall_s']):>8.1f} wall s ({per_min:>5.1f} per sim minute) "
                f"{cpu:>8.1f} host CPU s ({60 * cpu / float(sim['sim_s']):>5.1f} per sim minute)"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rates", default="10,50,100")
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--userspace", default="seccomp", help="UML modes, comma-separated")
    ap.add_argument("--loaded", action="store_true")
    ap.add_argument("--campaign", type=Path)
    ap.add_argument("--cg-bin", help="cga-cg builds to compare, comma-separated")
    ap.add_argument("--repeat", type=int, default=2, help="rounds of --cg-bin or --pin")
    ap.add_argument("--pin", help="sim.cpu settings to compare, comma-separated (none,auto)")
    ap.add_argument("--tma", action="store_true", help="--pin: the TMA-like run too")
    ap.add_argument("--out", type=Path, default=Path("results/bench/sim"))
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    lines = [f"sim testbed, {time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} cores", HEADER]
    results = {}
    modes = a.userspace.split(",")
    for rate in (float(x) for x in a.rates.split(",") if x and not a.pin):
        for mode in modes:
            r = _one(rate, a, f"rate-{rate:g}-{mode}", mode)
            if mode == modes[0]:
                results[rate] = r
            lines.append(_row(r, f"{rate:g} Mbit/s, {mode}"))
            print(lines[-1], flush=True)
    if a.loaded:
        stop = multiprocessing.Event()
        burners = [
            multiprocessing.Process(target=_burn, args=(stop,)) for _ in range(os.cpu_count() or 1)
        ]
        for b in burners:
            b.start()
        try:
            loaded = _one(50.0, a, f"rate-50-{modes[0]}-loaded", modes[0])
        finally:
            stop.set()
            for b in burners:
                b.join(10)
        quiet = results.get(50.0) or _one(50.0, a, f"rate-50-{modes[0]}", modes[0])
        same = quiet["table"].equals(loaded["table"])
        lines += [
            _row(loaded, "50 Mbit/s, cores busy"),
            f"packet table identical to the quiet run's: {same}",
        ]
    if a.pin:
        lines += pin_report(a)
    if a.cg_bin:
        lines += cg_bin_report(a)
    if a.campaign is not None:
        lines += campaign_report(a.campaign)
    text = "\n".join(lines)
    print(text)
    (a.out / "report.txt").write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
