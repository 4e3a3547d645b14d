"""cga-emu against the real kernel disciplines, side by side, in the vm testbed's guest.

    sudo .venv/bin/python -m benchmarks.bench_vm_kernel_vs_emu [--rate 10] [--seconds 20] [--json F]

Boots the guest once (Debian's backports kernel: ``bash scripts/install-vm.sh``), and in
it, on the same three-namespace bed as the emulator's own tests (``tests.support.netbed``:
the router bridges r0 <-> r1, taps ``-Q in`` on r0 and ``-Q out`` on r1), runs each case
with the kernel (Linux bridge, the project's rendered tc lines on r1) and with ``cga-emu``
(the same configuration through ``emuconf``):

1. TMA 2024's HTB at ``--rate`` Mbit/s: CG class 1:10 (20 % guaranteed, ceil the link,
   prio 0, SFQ limit 63, port 30002) and best effort 1:20 (80 %, prio 1, pfifo 250);
   a CBR "CG" flow (iperf3 UDP, 15 % of the link, 1200-byte datagrams) against a bulk
   TCP Cubic flow (which borrows what the CG class leaves); both backends get 32 kB
   buckets (tc's default of one packet loses rate to the guest's late timers);
2. netem-style delay: 15 ms one way, no rate limit, the CBR flow plus a TCP Cubic flow
   held to 50 % of ``--rate`` by iperf3;
3. with ``--dualpi2`` (``bash scripts/build-dualpi2.sh`` first): DualPI2 limit 1000 under
   an HTB shaper at ``--rate``, the CBR flow ECT(1) (L queue) against bulk Cubic (C).

Traffic and captures run in the guest (native programs only: iperf3, tcpdump, cga-emu;
Python there is slow under TCG); the captures are matched here and the CG flow's delay
distribution and both flows' delivered rates are printed next to each other.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CG_PORT, TCP_PORT = 30002, 5201
#: The CBR "CG" flow's share of the link: under its class's 20 % guarantee.
CG_SHARE = 0.15


#: HTB buckets: ~25 ms at 10 Mbit/s. With tc's default (one packet) the guest's kernel
#: HTB, whose timers wake late under TCG, delivered 6 of 10 Mbit/s (docs/testbed.md, Calibration, on
#: this machine kind); both backends get the same buckets.
BURST = 32000


def _cases(rate: float, dualpi2: bool, only: str | None = None) -> dict[str, dict[str, Any]]:
    cases = _all_cases(rate, dualpi2)
    return {k: v for k, v in cases.items() if only is None or k in only.split(",")}


def _all_cases(rate: float, dualpi2: bool) -> dict[str, dict[str, Any]]:
    cls = {"burst_bytes": BURST, "cburst_bytes": BURST, "ceil_mbit": rate}
    cases: dict[str, dict[str, Any]] = {
        "htb": {
            "rate_mbit": rate,
            "burst_bytes": BURST,
            "qdisc": {
                "kind": "htb",
                "default": "20",
                "classes": [
                    {
                        "classid": "10",
                        "rate_mbit": rate * 0.2,
                        "prio": 0,
                        **cls,
                        "leaf": {"kind": "sfq", "limit": 63},
                        "match": {"proto": "udp", "port": CG_PORT},
                    },
                    {
                        "classid": "20",
                        "rate_mbit": rate * 0.8,
                        "prio": 1,
                        **cls,
                        "leaf": {"kind": "pfifo", "limit": 250},
                    },
                ],
            },
        },
        "delay": {"delay_ms": 15.0},
    }
    if dualpi2:
        cases["dualpi2"] = {
            "rate_mbit": rate,
            "burst_bytes": BURST,
            "qdisc": {"kind": "dualpi2", "limit": 1000},
        }
    return cases


# --- in the guest -------------------------------------------------------------------------


def collect(
    out: Path,
    rate: float,
    seconds: float,
    dualpi2: bool,
    backends: tuple[str, ...],
    only: str | None = None,
) -> None:
    """Runs every case with ``backends``; captures and iperf3 JSON into ``out``."""
    from cganalysis.testbed.rendering import emuconf
    from cganalysis.testbed.rendering.render import render_direction, render_netem
    from cganalysis.testbed.spec.config import Propagation, parse_direction
    from cganalysis.testbed.spec.validate import Section
    from tests.support.netbed import bed, wait_ok

    cg_rate = rate * CG_SHARE
    for case, spec in _cases(rate, dualpi2, only).items():
        for backend in backends:
            final = out / f"{case}-{backend}"
            # Captures on the guest's own /tmp (memory), copied to the share afterwards:
            # tcpdump writing over 9p costs the one vCPU, and 9p reads of a growing file
            # can fail (ENODATA).
            work = Path(tempfile.mkdtemp(prefix="cga-bench-", dir="/tmp")) / final.name
            work.mkdir()
            t0 = time.monotonic()
            with bed(f"v{case[0]}{backend[0]}") as net:
                if case == "delay":
                    p = Propagation(forward_ms=float(spec["delay_ms"]))
                    tc = [render_netem("r1", p.forward_ms, p)[1:]]
                    pipe: dict[str, Any] = {"rate": None, "qdisc": None,
                                            "delay_ms": p.forward_ms}  # fmt: skip
                    tcp_args = ["-C", "cubic", "-b", f"{rate * 0.5:g}M"]
                else:
                    d = parse_direction(Section(spec, "bench"), 0.0)
                    tc = [argv[1:] for argv in render_direction("r1", d)]
                    pipe = emuconf.bottleneck_pipeline(d)
                    tcp_args = ["-C", "cubic"]
                if backend == "kernel":
                    net.kernel_bridge(tc)
                    ctx: Any = contextlib.nullcontext()
                else:
                    ctx = net.emulator(work, pipe, events=False)
                with ctx, net.taps(work):
                    # ECT(1) for the L queue under DualPI2; HTB and delay ignore ECN.
                    tos = ["--tos", "1"] if case == "dualpi2" else []
                    cg = _iperf(net, CG_PORT, seconds, "-u", "-b", f"{cg_rate:g}M", "-l", "1200",
                                "--cport", "30001", *tos)  # fmt: skip
                    tcp = _iperf(net, TCP_PORT, seconds, *tcp_args)
                    (work / "cg.json").write_bytes(wait_ok(cg, seconds + 60))
                    (work / "tcp.json").write_bytes(wait_ok(tcp, seconds + 60))
                net.unbridge()
            shutil.copytree(work, final)
            shutil.rmtree(work.parent, ignore_errors=True)
            print(f"{case}/{backend}: {time.monotonic() - t0:.0f} s", flush=True)


def _iperf(net: Any, port: int, seconds: float, *args: str) -> Any:
    """netbed's iperf3 pair, with the server given a minute to listen: the guest's one
    vCPU under TCG is busy with the emulator and the captures."""
    import subprocess

    from tests.support.netbed import CLI_IP

    net.spawn("cli", ["iperf3", "-s", "-1", "-p", str(port)], stdout=subprocess.DEVNULL,
              stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 60
    while f":{port} " not in net.ip("cli", "ss", "-ltnH"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"iperf3 server on {port} did not start within 60 s")
        time.sleep(0.2)
    argv = ["iperf3", "-c", CLI_IP, "-p", str(port), "-t", f"{seconds:g}", "-J", *args]
    return net.spawn("srv", argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


# --- on the host ----------------------------------------------------------------------------


def analyse(work: Path) -> dict[str, Any]:
    import polars as pl

    from cganalysis.matching import match_files
    from tests.support.netbed import quantiles, steady, wire_mbit

    m = match_files(work / "ingress.pcap", work / "egress.pcap")
    pk = m.packets
    cg = pk.filter((pl.col("proto") == 17) & (pl.col("dport") == CG_PORT))
    tcp = pk.filter((pl.col("proto") == 6) & (pl.col("dport") == TCP_PORT))
    tcp = tcp.filter(pl.col("size_bytes") > 100)  # data segments, not the control channel
    cg_ok = steady(cg.filter(pl.col("lost").not_()), 2.0, 1.0)
    tcp_ok = steady(tcp.filter(pl.col("lost").not_()), 2.0, 1.0)
    lost = cg.filter(pl.col("lost").fill_null(False)).height
    return {
        "cg_delay_ms": quantiles(cg_ok["delay_ms"]),
        "cg_mean_delay_ms": round(float(cg_ok["delay_ms"].mean() or 0.0), 3),  # type: ignore[arg-type]
        "cg_mbit": round(wire_mbit(cg_ok), 3),
        "cg_loss_pct": round(100 * lost / max(cg.height, 1), 3),
        "tcp_mbit": round(wire_mbit(tcp_ok), 3),
        "tcp_delay_ms": quantiles(tcp_ok["delay_ms"]),
        "capture_drops": (m.summary.capture_drops_ingress or 0)
        + (m.summary.capture_drops_egress or 0),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=10.0, help="link rate, Mbit/s")
    ap.add_argument("--seconds", type=float, default=20.0, help="traffic per case")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    ap.add_argument("--keep", type=Path, default=None, help="keep captures in this folder")
    ap.add_argument("--dualpi2", action="store_true", help="also DualPI2 (build-dualpi2.sh)")
    ap.add_argument("--cases", default=None, help="comma-separated subset: htb,delay,dualpi2")
    ap.add_argument(
        "--no-host", action="store_true", help="skip the emulator runs on this host itself"
    )
    ap.add_argument("--collect", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.collect is not None:  # in the guest
        collect(
            args.collect, args.rate, args.seconds, args.dualpi2, ("kernel", "emulator"), args.cases
        )
        return 0
    from cganalysis.testbed.vm.run import serving

    base = args.keep or Path(tempfile.mkdtemp(prefix="cga-bench-vm-"))
    base.mkdir(parents=True, exist_ok=True)
    out = base / time.strftime("%Y%m%dT%H%M%S")
    with serving(progress=print, rwdirs=[base]) as guest:
        print(f"guest {guest.info['guest'].get('kernel')} ({guest.info['accel']}), "
              f"booted in {guest.info['boot_s']:g} s")  # fmt: skip
        # This module again, in the guest (the host's file system), as `python -m` from the
        # repository root: it imports tests.support.
        repo = Path(__file__).resolve().parents[1]
        this = "benchmarks.bench_vm_kernel_vs_emu"
        module = ["env", f"PYTHONPATH={repo}", sys.executable, "-m", this]
        argv = [*module, "--collect", str(out),
                "--rate", f"{args.rate:g}", "--seconds", f"{args.seconds:g}",
                *(["--dualpi2"] if args.dualpi2 else []),
                *(["--cases", args.cases] if args.cases else [])]  # fmt: skip
        res = guest.run(argv, check=False, timeout_s=40 * args.seconds + 1200)
        print(res.stdout, end="")
        if res.returncode != 0:
            print(res.stderr[-3000:], file=sys.stderr)
            return 1
        info = guest.info
    cases = _cases(args.rate, args.dualpi2, args.cases)
    names = [f"{c}-{b}" for c in cases for b in ("kernel", "emulator")]
    if not args.no_host:
        # The emulator where it normally runs: this host (the guest's one TCG vCPU starves a
        # userspace data plane; the kernel's qdiscs run in softirq context there).
        host = out / "host"
        collect(host, args.rate, args.seconds, args.dualpi2, ("emulator",), args.cases)
        for c in cases:
            (host / f"{c}-emulator").rename(out / f"{c}-emulator-host")
            names.append(f"{c}-emulator-host")
    results = {
        "vm": info,
        "rate_mbit": args.rate,
        "seconds": args.seconds,
        "cases": {name: analyse(out / name) for name in sorted(names)},
    }
    print(
        f"\nlink {args.rate:g} Mbit/s, CBR CG {args.rate * CG_SHARE:g} Mbit/s, {args.seconds:g} s"
    )
    print(f"{'case':<22}{'CG p10/p50/p90/p99 ms':<34}{'CG mean':>8}{'CG Mbit/s':>10}"
          f"{'CG loss %':>10}{'TCP Mbit/s':>11}{'TCP p50 ms':>11}")  # fmt: skip
    for name, r in results["cases"].items():
        q = r["cg_delay_ms"]
        qs = " / ".join(f"{q[k]:.2f}" for k in ("p10", "p50", "p90", "p99"))
        tcp_p50 = r["tcp_delay_ms"]["p50"]
        print(f"{name:<22}{qs:<34}{r['cg_mean_delay_ms']:>8.2f}{r['cg_mbit']:>10.3f}"
              f"{r['cg_loss_pct']:>10.2f}{r['tcp_mbit']:>11.3f}{tcp_p50:>11.2f}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    if args.keep is None:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
