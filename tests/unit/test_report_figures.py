"""Figures render, with the panels, axes, labels and marks the papers' figures have."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from cganalysis.metrics.delay import delay_cdf
from cganalysis.metrics.registry import METRICS_RUNS
from cganalysis.metrics.steps import Step
from cganalysis.report.figures import (
    adaptation_heatmaps,
    adaptiveness_scatter,
    delay_cdf_figure,
    fairness_heatmaps,
    packet_delay_figure,
    save_figure,
    timeseries_figure,
)
from cganalysis.report.style import Style, load_style
from cganalysis.schemas import RUN_TIMESERIES

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def style() -> Style:
    return load_style(REPO / "configs" / "plotting.yaml")


def series() -> pl.DataFrame:
    t = np.arange(0, 60, 0.5)
    rows = []
    for role, rate in (("cg", 20.0), ("competitor", 25.0)):
        for x in t:
            started = role == "cg" or x >= 10
            rows.append(
                {
                    "t_s": float(x),
                    "role": role,
                    "rate_mbps": rate if started else 0.0,
                    "offered_mbps": rate if started else 0.0,
                    "delay_mean_ms": 30.0 if started else None,
                    "delay_p95_ms": 40.0 if started else None,
                    "delay_max_ms": 50.0 if started else None,
                    "loss_pct": 0.5 if started else None,
                    "packets": 100 if started else 0,
                    "capacity_mbps": 50.0,
                }
            )
    return pl.DataFrame(rows, schema=dict(RUN_TIMESERIES))


def test_timeseries_has_three_panels_and_step_marks(style: Style) -> None:
    steps = [Step(10, 10), Step(20, 20), Step(40, 0)]
    fig = timeseries_figure(series(), style=style, schedule=steps, window=(20, 60))
    assert isinstance(fig, Figure)
    ax0, ax1, ax2 = fig.axes[:3]
    assert [a.get_ylabel() for a in (ax0, ax1, ax2)] == [
        "Throughput\n(Mbit/s)",
        "Queuing delay\n(ms)",
        "Loss rate\n(%)",
    ]
    assert ax2.get_xlabel() == "Time (s)"
    # CG and TCP styled apart (colour, marker) as in the paper; capacity dashed.
    lines = {ln.get_label(): ln for ln in ax0.get_lines()}
    cg, tcp = lines["CG (RTP)"], lines["TCP (iperf3)"]
    assert to_hex(cg.get_color()) == style.color("roles", "cg").lower()
    assert cg.get_marker() in ("None", "", None) and tcp.get_marker() == "o"
    assert "Capacity" in lines
    # The competitor has no value before its first packet (10 s), not a zero.
    x, y = tcp.get_data()
    assert np.isnan(np.asarray(y)[np.asarray(x) < 10]).all()
    # One vertical line per step on every panel, in the step colour.
    for ax in (ax0, ax1, ax2):
        xs = [np.asarray(ln.get_xdata()) for ln in ax.get_lines()]
        assert sorted(float(x[0]) for x in xs if len(set(x.tolist())) == 1) == [10, 20, 40]
    (top,) = ax0.child_axes  # the secondary axis with the step targets
    assert [t.get_text() for t in top.get_xticklabels()] == ["10", "20", "0"]
    legend = fig.legends[0]
    # The shading named: the window the statistics cover.
    assert [t.get_text() for t in legend.get_texts()] == [
        "CG (RTP)",
        "TCP (iperf3)",
        "Capacity",
        "Statistics window",
    ]


def runs() -> pl.DataFrame:
    rows: list[dict[str, Any]] = []
    for q in ("pfifo", "htb"):
        for cca in ("cubic", "bbr"):
            for cap in (15.0, 25.0):
                for queue in ("0.5x", "2x", "7x"):
                    never = q == "pfifo" and cap == 15.0 and queue == "0.5x"
                    rows.append(
                        {
                            "run_id": f"{q}-{cca}-{cap}-{queue}",
                            "qdisc": q,
                            "cca": cca,
                            "capacity_mbps": cap,
                            "queue": queue,
                            "fairness_ratio": -0.3 if q == "pfifo" else 0.2,
                            "response_time_s": None if never else 5.0,
                            "response_status": "never" if never else "reached",
                            "recovery_time_s": 20.0,
                            "recovery_status": "reached",
                        }
                    )
    return pl.DataFrame(
        [{c: r.get(c) for c in METRICS_RUNS} for r in rows], schema=dict(METRICS_RUNS), orient="row"
    )


def _texts(ax: Any) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_fairness_heatmaps_layout(style: Style) -> None:
    fig = fairness_heatmaps(runs(), style=style)
    panels = [a for a in fig.axes if a.images]
    assert len(panels) == 4  # 2 CCAs x 2 queue disciplines
    assert [a.get_title() for a in panels[:2]] == ["Drop-tail", "HTB"]
    first = panels[0]
    assert [t.get_text() for t in first.get_yticklabels()] == ["25", "15"]  # highest on top
    bottom_left = panels[2]  # x tick labels only on the bottom row (shared axes)
    assert [t.get_text() for t in bottom_left.get_xticklabels()] == ["0.5x", "2x", "7x"]
    assert bottom_left.get_xlabel() == "Queue size (\u00d7 BDP)"
    assert _texts(first) == ["-0.30"] * 6
    # Diverging palette centred on 0: a zero would sit at the colour map's middle.
    norm = first.images[0].norm
    assert np.asarray(norm(np.array([0.0])))[0] == pytest.approx(0.5)
    assert isinstance(norm.vmax, float) and norm.vmin == -norm.vmax
    assert "vs Cubic" in first.get_ylabel()
    bar = next(a for a in fig.axes if not a.images)
    assert "capacity" in bar.get_ylabel()


def test_adaptation_heatmaps_never_is_black(style: Style) -> None:
    fig = adaptation_heatmaps(runs(), style=style)
    panels = [a for a in fig.axes if a.images]
    assert len(panels) == 8  # (response, recovery) x 2 CCAs x 2 queue disciplines
    response_cubic_pfifo = panels[0]
    assert "Response" in response_cubic_pfifo.get_ylabel()
    assert "never" in _texts(response_cubic_pfifo)
    black = [p for p in response_cubic_pfifo.patches if to_hex(p.get_facecolor()) == "#000000"]
    assert len(black) == 1
    assert "never" not in _texts(panels[2])  # recovery row: always reached


def test_heatmap_panels_show_their_own_queues(style: Style) -> None:
    # The TMA campaigns: each queue discipline has a queue of its own; the other panels'
    # columns would be all "n/a" and their labels would overlap.
    own = {"pfifo": "250p", "htb": "sfq63+pfifo250"}
    frame = runs().filter(pl.col("queue") == "2x")
    frame = frame.with_columns(pl.col("qdisc").replace_strict(own).alias("queue"))
    for make in (fairness_heatmaps, adaptation_heatmaps):
        fig = make(frame, style=style)
        panels = [a for a in fig.axes if a.images]
        bottom = panels[-2:]
        assert [[t.get_text() for t in a.get_xticklabels()] for a in bottom] == [
            ["250p"],
            ["sfq63+pfifo250"],
        ]
        assert all("n/a" not in _texts(a) for a in panels)
    # Shared queues (Xu's): every panel has all of them, cells the same width.
    fig = fairness_heatmaps(runs(), style=style)
    panels = [a for a in fig.axes if a.images]
    widths = {round(a.get_position().width, 6) for a in panels}
    assert len(widths) == 1


def test_adaptiveness_scatter_without_adaptiveness(style: Style, tmp_path: Path) -> None:
    # No condition has a response or recovery (a campaign without events): the panels
    # stay, saying so, and the figure lays out (it was 0.3 inches wide, with no axes).
    frame = runs().with_columns(
        pl.lit("not_applicable").alias("response_status"),
        pl.lit("not_applicable").alias("recovery_status"),
        pl.lit(None, pl.Float64).alias("response_time_s"),
        pl.lit(None, pl.Float64).alias("recovery_time_s"),
    )
    fig = adaptiveness_scatter(frame, style=style)
    axes = fig.axes
    assert [a.get_title() for a in axes] == ["vs Cubic", "vs BBR"]
    assert all("no condition with an adaptiveness" in _texts(a)[0] for a in axes)
    assert fig.get_size_inches()[0] > 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # constrained layout collapsed, before
        save_figure(fig, tmp_path / "fig5")


def test_adaptiveness_scatter(style: Style) -> None:
    fig = adaptiveness_scatter(runs(), style=style)
    axes = [a for a in fig.axes if a.collections]
    assert [a.get_title() for a in axes] == ["vs Cubic", "vs BBR"]
    assert axes[0].get_xlim() == (-1.0, 1.0)
    offsets = np.concatenate([c.get_offsets() for c in axes[0].collections])
    assert len(offsets) == 12  # one point per condition (2 qdiscs x 2 capacities x 3 queues)
    assert ((offsets[:, 1] >= 0) & (offsets[:, 1] <= 1)).all()


def test_cdf_and_save(style: Style, tmp_path: Path) -> None:
    cdfs = {
        "cg": delay_cdf(pl.Series([0.5, 1.0, 12.0])),
        "competitor": delay_cdf(pl.Series([30.0])),
    }
    fig = delay_cdf_figure(cdfs, style=style)
    assert fig.axes[0].get_xscale() == "log"
    paths = save_figure(fig, tmp_path / "figs" / "cdf")
    assert [p.name for p in paths] == ["cdf.pdf", "cdf.png"]
    assert paths[0].read_bytes().startswith(b"%PDF")
    assert paths[1].read_bytes().startswith(b"\x89PNG")
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["cdf.pdf", "cdf.png"]
    # No time stamp in the files: the same figure made again gives the same bytes.
    again = save_figure(delay_cdf_figure(cdfs, style=style), tmp_path / "again")
    assert again[0].read_bytes() == paths[0].read_bytes()
    assert again[1].read_bytes() == paths[1].read_bytes()


def test_a_save_lays_the_figure_out_once_and_draws_it_once_a_format(
    style: Style, tmp_path: Path
) -> None:
    """Two draws for two files, the PNG's and the PDF's, the constrained layout run once
    before them (savefig would draw a figure with a layout engine once more without
    rendering it, each time); a figure keeps its layout engine after it is saved."""
    from matplotlib.artist import Artist
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    class Counter(Artist):
        draws = 0

        def draw(self, renderer: Any) -> None:
            Counter.draws += 1

    fig = delay_cdf_figure({"cg": delay_cdf(pl.Series([0.5, 1.0, 12.0]))}, style=style)
    fig.add_artist(Counter())
    assert isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine)
    save_figure(fig, tmp_path / "cdf")
    assert Counter.draws == 2
    assert isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine)


def test_packet_delay_figure_marks_losses(style: Style) -> None:
    from cganalysis.metrics.roles import parse_rules
    from cganalysis.metrics.runfacts import Window, choose_capacity, facts_from_values
    from cganalysis.metrics.timebase import prepare
    from tests.unit.synthetic import cbr, table

    pk = table(
        cbr(1, 0, 2, dport=30002, delay_ms=5.0),
        cbr(1, 0, 2, proto=6, flow_id=1, sport=5201, lost=[i == 3 for i in range(200)]),
    )
    facts = facts_from_values(
        capacity=choose_capacity(10.0, None, None),
        window=Window(0, None),
        rules=parse_rules(["cg=udp:30002", "competitor=tcp"]),
    )
    fig = packet_delay_figure(prepare(pk, facts).packets, style=style, schedule=[Step(1, None)])
    ax = fig.axes[0]
    assert ax.get_ylabel() == "Queuing delay (ms)"
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["CG (RTP)", "TCP (iperf3)", "TCP (iperf3) lost"]
    lost = np.asarray(ax.collections[-1].get_offsets())
    assert lost.shape[0] == 1 and lost[0, 1] == 0.0
