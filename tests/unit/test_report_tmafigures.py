"""TMA 2024 Figs. 4 and 6-11 as artefacts of the registry: each the campaign's run of the
paper's cell, in the paper's layout, from a tiny synthetic campaign and from the published
datasets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from cganalysis.dataset.reader import open_dataset
from cganalysis.errors import ConfigError
from cganalysis.report import artefacts
from cganalysis.report.inputs import no_series
from cganalysis.report.style import Style, load_style
from cganalysis.report.tmafigures import TMA_FIGURES
from cganalysis.schemas import RUN_TIMESERIES
from tests.conftest import REPO

STYLE = REPO / "configs" / "plotting.yaml"
#: The paper's ramp: the iperf3 target each minute from the second (10, 20, 30, 40, 45).
SCHEDULE = [{"t_s": 60.0 * (i + 1), "rate_mbps": r} for i, r in enumerate((10, 20, 30, 40, 45))]
CELLS = [(q, c) for q in ("pfifo", "htb", "dualpi2") for c in ("cubic", "bbr")]


@pytest.fixture(scope="module")
def style() -> Style:
    return load_style(STYLE)


def _doc(run_id: str, *, repetition: int = 1, competitor: bool = True, **labels: str) -> Any:
    run = {"run_id": run_id, "qdisc": "pfifo", "cca": "cubic", "system": "ecgp"}
    return {
        "run": {**run, **labels, "repetition": repetition},
        "inputs": {"schedule": SCHEDULE if competitor else [], "window_effective_s": [120, 360]},
    }


def _series(cg_mbps: float, competitor: bool = True) -> pl.DataFrame:
    """A run's bins: CG at ``cg_mbps``; TCP following the ramp from 60 s (none if not)."""
    rows = []
    for t in np.arange(0, 360, 0.5):
        target = max((s["rate_mbps"] for s in SCHEDULE if s["t_s"] <= t), default=0.0)
        for role, rate in (("cg", cg_mbps), ("competitor", target if competitor else 0.0)):
            rows.append(
                {
                    "t_s": float(t),
                    "role": role,
                    "rate_mbps": rate,
                    "offered_mbps": rate,
                    "delay_mean_ms": 5.0 if rate else None,
                    "delay_p95_ms": 9.0 if rate else None,
                    "delay_max_ms": 12.0 if rate else None,
                    "loss_pct": 0.0 if rate else None,
                    "packets": 100 if rate else 0,
                    "capacity_mbps": 50.0,
                }
            )
    return pl.DataFrame(rows, schema=dict(RUN_TIMESERIES))


def _campaign() -> tuple[list[Any], dict[str, pl.DataFrame]]:
    """Every queue x CCA cell (two repetitions of drop-tail x Cubic, the second drawn at
    another CG rate) and the cellular campaign's two runs."""
    docs = [_doc(f"c-{q}-{c}-r01", qdisc=q, cca=c) for q, c in CELLS]
    docs.append(_doc("c-pfifo-cubic-r02", repetition=2))
    docs += [
        _doc("cell-none", competitor=False, system="cga-cg-none"),
        _doc("cell-scream", competitor=False, system="cga-cg-scream"),
    ]
    series = {d["run"]["run_id"]: _series(20.0, bool(d["inputs"]["schedule"])) for d in docs}
    series["c-pfifo-cubic-r02"] = _series(3.0)
    return docs, series


@pytest.mark.parametrize("figure", TMA_FIGURES, ids=lambda f: f.name)
def test_each_figure_is_its_cells_run_in_the_papers_layout(figure: Any, style: Style) -> None:
    docs, series = _campaign()
    asked: list[str] = []

    def run_series(run_id: str) -> pl.DataFrame:
        asked.append(run_id)
        return series[run_id]

    artefact = artefacts.by_name(figure.name)
    assert artefact.kind == "figure" and artefact.paper == "TMA 2024" and artefact.timeseries
    fig = artefact.make(docs, run_series, style, artefacts.Options())
    assert isinstance(fig, Figure)
    shown = [d for d in docs if d["run"]["run_id"] in asked]
    assert len(asked) == 1 and len(shown) == 1
    run = shown[0]["run"]
    assert all(run[k] == v for k, v in figure.labels.items())
    assert run["repetition"] == 1  # the first repetition, as the paper shows one run
    # Three panels: throughput, queuing delay, loss rate against time, with units.
    ax0, ax1, ax2 = fig.axes[:3]
    assert [a.get_ylabel() for a in (ax0, ax1, ax2)] == [
        "Throughput\n(Mbit/s)",
        "Queuing delay\n(ms)",
        "Loss rate\n(%)",
    ]
    assert ax2.get_xlabel() == "Time (s)"
    legend = fig.legends[0]
    assert f"Fig. {figure.number}" in legend.get_title().get_text()
    assert run["run_id"] in legend.get_title().get_text()
    labels = [t.get_text() for t in legend.get_texts()]
    steps = {
        ln.get_xdata()[0]
        for ln in ax0.get_lines()
        if to_hex(ln.get_color()) == style.events["step_color"].lower()
    }
    if figure.number == 4:  # the cellular run: no competitor, no ramp
        assert "TCP (iperf3)" not in labels and steps == set()
    else:
        assert {"CG (RTP)", "TCP (iperf3)"} <= set(labels)
        assert steps == {60.0, 120.0, 180.0, 240.0, 300.0}  # the ramp's steps, in red
        cg = next(ln for ln in ax0.get_lines() if ln.get_label() == "CG (RTP)")
        assert np.nanmax(np.asarray(cg.get_ydata(), dtype=float)) == 20.0  # r01's, not r02's


def test_a_campaign_without_the_cell_is_an_error_not_an_empty_figure(style: Style) -> None:
    docs, series = _campaign()
    htb_only = [d for d in docs if d["run"]["qdisc"] == "htb" and d["inputs"]["schedule"]]
    with pytest.raises(ConfigError, match=r"tma_fig6: no run with qdisc=pfifo, cca=cubic"):
        artefacts.by_name("tma_fig6").make(htb_only, series.__getitem__, style, artefacts.Options())
    # A figure asked for without the runs' time series says what is missing.
    with pytest.raises(ConfigError, match="time series is needed"):
        artefacts.by_name("tma_fig8").make(docs, no_series, style, artefacts.Options())


@pytest.mark.parametrize(
    ("dataset", "figures"),
    [
        ("tma2024-be10-2026-11-27", [f.name for f in TMA_FIGURES if f.number != 4]),
        ("tma2024-cellular-2026-11-27", ["tma_fig4"]),
    ],
)
def test_the_figures_from_a_published_dataset(
    dataset: str, figures: list[str], tmp_path: Path
) -> None:
    """As the published profile draws them (the workflow's entry, files named after their
    runs), and through the dataset reader."""
    ds = open_dataset(REPO / "datasets" / dataset)
    metrics = sorted((ds.directory / "metrics").glob("*.json"))
    series = sorted((ds.directory / "timeseries").glob("*.parquet"))
    for name in figures:
        written = artefacts.write_from_files(name, metrics, STYLE, tmp_path / name, series)
        assert [p.name for p in written] == [f"{name}.pdf", f"{name}.png"]
        assert all(p.stat().st_size > 10_000 for p in written)
    fig = ds.figure(figures[0])
    top = fig.legends[0].get_title().get_text()
    assert ds.campaign in top  # the run id, which starts with its campaign
    with pytest.raises(ConfigError, match="a figure, not a table"):
        ds.tables(figures[0])
