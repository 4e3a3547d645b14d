"""What the user-mode Linux router itself adds, next to this machine's kernel as the router.

    sudo .venv/bin/python -m benchmarks.bench_uml_router [--seconds 5] [--json F]

Both routers route between the same server and client namespaces, with no qdisc of the
project's (the interfaces' defaults) and no delay: the ``netns`` testbed's router (this
machine's kernel, the reference) and the ``uml`` testbed's (a UML kernel,
``bash scripts/build-uml.sh``). For each, in the same run:

1. the time through the idle router: ping at 100 packets/s for ``--seconds``, captured
   on both taps and matched (median, p99, max, and the spread p99 - median as jitter);
2. the highest packet rate it forwards: iperf3 UDP at rising offered rates, 100-byte and
   1400-byte datagrams, ``--seconds`` each; delivered packets per second at the client
   and the share lost, up to the first rate where more than 1 % is lost.

Timing-sensitive: run it alone on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RATES_KPPS = (2, 5, 10, 20, 40, 80, 160)
SIZES = (100, 1400)


def _bed(kind: str, workdir: Path) -> Any:
    from cganalysis.testbed.shared.topology import Layout

    layout = Layout(l2_router=False, delay_via="none", cca="cubic", ecn=0)
    if kind == "uml":
        from cganalysis.testbed.uml.testbed import UmlTestbed

        return UmlTestbed(layout, workdir)
    from cganalysis.testbed.netns.testbed import NetnsTestbed

    return NetnsTestbed(layout, workdir)


def _idle(topo: Any, seconds: float, workdir: Path) -> dict[str, Any]:
    import numpy as np

    from cganalysis.matching import match_files
    from cganalysis.testbed.measure.capture import start_tap, stop_taps
    from cganalysis.testbed.spec.config import Capture

    cap = Capture()
    taps = [
        start_tap(topo.taps, cap, "ingress", topo.router_in, "in", None, prefix="idle-"),
        start_tap(topo.taps, cap, "egress", topo.router_out, "out", None, prefix="idle-"),
    ]
    count = int(seconds * 100)
    topo.server.run(
        ["ping", "-q", "-c", str(count), "-i", "0.01", "-s", "100", "-W", "1", topo.client_ip],
        check=False,
        timeout_s=seconds + 20,
    )
    time.sleep(0.2)
    stop_taps(topo.taps, taps)
    m = match_files(Path(taps[0].path), Path(taps[1].path))
    d = m.packets.filter(~m.packets["lost"])["delay_ms"].drop_nulls().to_numpy()
    med, p99 = float(np.median(d)), float(np.quantile(d, 0.99))
    return {"packets": int(d.size), "median_ms": med, "p99_ms": p99, "max_ms": float(d.max()),
            "jitter_p99_minus_median_ms": p99 - med}  # fmt: skip


def _rate(topo: Any, kpps: float, size: int, seconds: float) -> dict[str, Any]:
    port = 5301
    server = topo.client.spawn(
        "iperf3 server", ["iperf3", "-s", "-1", "-J", "-p", str(port)], stdout=topo.client.path(
            "rate-server.json"), stderr=None
    )  # fmt: skip
    time.sleep(0.3)
    bps = kpps * 1000 * size * 8  # iperf3's -b counts the datagrams' payload
    topo.server.run(
        ["iperf3", "-c", topo.client_ip, "-u", "-p", str(port), "-l", str(size),
         "-b", str(int(bps)), "-t", str(int(seconds)), "-J"],
        check=False, timeout_s=seconds + 20,
    )  # fmt: skip
    server.wait(10)
    data = json.loads(topo.client.read_text(topo.client.path("rate-server.json")) or "{}")
    s = (data.get("end") or {}).get("sum") or {}
    packets, lost = int(s.get("packets") or 0), int(s.get("lost_packets") or 0)
    secs = float(s.get("seconds") or seconds)
    return {"offered_kpps": kpps, "size": size, "delivered_kpps": (packets - lost) / secs / 1000,
            "lost_pct": 100.0 * lost / packets if packets else 100.0}  # fmt: skip


def measure(kind: str, seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-{kind}-") as tmp:
        workdir = Path(tmp)
        bed = _bed(kind, workdir)
        try:
            topo = bed.up()
            topo.server.run(["ping", "-c", "2", "-i", "0.2", topo.client_ip], timeout_s=15)
            out: dict[str, Any] = {"idle": _idle(topo, seconds, workdir), "rates": []}
            for size in SIZES:
                for kpps in RATES_KPPS:
                    r = _rate(topo, kpps, size, seconds)
                    out["rates"].append(r)
                    got = f"{r['delivered_kpps']:.1f} kpps, {r['lost_pct']:.2f} % lost"
                    print(f"  {kind}: {size} B at {kpps} kpps offered: {got}", flush=True)
                    if r["lost_pct"] > 1.0:
                        break
            if kind == "uml":
                out["kernel"] = bed.describe()["uml"]
            return out
        finally:
            bed.down()


def report(results: dict[str, dict[str, Any]]) -> str:
    head = f"{'router':<8} {'idle median':>12} {'p99':>9} {'max':>9} {'jitter':>9}"
    lines = [head + "   highest rate with <= 1 % lost"]
    for kind, r in results.items():
        i = r["idle"]
        best: dict[int, float] = {}
        for x in r["rates"]:
            if x["lost_pct"] <= 1.0:
                best[x["size"]] = max(best.get(x["size"], 0.0), x["delivered_kpps"])
        rates = ", ".join(f"{best.get(sz, 0):.1f} kpps at {sz} B" for sz in SIZES)
        lines.append(
            f"{kind:<8} {i['median_ms']:10.3f}ms {i['p99_ms']:7.3f}ms {i['max_ms']:7.3f}ms "
            f"{i['jitter_p99_minus_median_ms']:7.3f}ms   {rates}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    fmt = argparse.RawTextHelpFormatter
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    results = {}
    for kind in ("netns", "uml"):
        print(f"{kind} router:", flush=True)
        results[kind] = measure(kind, a.seconds)
    print(report(results))
    if a.json is not None:
        a.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
