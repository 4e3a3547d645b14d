"""Table layouts: TMA Tables I and II rebuilt from the paper's own numbers, Xu Tables 2-5.

The TMA tables are checked twice: cell by cell against the table as printed in the paper
(feeding its numbers in must give its text back), and against golden files for the three
formats (and HTML). Regenerate the golden files with ``UPDATE_GOLDEN=1`` after checking the diff.
"""

from __future__ import annotations

import csv
import io
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from cganalysis.metrics.registry import METRICS_ROLES, METRICS_RUNS
from cganalysis.metrics.rows import WINDOW_PHASE
from cganalysis.report.style import Style, load_style
from cganalysis.report.tablefmt import (
    Row,
    Table,
    to_csv,
    to_html,
    to_latex,
    to_markdown,
    write_table,
)
from cganalysis.report.tables import num2, tma_table1, tma_table2
from cganalysis.report.xutables import xu_table

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
REPO = Path(__file__).resolve().parents[2]

# TMA 2024 Table II as printed (columns: Droptail, HTB, L4S x Cubic, BBRv2).
TMA2_PAPER = """\
CG Traffic|Avg Latency|44.9 ms|26.5 ms|1.16 ms|0.61 ms|0.53 ms|0.31 ms
|Variance|24.34|11.93|0.92|0.8|0.99|0.51
|% > 10 ms|96.28%|84.23%|0%|0%|0%|0%
|% > 20 ms|85.54%|68.88%|0%|0%|0%|0%
|% > 50 ms|34.71%|0.41%|0%|0%|0%|0%
|% > 100 ms|0%|0%|0%|0%|0%|0%
|Avg Bitrate|12.83 Mbps|15.18 Mbps|28.64 Mbps|28.66 Mbps|24.25 Mbps|21.66 Mbps
|1st quartile|4.29 Mbps|9.69 Mbps|27.22 Mbps|27.63 Mbps|21.83 Mbps|19.78 Mbps
|2nd quartile|12.17 Mbps|12.6 Mbps|29.14 Mbps|28.9 Mbps|25.06 Mbps|22.32 Mbps
|3rd quartile|18.81 Mbps|18.98 Mbps|30.78 Mbps|30.23 Mbps|27.52 Mbps|24.34 Mbps
|Loss Rate|0.25%|0.33%|0.24%|0.05%|0.08%|0.1%
TCP Traffic|Avg Latency|44.45 ms|25.96 ms|99.78 ms|67.38 ms|4.68 ms|7.57 ms
|Variance|24.57|12.31|26.84|20.91|4.03|5.67
|% > 10 ms|99.18%|84.71%|99.18%|99.17%|6.75%|25.42%
|% > 20 ms|82.3%|66.53%|99.18%|98.76%|0.84%|4.66%
|% > 50 ms|35.8%|0.83%|96.3%|81.41%|0%|0%
|% > 100 ms|0%|0%|48.15%|2.48%|0%|0%
|Avg Bitrate|33.34 Mbps|31.66 Mbps|19.56 Mbps|19.28 Mbps|16.43 Mbps|21.68 Mbps
|1st quartile|21.14 Mbps|21.73 Mbps|18.12 Mbps|17.55 Mbps|13.52 Mbps|19 Mbps
|2nd quartile|31.69 Mbps|32.74 Mbps|19.54 Mbps|19.31 Mbps|16.56 Mbps|22.25 Mbps
|3rd quartile|43.91 Mbps|38.31 Mbps|21.32 Mbps|20.73 Mbps|19.58 Mbps|24.08 Mbps
|Loss Rate|0.42%|0.57%|0.56%|0.16%|0.25%|0.33%
Link utilization|CG Traffic|25.65%|30.35%|57.27%|57.32%|48.5%|43.33%
|TCP Traffic|66.68%|63.31%|39.12%|38.57%|32.86%|43.37%
|Total|92.33%|93.66%|96.39%|95.89%|81.36%|86.7%"""

COLUMNS = [(q, c) for q in ("pfifo", "htb", "dualpi2") for c in ("cubic", "bbr2")]
METRIC_OF = {
    "Avg Latency": "delay_mean_ms",
    "Variance": "delay_std_ms",
    "% > 10 ms": "pct_delay_over_10ms",
    "% > 20 ms": "pct_delay_over_20ms",
    "% > 50 ms": "pct_delay_over_50ms",
    "% > 100 ms": "pct_delay_over_100ms",
    "Avg Bitrate": "bitrate_mean_mbps",
    "1st quartile": "bitrate_q1_mbps",
    "2nd quartile": "bitrate_median_mbps",
    "3rd quartile": "bitrate_q3_mbps",
    "Loss Rate": "loss_rate",
}


