"""Analogues of Xu & Claypool Tables 2-6 from flattened metrics
(:mod:`cganalysis.metrics.rows`): delay or loss, without or with the competing flow, and
frame rate with it; capacity rows, queue size over system [over CCA] columns.

Repetitions of a condition are averaged (docs/metrics.md says what each cell is);
:func:`.conditions.require_one_condition` refuses runs that would mix.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import polars as pl

from cganalysis.report.style import Kind, Style
from cganalysis.report.tablefmt import Row, Table
from cganalysis.report.tables import flagged_note, num2


def _leading_number(text: str) -> float:
    m = re.match(r"\s*([0-9]*\.?[0-9]+)", text)
    return float(m.group(1)) if m else math.inf


def queue_label(queue: str) -> str:
    """``0.5x`` (a multiple of the BDP, as Xu's conditions) -> ``BDP 0.5x``."""
    return f"BDP {queue}" if queue.endswith("x") else queue


def sorted_queues(values: Sequence[str]) -> list[str]:
    return sorted(values, key=lambda q: (_leading_number(q), q))


def pooled_delay(frame: pl.DataFrame) -> tuple[float, float] | None:
    """Pooled over all packets of the runs: (mean, standard deviation), in ms."""
    f = frame.drop_nulls(["delay_mean_ms", "delay_std_ms"]).filter(pl.col("delay_count") > 0)
    if f.height == 0:
        return None
    n = f.get_column("delay_count").cast(pl.Float64).to_numpy()
    m = f.get_column("delay_mean_ms").to_numpy()
    s = f.get_column("delay_std_ms").to_numpy()
    mean = float((n * m).sum() / n.sum())
    var = float((n * (s**2 + m**2)).sum() / n.sum() - mean**2)
    return mean, math.sqrt(max(var, 0.0))


def _delay_cell(frame: pl.DataFrame) -> str | None:
    pooled = pooled_delay(frame)
    return None if pooled is None else f"{pooled[0]:.1f} ({pooled[1]:.1f})"


def _over_runs(values: pl.Series, scale: float) -> str | None:
    """Mean over runs and, with several runs, their standard deviation."""
    x = values.drop_nulls().cast(pl.Float64).to_numpy() * scale
    if x.size == 0:
        return None
    if x.size == 1:
        return num2(float(x[0]))
    return f"{num2(float(x.mean()))} ({num2(float(np.std(x, ddof=1)))})"


def _frame_rate_cell(frame: pl.DataFrame) -> str | None:
    """Over runs: mean frame rate (f/s) and, with several runs, their standard deviation."""
    return _over_runs(frame.get_column("frame_rate_fps"), 1.0)


def _loss_cell(frame: pl.DataFrame) -> str | None:
    """Over runs: mean loss (%) and, with several runs, their standard deviation."""
    return _over_runs(frame.get_column("loss_rate"), 100.0)


#: The metrics of Xu's Tables 2-6, their cells and their captions.
XuMetric = Literal["delay", "loss", "frame_rate"]


def xu_value(frame: pl.DataFrame, metric: XuMetric) -> float | None:
    """A cell's number, as its text shows it first: the pooled mean delay (ms), the mean
    loss (%) or frame rate (f/s) over runs."""
    if metric == "delay":
        pooled = pooled_delay(frame)
        return None if pooled is None else pooled[0]
    column, scale = ("loss_rate", 100.0) if metric == "loss" else ("frame_rate_fps", 1.0)
    x = frame.get_column(column).drop_nulls().cast(pl.Float64).to_numpy() * scale
    return float(x.mean()) if x.size else None


def xu_cell_runs(
    roles: pl.DataFrame,
    phase: Literal["before_competitor", "with_competitor"],
    capacity: float,
    queue: str,
) -> pl.DataFrame:
    """The CG flow's rows a cell of Xu's tables holds (every panel and CCA: filter them)."""
    return roles.filter(
        (pl.col("phase") == phase)
        & (pl.col("role") == "cg")
        & (pl.col("capacity_mbps") == capacity)
        & (pl.col("queue") == queue)
    )


_XU_CELLS: dict[str, Callable[[pl.DataFrame], str | None]] = {
    "delay": _delay_cell,
    "loss": _loss_cell,
    "frame_rate": _frame_rate_cell,
}
_XU_WHAT = {
    "delay": "Queuing delay (ms)",
    "loss": "Packet loss (percent)",
    "frame_rate": "Frame rate (f/s)",
}


def xu_table(
    roles: pl.DataFrame,
    *,
    style: Style,
    metric: XuMetric,
    phase: Literal["before_competitor", "with_competitor"],
    panel_key: Literal["system", "qdisc"] = "qdisc",
    panels: Sequence[str] | None = None,
    ccas: Sequence[str] | None = None,
    capacities: Sequence[float] | None = None,
    queues: Sequence[str] | None = None,
    caption: str | None = None,
    runs: pl.DataFrame | None = None,
) -> Table:
    """Xu & Claypool Tables 2-6 analogue for the CG flow.

    Rows: capacities (ascending); columns: queue size, then ``panel_key`` (the paper's game
    system; here the queue discipline by default), then CCA when ``ccas`` is given (Tables 3
    and 5). Without ``ccas`` the runs of every CCA are pooled (Tables 2 and 4: the phase
    before the TCP flow arrives does not depend on its CCA). ``runs`` (the runs' rows, with
    their flags) adds the note naming the flagged runs the table includes.
    """
    cg = roles.filter((pl.col("phase") == phase) & (pl.col("role") == "cg"))
    kind: Kind = "system" if panel_key == "system" else "qdisc"
    if panels is None:
        panels = style.order(kind, cg.get_column(panel_key).drop_nulls())
    queues = (
        list(queues)
        if queues is not None
        else sorted_queues(list(set(cg.get_column("queue").drop_nulls())))
    )
    capacities = (
        list(capacities)
        if capacities is not None
        else sorted(set(cg.get_column("capacity_mbps").drop_nulls()))
    )
    cca_level: list[str | None] = list(ccas) if ccas is not None else [None]
    columns = [(q, p, c) for q in queues for p in panels for c in cca_level]
    cell = _XU_CELLS[metric]
    rows = []
    for cap in capacities:
        cells = []
        for q, p, c in columns:
            sel = xu_cell_runs(roles, phase, cap, q).filter(pl.col(panel_key) == p)
            if c is not None:
                sel = sel.filter(pl.col("cca") == c)
            cells.append(cell(sel))
        rows.append(Row((f"{num2(cap)} Mb/s",), tuple(cells)))
    per_queue = len(panels) * len(cca_level)
    header: list[tuple[tuple[str, int], ...]] = [
        tuple((queue_label(q), per_queue) for q in queues),
        tuple((style.label(kind, p, short=True), len(cca_level)) for q in queues for p in panels),
    ]
    if ccas is not None:
        header.append(
            tuple((style.label("cca", c), 1) for _ in queues for _ in panels for c in ccas)
        )
    what = _XU_WHAT[metric]
    when = "without" if phase == "before_competitor" else "with"
    default = f"{what} of the CG flow {when} a competing TCP flow"
    note = (
        "mean (standard deviation) over all packets of the condition's runs"
        if metric == "delay"
        else "mean over runs (standard deviation over runs)"
    )
    if metric == "frame_rate":
        note += "; a frame counts when every one of its packets crossed the bottleneck"
    flagged: tuple[str, ...] = ()
    if runs is not None:
        shown = runs.filter(
            pl.col("capacity_mbps").is_in(capacities) & pl.col("queue").is_in(queues)
        )
        if ccas is not None:
            shown = shown.filter(pl.col("cca").is_in(list(ccas)))
        flagged = flagged_note(shown)
    return Table(tuple(header), ("Capacity",), tuple(rows), caption or default, (note, *flagged))


def xu_cell_keys(panel_key: str, *, by_cca: bool) -> tuple[str, ...]:
    """What files a run into a cell of :func:`xu_table` (capacity row, queue, panel, CCA):
    the cell keys for :func:`.conditions.require_one_condition` (Tables 2 and 4 pool the
    CCAs on purpose: pass ``cca`` as pooled there)."""
    return ("capacity_mbps", "queue", panel_key, *(("cca",) if by_cca else ()))
