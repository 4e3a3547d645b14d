"""The account of what is still out (``tma_cells_out``): one row per Table II cell outside
the target and per TMA 2024 claim that does not hold (fails, or in order only), with ours
(mean and 95 % half-width over the repetitions), the paper's, how many half-widths apart,
the measured factor that moves the cell most towards the paper and by how much, and why
the paper's value is out of reach (:data:`.cells_out.ENTRIES`, the registry).

A factor's effect is the difference of two published cells' means (the factor's runs
against the same set-up without it); it moves ours towards the paper when ours plus that
difference is nearer the paper's, and the factor that moves it most is the one that comes
nearest. Every number is computed here, from the datasets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from cganalysis.errors import ConfigError
from cganalysis.metrics.aggregate import mean_ci
from cganalysis.metrics.io import read_metrics
from cganalysis.report.cells_out import ENTRIES, Cell, Factor, Labels, OutEntry
from cganalysis.report.claims import NotMeasuredError, judge, within
from cganalysis.report.claims_tma import CELL_KEYS, TMA_CLAIMS
from cganalysis.report.conditions import require_one_condition
from cganalysis.report.papercells import MAIN, QDISCS, deviation
from cganalysis.report.style import Style
from cganalysis.report.tablefmt import Row, Table
from cganalysis.report.tables import num2, tma2_cell_runs
from cganalysis.report.tmacells import CCAS, FLOW_LABELS, TmaCells, paper

Docs = Sequence[Mapping[str, Any]]
NO_ENTRY = "no entry in report/cells_out.py"
RATE = "bitrate_mean_mbps"

METRIC_WORDS = {
    "delay_mean_ms": "latency (ms)",
    "bitrate_mean_mbps": "bitrate (Mbit/s)",
    "bitrate_q1_mbps": "bitrate 1st quartile (Mbit/s)",
    "pct_delay_over_20ms": "% > 20 ms",
    "pct_delay_over_50ms": "% > 50 ms",
}


@dataclass(frozen=True)
class Out:
    """A cell outside the target (``claim`` None) or a claim that does not hold, held out
    by ``cell`` (None: a claim without an entry); ``how``: the cell's deviation from the
    paper, or the claim's verdict."""

    cell: Cell | None
    claim: str | None
    how: str


def outs(cells: TmaCells) -> list[Out]:
    """What is out in ``cells``: the main cells (:data:`.papercells.MAIN`) outside the
    target, then the claims that fail or hold in order only (their cell from the
    registry)."""
    found: list[Out] = []
    for _, role, metric in MAIN:
        for q in QDISCS:
            for k in CCAS:
                try:
                    ours = cells.get(role, metric, q, k)
                except NotMeasuredError:
                    continue
                theirs = paper(role, metric, q, k)
                if not within(ours, theirs):
                    found.append(Out(Cell(role, metric, q, k), None, deviation(ours, theirs)))
    for claim in TMA_CLAIMS:
        _, verdict = judge(claim, cells)
        if verdict in ("fails", "in order only"):
            entry = entry_of(claim.name)
            found.append(Out(entry.cell if entry else None, claim.name, verdict))
    return found


def entry_of(claim: str | None, cell: Cell | None = None) -> OutEntry | None:
    """The registry's entry of ``claim`` (None: of the Table II ``cell``)."""
    return next((e for e in ENTRIES if e.claim == claim and (claim or e.cell == cell)), None)


def coverage(found: Sequence[Out], entries: Sequence[OutEntry]) -> tuple[list[str], list[str]]:
    """(missing, stale): what is out without an entry, and entries of nothing out."""
    keys = {(o.claim, None if o.claim else o.cell) for o in found}
    have = {(e.claim, None if e.claim else e.cell) for e in entries}
    missing = sorted(describe(c, k) for c, k in keys - have)
    stale = sorted(describe(c, k) for c, k in have - keys)
    return missing, stale


def describe(claim: str | None, cell: Cell | None) -> str:
    if claim:
        return f"claim {claim}"
    assert cell is not None
    return f"cell {cell.role} {cell.metric} {cell.qdisc}/{cell.cca}"


class FactorCells:
    """The published datasets' runs, read once each from ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._docs: dict[str, list[dict[str, Any]]] = {}

    def docs(self, name: str) -> list[dict[str, Any]]:
        if name not in self._docs:
            path = self.root / name
            if not (path / "datasheet.json").is_file():
                raise ConfigError(f"tma_cells_out: no published dataset {path}")
            # The documents themselves, not the dataset reader (which renders tables
            # through the artefact registry that holds this table).
            self._docs[name] = read_metrics(sorted((path / "metrics").glob("*.json")))
        return self._docs[name]

    def mean(self, name: str, labels: Labels, cell: Cell) -> float:
        """The mean of ``cell``'s metric over the runs of ``name`` with ``labels`` under the
        cell's queue discipline and CCA (its analysis window)."""
        want = {*labels, ("qdisc", cell.qdisc), ("cca", cell.cca)}
        values = [
            float(v)
            for d in self.docs(name)
            if want <= {(k, str(x)) for k, x in d.get("run", {}).items()}
            and (v := (d.get("roles") or {}).get(cell.role, {}).get(cell.metric)) is not None
        ]
        if not values:
            where = ", ".join(f"{k}={v}" for k, v in sorted(want))
            raise ConfigError(f"tma_cells_out: {name} has no run with {where} ({cell.metric})")
        return sum(values) / len(values)

    def effect(self, factor: Factor, cell: Cell) -> tuple[float, float]:
        """(baseline's mean, the factor's mean) of ``cell``."""
        base = self.mean(factor.baseline_dataset, factor.baseline, cell)
        return base, self.mean(factor.dataset, factor.labels, cell)


