"""Snakemake rules ``run_figure_<figure>_<campaign>``: a per-run figure of the registry
(cganalysis.report.runfigures.RUN_FIGURES: the TMA-style time series) for each of the
campaign's runs, in this one process (rules/figures.smk says why)."""

import contextlib
from pathlib import Path
from typing import Any

from cganalysis.report.runfigures import write_runs_from_files

#: Defined by the preamble Snakemake puts above this script.
snakemake: Any = globals()["snakemake"]

pdfs = [Path(p) for p in snakemake.output if p.endswith(".pdf")]
runs = [
    (Path(timeseries), Path(metrics), pdf.with_suffix(""))
    for timeseries, metrics, pdf in zip(
        snakemake.input.timeseries, snakemake.input.metrics, pdfs, strict=True
    )
]
with Path(snakemake.log[0]).open("w", encoding="utf-8") as log, contextlib.redirect_stderr(log):
    write_runs_from_files(snakemake.params.figure, runs, Path(snakemake.input.style), log)
