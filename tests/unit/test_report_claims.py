"""The papers' claims as checks: each holds on the paper's own numbers, and a change of the
cells it reads makes it fail, or hold in order only, as the paper's words say."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from cganalysis.dataset.reader import open_dataset
from cganalysis.metrics.rows import WINDOW_PHASE
from cganalysis.report.claims import Claim, NotMeasuredError, judge, summary
from cganalysis.report.claims_tma import TMA_CLAIMS
from cganalysis.report.claims_xu import WITH, XU_CLAIMS, XuCells
from cganalysis.report.papercells import deviation, paper_cells_table
from cganalysis.report.style import Style, load_style
from cganalysis.report.tablefmt import Table
from cganalysis.report.tmacells import TABLE1_COLUMNS, TABLE1_PAPER, TmaCells
from tests.unit.test_report_tables import paper_metrics, role_frame, run_frame

REPO = Path(__file__).resolve().parents[2]
CLAIMS = {c.name: c for c in TMA_CLAIMS}
TABLE1 = ("table1_scream_cuts_latency", "table1_scream_fewer_late")

# (role or None for the run, column, qdisc, cca, value): one cell set to another value.
Change = tuple[str | None, str, str, str, float]


def paper_cells(*changes: Change) -> TmaCells:
    """Table II as the paper prints it (its BBRv2 filed as ``bbr``), with ``changes``."""
    roles, runs = paper_metrics()
    roles = roles.with_columns(pl.col("cca").replace("bbr2", "bbr"))
    runs = runs.with_columns(pl.col("cca").replace("bbr2", "bbr"))
    for role, column, qdisc, cca, value in changes:
        cell = (pl.col("qdisc") == qdisc) & (pl.col("cca") == cca)
        new = pl.when(cell).then(pl.lit(value)).otherwise(pl.col(column)).alias(column)
        if role is None:
            runs = runs.with_columns(new)
        else:
            roles = roles.with_columns(
                pl.when(cell & (pl.col("role") == role))
                .then(pl.lit(value))
                .otherwise(pl.col(column))
                .alias(column)
            )
    return TmaCells(roles, runs)


def table1_cells(prefix: str = "cga-cg-", **changes: tuple[str, float]) -> TmaCells:
    """Table I as the paper prints it (systems as the cellular campaign names them, after
    ``prefix``); ``changes``: variant -> (column, value)."""
    records = []
    for variant, values in TABLE1_PAPER.items():
        rec = dict(zip(TABLE1_COLUMNS, values, strict=True))
        if variant in changes:
            column, value = changes[variant]
            rec[column] = value
        records.append(
            {
                "system": f"{prefix}{variant}",
                "qdisc": "pfifo",
                "cca": "cubic",
                "phase": WINDOW_PHASE,
            }
            | {"role": "cg", **rec}
        )
    roles = role_frame(records)
    return TmaCells(roles, run_frame([]))


@pytest.mark.parametrize("prefix", ["cga-cg-", "ecgp-", ""])
def test_table1_reads_every_spelling_of_its_columns(prefix: str) -> None:
    """Today's labels, the older datasets' (``ecgp-none``: cga-cg's runs before
    2026-11-29) and the bare column names pick the same cells; another sender's do not."""
    cells = table1_cells(prefix)
    assert cells.table1("delay_mean_ms", "scream") == TABLE1_PAPER["scream"][0]
    with pytest.raises(NotMeasuredError):
        table1_cells("ecgp-proxy-").table1("delay_mean_ms", "scream")


@pytest.mark.parametrize("claim", TMA_CLAIMS, ids=lambda c: c.name)
def test_every_claim_holds_on_the_papers_own_numbers(claim: Claim[TmaCells]) -> None:
    cells = table1_cells() if claim.name in TABLE1 else paper_cells()
    ours, verdict = judge(claim, cells)
    assert verdict == "holds", ours


