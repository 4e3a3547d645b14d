"""Link capacity over time, from a constant or a mahimahi trace.

A mahimahi trace has one line per delivery opportunity, a time in milliseconds from the
trace's start; each opportunity lets one MTU-sized packet through (1500 bytes in the
mahimahi documentation, 1504 in its code: configurable). Repeated times are several
opportunities in one millisecond. The link replays the trace from the start when it runs
out, with a period equal to the last time in the file.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from cganalysis.errors import ConfigError
from cganalysis.metrics.bitrate import BITS_PER_MBIT, n_bins


def opportunities_before(times_ms: np.ndarray, t_ms: np.ndarray) -> np.ndarray:
    """How many opportunities of the looping trace fall strictly before each ``t_ms``.

    ``times_ms`` are the trace's sorted times, the last one T being the period: cycle k holds
    ``times_ms + k T``, so the last opportunity of a cycle and the first ones of the next
    (time 0) share an instant. ``t_ms`` are from the trace's start (negative ones count 0).
    """
    period = float(times_ms[-1])
    if period <= 0:
        raise ConfigError("capacity trace: its last time must be after 0 ms")
    t = np.maximum(np.asarray(t_ms, dtype=np.float64), 0.0)
    cycles = np.floor(t / period)
    within = t - cycles * period
    at_period = int(np.count_nonzero(times_ms == period))
    counts: np.ndarray = (
        cycles * times_ms.size
        + np.searchsorted(times_ms, within, side="left")
        # At an exact multiple of T, the previous cycle's opportunities at T are not before t.
        - np.where((within == 0) & (cycles >= 1), at_period, 0)
    )
    return counts


def trace_capacity_series(
    times_ms: np.ndarray,
    *,
    start_s: float,
    end_s: float,
    bin_s: float,
    offset_s: float = 0.0,
    scale: float = 1.0,
    bytes_per_opportunity: int = 1500,
) -> pl.DataFrame:
    """Capacity per bin (``t_s`` bin start, ``capacity_mbps``), whole bins in the window.

    ``offset_s`` is when the trace's time 0 happened, in seconds from the run's t0;
    ``scale`` multiplies the capacity (a run that replays each opportunity k times).
    """
    n = n_bins(start_s, end_s, bin_s)
    edges_s = start_s + bin_s * np.arange(n + 1, dtype=np.float64)
    counts = opportunities_before(np.sort(times_ms), (edges_s - offset_s) * 1000.0)
    per_bin = np.diff(counts) * scale
    return pl.DataFrame(
        {
            "t_s": edges_s[:-1],
            "capacity_mbps": per_bin * bytes_per_opportunity * 8.0 / bin_s / BITS_PER_MBIT,
        }
    )


def trace_capacity_bits(
    times_ms: np.ndarray,
    *,
    start_s: float,
    end_s: float,
    offset_s: float = 0.0,
    scale: float = 1.0,
    bytes_per_opportunity: int = 1500,
) -> float:
    """Bits the trace lets through in ``[start_s, end_s)``."""
    edges = (np.array([start_s, end_s], dtype=np.float64) - offset_s) * 1000.0
    counts = opportunities_before(np.sort(times_ms), edges)
    return float(counts[1] - counts[0]) * scale * bytes_per_opportunity * 8.0


class LinkCapacity:
    """A constant capacity or a looping trace, asked for bits and series over windows."""

    def __init__(
        self,
        *,
        constant_mbps: float | None = None,
        trace_ms: np.ndarray | None = None,
        offset_s: float = 0.0,
        scale: float = 1.0,
        bytes_per_opportunity: int = 1500,
    ) -> None:
        if (constant_mbps is None) == (trace_ms is None):
            raise ConfigError("link capacity: give exactly one of a constant and a trace")
        if trace_ms is not None and np.asarray(trace_ms).size == 0:
            raise ConfigError("capacity trace: the file holds no delivery opportunity")
        self.constant_mbps = constant_mbps
        self.trace_ms = None if trace_ms is None else np.sort(np.asarray(trace_ms, np.float64))
        self.offset_s = offset_s
        self.scale = scale
        self.bytes_per_opportunity = bytes_per_opportunity

    def bits(self, start_s: float, end_s: float) -> float:
        if self.trace_ms is None:
            assert self.constant_mbps is not None
            return self.constant_mbps * BITS_PER_MBIT * (end_s - start_s)
        return trace_capacity_bits(
            self.trace_ms,
            start_s=start_s,
            end_s=end_s,
            offset_s=self.offset_s,
            scale=self.scale,
            bytes_per_opportunity=self.bytes_per_opportunity,
        )

    def mean_mbps(self, start_s: float, end_s: float) -> float:
        return self.bits(start_s, end_s) / (end_s - start_s) / BITS_PER_MBIT

    def series(self, start_s: float, end_s: float, bin_s: float) -> pl.DataFrame:
        """``t_s``, ``capacity_mbps`` per bin."""
        if self.trace_ms is None:
            n = n_bins(start_s, end_s, bin_s)
            return pl.DataFrame(
                {
                    "t_s": start_s + bin_s * np.arange(n, dtype=np.float64),
                    "capacity_mbps": np.full(n, self.constant_mbps, dtype=np.float64),
                }
            )
        return trace_capacity_series(
            self.trace_ms,
            start_s=start_s,
            end_s=end_s,
            bin_s=bin_s,
            offset_s=self.offset_s,
            scale=self.scale,
            bytes_per_opportunity=self.bytes_per_opportunity,
        )
