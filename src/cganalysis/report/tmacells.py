"""A campaign's TMA 2024 cells as the claims (:mod:`.claims_tma`) and the comparison with
the paper (:mod:`.papercells`) read them: Table II's and Table I's own
(:func:`.tables.tma2_cell_runs`, :func:`.tables.tma1_cell_runs`, averaged by
:func:`.tables.cell_mean`), and the paper's numbers (Table II: :data:`.factors.PAPER`;
Table I: here). A cell the campaign lacks raises :class:`.claims.NotMeasuredError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from cganalysis.experiment.labelkeys import LEGACY_SYSTEMS
from cganalysis.metrics.rows import role_rows, run_rows
from cganalysis.report.claims import NotMeasuredError
from cganalysis.report.factors import CELLS, PAPER
from cganalysis.report.tables import cell_mean, tma1_cell_runs, tma2_cell_runs

DT, HTB, L4S = "pfifo", "htb", "dualpi2"
CCAS = ("cubic", "bbr")
CCA_LABELS = {"cubic": "Cubic", "bbr": "BBR"}
FLOW_LABELS = {"cg": "CG", "competitor": "TCP", None: "link"}

#: Table I's columns: the values of the runs' ``system`` label each stands for (older
#: datasets' spellings included: ``labelkeys.LEGACY_SYSTEMS``).
TABLE1_SYSTEMS: dict[str, tuple[str, ...]] = {
    column: (
        column,
        f"cga-cg-{column}",
        *(k for k, v in LEGACY_SYSTEMS.items() if v == f"cga-cg-{column}"),
    )
    for column in ("none", "scream")
}
#: TMA 2024 Table I (No CCA, SCReAM CCA): average latency (ms), % of packets over 10, 20,
#: 50 and 100 ms.
TABLE1_PAPER: dict[str, tuple[float, ...]] = {
    "none": (47.9, 99.8, 85.2, 21.1, 6.8),
    "scream": (15.98, 73.9, 18.4, 1.5, 0.3),
}
TABLE1_COLUMNS = (
    "delay_mean_ms",
    "pct_delay_over_10ms",
    "pct_delay_over_20ms",
    "pct_delay_over_50ms",
    "pct_delay_over_100ms",
)


#: TMA 2024 Table II's other rows (seed 004): (role, metric) -> its six cells in
#: :data:`.factors.PAPER`'s column order. The "Variance" row holds standard deviations.
PAPER_MORE: dict[tuple[str, str], tuple[float, ...]] = {
    ("cg", "delay_std_ms"): (24.34, 11.93, 0.92, 0.8, 0.99, 0.51),
    ("cg", "pct_delay_over_10ms"): (96.28, 84.23, 0, 0, 0, 0),
    ("cg", "pct_delay_over_20ms"): (85.54, 68.88, 0, 0, 0, 0),
    ("cg", "pct_delay_over_50ms"): (34.71, 0.41, 0, 0, 0, 0),
    ("cg", "pct_delay_over_100ms"): (0, 0, 0, 0, 0, 0),
    ("cg", "bitrate_q1_mbps"): (4.29, 9.69, 27.22, 27.63, 21.83, 19.78),
    ("competitor", "delay_std_ms"): (24.57, 12.31, 26.84, 20.91, 4.03, 5.67),
    ("competitor", "pct_delay_over_10ms"): (99.18, 84.71, 99.18, 99.17, 6.75, 25.42),
    ("competitor", "pct_delay_over_20ms"): (82.3, 66.53, 99.18, 98.76, 0.84, 4.66),
    ("competitor", "pct_delay_over_50ms"): (35.8, 0.83, 96.3, 81.41, 0, 0),
    ("competitor", "pct_delay_over_100ms"): (0, 0, 48.15, 2.48, 0, 0),
    ("competitor", "bitrate_q1_mbps"): (21.14, 21.73, 18.12, 17.55, 13.52, 19),
}


def paper(role: str, metric: str, qdisc: str, cca: str) -> float:
    """The paper's Table II cell (:data:`.factors.PAPER`, then :data:`PAPER_MORE`)."""
    index = next((i for i, (_, r, m, _) in enumerate(CELLS) if (r, m) == (role, metric)), None)
    if index is not None:
        return PAPER[(qdisc, cca)][index]
    return PAPER_MORE[(role, metric)][list(PAPER).index((qdisc, cca))]


@dataclass(frozen=True)
class TmaCells:
    """A campaign's Table II and Table I cells (means over the cell's runs)."""

    roles: pl.DataFrame
    runs: pl.DataFrame

    @classmethod
    def of(cls, docs: Sequence[Mapping[str, Any]]) -> TmaCells:
        return cls(role_rows(docs), run_rows(docs))

    def get(self, role: str | None, column: str, qdisc: str, cca: str) -> float:
        """Table II's cell: ``role``'s ``column`` (``role`` None: the run's) under ``qdisc``
        against ``cca``."""
        frame = tma2_cell_runs(self.roles, self.runs, role, qdisc, cca)
        if "system" in frame.columns and frame.get_column("system").n_unique() > 1:
            # A cellular campaign's runs differ in their CG system: not one Table II cell.
            raise NotMeasuredError(
                f"Table II cell {qdisc} / {cca} of one system (its runs are of several)"
            )
        value = None if frame.height == 0 else cell_mean(frame, column)
        if value is None:
            raise NotMeasuredError(f"Table II cell {FLOW_LABELS[role]} {column}, {qdisc} / {cca}")
        return value

    def flagged(self, qdisc: str, cca: str) -> bool:
        """Whether a run of Table II's ``qdisc`` / ``cca`` cell is flagged (meta.json's or
        the metrics' flags): its numbers are not the bottleneck's alone."""
        frame = tma2_cell_runs(self.roles, self.runs, None, qdisc, cca)
        return "flags" in frame.columns and bool(
            (frame.get_column("flags").fill_null("") != "").any()
        )

    def table1(self, column: str, variant: str) -> float:
        """Table I's cell: the CG flow's ``column`` in the runs of ``variant``."""
        frame = pl.concat(
            [tma1_cell_runs(self.roles, "system", s) for s in TABLE1_SYSTEMS[variant]]
        )
        value = None if frame.height == 0 else cell_mean(frame, column)
        if value is None:
            raise NotMeasuredError(f"Table I cell {column}, {variant}")
        return value