def _value(text: str) -> float:
    return float(re.sub(r"[^0-9.]", "", text))


def _paper_rows() -> list[list[str]]:
    return [line.split("|") for line in TMA2_PAPER.splitlines()]


def role_frame(records: list[dict[str, Any]]) -> pl.DataFrame:
    full = [{c: r.get(c) for c in METRICS_ROLES} for r in records]
    return pl.DataFrame(full, schema=dict(METRICS_ROLES), orient="row")


def run_frame(records: list[dict[str, Any]]) -> pl.DataFrame:
    full = [{c: r.get(c) for c in METRICS_RUNS} for r in records]
    return pl.DataFrame(full, schema=dict(METRICS_RUNS), orient="row")


def paper_metrics() -> tuple[pl.DataFrame, pl.DataFrame]:
    """METRICS_ROLES and METRICS_RUNS rows holding the paper's numbers."""
    values: dict[tuple[str, str, str], float] = {}
    block = ""
    for row in _paper_rows():
        block = row[0] or block
        for (q, c), cell in zip(COLUMNS, row[2:], strict=True):
            values[(block, row[1], f"{q}/{c}")] = _value(cell)
    roles, runs = [], []
    for q, c in COLUMNS:
        key = f"{q}/{c}"
        base = {"run_id": f"tma-{q}-{c}", "qdisc": q, "cca": c, "phase": WINDOW_PHASE}
        for block, role in (("CG Traffic", "cg"), ("TCP Traffic", "competitor")):
            rec: dict[str, Any] = {**base, "role": role}
            for label, col in METRIC_OF.items():
                v = values[(block, label, key)]
                rec[col] = v / 100.0 if col == "loss_rate" else v
            util_label = "CG Traffic" if role == "cg" else "TCP Traffic"
            rec["utilisation"] = values[("Link utilization", util_label, key)] / 100.0
            roles.append(rec)
        runs.append(
            {**base, "utilisation_total": values[("Link utilization", "Total", key)] / 100.0}
        )
    return role_frame(roles), run_frame(runs)


@pytest.fixture(scope="module")
def style() -> Style:
    return load_style(REPO / "configs" / "plotting.yaml")


