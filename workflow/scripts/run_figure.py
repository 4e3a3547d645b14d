"""Snakemake rule ``run_figure``: a figure of one run (the registry's per-run figures,
cganalysis.report.artefacts.RUN_FIGURES: the TMA-style time series)."""

import contextlib
from pathlib import Path
from typing import Any

from cganalysis.report.artefacts import write_run_from_files

#: Defined by the preamble Snakemake puts above this script.
snakemake: Any = globals()["snakemake"]

with Path(snakemake.log[0]).open("w", encoding="utf-8") as log, contextlib.redirect_stderr(log):
    write_run_from_files(
        snakemake.wildcards.run_figure,
        Path(snakemake.input.timeseries),
        Path(snakemake.input.metrics),
        Path(snakemake.input.style),
        Path(snakemake.output[0]).with_suffix(""),
    )
