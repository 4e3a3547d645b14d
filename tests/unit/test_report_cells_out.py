"""The account of Table II's cells and claims still out (report/cells_out.py, the registry;
report/cells_out_table.py, the table): every cell and claim out on the sim plane has an
entry and no entry outlives its cell, every factor names cells its datasets have, and the
queue arithmetic the reasons quote."""

from __future__ import annotations

import math
from functools import cache

import pytest

from cganalysis.dataset.reader import open_dataset
from cganalysis.report import artefacts
from cganalysis.report.cells_out import ENTRIES, SIM, Cell, Factor, OutEntry, factor_datasets
from cganalysis.report.cells_out_table import (
    NO_ENTRY,
    FactorCells,
    _factor_cells,
    coverage,
    describe,
    outs,
)
from cganalysis.report.queuebound import drain_ms, max_std_ms
from cganalysis.report.tmacells import TmaCells, paper
from tests.conftest import REPO

DATASETS = REPO / "datasets"


@cache
def sim_cells() -> TmaCells:
    return TmaCells.of(open_dataset(DATASETS / SIM).metrics)


@cache
def factor_cells() -> FactorCells:
    return FactorCells(DATASETS)


def test_every_cell_and_claim_out_on_the_sim_plane_has_one_entry() -> None:
    missing, stale = coverage(outs(sim_cells()), ENTRIES)
    assert not missing, f"out on {SIM} without an entry in report/cells_out.py: {missing}"
    assert not stale, f"entries of what is no longer out on {SIM} (came in?): {stale}"
    keys = [(e.claim, None if e.claim else e.cell) for e in ENTRIES]
    assert len(keys) == len(set(keys)), "two entries of one cell or claim"


def test_dropping_an_entry_is_caught() -> None:
    found = outs(sim_cells())
    for i, entry in enumerate(ENTRIES):
        missing, stale = coverage(found, ENTRIES[:i] + ENTRIES[i + 1 :])
        assert missing == [describe(entry.claim, None if entry.claim else entry.cell)]
        assert not stale


def test_an_entry_of_a_cell_that_came_in_is_stale() -> None:
    came_in = OutEntry(Cell("cg", "bitrate_mean_mbps", "htb", "cubic"), (), "within 8 %")
    _, stale = coverage(outs(sim_cells()), (*ENTRIES, came_in))
    assert stale == ["cell cg bitrate_mean_mbps htb/cubic"]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.claim or describe(None, e.cell))
def test_every_factor_names_cells_its_datasets_have(entry: OutEntry) -> None:
    assert entry.factors and entry.why
    for factor in entry.factors:
        for name in (factor.dataset, factor.baseline_dataset):
            assert (DATASETS / name / "datasheet.json").is_file(), name
        base, value = factor_cells().effect(factor, entry.cell)  # raises if a cell is missing
        assert math.isfinite(base) and math.isfinite(value)
        rate = Cell("cg", "bitrate_mean_mbps", entry.cell.qdisc, entry.cell.cca)
        factor_cells().effect(factor, rate)


def test_the_workflow_knows_every_dataset_the_entries_read() -> None:
    assert set(artefacts.by_name("tma_cells_out").datasets) == set(factor_datasets())


def test_the_table_has_one_row_per_out_each_with_its_factor_and_reason() -> None:
    (table,) = open_dataset(DATASETS / SIM).tables("tma_cells_out")
    assert len(table.rows) == len(outs(sim_cells()))
    for row in table.rows:
        out, ours, theirs, apart, factor, _, why = row.cells
        assert out and ours and theirs and apart and why, row
        assert factor and factor != NO_ENTRY, row
    assert table.notes[0].startswith("Still out: 13 of 24 Table II cells and 10 of 19 claims")


def test_a_factor_that_moves_a_cell_away_is_not_named() -> None:
    # The hosts' offloads double HTB Cubic's TCP delay (the paper's is under ours).
    cell = Cell("competitor", "delay_mean_ms", "htb", "cubic")
    away = Factor(
        "the hosts' offloads on",
        "tma2024-factors-offloads-2026-11-27",
        (("queue", "htb-be-10-ceil-20"),),
        "tma2024-factors-be-rate-2026-11-27",
        (("queue", "htb-be-10-ceil-20"),),
    )
    entry = OutEntry(cell, (away,), "because")
    ours = sim_cells().get(cell.role, cell.metric, cell.qdisc, cell.cca)
    factor, effect, why = _factor_cells(
        entry, ours, paper("competitor", "delay_mean_ms", "htb", "cubic"), factor_cells()
    )
    assert (factor, effect, why) == ("none measured moves it (1 tried)", None, "because")


def test_the_drop_tail_queue_bounds_the_delays() -> None:
    bound = drain_ms(250, 1514, 50)
    assert bound == pytest.approx(60.56)
    # Without thresholds the widest spread puts every delay at 0 or at the bound.
    assert max_std_ms(30, {}, 60) == pytest.approx(30)
    # At the largest mean its shares allow, every delay sits at its band's top: no spread
    # beyond theirs.
    shares = {10.0: 50.0}
    assert max_std_ms(0.5 * 10 + 0.5 * 60, shares, 60) == pytest.approx(25)
    assert math.isnan(max_std_ms(40, shares, 60))  # beyond what the shares allow
    assert math.isnan(max_std_ms(20, {100.0: 1.0}, 60))  # delays over the bound


def test_the_papers_drop_tail_cubic_spread_cannot_come_from_its_queue() -> None:
    bound = drain_ms(250, 1514, 50)
    for role, cca, fits in (
        ("cg", "cubic", False),
        ("competitor", "cubic", False),
        ("cg", "bbr", True),
    ):
        mean, std = (paper(role, m, "pfifo", cca) for m in ("delay_mean_ms", "delay_std_ms"))
        over = {t: paper(role, f"pct_delay_over_{t}ms", "pfifo", cca) for t in (10, 20, 50, 100)}
        most = max_std_ms(mean, {float(t): p for t, p in over.items()}, bound)
        assert (std <= most) is fits, (role, cca, std, most)
