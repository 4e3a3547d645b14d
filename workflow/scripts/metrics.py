"""Snakemake rules ``metrics_<campaign>``: each run's METRICS.json and per-bin series, for
all the campaign's runs in this one process (rules/metrics.smk says why)."""

import contextlib
from pathlib import Path
from typing import Any

from cganalysis.metrics.io import RunFiles, metrics_of_runs

#: Defined by the preamble Snakemake puts above this script.
snakemake: Any = globals()["snakemake"]

runs = [
    RunFiles(Path(packets), Path(meta), Path(metrics), Path(timeseries))
    for packets, meta, metrics, timeseries in zip(
        snakemake.input.packets,
        snakemake.input.meta,
        snakemake.output.metrics,
        snakemake.output.timeseries,
        strict=True,
    )
]
with Path(snakemake.log[0]).open("w", encoding="utf-8") as log, contextlib.redirect_stderr(log):
    metrics_of_runs(runs, log, workers=snakemake.threads)
