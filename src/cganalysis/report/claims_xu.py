"""Xu & Claypool 2022's claims (:mod:`.claims`): the relations the paper draws across its
three systems from its Tables 3-6 (delay, loss and frame rate by capacity, queue size and
competing CCA, section 4.3) and Figs. 3-4 (fairness, response and recovery, sections 4.1-4.2),
each checked over a campaign's cells for the one CG system it runs.

The cells are the tables' own (:func:`.xutables.xu_cell_runs`, :func:`.xutables.xu_value`)
and the figures' (:func:`cganalysis.metrics.aggregate.summarise_conditions`). The paper
states its relations for all three systems, with their numbers in its tables; the few it
states as numbers are written here once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Literal

import polars as pl

from cganalysis.metrics.aggregate import summarise_conditions
from cganalysis.metrics.rows import role_rows, run_rows
from cganalysis.report.claims import Claim, NotMeasuredError, Outcome, claims_table, within
from cganalysis.report.conditions import require_one_condition
from cganalysis.report.tablefmt import Table
from cganalysis.report.tables import num2
from cganalysis.report.xutables import XuMetric, sorted_queues, xu_cell_runs, xu_value

Phase = Literal["before_competitor", "with_competitor"]
WITH: Phase = "with_competitor"
CCAS = ("cubic", "bbr")


@dataclass(frozen=True)
class XuCells:
    """A campaign's cells of Xu's tables (CG flow) and conditions of its figures."""

    roles: pl.DataFrame
    runs: pl.DataFrame

    @classmethod
    def of(cls, docs: Sequence[Mapping[str, Any]]) -> XuCells:
        return cls(role_rows(docs), run_rows(docs))

    @property
    def capacities(self) -> list[float]:
        return sorted({float(c) for c in self.roles.get_column("capacity_mbps").drop_nulls()})

    @property
    def queues(self) -> list[str]:
        """The queue sizes in multiples of the BDP (``0.5x``), smallest first; a relation
        over queue sizes needs two."""
        named = {str(q) for q in self.roles.get_column("queue").drop_nulls()}
        queues = sorted_queues([q for q in named if q.endswith("x")])
        if len(queues) < 2:
            raise NotMeasuredError("two queue sizes in multiples of the BDP")
        return queues

    def get(self, metric: XuMetric, phase: Phase, capacity: float, queue: str, cca: str) -> float:
        """The cell (``cca`` "" pools the CCAs, as Tables 2 and 4)."""
        frame = xu_cell_runs(self.roles, phase, capacity, queue)
        if cca:
            frame = frame.filter(pl.col("cca") == cca)
        value = xu_value(frame, metric) if frame.height else None
        if value is None:
            raise NotMeasuredError(
                f"{metric} cell {num2(capacity)} Mb/s, {queue}, {cca or 'no TCP'}"
            )
        return value

    def conditions(self) -> pl.DataFrame:
        """Figs. 3-5's conditions: fairness, response and recovery per CCA x capacity x
        queue."""
        if self.runs.height == 0:
            raise NotMeasuredError("run with a competing flow")
        return summarise_conditions(self.runs, ["cca", "capacity_mbps", "queue"])


def _over_rows(
    c: XuCells, cca: str, metric: XuMetric, rel: Callable[[list[float]], bool]
) -> tuple[bool, str]:
    """``rel`` over each capacity's cells across queue sizes (smallest first)."""
    rows = {cap: [c.get(metric, WITH, cap, q, cca) for q in c.queues] for cap in c.capacities}
    text = "; ".join(f"{num2(cap)}: " + " / ".join(num2(v) for v in r) for cap, r in rows.items())
    return all(rel(r) for r in rows.values()), text


def _rising(values: list[float]) -> bool:
    return all(a < b for a, b in pairwise(values))


def _not_rising(values: list[float]) -> bool:
    return all(a >= b for a, b in pairwise(values))


def _not_falling(values: list[float]) -> bool:
    return all(a <= b for a, b in pairwise(values))


