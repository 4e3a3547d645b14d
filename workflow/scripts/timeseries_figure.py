"""Snakemake rule ``timeseries_figure``: TMA-style throughput/delay/loss against time."""

import contextlib
from pathlib import Path
from typing import Any

from cganalysis.report.figures import save_figure, timeseries_figure
from cganalysis.report.inputs import load_metrics, read_timeseries, schedule_of, window_of
from cganalysis.report.style import load_style

#: Defined by the preamble Snakemake puts above this script.
snakemake: Any = globals()["snakemake"]

with Path(snakemake.log[0]).open("w", encoding="utf-8") as log, contextlib.redirect_stderr(log):
    style = load_style(Path(snakemake.input.style))
    docs, _, _ = load_metrics([Path(snakemake.input.metrics)])
    fig = timeseries_figure(
        read_timeseries(Path(snakemake.input.timeseries)),
        style=style,
        schedule=schedule_of(docs[0]),
        window=window_of(docs[0]),
    )
    stem = Path(snakemake.output[0]).with_suffix("")
    save_figure(fig, stem, dpi=style.figure.dpi)
