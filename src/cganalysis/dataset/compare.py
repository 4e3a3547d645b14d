"""A new run or campaign against a baseline dataset, cell by cell.

A cell is a condition of the baseline (the labels that vary among its runs: queue
discipline and CCA for TMA 2024's Table II; capacity, system and CCA for Xu & Claypool)
and a metric of the papers' tables (TMA 2024 Table II's rows per flow over the analysis
window, the link's utilisation; for Xu & Claypool's campaigns also delay, loss and frame
rate with and before the competing flow). Each row says the new value (the mean over the
new runs of that condition, as the tables show it), the baseline's mean, its spread
(minimum and maximum over its repetitions) and whether the new value lies within it. A
baseline with one run per condition has no spread: the row says so instead of guessing
a tolerance, and gives the relative difference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from cganalysis.errors import ConfigError
from cganalysis.metrics.rows import WINDOW_PHASE, role_rows, run_rows
from cganalysis.report.conditions import run_labels
from cganalysis.report.tables import STD_LABEL, TMA2_ROWS

#: Labels that name a run, never a condition.
NOT_CONDITIONS = ("run_id", "campaign", "repetition")


@dataclass(frozen=True)
class ComparedMetric:
    """One metric of a cell: a column of the per-role rows (``role`` set) in ``phase``,
    or of the per-run rows (``role`` None); shown times ``scale``."""

    label: str
    column: str
    role: str | None = None
    phase: str = WINDOW_PHASE
    scale: float = 1.0


def _tma_metrics() -> list[ComparedMetric]:
    out = []
    for block, role in (("CG", "cg"), ("TCP", "competitor")):
        for label, column, _, scale in TMA2_ROWS:
            name = STD_LABEL if column == "delay_std_ms" else label
            unit = {"bitrate": " (Mbit/s)", "delay_m": " (ms)", "loss": " (%)"}
            suffix = next((u for k, u in unit.items() if column.startswith(k)), "")
            out.append(ComparedMetric(f"{block} {name}{suffix}", column, role, scale=scale))
        out.append(ComparedMetric(f"{block} utilisation (%)", "utilisation", role, scale=100.0))
    out.append(ComparedMetric("utilisation, total (%)", "utilisation_total", scale=100.0))
    return out


#: TMA 2024 Table II's rows, per flow, and the link's utilisation.
TMA_METRICS: tuple[ComparedMetric, ...] = tuple(_tma_metrics())
#: What Xu & Claypool's Tables 2-6 show, with and before the competing flow.
XU_METRICS: tuple[ComparedMetric, ...] = tuple(
    ComparedMetric(f"CG {what} {phase.replace('_', ' ')}", column, "cg", phase, scale)
    for phase in ("before_competitor", "with_competitor")
    for what, column, scale in (
        ("delay (ms)", "delay_mean_ms", 1.0),
        ("loss (%)", "loss_rate", 100.0),
        ("frame rate (fps)", "frame_rate_fps", 1.0),
    )
)


def metrics_for(campaign: str) -> tuple[ComparedMetric, ...]:
    """The metrics compared for a baseline campaign (by its name, as the datasheet)."""
    return TMA_METRICS + (XU_METRICS if campaign.startswith("xu") else ())


def condition_keys(docs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The labels that tell ``docs``' conditions apart: those that vary, in the runs' label
    order, leaving out one that follows from the ones before (TMA's ``queue`` follows from
    ``qdisc``), so that a campaign naming its queues otherwise still finds its cells."""
    labels = [run_labels(d) for d in docs]
    names = [k for k in dict.fromkeys(k for lab in labels for k in lab) if k not in NOT_CONDITIONS]
    chosen: list[str] = []
    for k in names:
        groups: dict[tuple[str, ...], set[str]] = {}
        for lab in labels:
            groups.setdefault(tuple(str(lab.get(c)) for c in chosen), set()).add(str(lab.get(k)))
        if any(len(values) > 1 for values in groups.values()):
            chosen.append(k)
    return chosen


