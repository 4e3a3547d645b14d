"""A run whose CG sender fell behind its pacing schedule is flagged in meta.json, and the
flag reaches the metrics rows and the tables that hold the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from cganalysis.experiment.cgcheck import SLIPS_MIN, pacing_flag
from cganalysis.experiment.config import parse_run
from cganalysis.experiment.sources import SOURCES
from cganalysis.metrics.registry import METRICS_ROLES, METRICS_RUNS
from cganalysis.metrics.rows import WINDOW_PHASE, run_rows
from cganalysis.report.style import load_style
from cganalysis.report.tables import tma_table2
from cganalysis.report.xutables import xu_table

REPO = Path(__file__).resolve().parents[2]


def test_thousands_of_slips_are_flagged_a_quiet_hosts_few_are_not() -> None:
    # Figures from this machine: a loaded L4S run, ~2,300 slips in 60 s; quiet runs 26-503.
    flag = pacing_flag(2300, 60.0, 31_000.0)
    assert flag is not None and "2300 times in 60 s" in flag and "31.0 ms" in flag
    assert pacing_flag(503, 40.0, 64_000.0) is None
    assert pacing_flag(225, 360.0, None) is None
    # Many slips over a long run at a quiet host's pace: not a stall.
    assert pacing_flag(SLIPS_MIN + 1, 360.0, None) is None


def test_cg_flags_read_the_senders_summary(tmp_path: Path) -> None:
    cfg = parse_run(
        {
            "name": "r",
            "schedule": {"preset": "custom", "duration_s": 60, "competitor": []},
            "bottleneck": {"rate_mbit": 50, "qdisc": {"kind": "pfifo", "limit": 250}},
            "cg": {"source": "cga-cg"},
        },
        "r.yaml",
        tmp_path,
    )
    info: dict[str, Any] = {}
    assert SOURCES[cfg.cg.source].post_run_flags(info, tmp_path) == []  # no summary: nothing to say
    (tmp_path / "cg-sender").mkdir()
    summary = {"duration_s": 60.0, "pacing_slips": 2400, "pacing_slip_max_us": 12_000.0}
    (tmp_path / "cg-sender" / "sender_summary.json").write_text(json.dumps(summary))
    (flag,) = SOURCES[cfg.cg.source].post_run_flags(info, tmp_path)
    assert "fell behind its pacing schedule 2400 times" in flag
    assert info["pacing_slips"] == 2400


def _doc(run_id: str, flags: list[str]) -> dict[str, Any]:
    return {
        "run": {"run_id": run_id, "qdisc": "dualpi2", "cca": "cubic"},
        "inputs": {"capacity": {"mbps": 50.0, "configured_mbps": 50.0, "source": "configured"}},
        "utilisation_total": 0.9,
        "fairness_ratio": None,
        "jain_index": None,
        "response_time_s": None,
        "response_status": "not_applicable",
        "recovery_time_s": None,
        "recovery_status": "not_applicable",
        "flags": flags,
    }


def test_flags_reach_the_rows_and_table_ii() -> None:
    slow = "CG sender fell behind its pacing schedule 2400 times in 60 s"
    runs = run_rows([_doc("a", []), _doc("b", [slow])])
    assert runs["flags"].to_list() == ["", slow]
    roles = pl.DataFrame(
        [
            {
                **dict.fromkeys(METRICS_ROLES),
                "run_id": r,
                "qdisc": "dualpi2",
                "cca": "cubic",
                "phase": WINDOW_PHASE,
                "role": role,
                "delay_mean_ms": 1.0,
            }
            for r in ("a", "b")
            for role in ("cg", "competitor")
        ],
        schema=dict(METRICS_ROLES),
        orient="row",
    )
    style = load_style(REPO / "configs" / "plotting.yaml")
    table = tma_table2(roles, runs.select(list(METRICS_RUNS)), style=style, ccas=("cubic",))
    (note,) = [n for n in table.notes if n.startswith("Flagged runs")]
    assert "(1 of 2, included)" in note and f"b: {slow}" in note
    clean = tma_table2(roles, run_rows([_doc("a", [])]), style=style, ccas=("cubic",))
    assert not any(n.startswith("Flagged") for n in clean.notes)


def test_flags_reach_xu_tables() -> None:
    """Xu's Tables 2-6 name the flagged runs they include, as Table II does."""
    slow = "CG sender fell behind its pacing schedule 2400 times in 60 s"

    def doc(run_id: str, cca: str, flags: list[str]) -> dict[str, Any]:
        d = _doc(run_id, flags)
        d["run"] = {**d["run"], "qdisc": "pfifo", "cca": cca, "queue": "2x"}
        d["inputs"] = {"capacity": {"mbps": 25.0, "configured_mbps": 25.0, "source": "configured"}}
        return d

    docs = [doc("a", "cubic", []), doc("b", "bbr", [slow])]
    runs = run_rows(docs)
    roles = pl.DataFrame(
        [
            {
                **dict.fromkeys(METRICS_ROLES),
                "run_id": r,
                "qdisc": "pfifo",
                "cca": c,
                "queue": "2x",
                "capacity_mbps": 25.0,
                "phase": "with_competitor",
                "role": "cg",
                "delay_mean_ms": 1.0,
                "delay_count": 10,
                "delay_std_ms": 0.0,
            }
            for r, c in (("a", "cubic"), ("b", "bbr"))
        ],
        schema=dict(METRICS_ROLES),
        orient="row",
    )
    style = load_style(REPO / "configs" / "plotting.yaml")

    def notes(ccas: tuple[str, ...]) -> list[str]:
        table = xu_table(
            roles, style=style, metric="delay", phase="with_competitor", ccas=ccas, runs=runs
        )
        return [n for n in table.notes if n.startswith("Flagged runs")]

    (note,) = notes(("cubic", "bbr"))
    assert "(1 of 2, included)" in note and f"b: {slow}" in note
    assert notes(("cubic",)) == []  # the flagged run is not in this table
