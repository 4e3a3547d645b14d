"""Adaptiveness over a set of runs or conditions (Xu & Claypool section 4.4).

A = 1/2 (1 - C / Cmax) + 1/2 (1 - E / Emax), with C the response time, E the recovery time,
and Cmax, Emax "the maximum observed response time and recovery time, respectively" over the
set compared (the paper: the three systems and all network conditions). A is in [0, 1], 1 the
most adaptive.

Choices the paper leaves open, documented in docs/metrics.md:
- ``never`` counts as the worst time (its term is 0), not as a missing value: a system that
  never responds is the least adaptive, and leaving it out would reward it.
- The maxima are taken over the times that were reached; if every reached time is 0, the
  reached ones score 1.
- ``not_applicable`` (no event, no baseline) makes A null for that row.
"""

from __future__ import annotations

import polars as pl


def _term(time: str, status: str) -> pl.Expr:
    reached = pl.col(status) == "reached"
    t_max = pl.col(time).filter(reached).max()
    frac = pl.when(t_max > 0).then(pl.col(time) / t_max).otherwise(0.0)
    return (
        pl.when(reached).then(1.0 - frac).when(pl.col(status) == "never").then(0.0).otherwise(None)
    )


def adaptiveness(
    frame: pl.DataFrame,
    *,
    response: str = "response_time_s",
    recovery: str = "recovery_time_s",
    response_status: str = "response_status",
    recovery_status: str = "recovery_status",
) -> pl.DataFrame:
    """``frame`` (one row per system and condition) with an ``adaptiveness`` column."""
    return frame.with_columns(
        (0.5 * _term(response, response_status) + 0.5 * _term(recovery, recovery_status))
        .cast(pl.Float64)
        .alias("adaptiveness")
    )
