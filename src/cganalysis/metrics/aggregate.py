"""Repetitions of one condition: mean and Student-t 95 % confidence interval.

With n runs, the half-width is t(0.975, n - 1) * s / sqrt(n), s the sample standard deviation
(ddof = 1). One run has no interval (null), which the tables show as a plain value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl


@dataclass(frozen=True)
class MeanCI:
    n: int
    mean: float | None
    std: float | None  # sample standard deviation (ddof = 1)
    half_width: float | None

    @property
    def low(self) -> float | None:
        return None if self.mean is None or self.half_width is None else self.mean - self.half_width

    @property
    def high(self) -> float | None:
        return None if self.mean is None or self.half_width is None else self.mean + self.half_width


def mean_ci(values: Sequence[float | None], confidence: float = 0.95) -> MeanCI:
    """Mean and CI of the non-null values."""
    x = np.array([v for v in values if v is not None and not math.isnan(v)], dtype=np.float64)
    n = int(x.size)
    if n == 0:
        return MeanCI(0, None, None, None)
    mean = float(x.mean())
    if n == 1:
        return MeanCI(1, mean, None, None)
    s = float(x.std(ddof=1))
    from scipy import stats  # slow to import: only when needed

    t = float(stats.t.ppf(0.5 + confidence / 2.0, n - 1))
    return MeanCI(n, mean, s, t * s / math.sqrt(n))


def aggregate_repetitions(
    frame: pl.DataFrame,
    by: Sequence[str],
    metrics: Sequence[str],
    confidence: float = 0.95,
) -> pl.DataFrame:
    """One row per ``by`` group: ``n``, and per metric ``<m>_mean``, ``<m>_std``, ``<m>_ci``.

    ``<m>_ci`` is the half-width; ``n`` counts the runs in the group.
    """
    rows: list[dict[str, object]] = []
    for keys, group in frame.group_by(list(by), maintain_order=True):
        row: dict[str, object] = dict(zip(by, keys, strict=True))
        row["n"] = group.height
        for m in metrics:
            r = mean_ci(group.get_column(m).cast(pl.Float64).to_list(), confidence)
            row[f"{m}_mean"], row[f"{m}_std"], row[f"{m}_ci"] = r.mean, r.std, r.half_width
        rows.append(row)
    schema: dict[str, pl.DataType] = {k: frame.schema[k] for k in by}
    schema["n"] = pl.Int64()
    for m in metrics:
        for suffix in ("mean", "std", "ci"):
            schema[f"{m}_{suffix}"] = pl.Float64()
    return pl.DataFrame(rows, schema=schema, orient="row")


def aggregate_series(
    series: pl.DataFrame,
    *,
    by: Sequence[str] = ("role",),
    value: str = "rate_mbps",
    time: str = "t_s",
    confidence: float = 0.95,
) -> pl.DataFrame:
    """Mean and CI per time bin over runs (Xu Fig. 2: mean line with 95 % CI shading).

    ``series`` stacks the runs' series (same bins); returns ``by``, ``time``, ``n``,
    ``mean``, ``ci`` (half-width, null for one run).
    """
    grouped = series.group_by([*by, time]).agg(
        pl.len().alias("n"),
        pl.col(value).mean().alias("mean"),
        pl.col(value).std(ddof=1).alias("std"),
    )
    n = grouped.get_column("n").to_numpy()
    from scipy import stats

    tq = np.where(n > 1, stats.t.ppf(0.5 + confidence / 2.0, np.maximum(n - 1, 1)), np.nan)
    return (
        grouped.with_columns(pl.Series("_t", tq))
        .with_columns(
            pl.when(pl.col("n") > 1)
            .then(pl.col("_t") * pl.col("std") / pl.col("n").cast(pl.Float64).sqrt())
            .otherwise(None)
            .alias("ci")
        )
        .drop("_t", "std")
        .sort([*by, time])
    )


def _status_summary(times: pl.Series, status: pl.Series) -> tuple[float | None, str, int]:
    """Mean of the reached times; ``never`` only when no run reached the target."""
    reached = times.filter(status == "reached").drop_nulls()
    never = int((status == "never").sum())
    if reached.len() > 0:
        value = reached.mean()
        return (float(value) if isinstance(value, (int, float)) else None), "reached", never
    return None, ("never" if never else "not_applicable"), never


def summarise_conditions(runs: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """One row per condition (METRICS_RUNS rows grouped by ``by``), for heatmaps and Fig. 5.

    Fairness and Jain's index are averaged over runs. Response and recovery are averaged
    over the runs that reached their target; the condition is ``never`` only if no run did,
    and ``response_never`` / ``recovery_never`` count the runs that never did.
    """
    rows: list[dict[str, object]] = []
    for keys, group in runs.group_by(list(by), maintain_order=True):
        row: dict[str, object] = dict(zip(by, keys, strict=True))
        row["n"] = group.height
        for col in ("fairness_ratio", "jain_index", "utilisation_total"):
            row[col] = mean_ci(group.get_column(col).to_list()).mean
        for kind in ("response", "recovery"):
            t, s, never = _status_summary(
                group.get_column(f"{kind}_time_s"), group.get_column(f"{kind}_status")
            )
            row[f"{kind}_time_s"], row[f"{kind}_status"], row[f"{kind}_never"] = t, s, never
        rows.append(row)
    schema: dict[str, pl.DataType] = {k: runs.schema[k] for k in by}
    schema.update(
        {
            "n": pl.Int64(),
            "fairness_ratio": pl.Float64(),
            "jain_index": pl.Float64(),
            "utilisation_total": pl.Float64(),
            "response_time_s": pl.Float64(),
            "response_status": pl.String(),
            "response_never": pl.Int64(),
            "recovery_time_s": pl.Float64(),
            "recovery_status": pl.String(),
            "recovery_never": pl.Int64(),
        }
    )
    return pl.DataFrame(rows, schema=schema, orient="row")