D, B, L = "delay_mean_ms", "bitrate_mean_mbps", "dualpi2"
# claim -> (cells changed, verdict): the relation broken, or kept at another size.
CASES: list[tuple[str, tuple[Change, ...], str]] = [
    ("cg_latency_order", (("cg", D, "htb", "cubic", 50.0),), "fails"),
    ("droptail_bufferbloat", (("cg", "pct_delay_over_20ms", "pfifo", "cubic", 60.0),), "fails"),
    (
        "droptail_bufferbloat",
        (
            ("cg", "pct_delay_over_20ms", "pfifo", "cubic", 40.0),
            ("cg", "pct_delay_over_20ms", "pfifo", "bbr", 30.0),
        ),
        "in order only",
    ),
    ("droptail_bbr_less_cg_delay", (("cg", D, "pfifo", "bbr", 50.0),), "fails"),
    ("droptail_bbr_less_cg_delay", (("cg", D, "pfifo", "bbr", 40.0),), "in order only"),
    ("droptail_bbr_cg_q1", (("cg", "bitrate_q1_mbps", "pfifo", "bbr", 4.0),), "fails"),
    ("droptail_bbr_cg_q1", (("cg", "bitrate_q1_mbps", "pfifo", "bbr", 5.0),), "in order only"),
    ("droptail_shared_delay", (("competitor", D, "pfifo", "bbr", 40.0),), "fails"),
    ("droptail_tcp_dominates", (("competitor", B, "pfifo", "cubic", 10.0),), "fails"),
    ("droptail_tcp_dominates", (("competitor", B, "pfifo", "cubic", 20.0),), "in order only"),
    ("droptail_bbr_delay_bounded", (("cg", "pct_delay_over_50ms", "pfifo", "bbr", 40.0),), "fails"),
    (
        "droptail_bbr_delay_bounded",
        (("cg", "pct_delay_over_50ms", "pfifo", "bbr", 5.0),),
        "in order only",
    ),
    ("htb_cg_protected", (("cg", D, "htb", "bbr", 10.0),), "fails"),
    ("htb_cg_protected", (("cg", B, "htb", "cubic", 20.0),), "in order only"),
    ("htb_cg_same_either_cca", (("cg", B, "htb", "bbr", 15.0),), "fails"),
    ("htb_tcp_pays", (("competitor", D, "htb", "cubic", 5.0),), "fails"),
    ("htb_tcp_pays", (("competitor", D, "htb", "cubic", 180.0),), "in order only"),
    ("htb_bbr_less_tcp_delay", (("competitor", D, "htb", "bbr", 120.0),), "fails"),
    ("htb_bbr_less_tcp_delay", (("competitor", D, "htb", "bbr", 30.0),), "in order only"),
    ("htb_tcp_rate_20", (("competitor", B, "htb", "cubic", 12.93),), "fails"),
    ("l4s_cg_below_1ms", (("cg", D, L, "bbr", 1.5),), "fails"),
    ("l4s_tcp_delay_below_htb", (("competitor", D, L, "cubic", 120.0),), "fails"),
    ("l4s_tcp_delay_below_htb", (("competitor", D, L, "cubic", 30.0),), "in order only"),
    ("l4s_tcp_rate_below_htb", (("competitor", B, L, "cubic", 27.13),), "fails"),
    ("l4s_tcp_rate_below_htb", (("competitor", B, L, "cubic", 10.0),), "in order only"),
    ("htb_cg_rate_above_l4s", (("cg", B, L, "cubic", 31.0),), "fails"),
    ("htb_cg_rate_above_l4s", (("cg", B, L, "cubic", 15.0),), "in order only"),
    ("htb_utilisation_above_l4s", ((None, "utilisation_total", L, "cubic", 0.99),), "fails"),
    ("htb_utilisation_above_l4s", ((None, "utilisation_total", L, "cubic", 0.5),), "in order only"),
    (
        "l4s_bbr_balanced",
        (("cg", B, L, "bbr", 11.94), ("competitor", B, L, "bbr", 33.89)),
        "fails",
    ),
    (
        "l4s_bbr_balanced",
        (("cg", B, L, "bbr", 30.0), ("competitor", B, L, "bbr", 30.0)),
        "in order only",
    ),
    ("l4s_cubic_vs_bbr", (("competitor", D, L, "cubic", 9.0),), "fails"),
    ("l4s_cubic_vs_bbr", (("competitor", B, L, "bbr", 40.0),), "in order only"),
]


@pytest.mark.parametrize(("name", "changes", "verdict"), CASES)
def test_a_claim_fails_or_holds_in_order_only_when_its_cells_say_so(
    name: str, changes: tuple[Change, ...], verdict: str
) -> None:
    ours, got = judge(CLAIMS[name], paper_cells(*changes))
    assert got == verdict, ours


def test_every_table2_claim_has_a_case_that_fails() -> None:
    failing = {name for name, _, verdict in CASES if verdict == "fails"}
    assert failing == set(CLAIMS) - set(TABLE1)


def test_table1_claims_fail_or_hold_in_order_only() -> None:
    cuts, fewer = CLAIMS["table1_scream_cuts_latency"], CLAIMS["table1_scream_fewer_late"]
    assert judge(cuts, table1_cells(scream=("delay_mean_ms", 50.0)))[1] == "fails"
    assert judge(cuts, table1_cells(scream=("delay_mean_ms", 30.0)))[1] == "in order only"
    assert judge(fewer, table1_cells(scream=("pct_delay_over_100ms", 7.0)))[1] == "fails"


