"""Snakemake rule ``tma_table2``: TMA 2024 Table II over a campaign's runs."""

import contextlib
from pathlib import Path
from typing import Any

from cganalysis.report.inputs import load_metrics
from cganalysis.report.style import load_style
from cganalysis.report.tablefmt import write_table
from cganalysis.report.tables import tma_table2

#: Defined by the preamble Snakemake puts above this script.
snakemake: Any = globals()["snakemake"]

with Path(snakemake.log[0]).open("w", encoding="utf-8") as log, contextlib.redirect_stderr(log):
    _, runs, roles = load_metrics([Path(p) for p in snakemake.input.metrics])
    table = tma_table2(roles, runs, style=load_style(Path(snakemake.input.style)))
    write_table(table, Path(snakemake.output[0]).with_suffix(""))
