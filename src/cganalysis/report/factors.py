"""A factor table: TMA 2024 Table II's headline cells for each combination of a factor
campaign's labels (``configs/campaigns/tma2024-factors.yaml``: queue x encoder;
``tma2024-factors-burst.yaml``: queue x burst) and
competing CCA, under the paper's own values.

Each cell is the mean over the combination's repetitions and, with more than one, their
range (``14.7 (14.6-14.9)``): on simulated time two repetitions are two draws of the
same set-up, and the range is what a reader needs to tell a factor's effect from a seed's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cganalysis.errors import ConfigError
from cganalysis.metrics.rows import WINDOW_PHASE
from cganalysis.metrics.runfacts import LABEL_KEYS
from cganalysis.report.style import Style
from cganalysis.report.tablefmt import Row, Table
from cganalysis.report.tables import num2

#: The cells (label, role, metric, scale): those a reader of Table II checks first.
CELLS: tuple[tuple[str, str, str, float], ...] = (
    ("CG latency (ms)", "cg", "delay_mean_ms", 1.0),
    ("CG bitrate (Mbit/s)", "cg", "bitrate_mean_mbps", 1.0),
    ("CG loss (%)", "cg", "loss_rate", 100.0),
    ("TCP latency (ms)", "competitor", "delay_mean_ms", 1.0),
    ("TCP bitrate (Mbit/s)", "competitor", "bitrate_mean_mbps", 1.0),
)

#: TMA 2024 Table II (seed 004), the cells above per (queue discipline, CCA).
PAPER: dict[tuple[str, str], tuple[float, ...]] = {
    ("pfifo", "cubic"): (44.9, 12.83, 0.25, 44.45, 33.34),
    ("pfifo", "bbr"): (26.5, 15.18, 0.33, 25.96, 31.66),
    ("htb", "cubic"): (1.16, 28.64, 0.24, 99.78, 19.56),
    ("htb", "bbr"): (0.61, 28.66, 0.05, 67.38, 19.28),
    ("dualpi2", "cubic"): (0.53, 24.25, 0.08, 4.68, 16.43),
    ("dualpi2", "bbr"): (0.31, 21.66, 0.1, 7.57, 21.68),
}

#: The labels every run has (not a factor campaign's own factors): the metrics' label
#: keys but `queue`, which the factor campaigns use as their first factor.
RUN_LABELS = frozenset(LABEL_KEYS) - {"queue"}


def campaign_factors(docs: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The labels the runs carry besides the usual ones: a factor campaign's factors
    (``queue``, ``encoder``, ``burst``...) in the campaign file's order."""
    seen: dict[str, None] = {}
    for doc in docs:
        seen.update((k, None) for k in doc.get("run", {}) if k not in RUN_LABELS)
    return tuple(seen)


def _cell(values: Sequence[float]) -> str | None:
    if not values:
        return None
    mean = sum(values) / len(values)
    if len(values) == 1:
        return num2(mean)
    return f"{num2(mean)} ({num2(min(values))}-{num2(max(values))})"


def _value(doc: Mapping[str, Any], role: str, metric: str) -> float | None:
    value = (doc.get("roles") or {}).get(role, {}).get(metric)
    return None if value is None else float(value)


def factor_table(
    docs: Sequence[Mapping[str, Any]],
    *,
    style: Style,
    ccas: Sequence[str],
    factors: Sequence[str] | None = None,
) -> Table:
    """One row per combination of ``factors`` (None: the campaign's, from the runs' labels)
    and CCA (combinations in the order the runs come), under the paper's row of their
    queue discipline and CCA; columns: the cells."""
    factors = campaign_factors(docs) if factors is None else tuple(factors)
    if not factors:
        raise ConfigError(
            "tma_factors: the runs carry no factor label besides the CCA; "
            "render it from a factor campaign (configs/campaigns/tma2024-factors*.yaml)"
        )
    combos: dict[tuple[str, ...], str] = {}  # combination -> its queue discipline
    for doc in docs:
        run = doc.get("run", {})
        combos.setdefault(tuple(str(run.get(f, "")) for f in factors), str(run.get("qdisc")))
    qdiscs = sorted(set(combos.values()), key=lambda q: (q != "pfifo", q))
    blank = ("",) * (len(factors) - 1)
    rows: list[Row] = []
    for qdisc in qdiscs:
        for cca in ccas:
            cca_label = style.label("cca", cca)
            paper = PAPER.get((qdisc, cca))
            qdisc_label = style.label("qdisc", qdisc, short=True)
            rows.append(
                Row(
                    (f"paper, {qdisc_label}", *blank, cca_label),
                    tuple(num2(v) for v in paper) if paper else (None,) * len(CELLS),
                )
            )
            for combo in (c for c, q in combos.items() if q == qdisc):
                runs = [
                    d
                    for d in docs
                    if d.get("run", {}).get("cca") == cca
                    and tuple(str(d.get("run", {}).get(f, "")) for f in factors) == combo
                ]
                cells = tuple(
                    _cell([v * scale for d in runs if (v := _value(d, role, metric)) is not None])
                    for _, role, metric, scale in CELLS
                )
                rows.append(Row((*combo, cca_label), cells))
    header = (tuple((label, 1) for label, *_ in CELLS),)
    notes = (f"Analysis window ({WINDOW_PHASE}); each cell: mean over the repetitions (range).",)
    caption = "Table II's cells per " + " x ".join(factors) + " and TCP, against the paper"
    return Table(header, (*factors, "TCP"), tuple(rows), caption, notes)
