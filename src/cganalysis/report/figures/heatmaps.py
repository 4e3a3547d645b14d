"""Xu & Claypool Figs. 3 and 4 as heatmaps: one panel per competing CCA and system or queue
discipline, capacity rows by queue-size columns, values averaged over repetitions."""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.colors import Normalize, TwoSlopeNorm, to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from cganalysis.metrics.aggregate import summarise_conditions
from cganalysis.report.style import Kind, Style
from cganalysis.report.tables import num2
from cganalysis.report.xutables import sorted_queues


def _queue_order(values: Sequence[str]) -> list[str]:
    return sorted_queues(list(values))


def _grid(
    frame: pl.DataFrame, value: str, capacities: Sequence[float], queues: Sequence[str]
) -> np.ndarray:
    """``value`` as a matrix: capacities from the highest (top row) down, queues across."""
    m = np.full((len(capacities), len(queues)), np.nan)
    for i, cap in enumerate(capacities):
        for j, q in enumerate(queues):
            sel = frame.filter((pl.col("capacity_mbps") == cap) & (pl.col("queue") == q))
            if sel.height and sel.get_column(value).null_count() < sel.height:
                m[i, j] = float(sel.get_column(value).drop_nulls().mean())  # type: ignore[arg-type]
    return m


def _text_color(rgb: tuple[float, float, float]) -> str:
    r, g, b = rgb
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def _axes_for(fig: Figure, n_rows: int, queues: Sequence[Sequence[str]]) -> list[list[Axes]]:
    """One panel per row and column of panels; a column as wide as its queues, so that every
    cell of the figure has the same size."""
    grid = fig.subplots(
        n_rows,
        len(queues),
        squeeze=False,
        sharex="col",
        sharey=True,
        gridspec_kw={"width_ratios": [max(1, len(q)) for q in queues]},
    )
    return [list(r) for r in grid]


def _heat_panel(
    ax: Axes,
    matrix: np.ndarray,
    *,
    cmap: mpl.colors.Colormap,
    norm: Normalize,
    fmt: str,
    style: Style,
    never: np.ndarray | None = None,
) -> mpl.image.AxesImage:
    ax.set_facecolor(style.heatmap["missing_color"])
    im = ax.imshow(np.ma.masked_invalid(matrix), cmap=cmap, norm=norm, aspect="auto")
    for (i, j), v in np.ndenumerate(matrix):
        if never is not None and never[i, j]:
            ax.add_patch(
                Rectangle((j - 0.5, i - 0.5), 1, 1, color=style.heatmap["never_color"], zorder=2)
            )
            ax.text(j, i, "never", ha="center", va="center", color="white", zorder=3)
        elif math.isnan(v):
            ax.text(j, i, "n/a", ha="center", va="center", color="0.4")
        else:
            color = _text_color(to_rgb(cmap(norm(v))))
            text = format(v, fmt)
            if text.lstrip("-").strip("0.") == "":
                text = text.lstrip("-")  # -0.00 reads as a sign that is not there
            ax.text(j, i, text, ha="center", va="center", color=color)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    return im


def _condition_axes_labels(
    axes: list[list[Axes]],
    capacities: Sequence[float],
    queues: Sequence[Sequence[str]],
    col_titles: Sequence[str],
    row_titles: Sequence[str],
) -> None:
    bdp = all(q.endswith("x") for col in queues for q in col)
    for r, row in enumerate(axes):
        for c, ax in enumerate(row):
            ax.set_xticks(range(len(queues[c])), labels=list(queues[c]))
            ax.set_yticks(range(len(capacities)), labels=[num2(x) for x in capacities])
            if r == 0:
                ax.set_title(col_titles[c])
            if c == 0:
                ax.set_ylabel(f"{row_titles[r]}\nCapacity (Mbit/s)")
            if r == len(axes) - 1:
                ax.set_xlabel("Queue size (\u00d7 BDP)" if bdp else "Queue size")


def _conditions(
    runs: pl.DataFrame,
    panel_key: str,
    style: Style,
    panels: Sequence[str] | None,
    ccas: Sequence[str] | None,
) -> tuple[pl.DataFrame, list[str], list[str], list[float], list[list[str]], Kind]:
    kind: Kind = "system" if panel_key == "system" else "qdisc"
    summary = summarise_conditions(runs, [panel_key, "cca", "capacity_mbps", "queue"])
    panels = (
        list(panels) if panels is not None else style.order(kind, summary.get_column(panel_key))
    )
    ccas = list(ccas) if ccas is not None else style.order("cca", summary.get_column("cca"))
    capacities = sorted(set(summary.get_column("capacity_mbps").drop_nulls()), reverse=True)
    every = _queue_order(list(set(summary.get_column("queue").drop_nulls())))
    # Each panel's own queues: where each discipline has queues of its own (the TMA
    # campaigns: 250p drop-tail, sfq63+pfifo250 HTB), the other panels' columns would be
    # all "n/a" and crowd the labels; where they share them (Xu's), every panel has all.
    queues = []
    for panel in panels:
        own = summary.filter(pl.col(panel_key) == panel).get_column("queue").drop_nulls()
        queues.append(_queue_order(list(set(own))) or every)
    return summary, panels, ccas, capacities, queues, kind