def _little_self_loss(c: XuCells) -> Outcome:
    losses = [
        c.get("loss", "before_competitor", cap, q, "") for cap in c.capacities for q in c.queues
    ]
    worst = max(losses)
    return Outcome(f"at most {num2(worst)} %", worst <= 1.0, worst <= 0.09 * 1.25)


def _delay_grows(c: XuCells) -> Outcome:
    results = {k: _over_rows(c, k, "delay", _rising) for k in CCAS}
    ours = "; ".join(f"{k}: {text} ms" for k, (_, text) in results.items())
    return Outcome(ours, all(ok for ok, _ in results.values()))


def _bbr_halves_delay(c: XuCells) -> Outcome:
    big = c.queues[-1]
    ratios = [
        c.get("delay", WITH, cap, big, "bbr") / c.get("delay", WITH, cap, big, "cubic")
        for cap in c.capacities
    ]
    ours = f"BBR / Cubic at {big}: " + ", ".join(f"x{num2(r)}" for r in ratios)
    return Outcome(ours, all(r < 1 for r in ratios), all(within(r, 0.5) for r in ratios))


def _tcp_raises_loss(c: XuCells) -> Outcome:
    lower = [
        (cap, q, k)
        for cap in c.capacities
        for q in c.queues
        for k in CCAS
        if c.get("loss", WITH, cap, q, k) < c.get("loss", "before_competitor", cap, q, "")
    ]
    cells = len(c.capacities) * len(c.queues) * len(CCAS)
    ours = f"lower with TCP in {len(lower)} of {cells} cells"
    return Outcome(ours, not lower)


def _loss_falls(c: XuCells) -> Outcome:
    results = {k: _over_rows(c, k, "loss", _not_rising) for k in CCAS}
    ours = "; ".join(f"{k}: {text} %" for k, (_, text) in results.items())
    return Outcome(ours, all(ok for ok, _ in results.values()))


def _small_queue_cells(c: XuCells) -> list[tuple[float, str]]:
    """The cells of every queue size but the largest: the paper's "small and medium"."""
    return [(cap, q) for cap in c.capacities for q in c.queues[:-1]]


def _bbr_more_loss(c: XuCells) -> Outcome:
    pairs = [
        (c.get("loss", WITH, cap, q, "bbr"), c.get("loss", WITH, cap, q, "cubic"))
        for cap, q in _small_queue_cells(c)
    ]
    higher = sum(b > k for b, k in pairs)
    return Outcome(f"higher with BBR in {higher} of {len(pairs)} cells", higher == len(pairs))


def _cubic_frames_high(c: XuCells) -> Outcome:
    rates = [c.get("frame_rate", WITH, cap, q, "cubic") for cap in c.capacities for q in c.queues]
    return Outcome(f"{num2(min(rates))}-{num2(max(rates))} f/s", min(rates) >= 50.0)


def _bbr_degrades_frames(c: XuCells) -> Outcome:
    pairs = [
        (c.get("frame_rate", WITH, cap, q, "bbr"), c.get("frame_rate", WITH, cap, q, "cubic"))
        for cap, q in _small_queue_cells(c)
    ]
    lower = sum(b < k for b, k in pairs)
    return Outcome(f"lower with BBR in {lower} of {len(pairs)} cells", lower == len(pairs))


def _frames_rise_with_queue(c: XuCells) -> Outcome:
    results = {k: _over_rows(c, k, "frame_rate", _not_falling) for k in CCAS}
    ours = "; ".join(f"{k}: {text} f/s" for k, (_, text) in results.items())
    return Outcome(ours, all(ok for ok, _ in results.values()))


def _response_before_recovery(c: XuCells) -> Outcome:
    both = c.conditions().drop_nulls(["response_time_s", "recovery_time_s"])
    if both.height == 0:
        raise NotMeasuredError("condition with both a response and a recovery time")
    response = float(both.get_column("response_time_s").mean())  # type: ignore[arg-type]
    recovery = float(both.get_column("recovery_time_s").mean())  # type: ignore[arg-type]
    ours = f"{num2(response)} s vs {num2(recovery)} s on average ({both.height} conditions)"
    return Outcome(ours, response < recovery)