def _values(
    docs: Sequence[Mapping[str, Any]], keys: Sequence[str], metric: ComparedMetric
) -> dict[tuple[str, ...], list[float]]:
    """The metric's value of every run, grouped by its condition (``keys``' values)."""
    frame = run_rows(docs) if metric.role is None else role_rows(docs)
    if metric.role is not None:
        frame = frame.filter((pl.col("phase") == metric.phase) & (pl.col("role") == metric.role))
    labels = {str(run_labels(d).get("run_id")): run_labels(d) for d in docs}
    out: dict[tuple[str, ...], list[float]] = {}
    if metric.column not in frame.columns:
        return out
    for run_id, value in frame.select("run_id", metric.column).iter_rows():
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        key = tuple(str(labels[run_id].get(k)) for k in keys)
        out.setdefault(key, []).append(float(value) * metric.scale)
    return out


def compare(
    new: Sequence[Mapping[str, Any]],
    baseline: Sequence[Mapping[str, Any]],
    *,
    campaign: str = "",
    by: Sequence[str] | None = None,
) -> pl.DataFrame:
    """One row per cell (condition and metric) of the baseline: the labels, ``metric``,
    ``new`` (mean over the new runs), ``n_new``, ``baseline`` (its mean),
    ``baseline_min``, ``baseline_max``, ``n_baseline``, ``diff_pct`` (new against the
    baseline's mean) and ``verdict``: ``within`` or ``outside`` the baseline's spread,
    ``no spread: one baseline run``, or ``no new run`` for a condition the new runs do not
    have."""
    if not new or not baseline:
        raise ConfigError("compare: no runs to compare (the new side or the baseline is empty)")
    keys = list(by) if by else condition_keys(baseline)
    rows: list[dict[str, Any]] = []
    for metric in metrics_for(campaign):
        base, mine = _values(baseline, keys, metric), _values(new, keys, metric)
        for cell in sorted(base):
            b, n = base[cell], mine.get(cell, [])
            b_mean = sum(b) / len(b)
            n_mean = sum(n) / len(n) if n else None
            if n_mean is None:
                verdict = "no new run"
            elif len(b) == 1:
                verdict = "no spread: one baseline run"
            else:
                slack = 1e-9 * max(1.0, abs(b_mean))
                verdict = "within" if min(b) - slack <= n_mean <= max(b) + slack else "outside"
            diff = (
                None if n_mean is None or b_mean == 0 else 100.0 * (n_mean - b_mean) / abs(b_mean)
            )
            rows.append(
                {
                    **dict(zip(keys, cell, strict=True)),
                    "metric": metric.label,
                    "new": n_mean,
                    "n_new": len(n),
                    "baseline": b_mean,
                    "baseline_min": min(b),
                    "baseline_max": max(b),
                    "n_baseline": len(b),
                    "diff_pct": diff,
                    "verdict": verdict,
                }
            )
    # Cell by cell: a condition's metrics together, in the metrics' order.
    return pl.DataFrame(rows, infer_schema_length=None).sort(keys, maintain_order=True)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_comparison(table: pl.DataFrame, *, uncovered: bool = False) -> str:
    """The comparison as aligned text, one line per cell, and a count of the verdicts;
    the baseline's cells the new runs do not have are counted, and listed with
    ``uncovered``."""
    keys = table.columns[: table.columns.index("metric")]
    total = table
    if not uncovered:
        table = table.filter(pl.col("verdict") != "no new run")
    header = [*keys, "metric", "new", "baseline", "baseline spread (min-max)", "diff", "verdict"]
    lines = [header]
    for row in table.iter_rows(named=True):
        spread = (
            f"n=1: {_num(row['baseline_min'])}"
            if row["n_baseline"] == 1
            else f"{_num(row['baseline_min'])}-{_num(row['baseline_max'])} (n={row['n_baseline']})"
        )
        diff = "-" if row["diff_pct"] is None else f"{row['diff_pct']:+.1f} %"
        lines.append(
            [
                *(str(row[k]) for k in keys),
                row["metric"],
                _num(row["new"]),
                _num(row["baseline"]),
                spread,
                diff,
                row["verdict"],
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in lines]
    counts = total.group_by("verdict").len().sort("verdict")
    summary = ", ".join(f"{n} {v}" for v, n in counts.iter_rows())
    return "\n".join([*text, "", f"{total.height} cells: {summary}"])