def _labels(name: str, labels: Labels) -> str:
    return name + (": " + ", ".join(f"{k}={v}" for k, v in labels) if labels else "")


def _apart(ours: float, theirs: float, half_width: float | None) -> str:
    if half_width is None:
        return "one run"
    if half_width == 0:
        return "\u221e (no spread)"
    return f"{abs(ours - theirs) / half_width:.1f}"


def _factor_cells(
    entry: OutEntry, ours: float, theirs: float, factors: FactorCells
) -> tuple[str, str | None, str | None]:
    """(factor, its effect, why) of the row."""
    best: tuple[float, Factor, float, float] | None = None
    for factor in entry.factors:
        base, value = factors.effect(factor, entry.cell)
        gain = abs(ours - theirs) - abs(ours + value - base - theirs)
        if gain > 0 and (best is None or gain > best[0]):
            best = (gain, factor, base, value)
    if best is None:
        return f"none measured moves it ({len(entry.factors)} tried)", None, entry.why
    _, factor, base, value = best
    effect = (
        f"{value - base:+.2f}: {num2(base)} \u2192 {num2(value)} "
        f"(against {_labels(factor.baseline_dataset, factor.baseline)})"
    )
    if (entry.cell.role, entry.cell.metric) != ("cg", RATE):  # what it does to the CG rate
        rate = Cell("cg", RATE, entry.cell.qdisc, entry.cell.cca)
        before, after = factors.effect(factor, rate)
        effect += f"; CG bitrate {num2(before)} \u2192 {num2(after)} Mbit/s"
    return f"{factor.what} ({_labels(factor.dataset, factor.labels)})", effect, entry.why


def cells_out_table(docs: Docs, style: Style, datasets: Path) -> Table:
    """The account over a campaign's runs (one condition: :data:`.claims_tma.CELL_KEYS`),
    its factors read from the published datasets under ``datasets``."""
    require_one_condition(docs, CELL_KEYS, table="tma_cells_out")
    cells = TmaCells.of(docs)
    factors = FactorCells(datasets)
    found = outs(cells)
    rows: list[Row] = []
    for out in found:
        entry = entry_of(out.claim, out.cell)
        c = out.cell
        if c is None:  # a claim without an entry: no cell named to measure it by
            rows.append(Row((str(out.claim),), (out.how, None, None, None, NO_ENTRY, None, None)))
            continue
        where = f"{style.label('qdisc', c.qdisc, short=True)} {style.label('cca', c.cca)}"
        what = f"{FLOW_LABELS[c.role]} {METRIC_WORDS.get(c.metric, c.metric)}, {where}"
        label = f"{out.claim}: {what}" if out.claim else what
        runs = tma2_cell_runs(cells.roles, cells.runs, c.role, c.qdisc, c.cca)
        r = mean_ci(runs.get_column(c.metric).cast(pl.Float64).to_list())
        if r.mean is None:
            raise NotMeasuredError(what)
        ours, theirs = r.mean, paper(c.role, c.metric, c.qdisc, c.cca)
        text = num2(ours) + ("" if r.half_width is None else f" \u00b1 {num2(r.half_width)}")
        rows.append(
            Row(
                (label,),
                (
                    out.how,
                    text,
                    num2(theirs),
                    _apart(ours, theirs, r.half_width),
                    *(
                        _factor_cells(entry, ours, theirs, factors)
                        if entry
                        else (NO_ENTRY, None, None)
                    ),
                ),
            )
        )
    n_cells = sum(o.claim is None for o in found)
    n_claims = len(found) - n_cells
    judged = sum(judge(c, cells)[1] != "not measured" for c in TMA_CLAIMS)
    measured = sum(_measured(cells, role, metric) for _, role, metric in MAIN)
    missing, _ = coverage(found, ENTRIES)
    notes = (
        f"Still out: {n_cells} of {measured} Table II cells and {n_claims} of {judged} claims"
        + (f", {len(missing)} of them without an entry" if missing else "")
        + ", each with the measured factor that moves it most towards the paper and why the "
        "paper's value is out of reach here",
        "Ours: mean over the repetitions \u00b1 the 95 % half-width (t); half-widths apart: "
        "|ours - paper| over it. Effect: a factor's cell minus the same set-up's without it "
        "(dataset: labels, under the row's queue and TCP); it moves ours towards the paper "
        "when ours plus the effect is nearer the paper's, and the row names the factor that "
        "comes nearest.",
    )
    header = (
        (
            ("Out", 1),
            ("Ours", 1),
            ("Paper", 1),
            ("Half-widths apart", 1),
            ("Moves it most towards the paper", 1),
            ("Measured effect", 1),
            ("Why out of reach", 1),
        ),
    )
    caption = "Table II's cells and TMA 2024's claims still out, and why"
    return Table(header, ("Cell or claim",), tuple(rows), caption, notes)


def _measured(cells: TmaCells, role: str, metric: str) -> int:
    """How many of Table II's queue x CCA cells of ``role``'s ``metric`` ``cells`` has."""
    n = 0
    for q in QDISCS:
        for k in CCAS:
            try:
                cells.get(role, metric, q, k)
            except NotMeasuredError:
                continue
            n += 1
    return n
