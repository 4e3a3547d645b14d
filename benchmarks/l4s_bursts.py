"""How bursty is a CG run at its bottleneck, and what did SCReAM make of the CE marks?

Reproduces the figures of docs/results.md ("L4S bitrates") for one run:

    python -m benchmarks.l4s_bursts data/raw/tma2024/tma2024-dualpi2-cubic-r01 \\
        data/processed/tma2024/tma2024-dualpi2-cubic-r01/packets.parquet

- A fluid model of the bottleneck (its configured rate, CG traffic only) fed once with the
  router's arrival times (ingress capture) and once with the sender's own send times: the
  share of CG packets that would wait over 1 ms (DualPI2's L-queue step threshold). The
  difference between the two is burstiness added between sender and router.
- The CE-marked share of CG packets, and SCReAM's mean target, pacing rate and
  l4s_alpha from its controller log, alone on the link and under competition.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import polars as pl

STEP_THRESHOLD_MS = 1.0


def share_over(t_ns: np.ndarray, wire_bytes: np.ndarray, rate_bps: float, ms: float) -> float:
    """Share of packets that a FIFO at ``rate_bps`` fed at ``t_ns`` would hold over ``ms``."""
    order = np.argsort(t_ns, kind="stable")
    t = t_ns[order].astype(np.float64)
    size = wire_bytes[order].astype(np.float64)
    free = -np.inf
    waits = np.empty(len(t))
    for i in range(len(t)):
        start = max(t[i], free)
        free = start + size[i] * 8e9 / rate_bps
        waits[i] = (free - t[i]) / 1e6
    return float((waits > ms).mean()) if len(waits) else float("nan")


def _mean(column: pl.Series) -> float:
    """The column's mean (NaN when it has no value)."""
    value = column.cast(pl.Float64).mean()
    return float("nan") if value is None else float(value)  # type: ignore[arg-type]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="raw run directory (meta.json, cg-sender/)")
    ap.add_argument("packets", type=Path, help="its packet table (cganalysis packets)")
    ap.add_argument("--alone", type=float, nargs=2, default=(5.0, 55.0), metavar=("FROM", "TO"))
    ap.add_argument("--loaded", type=float, nargs=2, default=(120.0, 360.0), metavar=("FROM", "TO"))
    args = ap.parse_args()
    meta = json.loads((args.run / "meta.json").read_text())
    rate = float(meta["capacity_configured_mbps"]) * 1e6
    port = int(meta["roles"]["cg"].split(":")[1])

    packets = pl.read_parquet(args.packets)
    t0 = int(packets["t_ingress_ns"].to_numpy().min())
    cg = packets.filter(pl.col("dport") == port)
    sent = pl.read_parquet(args.run / "cg-sender" / "sender_packets.parquet")
    ctl = pl.read_parquet(args.run / "cg-sender" / "controller.parquet")
    c0 = int(ctl["t_ns"].to_numpy().min())

    for name, (a, b) in (("alone", args.alone), ("loaded", args.loaded)):
        rx = cg.filter(pl.col("t_ingress_ns").is_between(t0 + a * 1e9, t0 + b * 1e9))
        tx = sent.filter(pl.col("t_ns").is_between(c0 + a * 1e9, c0 + b * 1e9))
        fb = ctl.filter(pl.col("t_ns").is_between(c0 + a * 1e9, c0 + b * 1e9))
        # Ethernet frames: the capture's IP size + 14; the sender logs RTP bytes (+ 42).
        at_router = share_over(
            rx["t_ingress_ns"].to_numpy(), rx["size_bytes"].to_numpy() + 14, rate, 1.0
        )
        at_sender = share_over(tx["t_ns"].to_numpy(), tx["size_bytes"].to_numpy() + 42, rate, 1.0)
        ce = float(fb["packets_ce"].sum()) / max(1, int(fb["packets_acked"].sum()))
        print(
            f"{name} {a:g}-{b:g} s: CG packets over {STEP_THRESHOLD_MS:g} ms in a fluid "
            f"{rate / 1e6:g} Mbit/s queue: {at_router:.4f} by router arrivals, "
            f"{at_sender:.4f} by send times; CE-marked {ce:.4f}; SCReAM target "
            f"{_mean(fb['target_bps']) / 1e6:.2f} Mbit/s, pacing "
            f"{_mean(fb['pace_bps']) / 1e6:.2f} Mbit/s, l4s_alpha {_mean(fb['l4s_alpha']):.4f}"
        )
    summary = json.loads((args.run / "cg-sender" / "sender_summary.json").read_text())
    print(
        f"pacing slips: {summary.get('pacing_slips', 'n/a')}, longest "
        f"{summary.get('pacing_slip_max_us', float('nan')) / 1e3:.1f} ms"
    )


if __name__ == "__main__":
    main()
