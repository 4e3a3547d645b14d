"""The papers' claims as checks: each relation a paper draws from its tables (an ordering,
a trade-off, a balance) as a named predicate over a campaign's cells, and the table of
verdicts (:mod:`.claims_tma`: TMA 2024; :mod:`.claims_xu`: Xu & Claypool 2022).

A claim's check reads the cells it needs (the papers' tables' own aggregation: a missing
cell raises :class:`NotMeasuredError`) and says whether the relation's direction holds and
whether its size is within the claim's tolerance of the paper's:

- ``holds``: the direction, and the size where the paper gives one;
- ``in order only``: the direction, but a size off by more than the tolerance;
- ``fails``: not the direction (or, for a claim of equality or of a level, not within it);
- ``not measured``: the campaign lacks a cell the claim needs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from cganalysis.report.tablefmt import Row, Table

Verdict = Literal["holds", "in order only", "fails", "not measured"]
VERDICTS: tuple[Verdict, ...] = ("holds", "in order only", "fails", "not measured")
#: The tolerance of a size, relative to the paper's, unless a claim says otherwise (the
#: target the project holds Table II's cells to).
TOLERANCE = 0.25


class NotMeasuredError(Exception):
    """A cell a claim needs is not in the campaign (the message names it)."""


@dataclass(frozen=True)
class Outcome:
    """What a check found: ``ours`` in words and numbers, whether the relation's direction
    holds (``order``) and whether its size is within the tolerance (``size``)."""

    ours: str
    order: bool
    size: bool = True


CellsT = TypeVar("CellsT")


@dataclass(frozen=True)
class Claim(Generic[CellsT]):
    name: str  # short and stable: tests and documentation name a claim by it
    where: str  # where the paper says it: section, table, figure
    paper: str  # the paper's words and numbers
    check: Callable[[CellsT], Outcome]


def judge(claim: Claim[CellsT], cells: CellsT) -> tuple[str, Verdict]:
    """(ours, verdict) of ``claim`` over ``cells``."""
    try:
        out = claim.check(cells)
    except NotMeasuredError as missing:
        return f"no {missing}", "not measured"
    if not out.order:
        return out.ours, "fails"
    return out.ours, "holds" if out.size else "in order only"


def within(ours: float, paper: float, tolerance: float = TOLERANCE) -> bool:
    """``ours`` within ``tolerance`` of ``paper``, relative to the paper's."""
    return abs(ours - paper) <= tolerance * abs(paper)


def ratio(a: float, b: float) -> float:
    """a / b, infinite when b is 0 (a relation to nothing is as large as it gets)."""
    return a / b if b else float("inf")


def summary(verdicts: Sequence[Verdict]) -> str:
    """The table's verdict line, which the README prints (``dataset check-docs``)."""
    n = Counter(verdicts)
    measured = len(verdicts) - n["not measured"]
    return (
        f"Claims: {n['holds']} of {measured} hold, {n['in order only']} in order only, "
        f"{n['fails']} fail ({n['not measured']} not measured)"
    )


def claims_table(claims: Sequence[Claim[CellsT]], cells: CellsT, caption: str) -> Table:
    """One row per claim: its name and where the paper says it; the paper's words, ours,
    the verdict; a note with the count of each verdict."""
    rows: list[Row] = []
    verdicts: list[Verdict] = []
    for claim in claims:
        ours, verdict = judge(claim, cells)
        verdicts.append(verdict)
        rows.append(Row((claim.name, claim.where), (claim.paper, ours, verdict)))
    header = ((("The paper", 1), ("Ours", 1), ("Verdict", 1)),)
    notes = (
        summary(verdicts),
        f"holds: the relation and its size (within {TOLERANCE * 100:.0f} % of the paper's unless "
        "the claim says otherwise); in order only: the relation, not its size.",
    )
    return Table(header, ("Claim", "Where"), tuple(rows), caption, notes)
