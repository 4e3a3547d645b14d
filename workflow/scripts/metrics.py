"""Snakemake rule ``metrics``: one run's METRICS.json and per-bin series."""

import contextlib
from pathlib import Path
from typing import Any

from cganalysis.metrics.io import metrics_to_files, read_run_spec

#: Defined by the preamble Snakemake puts above this script.
snakemake: Any = globals()["snakemake"]

with Path(snakemake.log[0]).open("w", encoding="utf-8") as log, contextlib.redirect_stderr(log):
    doc = metrics_to_files(
        Path(snakemake.input.packets),
        read_run_spec(Path(snakemake.input.meta)),
        Path(snakemake.output.metrics),
        Path(snakemake.output.timeseries),
    )
    for warning in doc["warnings"]:
        print(f"warning: {warning}", file=log)
