"""The papers' tables from flattened metrics (:mod:`cganalysis.metrics.rows`).

- :func:`tma_table2`: TMA 2024 Table II, same rows, blocks and column groups (queue
  discipline over competing CCA); numbers written as the paper writes them.
- :func:`tma_table1`: TMA 2024 Table I (queuing delay per CG congestion-control variant).
- Xu & Claypool's Tables 2-6: :mod:`cganalysis.report.xutables`.

Repetitions of a condition are averaged; see docs/metrics.md for what each cell is. The
functions take flattened rows and trust them to hold one condition per cell; from metrics
documents, :func:`tma_table2_tables` makes one Table II per condition and
:func:`.conditions.require_one_condition` refuses runs that would mix (for Table I and
Xu's tables, which keep one layout).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import polars as pl

from cganalysis.metrics.aggregate import mean_ci
from cganalysis.metrics.rows import WINDOW_PHASE, role_rows, run_rows
from cganalysis.report.conditions import split_conditions
from cganalysis.report.style import Kind, Style
from cganalysis.report.tablefmt import Row, Table
from cganalysis.testbed.spec.qdisc_kinds import TABLE_ORDER

Formatter = Callable[[float], str]


def num2(v: float) -> str:
    """Two decimals without trailing zeros, as TMA 2024 prints: 44.90 -> 44.9, 19.00 -> 19."""
    text = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _ms(v: float) -> str:
    return f"{num2(v)} ms"


def _pct(v: float) -> str:
    return f"{num2(v)}%"


def _mbps(v: float) -> str:
    return f"{num2(v)} Mbps"


def cell_mean(frame: pl.DataFrame, column: str) -> float | None:
    """The mean of ``column`` over the runs in ``frame`` (None: no run, or no value)."""
    if frame.height == 0 or column not in frame.columns:
        return None
    return mean_ci(frame.get_column(column).cast(pl.Float64).to_list()).mean


def _mean_cell(
    frame: pl.DataFrame, column: str, fmt: Formatter, scale: float, ci: bool
) -> str | None:
    """Mean over the runs in ``frame``; with ``ci``, the 95 % half-width as '± x'."""
    if frame.height == 0 or column not in frame.columns:
        return None
    r = mean_ci(frame.get_column(column).cast(pl.Float64).to_list())
    if r.mean is None:
        return None
    text = fmt(r.mean * scale)
    if ci and r.half_width is not None:
        text += f" ± {num2(r.half_width * scale)}"
    return text


#: TMA Table II, per traffic block: (row label, metric column, formatter, scale).
TMA2_ROWS: tuple[tuple[str, str, Formatter, float], ...] = (
    ("Avg Latency", "delay_mean_ms", _ms, 1.0),
    ("Variance", "delay_std_ms", num2, 1.0),
    ("% > 10 ms", "pct_delay_over_10ms", _pct, 1.0),
    ("% > 20 ms", "pct_delay_over_20ms", _pct, 1.0),
    ("% > 50 ms", "pct_delay_over_50ms", _pct, 1.0),
    ("% > 100 ms", "pct_delay_over_100ms", _pct, 1.0),
    ("Avg Bitrate", "bitrate_mean_mbps", _mbps, 1.0),
    ("1st quartile", "bitrate_q1_mbps", _mbps, 1.0),
    ("2nd quartile", "bitrate_median_mbps", _mbps, 1.0),
    ("3rd quartile", "bitrate_q3_mbps", _mbps, 1.0),
    ("Loss Rate", "loss_rate", _pct, 100.0),
)
#: The paper's "Variance" row holds standard deviations (docs/metrics.md): said so unless
#: the paper's own wording is asked for.
STD_LABEL = "Std. dev. (ms)"


_COUNT_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def present_qdiscs(*frames: pl.DataFrame) -> list[str]:
    """The queue disciplines of the runs, in the qdisc registry's Table II order
    (:data:`~cganalysis.testbed.spec.qdisc_kinds.TABLE_ORDER`) then alphabetically."""
    names = {str(q) for f in frames for q in f.get_column("qdisc").drop_nulls().to_list()}
    return [q for q in TABLE_ORDER if q in names] + sorted(names - set(TABLE_ORDER))


def tma2_caption(n_qdiscs: int) -> str:
    """The default caption (the paper's table has three queuing disciplines)."""
    count = _COUNT_WORDS[n_qdiscs] if n_qdiscs < len(_COUNT_WORDS) else str(n_qdiscs)
    noun = "queuing discipline" if n_qdiscs == 1 else "queuing disciplines"
    return f"Cloud gaming vs TCP (iperf3) with the {count} {noun}"


def tma_table2(
    roles: pl.DataFrame,
    runs: pl.DataFrame,
    *,
    style: Style,
    qdiscs: Sequence[str] | None = None,
    ccas: Sequence[str] = ("cubic", "bbr"),
    paper_labels: bool = False,
    ci: bool = False,
    caption: str | None = None,
    condition: Sequence[tuple[str, str]] = (),
) -> Table:
    """TMA 2024 Table II from METRICS_ROLES (analysis window) and METRICS_RUNS rows.

    ``qdiscs`` None: those of the runs (:func:`present_qdiscs`). The rows must hold one
    condition per cell: from metrics documents use :func:`tma_table2_tables`.
    """
    if qdiscs is None:
        qdiscs = present_qdiscs(roles, runs)
    if caption is None:
        caption = tma2_caption(len(qdiscs))
    conditions = [(q, c) for q in qdiscs for c in ccas]
    rows: list[Row] = []
    for block, role in (("CG Traffic", "cg"), ("TCP Traffic", "competitor")):
        for i, (paper_label, col, fmt, scale) in enumerate(TMA2_ROWS):
            label = STD_LABEL if col == "delay_std_ms" and not paper_labels else paper_label
            cells = tuple(
                _mean_cell(tma2_cell_runs(roles, runs, role, q, c), col, fmt, scale, ci)
                for q, c in conditions
            )
            rows.append(Row((block if i == 0 else "", label), cells))
    util = (
        ("CG Traffic", "cg", "utilisation"),
        ("TCP Traffic", "competitor", "utilisation"),
        ("Total", None, "utilisation_total"),
    )
    for i, (label, role_or_link, col) in enumerate(util):
        cells = tuple(
            _mean_cell(tma2_cell_runs(roles, runs, role_or_link, q, c), col, _pct, 100.0, ci)
            for q, c in conditions
        )
        rows.append(Row(("Link utilization" if i == 0 else "", label), cells))
    header = (
        tuple((style.label("qdisc", q, short=True), len(ccas)) for q in qdiscs),
        tuple((style.label("cca", c), 1) for _, c in conditions),
    )
    notes = (
        ()
        if paper_labels
        else (
            "Std. dev.: the row the paper calls 'Variance' (its values are standard deviations).",
        )
    ) + flagged_note(runs_of_all(runs, qdiscs, ccas))
    return Table(header, ("", ""), tuple(rows), caption, notes, tuple(condition))


def tma2_cell_runs(
    roles: pl.DataFrame, runs: pl.DataFrame, role: str | None, qdisc: str, cca: str
) -> pl.DataFrame:
    """The rows a Table II cell averages: ``role``'s (``cg``, ``competitor``) over the
    analysis window, or with ``role`` None the runs' own (the link's total utilisation),
    of the runs under ``qdisc`` against ``cca``."""
    frame = (
        runs
        if role is None
        else roles.filter((pl.col("phase") == WINDOW_PHASE) & (pl.col("role") == role))
    )
    return frame.filter((pl.col("qdisc") == qdisc) & (pl.col("cca") == cca))


def runs_of_all(runs: pl.DataFrame, qdiscs: Sequence[str], ccas: Sequence[str]) -> pl.DataFrame:
    return runs.filter(pl.col("qdisc").is_in(list(qdiscs)) & pl.col("cca").is_in(list(ccas)))


def flagged_note(runs: pl.DataFrame) -> tuple[str, ...]:
    """A note naming the runs in a table that are flagged (meta.json's flags, e.g. a CG
    sender that fell behind its pacing schedule, and the metrics', e.g. a flow that did not
    start on time), so that their figures are read with care."""
    if "flags" not in runs.columns:
        return ()
    bad = runs.filter(pl.col("flags").fill_null("") != "")
    if bad.height == 0:
        return ()
    items = "; ".join(f"{r['run_id']}: {r['flags']}" for r in bad.iter_rows(named=True))
    return (f"Flagged runs ({bad.height} of {runs.height}, included): {items}",)


#: Table II's cells: a run is filed by its queue discipline and its competitor's CCA.
TMA2_CELL_KEYS: tuple[str, ...] = ("qdisc", "cca")


def tma_table2_tables(
    docs: Sequence[Mapping[str, Any]],
    *,
    style: Style,
    qdiscs: Sequence[str] | None = None,
    ccas: Sequence[str] = ("cubic", "bbr"),
    paper_labels: bool = False,
    ci: bool = False,
    caption: str | None = None,
) -> list[Table]:
    """Table II from metrics documents: one table per condition (runs that differ in a label
    other than qdisc and cca, such as ``link`` or ``cg``, never share a cell). Each table's
    caption names its condition and, with ``qdiscs`` None, its columns are the queue
    disciplines of that condition's runs. Runs of one condition give one table, as
    :func:`tma_table2` over all of them."""
    tables = []
    for cond in split_conditions(docs, TMA2_CELL_KEYS):
        mine = [docs[i] for i in cond.indices]
        roles, runs = role_rows(mine), run_rows(mine)
        text = caption or tma2_caption(len(qdiscs or present_qdiscs(roles, runs)))
        if cond.labels:
            text = f"{text} ({cond.describe()})"
        tables.append(
            tma_table2(
                roles,
                runs,
                style=style,
                qdiscs=qdiscs,
                ccas=ccas,
                paper_labels=paper_labels,
                ci=ci,
                caption=text,
                condition=cond.pairs(),
            )
        )
    return tables


#: TMA Table I rows: (label, column, formatter).
TMA1_ROWS: tuple[tuple[str, str, Formatter], ...] = (
    ("Average Latency", "delay_mean_ms", lambda v: f"{num2(v)}ms"),
    ("% of packets > 10ms", "pct_delay_over_10ms", lambda v: f"{v:.1f}%"),
    ("% of packets > 20ms", "pct_delay_over_20ms", lambda v: f"{v:.1f}%"),
    ("% of packets > 50ms", "pct_delay_over_50ms", lambda v: f"{v:.1f}%"),
    ("% of packets > 100ms", "pct_delay_over_100ms", lambda v: f"{v:.1f}%"),
)


def tma1_cell_runs(roles: pl.DataFrame, by: str, variant: str) -> pl.DataFrame:
    """The rows a Table I cell averages: the CG flow's over the analysis window, of the
    runs whose label ``by`` is ``variant``."""
    return roles.filter(
        (pl.col("phase") == WINDOW_PHASE) & (pl.col("role") == "cg") & (pl.col(by) == variant)
    )


def tma_table1(
    roles: pl.DataFrame,
    *,
    style: Style,
    variants: Sequence[str],
    by: Literal["system", "cca", "qdisc"] = "system",
    ci: bool = False,
    caption: str = "Queuing delays measured over a cellular network trace for different CCAs",
) -> Table:
    """TMA 2024 Table I: CG queuing delay per variant (columns), analysis window."""
    kind: Kind = by if by != "qdisc" else "qdisc"
    rows = tuple(
        Row(
            (label,),
            tuple(_mean_cell(tma1_cell_runs(roles, by, v), col, fmt, 1.0, ci) for v in variants),
        )
        for label, col, fmt in TMA1_ROWS
    )
    header = (tuple((style.label(kind, v), 1) for v in variants),)
    return Table(header, ("",), rows, caption)