def test_a_claim_whose_cells_the_campaign_lacks_is_not_measured() -> None:
    cells = paper_cells()
    no_l4s = TmaCells(
        cells.roles.filter(pl.col("qdisc") != "dualpi2"),
        cells.runs.filter(pl.col("qdisc") != "dualpi2"),
    )
    ours, verdict = judge(CLAIMS["l4s_bbr_balanced"], no_l4s)
    assert verdict == "not measured" and "dualpi2 / bbr" in ours
    assert judge(CLAIMS["cg_latency_order"], table1_cells())[1] == "not measured"
    assert judge(CLAIMS["table1_scream_cuts_latency"], paper_cells())[1] == "not measured"


def test_the_summary_counts_each_verdict() -> None:
    line = summary(["holds", "holds", "in order only", "fails", "not measured"])
    assert line == "Claims: 2 of 4 hold, 1 in order only, 1 fail (1 not measured)"


@pytest.fixture(scope="module")
def style() -> Style:
    return load_style(REPO / "configs" / "plotting.yaml")


def test_the_paper_cells_table_on_the_papers_numbers_and_one_cell_off(style: Style) -> None:
    table = paper_cells_table(paper_cells(), style)
    assert table.notes[0] == "Table II: 24 of 24 cells within 25 % of the paper"
    assert table.rows[0].cells[0] == "44.9 (+0 %)"
    off = paper_cells_table(paper_cells(("cg", D, "pfifo", "cubic", 18.66)), style)
    assert off.notes[0] == "Table II: 23 of 24 cells within 25 % of the paper"
    assert off.rows[0].cells[0] == "18.66 (-58 %)"


def test_a_flagged_run_marks_its_cells_and_is_named(style: Style) -> None:
    cells = paper_cells()
    flag = "bottleneck not where configured"
    runs = cells.runs.with_columns(
        pl.when((pl.col("qdisc") == L) & (pl.col("cca") == "cubic"))
        .then(pl.lit(flag))
        .otherwise(pl.lit(""))
        .alias("flags")
    )
    table = paper_cells_table(TmaCells(cells.roles, runs), style)
    l4s_cubic = 4  # drop-tail, HTB, L4S x Cubic, BBR
    marked = [i for i, c in enumerate(table.rows[0].cells) if c and c.endswith("(flagged)")]
    assert marked == [l4s_cubic]
    assert all(row.cells[l4s_cubic].endswith("(flagged)") for row in table.rows)
    assert any(flag in note for note in table.notes)
    assert table.notes[0] == "Table II: 24 of 24 cells within 25 % of the paper"
    assert not any("(flagged)" in (c or "") for c in paper_cells_table(cells, style).rows[0].cells)


def test_a_deviation_at_the_targets_bound_shows_which_side_it_is_on() -> None:
    assert [deviation(v, 10.0) for v in (13.0, 12.53, 12.48, 7.47, 10.0)] == [
        "+30 %",
        "+25.3 %",
        "+24.8 %",
        "-25.3 %",
        "+0 %",
    ]


def _verdicts(table: Table) -> dict[str, str | None]:
    return {row.stub[0]: row.cells[-1] for row in table.rows}


def test_the_published_emulator_campaign_renders_its_claims() -> None:
    ds = open_dataset(REPO / "datasets" / "tma2024-be10-2026-11-27")
    (table,) = ds.tables("tma_claims")
    verdicts = _verdicts(table)
    assert verdicts["cg_latency_order"] == "holds"
    assert verdicts["l4s_bbr_balanced"] == "fails"
    assert verdicts["table1_scream_cuts_latency"] == "not measured"
    (cells,) = ds.tables("tma_paper_cells")
    assert cells.notes[0].startswith("Table II: ") and "of 24 cells" in cells.notes[0]


# Xu & Claypool: a campaign shaped as the paper's relations say, over 2 capacities x 3
# queue sizes x 2 CCAs; (metric, cca, queue) -> the CG flow's cell with the TCP flow.
XU_WITH: dict[tuple[str, str, str], float] = {
    **{("delay", "cubic", q): v for q, v in (("0.5x", 18.0), ("2x", 40.0), ("7x", 110.0))},
    **{("delay", "bbr", q): v for q, v in (("0.5x", 24.0), ("2x", 44.0), ("7x", 55.0))},
    **{("loss", "cubic", q): v for q, v in (("0.5x", 0.15), ("2x", 0.05), ("7x", 0.02))},
    **{("loss", "bbr", q): v for q, v in (("0.5x", 0.6), ("2x", 0.25), ("7x", 0.1))},
    **{("frame_rate", "cubic", q): v for q, v in (("0.5x", 51.0), ("2x", 58.0), ("7x", 59.8))},
    **{("frame_rate", "bbr", q): v for q, v in (("0.5x", 40.0), ("2x", 54.0), ("7x", 59.5))},
}