def _bbr_takes_more(c: XuCells) -> Outcome:
    fair = c.conditions().drop_nulls(["fairness_ratio"])
    by_cca = {
        k: {
            (r["capacity_mbps"], r["queue"]): r["fairness_ratio"]
            for r in fair.filter(pl.col("cca") == k).iter_rows(named=True)
        }
        for k in CCAS
    }
    shared = sorted(set(by_cca["cubic"]) & set(by_cca["bbr"]), key=str)
    if not shared:
        raise NotMeasuredError("condition run with both CCAs")
    less = sum(by_cca["bbr"][x] < by_cca["cubic"][x] for x in shared)
    ours = f"CG's share lower against BBR in {less} of {len(shared)} conditions"
    return Outcome(ours, 3 * less >= 2 * len(shared))


XU_CLAIMS: tuple[Claim[XuCells], ...] = (
    Claim(
        "no_self_induced_loss",
        "4.3; Table 4",
        "Without TCP, almost no loss even with small queues and low capacities "
        "(at most 0.09 %; under 1 %)",
        _little_self_loss,
    ),
    Claim(
        "delay_grows_with_queue",
        "4.3; Table 3",
        "With TCP (Cubic or BBR), delay at the limit the queue sets: larger queue, larger delay",
        _delay_grows,
    ),
    Claim(
        "bbr_halves_large_queue_delay",
        "4.3; Table 3",
        "Over 7x BDP queues, about half the delay against BBR than against Cubic "
        "(e.g. 54.4 vs 110.6 ms)",
        _bbr_halves_delay,
    ),
    Claim(
        "tcp_raises_loss",
        "4.3; Tables 4-5",
        "Losses increase with a competing TCP flow, Cubic or BBR",
        _tcp_raises_loss,
    ),
    Claim(
        "loss_falls_with_queue",
        "4.3; Table 5",
        "Losses lower for larger queues than for smaller ones",
        _loss_falls,
    ),
    Claim(
        "bbr_more_loss",
        "4.3; Table 5",
        "Losses against BBR nearly always higher than against Cubic, especially with small "
        "and medium queues (0.5x, 2x BDP)",
        _bbr_more_loss,
    ),
    Claim(
        "cubic_frame_rate_high",
        "4.3; Table 6",
        "Against Cubic, frame rates generally high (50+ f/s)",
        _cubic_frames_high,
    ),
    Claim(
        "bbr_degrades_frame_rate",
        "4.3; Table 6",
        "Against BBR with small and medium queues, frame rates degrade (below Cubic's)",
        _bbr_degrades_frames,
    ),
    Claim(
        "frame_rate_rises_with_queue",
        "4.3; Table 6",
        "Frame rate higher with a larger queue, Cubic or BBR",
        _frames_rise_with_queue,
    ),
    Claim(
        "response_before_recovery",
        "4.2; Fig. 4",
        "Response times much shorter than recovery times (2-25 s against 3-85 s)",
        _response_before_recovery,
    ),
    Claim(
        "bbr_takes_more",
        "4.1; Fig. 3",
        "A competing BBR flow gets more capacity than a Cubic one (in most conditions: "
        "two in three)",
        _bbr_takes_more,
    ),
)

#: What files a run into a cell: runs differing in another label (a second system or
#: queue discipline) must not mix.
CELL_KEYS = ("capacity_mbps", "queue", "cca")


def xu_claims_table(docs: Sequence[Mapping[str, Any]]) -> Table:
    """Xu & Claypool's claims over a campaign's runs (one condition: :data:`CELL_KEYS`)."""
    require_one_condition(docs, CELL_KEYS, table="xu_claims")
    return claims_table(XU_CLAIMS, XuCells.of(docs), "Xu & Claypool 2022's claims against ours")
