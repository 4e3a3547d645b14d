"""The exploratory views (seaborn): each draws what it is given, in the style's colours and
labels, with one curve, cell or panel per flow, condition or run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from cganalysis.metrics.roles import parse_rules
from cganalysis.metrics.runfacts import Window, choose_capacity, facts_from_values
from cganalysis.metrics.timebase import prepare
from cganalysis.report.explore import delay_ecdf_by_flow, metric_heatmap, timeseries_grid
from cganalysis.report.style import Style, load_style
from cganalysis.schemas import RUN_TIMESERIES
from tests.unit.synthetic import flow, table

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def style() -> Style:
    return load_style(REPO / "configs" / "plotting.yaml")


def test_one_ecdf_per_flow_in_its_roles_colour(style: Style) -> None:
    t = np.arange(0, 2, 0.01)  # 200 packets a flow
    pk = table(
        flow(t, flow_id=0, sport=30001, dport=30002, delay_ms=list(np.linspace(0.01, 5, t.size))),
        flow(t, flow_id=1, proto=6, sport=40001, dport=5201, delay_ms=30.0),
        flow(t, flow_id=2, proto=6, sport=40002, dport=5202, delay_ms=list(60 + t)),
        flow(t[:5], flow_id=3, proto=6, sport=40003, dport=5203, delay_ms=1.0),  # too few
    )
    facts = facts_from_values(
        capacity=choose_capacity(10.0, None, None),
        window=Window(0, None),
        rules=parse_rules(["cg=udp:30002", "competitor=tcp"]),
    )
    fig = delay_ecdf_by_flow(prepare(pk, facts).packets, style=style, max_points=50)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [
        "CG (RTP): UDP 30001\u219230002",
        "TCP (iperf3): TCP 40001\u21925201",
        "TCP (iperf3): TCP 40002\u21925202",
    ]
    curves = dict(zip(labels, ax.get_legend().get_lines(), strict=True))
    assert to_hex(curves[labels[0]].get_color()) == style.color("roles", "cg").lower()
    assert to_hex(curves[labels[1]].get_color()) == style.color("roles", "competitor").lower()
    assert to_hex(curves[labels[2]].get_color()) != to_hex(curves[labels[1]].get_color())
    steps = [line for line in ax.get_lines() if len(line.get_xdata()) > 2]
    assert len(steps) == 3  # the threshold lines are the others
    for line in steps:
        assert np.asarray(line.get_ydata())[-1] == pytest.approx(1.0)
    # The slowest flow's curve ends at its largest delay (drawn from 50 of its 200 delays).
    assert max(np.max(line.get_xdata()) for line in steps) == pytest.approx(61.99)
    assert max(len(line.get_xdata()) for line in steps) < 60
    assert ax.get_xscale() == "log"


def _roles() -> pl.DataFrame:
    rows = [
        {"qdisc": q, "cca": c, "role": r, "phase": p, "delay_mean_ms": d}
        for q, c, d in (
            ("pfifo", "cubic", 20.0),
            ("pfifo", "cubic", 30.0),  # a repetition: averaged
            ("pfifo", "bbr", 10.0),
            ("htb", "cubic", 2.0),
            ("dualpi2", "bbr", 0.5),
        )
        for r, p in (("cg", "window"), ("competitor", "window"), ("cg", "before_competitor"))
    ]
    return pl.DataFrame(rows)


def test_the_heatmap_averages_repetitions_and_leaves_missing_cells_blank(style: Style) -> None:
    fig = metric_heatmap(_roles(), "delay_mean_ms", style=style, fmt=".1f", label="CG delay")
    ax = fig.axes[0]
    # Rows and columns in the style's order, with its labels.
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Drop-tail", "HTB", "L4S (DualPI2)"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Cubic", "BBR"]
    # One annotation per cell with runs (row by row); HTB/BBR and L4S/Cubic have none.
    assert [t.get_text() for t in ax.texts] == ["25.0", "10.0", "2.0", "0.5"]
    assert fig.axes[1].get_ylabel() == "CG delay"  # the colour bar


def _series() -> pl.DataFrame:
    frames = []
    for q in ("pfifo", "htb"):
        for c in ("cubic", "bbr"):
            for rep in (1, 2) if (q, c) == ("htb", "bbr") else (1,):
                for role, rate in (("cg", 20.0), ("competitor", 25.0)):
                    t = np.arange(0.0, 10.0, 0.5)
                    frames.append(
                        pl.DataFrame(
                            {
                                "t_s": t,
                                "role": role,
                                "rate_mbps": rate + rep,
                                "offered_mbps": rate,
                                "delay_mean_ms": 1.0,
                                "delay_p95_ms": 2.0,
                                "delay_max_ms": 3.0,
                                "loss_pct": 0.0,
                                "packets": 10,
                                "capacity_mbps": 50.0,
                            },
                            schema=dict(RUN_TIMESERIES),
                        ).with_columns(
                            run_id=pl.lit(f"{q}-{c}-r{rep}"), qdisc=pl.lit(q), cca=pl.lit(c)
                        )
                    )
    return pl.concat(frames)


def test_the_grid_has_a_panel_per_condition_and_a_line_per_run_and_role(style: Style) -> None:
    fig = timeseries_grid(_series(), style=style)
    panels = [a for a in fig.axes if a.get_lines()]
    titles = [a.get_title() for a in panels]
    assert titles == ["Drop-tail | Cubic", "HTB | Cubic", "Drop-tail | BBR", "HTB | BBR"]
    assert [len(a.get_lines()) for a in panels] == [2, 2, 2, 4]  # HTB/BBR: two runs
    colors = {to_hex(line.get_color()) for line in panels[3].get_lines()}
    assert colors == {style.color("roles", r).lower() for r in ("cg", "competitor")}
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["CG (RTP)", "TCP (iperf3)"]
    assert panels[2].get_xlabel() == "Time (s)"
