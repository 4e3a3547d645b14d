"""The factor table (cganalysis.report.factors): one row per combination of the factor
labels, each cell the mean and range over its repetitions, under the paper's row of its
queue discipline; through the artefact registry into Markdown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cganalysis.errors import ConfigError
from cganalysis.report.artefacts import Options, by_name
from cganalysis.report.factors import CELLS, PAPER, factor_table
from cganalysis.report.inputs import no_series
from cganalysis.report.style import load_style
from cganalysis.report.tablefmt import to_markdown

REPO = Path(__file__).resolve().parents[2]


def _doc(queue: str, qdisc: str, encoder: str, cca: str, rep: int, cg_ms: float) -> dict[str, Any]:
    return {
        "run": {"queue": queue, "qdisc": qdisc, "encoder": encoder, "cca": cca, "repetition": rep},
        "roles": {
            "cg": {"delay_mean_ms": cg_ms, "bitrate_mean_mbps": 15.0, "loss_rate": 0.012},
            "competitor": {"delay_mean_ms": 100.0 + rep, "bitrate_mean_mbps": 19.6},
        },
    }


def test_cells_are_means_with_their_range_under_the_papers_row() -> None:
    docs = [
        _doc("htb-ceil-20", "htb", "model", "cubic", 1, 3.2),
        _doc("htb-ceil-20", "htb", "model", "cubic", 2, 3.4),
        _doc("htb-ceil-20", "htb", "model", "bbr", 1, 3.0),
        _doc("htb-ceil-20", "htb", "cbr", "cubic", 1, 1.5),
        _doc("pfifo", "pfifo", "model", "cubic", 1, 14.0),
    ]
    style = load_style(REPO / "configs" / "plotting.yaml")
    t = factor_table(docs, style=style, ccas=("cubic", "bbr"))
    assert t.stub_header == ("queue", "encoder", "TCP")
    stubs = [r.stub[:2] for r in t.rows]
    cubic, bbr = style.label("cca", "cubic"), style.label("cca", "bbr")
    # drop-tail first; per CCA, the paper's row then every combination of that qdisc
    assert [r.stub[2] for r in t.rows[:4]] == [cubic, cubic, bbr, bbr]
    assert stubs[0][0].startswith("paper, ") and stubs[1] == ("pfifo", "model")
    assert stubs[4][0].startswith("paper, ") and stubs[5:7] == [
        ("htb-ceil-20", "model"),
        ("htb-ceil-20", "cbr"),
    ]
    assert t.rows[4].cells == tuple(str(v) for v in PAPER[("htb", "cubic")])
    model = t.rows[5].cells
    assert model[0] == "3.3 (3.2-3.4)"  # CG latency: two repetitions
    assert model[2] == "1.2 (1.2-1.2)"  # loss as a percentage
    assert model[3] == "101.5 (101-102)"
    assert t.rows[8].stub == ("htb-ceil-20", "model", bbr)
    assert t.rows[8].cells[0] == "3" and t.rows[8].cells[4] == "19.6"  # one repetition
    assert t.rows[9].stub[:2] == ("htb-ceil-20", "cbr")
    assert t.rows[9].cells == (None,) * len(CELLS)  # no BBR run: missing, not zero


def test_the_registry_writes_it() -> None:
    style = load_style(REPO / "configs" / "plotting.yaml")
    docs = [_doc("pfifo", "pfifo", "constant", "bbr", 1, 12.5)]
    (table,) = by_name("tma-factors").make(docs, no_series, style, Options(ccas=("cubic", "bbr")))
    md = to_markdown(table)
    assert "| pfifo | constant | BBR |" in md and "12.5" in md and "26.5" in md


def test_the_rows_keys_are_the_campaigns_own_factors() -> None:
    """A campaign varying `burst` instead of `encoder` gets its own columns: its cells
    must not pool runs that differ in burst."""
    style = load_style(REPO / "configs" / "plotting.yaml")
    docs = []
    for burst, ms in (("b4", 20.0), ("b16", 40.0)):
        doc = _doc("pfifo", "pfifo", "x", "cubic", 1, ms)
        del doc["run"]["encoder"]
        doc["run"] |= {"run_id": f"r-{burst}", "campaign": "c", "system": "s", "burst": burst}
        docs.append(doc)
    t = factor_table(docs, style=style, ccas=("cubic",))
    assert t.stub_header == ("queue", "burst", "TCP")
    assert [(r.stub[1], r.cells[0]) for r in t.rows[1:]] == [("b4", "20"), ("b16", "40")]
    for doc in docs:
        del doc["run"]["queue"], doc["run"]["burst"]
    with pytest.raises(ConfigError, match="no factor label"):
        factor_table(docs, style=style, ccas=("cubic",))