def xu_cells(
    changes: dict[tuple[str, str, str], float] | None = None,
    *,
    loss_alone: float = 0.01,
    queues: tuple[str, ...] = ("0.5x", "2x", "7x"),
    runs: dict[str, float] | None = None,
) -> XuCells:
    with_tcp = {**XU_WITH, **(changes or {})}
    run = {"response_time_s": 5.0, "recovery_time_s": 20.0, "bbr_fairness": -0.3, **(runs or {})}
    roles, run_recs = [], []
    for cap in (15.0, 25.0):
        for q in queues:
            for k in ("cubic", "bbr"):
                base = {"run_id": f"{cap}-{q}-{k}", "capacity_mbps": cap, "queue": q, "cca": k}
                alone = {"delay_mean_ms": 16.0, "loss_rate": loss_alone / 100}
                tcp = {
                    "delay_mean_ms": with_tcp[("delay", k, q)],
                    "loss_rate": with_tcp[("loss", k, q)] / 100,
                    "frame_rate_fps": with_tcp[("frame_rate", k, q)],
                }
                for phase, cell in (("before_competitor", alone), (WITH, tcp)):
                    roles.append(
                        base
                        | cell
                        | {"phase": phase, "role": "cg", "delay_std_ms": 1.0, "delay_count": 100}
                    )
                fairness = run["bbr_fairness"] if k == "bbr" else -0.1
                run_recs.append(
                    base
                    | {
                        "fairness_ratio": fairness,
                        "response_time_s": run["response_time_s"],
                        "recovery_time_s": run["recovery_time_s"],
                        "response_status": "reached",
                        "recovery_status": "reached",
                    }
                )
    return XuCells(role_frame(roles), run_frame(run_recs))


XU = {c.name: c for c in XU_CLAIMS}


@pytest.mark.parametrize("claim", XU_CLAIMS, ids=lambda c: c.name)
def test_every_xu_claim_holds_on_a_campaign_shaped_as_the_paper_says(
    claim: Claim[XuCells],
) -> None:
    ours, verdict = judge(claim, xu_cells())
    assert verdict == "holds", ours


XU_CASES: list[tuple[str, XuCells, str]] = [
    ("no_self_induced_loss", xu_cells(loss_alone=2.0), "fails"),
    ("no_self_induced_loss", xu_cells(loss_alone=0.5), "in order only"),
    ("delay_grows_with_queue", xu_cells({("delay", "cubic", "2x"): 10.0}), "fails"),
    ("bbr_halves_large_queue_delay", xu_cells({("delay", "bbr", "7x"): 120.0}), "fails"),
    ("bbr_halves_large_queue_delay", xu_cells({("delay", "bbr", "7x"): 100.0}), "in order only"),
    ("tcp_raises_loss", xu_cells({("loss", "cubic", "7x"): 0.005}), "fails"),
    ("loss_falls_with_queue", xu_cells({("loss", "cubic", "7x"): 0.3}), "fails"),
    ("bbr_more_loss", xu_cells({("loss", "bbr", "2x"): 0.01}), "fails"),
    ("cubic_frame_rate_high", xu_cells({("frame_rate", "cubic", "0.5x"): 45.0}), "fails"),
    ("bbr_degrades_frame_rate", xu_cells({("frame_rate", "bbr", "2x"): 59.0}), "fails"),
    ("frame_rate_rises_with_queue", xu_cells({("frame_rate", "cubic", "7x"): 55.0}), "fails"),
    ("response_before_recovery", xu_cells(runs={"response_time_s": 30.0}), "fails"),
    ("bbr_takes_more", xu_cells(runs={"bbr_fairness": 0.2}), "fails"),
]


@pytest.mark.parametrize(("name", "cells", "verdict"), XU_CASES, ids=[c[0] for c in XU_CASES])
def test_an_xu_claim_fails_or_holds_in_order_only_when_its_cells_say_so(
    name: str, cells: XuCells, verdict: str
) -> None:
    ours, got = judge(XU[name], cells)
    assert got == verdict, ours


def test_every_xu_claim_has_a_case_that_fails_and_one_queue_is_not_measured() -> None:
    assert {name for name, _, v in XU_CASES if v == "fails"} == set(XU)
    ours, verdict = judge(XU["delay_grows_with_queue"], xu_cells(queues=("2x",)))
    assert (ours, verdict) == ("no two queue sizes in multiples of the BDP", "not measured")


def test_the_published_xu_campaign_renders_its_claims() -> None:
    (table,) = open_dataset(REPO / "datasets" / "xu2022-short-2026-11-27").tables("xu_claims")
    verdicts = _verdicts(table)
    assert set(verdicts) == set(XU) and "not measured" not in verdicts.values()
    assert verdicts["bbr_more_loss"] == "holds"
    assert verdicts["no_self_induced_loss"] == "fails"
