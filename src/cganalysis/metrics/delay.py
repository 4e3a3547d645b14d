"""Queuing delay statistics over the packets that got through.

TMA 2024 Table II reports per traffic class "Avg Latency", "Variance" and the share of
packets above 10, 20, 50 and 100 ms. The "Variance" row is a standard deviation (checked
against the paper's own numbers in docs/metrics.md); both are reported here, the standard
deviation as ``std_ms`` and the variance as ``var_ms2``. Spread is the population one
(ddof = 0): it describes the packets measured, and is defined for a single packet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

#: Quantiles reported besides the mean (linear interpolation between order statistics).
QUANTILES: tuple[float, ...] = (0.25, 0.5, 0.75, 0.95, 0.99)
#: TMA 2024 Table I and II thresholds (a run's ``analysis.delay_thresholds_ms`` by default).
DEFAULT_DELAY_THRESHOLDS_MS: tuple[float, ...] = (10.0, 20.0, 50.0, 100.0)


@dataclass(frozen=True)
class DelayStats:
    count: int
    mean_ms: float | None
    std_ms: float | None
    var_ms2: float | None
    min_ms: float | None
    max_ms: float | None
    quantiles_ms: dict[float, float | None]
    #: Share of packets strictly above each threshold, in percent of the delivered packets.
    pct_over: dict[float, float | None]


def quantile_key(q: float) -> str:
    """``0.5`` -> ``p50``, ``0.999`` -> ``p99.9``."""
    return f"p{100 * q:g}"


def threshold_key(ms: float) -> str:
    """``10`` -> ``pct_delay_over_10ms``."""
    return f"pct_delay_over_{ms:g}ms"


def delay_stats(
    delays_ms: pl.Series | np.ndarray,
    thresholds_ms: Sequence[float] = (10.0, 20.0, 50.0, 100.0),
    quantiles: Sequence[float] = QUANTILES,
) -> DelayStats:
    """Statistics of the delays given (nulls, i.e. lost packets, are ignored)."""
    values = (
        delays_ms.drop_nulls().cast(pl.Float64).to_numpy()
        if isinstance(delays_ms, pl.Series)
        else np.asarray(delays_ms, dtype=np.float64)
    )
    values = values[~np.isnan(values)]
    n = int(values.size)
    if n == 0:
        return DelayStats(
            0,
            None,
            None,
            None,
            None,
            None,
            dict.fromkeys(quantiles),
            dict.fromkeys(thresholds_ms),
        )
    mean = float(values.mean())
    var = float(values.var())  # ddof = 0, see the module docstring
    qs = np.quantile(values, list(quantiles), method="linear") if quantiles else []
    return DelayStats(
        count=n,
        mean_ms=mean,
        std_ms=float(np.sqrt(var)),
        var_ms2=var,
        min_ms=float(values.min()),
        max_ms=float(values.max()),
        quantiles_ms={q: float(v) for q, v in zip(quantiles, qs, strict=True)},
        pct_over={t: 100.0 * float(np.count_nonzero(values > t)) / n for t in thresholds_ms},
    )


def delay_cdf(delays_ms: pl.Series, points: int | None = None) -> pl.DataFrame:
    """Empirical CDF: ``delay_ms`` sorted and ``cdf`` = rank / n, thinned to ``points`` rows."""
    values = np.sort(delays_ms.drop_nulls().cast(pl.Float64).to_numpy())
    n = values.size
    cdf = np.arange(1, n + 1, dtype=np.float64) / max(n, 1)
    if points is not None and n > points:
        # Keep the extremes: the tail is what a delay CDF is read for.
        idx = np.unique(np.linspace(0, n - 1, points).round().astype(np.int64))
        values, cdf = values[idx], cdf[idx]
    return pl.DataFrame({"delay_ms": values, "cdf": cdf})


def time_weighted_delay_ms(t_in_ns: pl.Series, delay_ms: pl.Series, end_ns: int) -> float | None:
    """The queuing delay averaged over time rather than over packets.

    Each delivered packet's delay holds from its ingress until the next delivered packet's
    ingress (the last one's until ``end_ns``, the window's end), and the mean is taken over
    ``[first delivered ingress, end_ns)``: the delay seen at a random instant of the
    window, not by a random packet. A burst of packets all delayed counts once for the
    time it lasts, where the per-packet mean counts each packet. Lost packets (no delay)
    leave the previous delay in force. ``t_in_ns`` in ingress order (ties: the last one
    holds). None when no packet got through or the span is empty.
    """
    got = pl.DataFrame({"t": t_in_ns, "d": delay_ms}).filter(pl.col("d").is_not_null())
    if got.height == 0:
        return None
    t = got.get_column("t").to_numpy().astype(np.int64)
    d = got.get_column("d").to_numpy().astype(np.float64)
    span_ns = end_ns - int(t[0])
    if span_ns <= 0:
        return None
    hold_ns = np.diff(np.append(t, max(end_ns, int(t[-1]))))
    return float(np.dot(d, hold_ns.astype(np.float64)) / span_ns)
