"""Table II's main cells against the paper's: the CG and TCP flows' latency and bitrate
under each queue discipline and competing CCA (4 x 6 = 24 cells in the paper's layout),
each with its deviation from the paper's number, and how many are within the target.

The cells are Table II's own (:class:`.tmacells.TmaCells`), the paper's numbers
:data:`.factors.PAPER`'s. The table's first note is the verdict line the README prints
(``cganalysis dataset check-docs`` holds it to the rendering).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cganalysis.report.claims import TOLERANCE, NotMeasuredError, within
from cganalysis.report.conditions import split_conditions
from cganalysis.report.factors import CELLS, PAPER
from cganalysis.report.style import Style
from cganalysis.report.tablefmt import Row, Table
from cganalysis.report.tables import TMA2_CELL_KEYS, flagged_note, num2, runs_of_all
from cganalysis.report.tmacells import CCAS, TmaCells, paper

#: The rows: factors.CELLS without the loss rate (the paper's losses are fractions of a
#: per cent, which a relative target does not measure).
MAIN: tuple[tuple[str, str, str], ...] = tuple(
    (label, role, metric) for label, role, metric, _ in CELLS if metric != "loss_rate"
)
QDISCS: tuple[str, ...] = tuple(dict.fromkeys(q for q, _ in PAPER))
#: Marks a cell one of whose runs is flagged (the table's notes name the run and why).
FLAG_MARK = "(flagged)"


def deviation(ours: float, theirs: float) -> str:
    """``+8 %``: ours relative to the paper's, in whole per cent; to a tenth where whole per
    cent would show the target's bound (``+25.3 %`` is out, ``+24.8 %`` in)."""
    pct = 100 * (ours - theirs) / theirs
    bound = abs(round(pct)) == round(TOLERANCE * 100)
    return f"{pct:+.1f} %" if bound else f"{pct:+.0f} %"


def verdict_line(within_target: int, measured: int) -> str:
    return (
        f"Table II: {within_target} of {measured} cells within {TOLERANCE * 100:.0f} % of the paper"
    )


def paper_cells_table(
    cells: TmaCells, style: Style, condition: tuple[tuple[str, str], ...] = ()
) -> Table:
    """Rows: the main cells; columns: queue discipline over CCA; each cell ``ours (dev)``."""
    rows: list[Row] = []
    hits = measured = 0
    for label, role, metric in MAIN:
        texts: list[str | None] = []
        for q in QDISCS:
            for k in CCAS:
                try:
                    ours = cells.get(role, metric, q, k)
                except NotMeasuredError:
                    texts.append(None)
                    continue
                theirs = paper(role, metric, q, k)
                measured += 1
                hits += within(ours, theirs)
                mark = f" {FLAG_MARK}" if cells.flagged(q, k) else ""
                texts.append(f"{num2(ours)} ({deviation(ours, theirs)}){mark}")
        rows.append(Row((label,), tuple(texts)))
    header = (
        tuple((style.label("qdisc", q, short=True), len(CCAS)) for q in QDISCS),
        tuple((style.label("cca", k), 1) for _ in QDISCS for k in CCAS),
    )
    caption = "Table II's main cells against the paper's (ours, deviation from the paper)"
    notes: tuple[str, ...] = (
        verdict_line(hits, measured),
        "A cell is within the target when it is within "
        f"{TOLERANCE * 100:.0f} % of the paper's number.",
    )
    notes += flagged_note(runs_of_all(cells.runs, QDISCS, CCAS))
    if any(cells.flagged(q, k) for q in QDISCS for k in CCAS):
        notes += (f"{FLAG_MARK}: a run of this cell is flagged (above).",)
    if condition:
        caption += " (" + ", ".join(f"{k}: {v}" for k, v in condition) + ")"
    return Table(header, ("",), tuple(rows), caption, notes, condition)


def paper_cells_tables(docs: Sequence[Mapping[str, Any]], style: Style) -> list[Table]:
    """One table per condition, as Table II (:func:`.tables.tma_table2_tables`)."""
    out = []
    for cond in split_conditions(docs, TMA2_CELL_KEYS):
        mine = [docs[i] for i in cond.indices]
        out.append(paper_cells_table(TmaCells.of(mine), style, cond.pairs()))
    return out
