"""Snakemake rule ``tma_table2``: TMA 2024 Table II over a campaign's runs.

One table per condition when the runs differ in more than qdisc and cca (the extensions
campaign's link and cg), all in the same three files (report.tables.tma_table2_tables).
"""

import contextlib
from pathlib import Path
from typing import Any

from cganalysis.report.inputs import load_metrics
from cganalysis.report.style import load_style
from cganalysis.report.tablefmt import write_tables
from cganalysis.report.tables import tma_table2_tables

#: Defined by the preamble Snakemake puts above this script.
snakemake: Any = globals()["snakemake"]

with Path(snakemake.log[0]).open("w", encoding="utf-8") as log, contextlib.redirect_stderr(log):
    docs, _, _ = load_metrics([Path(p) for p in snakemake.input.metrics])
    tables = tma_table2_tables(docs, style=load_style(Path(snakemake.input.style)))
    write_tables(tables, Path(snakemake.output[0]).with_suffix(""))
