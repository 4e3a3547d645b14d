"""Rates to mahimahi traces, and the statistics of any mahimahi trace.

Format (mahimahi's LinkQueue): one line per delivery opportunity of 1504 bytes (an IP
packet of up to 1500 bytes plus the 4-byte header of its TUN device), the line being the
millisecond at which it happens; equal lines are several opportunities in one millisecond;
the trace repeats with a period equal to its last time. A rate becomes opportunities by
a byte credit that accrues every millisecond and pays 1504 bytes per opportunity, so the
trace's capacity follows the rate to within one opportunity at any time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: Bytes of one delivery opportunity (mahimahi's PACKET_SIZE).
OPPORTUNITY_BYTES = 1504
#: A silence of the trace longer than this is an outage (the models' lowest non-zero rates
#: leave at most ~12 ms between opportunities; their outages last 60 ms or more).
OUTAGE_GAP_MS = 50


def opportunities(rate_mbps: np.ndarray) -> np.ndarray:
    """The trace of a rate given per millisecond: the sorted times (ms) of opportunities."""
    bytes_per_ms = rate_mbps * 1e6 / 8 / 1000
    credit = np.cumsum(bytes_per_ms)
    paid = np.floor(credit / OPPORTUNITY_BYTES).astype(np.int64)
    per_ms = np.diff(paid, prepend=0)
    times: np.ndarray = np.repeat(np.arange(rate_mbps.size, dtype=np.int64), per_ms)
    return times


def close_period(times_ms: np.ndarray, duration_ms: int) -> np.ndarray:
    """mahimahi's period is the last time in the file: end the trace at ``duration_ms`` with
    one opportunity there, so that a repeated trace keeps the model's length."""
    out: np.ndarray = np.append(times_ms[times_ms < duration_ms], duration_ms)
    return out


def write_trace(times_ms: np.ndarray, path: Path) -> None:
    """Written to a temporary name of this process and renamed, so a reader never sees half
    a trace and two processes making the same one (parallel jobs) never mix their bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    tmp.write_text("".join(f"{t}\n" for t in times_ms.tolist()))
    tmp.replace(path)


@dataclass(frozen=True)
class TraceStats:
    duration_s: float
    opportunities: int
    mean_rate_mbps: float
    #: Percentiles of the capacity in whole seconds, Mbit/s: p5, p25, p50, p75, p95.
    per_second_mbps: dict[str, float]
    outage_s: float
    outages: int

    @property
    def outage_fraction(self) -> float:
        return self.outage_s / self.duration_s

    def lines(self) -> list[str]:
        pct = ", ".join(f"{k} {v:.2f}" for k, v in self.per_second_mbps.items())
        return [
            f"duration: {self.duration_s:.3f} s ({self.opportunities} opportunities)",
            f"mean rate: {self.mean_rate_mbps:.3f} Mbit/s",
            f"per-second rate (Mbit/s): {pct}",
            f"outage: {self.outage_s:.3f} s in {self.outages} outages "
            f"({100 * self.outage_fraction:.2f} % of the time; silences > {OUTAGE_GAP_MS} ms)",
        ]


def trace_stats(times_ms: np.ndarray) -> TraceStats:
    """What a trace offers over one period (``times_ms`` sorted, as in the file)."""
    period_ms = int(times_ms[-1])
    n = int(times_ms.size)
    per_s = np.bincount((times_ms[times_ms < period_ms] // 1000).astype(np.int64))
    whole = per_s[: period_ms // 1000] * OPPORTUNITY_BYTES * 8 / 1e6
    if whole.size == 0:
        whole = np.array([n * OPPORTUNITY_BYTES * 8 / 1e6 / (period_ms / 1000)])
    pcts = {f"p{q}": float(np.percentile(whole, q)) for q in (5, 25, 50, 75, 95)}
    # Silences between opportunities, including the wrap from the last back to the first.
    gaps = np.diff(np.append(times_ms, times_ms[0] + period_ms).astype(np.int64))
    long_gaps = gaps[gaps > OUTAGE_GAP_MS]
    return TraceStats(
        duration_s=period_ms / 1000,
        opportunities=n,
        mean_rate_mbps=n * OPPORTUNITY_BYTES * 8 / 1e6 / (period_ms / 1000),
        per_second_mbps=pcts,
        outage_s=float(long_gaps.sum()) / 1000,
        outages=int(long_gaps.size),
    )
