"""Metrics files to the frames that tables and figures read, and a run's time series."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from cganalysis.errors import ConfigError
from cganalysis.metrics.io import read_metrics
from cganalysis.metrics.rows import role_rows, run_rows
from cganalysis.metrics.steps import Step
from cganalysis.schemas import RUN_TIMESERIES
from cganalysis.tablefile import read_table

#: A run's time series (schemas.RUN_TIMESERIES rows) by its run id: what a figure drawn from
#: a campaign's series is given (report.artefacts).
RunSeries = Callable[[str], pl.DataFrame]


def load_metrics(paths: Sequence[Path]) -> tuple[list[dict[str, Any]], pl.DataFrame, pl.DataFrame]:
    """The documents, their METRICS_RUNS rows and their METRICS_ROLES rows."""
    if not paths:
        raise ConfigError("no metrics file given")
    docs = read_metrics(paths)  # each checked against the metrics schema
    return docs, run_rows(docs), role_rows(docs)


def schedule_of(doc: Mapping[str, Any]) -> list[Step]:
    return [Step(float(s["t_s"]), s["rate_mbps"]) for s in doc["inputs"]["schedule"]]


def window_of(doc: Mapping[str, Any]) -> tuple[float, float]:
    a, b = doc["inputs"]["window_effective_s"]
    return float(a), float(b)


def read_timeseries(path: Path) -> pl.DataFrame:
    return read_table(
        path, RUN_TIMESERIES, "time series", make_with="cganalysis metrics --timeseries"
    )


def no_series(run_id: str) -> pl.DataFrame:
    """The :data:`RunSeries` of a caller that has only metrics documents."""
    raise ConfigError(
        f"run {run_id}: its time series is needed and none was given "
        "(`cganalysis figures ... --timeseries RUN.timeseries.parquet...`)"
    )


def series_files(paths: Sequence[Path]) -> RunSeries:
    """The :data:`RunSeries` of time-series files named after their run
    (``<run>.timeseries.parquet`` as the workflow writes them, ``<run>.parquet`` in a
    dataset's ``timeseries/``), each read when a figure asks for it."""
    by_run = {p.name.removesuffix(".parquet").removesuffix(".timeseries"): p for p in paths}

    def series(run_id: str) -> pl.DataFrame:
        if run_id not in by_run:
            return no_series(run_id)
        return read_timeseries(by_run[run_id])

    return series