def check_golden(text: str, name: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing golden file {path}: run with UPDATE_GOLDEN=1 and review"
    assert text == path.read_text(encoding="utf-8")


def test_tma_table2_gives_the_paper_back(style: Style) -> None:
    roles, runs = paper_metrics()
    table = tma_table2(roles, runs, style=style, ccas=("cubic", "bbr2"), paper_labels=True)
    got = list(csv.reader(io.StringIO(to_csv(table))))
    assert got[0] == ["", "", "Droptail", "Droptail", "HTB", "HTB", "L4S", "L4S"]
    assert got[1] == ["", "", "Cubic", "BBRv2", "Cubic", "BBRv2", "Cubic", "BBRv2"]
    block = ""
    for row, paper in zip(got[2:], _paper_rows(), strict=True):
        block = paper[0] or block
        assert row == [block, *paper[1:]]


def test_tma_table2_golden(style: Style) -> None:
    roles, runs = paper_metrics()
    table = tma_table2(roles, runs, style=style, ccas=("cubic", "bbr2"), paper_labels=True)
    check_golden(to_csv(table), "tma_table2.csv")
    check_golden(to_markdown(table), "tma_table2.md")
    check_golden(to_latex(table), "tma_table2.tex")
    check_golden(to_html(table), "tma_table2.html")


class _Cells(HTMLParser):
    """Rows of an HTML table as text cells, each spanned cell repeated over its columns."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.caption = ""
        self._span = 0
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("th", "td"):
            self._span = int(dict(attrs).get("colspan") or 1)
            self.rows[-1].append("")
        if tag in ("th", "td", "caption"):
            self._in = tag

    def handle_endtag(self, tag: str) -> None:
        if tag in ("th", "td"):
            self.rows[-1] += [self.rows[-1][-1]] * (self._span - 1)
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "caption":
            self.caption += data
        elif self._in:
            self.rows[-1][-1] += data


def test_tma_table2_as_html_holds_what_the_csv_holds(style: Style) -> None:
    roles, runs = paper_metrics()
    table = tma_table2(roles, runs, style=style, ccas=("cubic", "bbr2"), paper_labels=True)
    parser = _Cells()
    parser.feed(to_html(table))
    assert parser.caption == table.caption
    got = parser.rows
    csv_rows = list(csv.reader(io.StringIO(to_csv(table))))
    assert got[:2] == csv_rows[:2]  # both header levels, spans repeated as CSV repeats them
    block = ""
    for html_row, csv_row in zip(got[2:], csv_rows[2:], strict=True):
        block = html_row[0] or block  # a row group's label only on its first row
        assert [block, *html_row[1:]] == csv_row
    assert to_html(table).count('<tr class="group">') == 2  # TCP and utilisation blocks


def test_tma_table2_says_std_unless_asked_for_the_paper_label(style: Style) -> None:
    roles, runs = paper_metrics()
    table = tma_table2(roles, runs, style=style, ccas=("cubic", "bbr2"))
    labels = [r.stub[1] for r in table.rows]
    assert "Variance" not in labels and labels.count("Std. dev. (ms)") == 2
    assert any("standard deviations" in n for n in table.notes)


def test_tma_table2_missing_condition_and_repetitions(style: Style) -> None:
    roles, runs = paper_metrics()
    # Drop HTB/BBRv2; duplicate drop-tail/Cubic with another delay: cells average the runs.
    roles = roles.filter(~((pl.col("qdisc") == "htb") & (pl.col("cca") == "bbr2")))
    extra = roles.filter((pl.col("qdisc") == "pfifo") & (pl.col("cca") == "cubic"))
    roles = pl.concat([roles, extra.with_columns(delay_mean_ms=pl.col("delay_mean_ms") + 2)])
    table = tma_table2(roles, runs, style=style, ccas=("cubic", "bbr2"), ci=True)
    first = table.rows[0].cells
    t975_1 = 12.706204736174703  # t(0.975, 1 dof)
    assert first[0] == f"45.9 ms ± {num2(t975_1 * 2**0.5 / 2**0.5)}"
    assert first[3] is None
    assert "\u2013" in to_csv(table) and "--" in to_latex(table)


# TMA 2024 Table I as printed (the GFN average latency is not given: "-").
TMA1_PAPER = {
    "ecgp-none": [47.9, 99.8, 85.2, 21.1, 6.8],
    "ecgp-scream": [15.98, 73.9, 18.4, 1.5, 0.3],
    "gfn": [None, 52.4, 30.4, 10.0, 2.6],
}


def test_tma_table1_layout(style: Style) -> None:
    cols = ["delay_mean_ms", *(f"pct_delay_over_{t}ms" for t in (10, 20, 50, 100))]
    roles = role_frame(
        [
            {"system": s, "phase": WINDOW_PHASE, "role": "cg", **dict(zip(cols, v, strict=True))}
            for s, v in TMA1_PAPER.items()
        ]
    )
    table = tma_table1(roles, style=style, variants=list(TMA1_PAPER))
    got = list(csv.reader(io.StringIO(to_csv(table))))
    assert got == [
        ["", "No CCA", "SCReAM CCA", "GFN CCA"],
        ["Average Latency", "47.9ms", "15.98ms", "\u2013"],
        ["% of packets > 10ms", "99.8%", "73.9%", "52.4%"],
        ["% of packets > 20ms", "85.2%", "18.4%", "30.4%"],
        ["% of packets > 50ms", "21.1%", "1.5%", "10.0%"],
        ["% of packets > 100ms", "6.8%", "0.3%", "2.6%"],
    ]
    check_golden(to_markdown(table), "tma_table1.md")
    check_golden(to_latex(table), "tma_table1.tex")


def xu_roles() -> pl.DataFrame:
    """Two runs per condition: 2 capacities x 2 queues x 2 qdiscs x 2 CCAs, both phases."""
    recs = []
    for cap in (15.0, 25.0):
        for queue in ("2x", "0.5x"):
            for qdisc in ("pfifo", "htb"):
                for cca in ("cubic", "bbr"):
                    for rep, (mean, std, n, loss) in enumerate(
                        [(10.0, 1.0, 100, 0.001), (20.0, 2.0, 300, 0.003)]
                    ):
                        for phase, shift in (("before_competitor", 0.0), ("with_competitor", 30.0)):
                            recs.append(
                                {
                                    "run_id": f"{cap}-{queue}-{qdisc}-{cca}-{rep}",
                                    "capacity_mbps": cap,
                                    "queue": queue,
                                    "qdisc": qdisc,
                                    "cca": cca,
                                    "repetition": rep,
                                    "phase": phase,
                                    "role": "cg",
                                    "delay_mean_ms": mean
                                    + shift
                                    + (cca == "bbr")
                                    - 5 * (qdisc == "htb")
                                    + 10 * (queue == "2x")
                                    + cap / 5,
                                    "delay_std_ms": std,
                                    "delay_count": n,
                                    "loss_rate": loss + (0.01 if phase == "with_competitor" else 0),
                                    "frame_rate_fps": 60.0 - 1000 * loss - (cca == "bbr"),
                                }
                            )
    return role_frame(recs)


def test_xu_delay_cell_pools_packets(style: Style) -> None:
    # Runs of 100 packets (mean 10, sd 1) and 300 packets (mean 20, sd 2), for both CCAs
    # pooled in Table 2 (cubic and bbr add 0 and 1 ms): 800 packets in all.
    table = xu_table(xu_roles(), style=style, metric="delay", phase="before_competitor")
    # (The synthetic means also add capacity / 5 = 3 ms at 15 Mbit/s.)
    mean = (100 * 13 + 300 * 23 + 100 * 14 + 300 * 24) / 800
    second = (100 * (1 + 169) + 300 * (4 + 529) + 100 * (1 + 196) + 300 * (4 + 576)) / 800
    sd = (second - mean**2) ** 0.5
    assert table.rows[0].cells[0] == f"{mean:.1f} ({sd:.1f})"
    assert [r.stub[0] for r in table.rows] == ["15 Mb/s", "25 Mb/s"]
    assert table.header[0] == (("BDP 0.5x", 2), ("BDP 2x", 2))
    assert table.header[1] == (("Droptail", 1), ("HTB", 1)) * 2


def test_xu_tables_golden(style: Style) -> None:
    roles = xu_roles()
    t3 = xu_table(
        roles, style=style, metric="delay", phase="with_competitor", ccas=("cubic", "bbr")
    )
    t5 = xu_table(roles, style=style, metric="loss", phase="with_competitor", ccas=("cubic", "bbr"))
    t4 = xu_table(roles, style=style, metric="loss", phase="before_competitor")
    assert len(t3.header) == 3 and t3.n_columns == 8
    # Loss: the two runs give 1.1 % and 1.3 % (with the competitor): mean 1.2, sd 0.14.
    assert t5.rows[0].cells[0] == "1.2 (0.14)"
    # Without the competitor, cubic and bbr runs are pooled: 0.1, 0.3, 0.1, 0.3 -> sd 0.115.
    assert t4.rows[0].cells[0] == "0.2 (0.12)"
    check_golden(to_csv(t3), "xu_table3.csv")
    check_golden(to_markdown(t3), "xu_table3.md")
    check_golden(to_latex(t3), "xu_table3.tex")
    check_golden(to_markdown(t5), "xu_table5.md")
    # Table 6: frame rate over runs; the two runs give 59 and 57 f/s with Cubic, one less
    # with BBR.
    t6 = xu_table(
        roles, style=style, metric="frame_rate", phase="with_competitor", ccas=("cubic", "bbr")
    )
    assert t6.header == t5.header and t6.rows[0].cells[:2] == ("58 (1.41)", "57 (1.41)")
    assert t6.caption is not None and t6.caption.startswith("Frame rate (f/s)")


def test_table_model_rejects_misfit_rows_and_writes_all_formats(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not fit"):
        Table(((("a", 2),),), ("",), (Row(("x",), ("1",)),))
    t = Table(((("a & b", 1), ("50%", 1)),), ("k_1",), (Row(("r",), ("1", None)),), "cap")
    assert to_latex(t).count(r"\&") == 1 and r"50\%" in to_latex(t) and r"k\_1" in to_latex(t)
    assert '<th scope="col">a &amp; b</th>' in to_html(t) and "<td>\u2013</td>" in to_html(t)
    paths = write_table(t, tmp_path / "out" / "t")
    assert [p.name for p in paths] == ["t.csv", "t.md", "t.tex", "t.html"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "t.csv",
        "t.html",
        "t.md",
        "t.tex",
    ]


def test_num2_prints_like_the_paper() -> None:
    assert [num2(x) for x in (44.9, 19.0, 0.8, 0.0, 96.28, -0.001, 0.125)] == [
        "44.9",
        "19",
        "0.8",
        "0",
        "96.28",
        "0",
        "0.12",  # 0.125 is exact in binary: round half to even
    ]
