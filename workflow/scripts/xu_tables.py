"""Snakemake rule ``xu_tables``: Xu & Claypool Tables 2-5 analogues (delay, loss)."""

import contextlib
from pathlib import Path
from typing import Any

from cganalysis.report.conditions import require_one_condition
from cganalysis.report.inputs import load_metrics
from cganalysis.report.style import load_style
from cganalysis.report.tablefmt import write_table
from cganalysis.report.tables import xu_cell_keys, xu_table

#: Defined by the preamble Snakemake puts above this script.
snakemake: Any = globals()["snakemake"]

#: Table number -> (metric, phase, split by CCA), as in the paper.
TABLES = {
    2: ("delay", "before_competitor", False),
    3: ("delay", "with_competitor", True),
    4: ("loss", "before_competitor", False),
    5: ("loss", "with_competitor", True),
}

with Path(snakemake.log[0]).open("w", encoding="utf-8") as log, contextlib.redirect_stderr(log):
    style = load_style(Path(snakemake.input.style))
    docs, runs, roles = load_metrics([Path(p) for p in snakemake.input.metrics])
    ccas = style.order("cca", runs.get_column("cca"))
    folder = Path(snakemake.output[0]).parent
    for n, (metric, phase, by_cca) in TABLES.items():
        # Runs differing in a label other than the cells' keys must not be averaged.
        require_one_condition(
            docs,
            xu_cell_keys("qdisc", by_cca=by_cca),
            table=f"xu_table{n}",
            pooled=() if by_cca else ("cca",),
        )
        table = xu_table(
            roles,
            style=style,
            metric=metric,  # type: ignore[arg-type]
            phase=phase,  # type: ignore[arg-type]
            ccas=ccas if by_cca else None,
        )
        write_table(table, folder / f"xu_table{n}")
