"""Snakemake rule ``tma_table1``: TMA 2024 Table I (CG delay per CCA variant)."""

import contextlib
from pathlib import Path
from typing import Any

from cganalysis.report.conditions import require_one_condition
from cganalysis.report.inputs import load_metrics
from cganalysis.report.style import load_style
from cganalysis.report.tablefmt import write_table
from cganalysis.report.tables import tma_table1

#: Defined by the preamble Snakemake puts above this script.
snakemake: Any = globals()["snakemake"]

with Path(snakemake.log[0]).open("w", encoding="utf-8") as log, contextlib.redirect_stderr(log):
    style = load_style(Path(snakemake.input.style))
    docs, _, roles = load_metrics([Path(p) for p in snakemake.input.metrics])
    # Its columns are the runs' `system`: runs differing in another label must not mix.
    require_one_condition(docs, ("system",), table="tma_table1")
    # The variants are the runs' `system` labels, in the style file's order.
    variants = style.order("system", roles.get_column("system"))
    write_table(
        tma_table1(roles, style=style, variants=variants),
        Path(snakemake.output[0]).with_suffix(""),
    )