def fairness_heatmaps(
    runs: pl.DataFrame,
    *,
    style: Style,
    panel_key: str = "qdisc",
    panels: Sequence[str] | None = None,
    ccas: Sequence[str] | None = None,
    limit: float | None = None,
) -> Figure:
    """Xu Fig. 3 from METRICS_RUNS rows: one panel per CCA (rows) and ``panel_key`` (columns),
    capacity rows x queue-size columns, values averaged over repetitions.

    The palette is diverging and centred on 0; ``limit`` sets its range (default: the
    largest magnitude, so that small differences still show).
    """
    summary, panels, ccas, capacities, queues, kind = _conditions(
        runs, panel_key, style, panels, ccas
    )
    values = summary.get_column("fairness_ratio").drop_nulls().abs()
    lim = limit or max(0.1, math.ceil(float(values.max() or 0.1) * 10) / 10)  # type: ignore[arg-type]
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-lim, vmax=lim)
    cmap = mpl.colormaps[style.heatmap["fairness_cmap"]]
    f = style.figure
    with mpl.rc_context(style.rc()):
        width = min(f.full_width_in, 1.2 + 1.6 * len(panels))
        fig = Figure(figsize=(width, 0.6 + 1.35 * len(ccas)), layout="constrained")
        axes = _axes_for(fig, len(ccas), queues)
        im = None
        for r, cca in enumerate(ccas):
            for c, panel in enumerate(panels):
                sel = summary.filter((pl.col("cca") == cca) & (pl.col(panel_key) == panel))
                m = _grid(sel, "fairness_ratio", capacities, queues[c])
                im = _heat_panel(axes[r][c], m, cmap=cmap, norm=norm, fmt=".2f", style=style)
        _condition_axes_labels(
            axes,
            capacities,
            queues,
            [style.label(kind, p) for p in panels],
            [f"vs {style.label('cca', c)}" for c in ccas],
        )
        if im is not None:
            bar = fig.colorbar(im, ax=[a for row in axes for a in row], shrink=0.9, aspect=25)
            bar.set_label("(CG $-$ TCP) / capacity")
    return fig


def adaptation_heatmaps(
    runs: pl.DataFrame,
    *,
    style: Style,
    panel_key: str = "qdisc",
    panels: Sequence[str] | None = None,
    ccas: Sequence[str] | None = None,
) -> Figure:
    """Xu Fig. 4: response and recovery times (s); black "never" where no run got there."""
    summary, panels, ccas, capacities, queues, kind = _conditions(
        runs, panel_key, style, panels, ccas
    )
    times = pl.concat(
        [summary.get_column("response_time_s"), summary.get_column("recovery_time_s")]
    ).drop_nulls()
    vmax = max(1.0, float(times.max())) if times.len() else 1.0  # type: ignore[arg-type]
    norm = Normalize(vmin=0.0, vmax=vmax)
    cmap = mpl.colormaps[style.heatmap["time_cmap"]]
    f = style.figure
    rows = [(cca, kind_) for cca in ccas for kind_ in ("response", "recovery")]
    with mpl.rc_context(style.rc()):
        width = min(f.full_width_in, 1.2 + 1.6 * len(panels))
        fig = Figure(figsize=(width, 0.6 + 1.25 * len(rows)), layout="constrained")
        axes = _axes_for(fig, len(rows), queues)
        im = None
        for r, (cca, what) in enumerate(rows):
            for c, panel in enumerate(panels):
                sel = summary.filter((pl.col("cca") == cca) & (pl.col(panel_key) == panel))
                m = _grid(sel, f"{what}_time_s", capacities, queues[c])
                never = _grid(
                    sel.with_columns(
                        (pl.col(f"{what}_status") == "never").cast(pl.Float64).alias("_never")
                    ),
                    "_never",
                    capacities,
                    queues[c],
                )
                im = _heat_panel(
                    axes[r][c], m, cmap=cmap, norm=norm, fmt=".1f", style=style, never=never == 1
                )
        _condition_axes_labels(
            axes,
            capacities,
            queues,
            [style.label(kind, p) for p in panels],
            [f"{what.capitalize()} (s)\nvs {style.label('cca', cca)}" for cca, what in rows],
        )
        if im is not None:
            bar = fig.colorbar(im, ax=[a for row in axes for a in row], shrink=0.9, aspect=30)
            bar.set_label("Time to adapt (s)")
    return fig
