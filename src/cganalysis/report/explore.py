"""Exploratory views, drawn with seaborn, for the notebooks: what one looks at before a
paper's figure, not the figure.

- :func:`delay_ecdf_by_flow`: the queuing delay's ECDF of every flow of a run (not only of
  the two roles), to see which flow queued and how the tails differ;
- :func:`metric_heatmap`: one metric of a role across two labels (queue discipline by
  congestion control, by default), annotated, repetitions averaged;
- :func:`timeseries_grid`: every run's time series of a campaign, one panel per condition
  (seaborn's objects interface), repetitions overlaid.

The papers' figures (:mod:`cganalysis.report.figures`) stay plain matplotlib: each repeats
one paper's layout (its marks, "never" cells, hulls, rate steps), and the tests check them
element by element. Here seaborn does what it does well, statistics, faceting and
annotated grids, with the same :class:`~cganalysis.report.style.Style` (labels and
colours). Each view hands seaborn a pandas frame of only the columns it draws (seaborn
reads pandas; a run of millions of packets converts three columns). Every function returns
a Figure and never saves it (:func:`cganalysis.report.figures.save_figure` does).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import matplotlib as mpl
import numpy as np
import polars as pl
import seaborn as sns
import seaborn.objects as so
from matplotlib.figure import Figure

from cganalysis.report.style import Kind, Style

#: Queuing delay below this is drawn at it on a log axis (a packet that did not queue).
LOG_FLOOR_MS = 1e-3
_PROTOCOLS = {6: "TCP", 17: "UDP", 1: "ICMP", 58: "ICMPv6"}


def _flow_label(
    role: str, proto: int | None, sport: int | None, dport: int | None, style: Style
) -> str:
    name = _PROTOCOLS.get(proto or -1, f"proto {proto}")
    ports = f" {sport}\u2192{dport}" if sport is not None and dport is not None else ""
    return f"{style.label('roles', role)}: {name}{ports}"


def _shades(color: str, n: int) -> list[str]:
    """``n`` colours from ``color`` towards white: a role's flows told apart, its hue kept."""
    if n == 1:
        return [color]
    return [mpl.colors.to_hex(c) for c in sns.light_palette(color, n + 1, reverse=True)[:n]]


def delay_ecdf_by_flow(
    packets: pl.DataFrame,
    *,
    style: Style,
    min_packets: int = 20,
    thresholds_ms: Sequence[float] = (10.0, 20.0, 50.0, 100.0),
    max_points: int = 20_000,
    log_x: bool = True,
) -> Figure:
    """One ECDF of queuing delay per flow of ``packets`` (a run's prepared packets:
    :attr:`cganalysis.run.Run.prepared` ``.packets``, with ``role``); flows of fewer than
    ``min_packets`` delivered packets are left out. Coloured by role (lighter for a role's
    further flows); dotted lines at the TMA thresholds.

    A flow of millions of packets is drawn from ``max_points`` of its delays, taken at evenly
    spaced ranks: the same curve, a file of a reasonable size.
    """
    delivered = packets.filter(pl.col("delay_ms").is_not_null())
    flows = (
        delivered.group_by("flow_id", maintain_order=True)
        .agg(
            pl.col("role").first(),
            pl.col("proto").first(),
            pl.col("sport").first(),
            pl.col("dport").first(),
            pl.len().alias("n"),
        )
        .filter(pl.col("n") >= min_packets)
    )
    roles = style.order("roles", flows.get_column("role").unique())
    # the style's role order, then the busiest flow of each role first
    rank = pl.col("role").replace_strict(roles, list(range(len(roles))))
    flows = flows.sort(rank, "n", descending=[False, True])
    labels, palette, parts = [], {}, []
    for role in roles:
        mine = flows.filter(pl.col("role") == role)
        for row, color in zip(
            mine.iter_rows(named=True),
            _shades(style.color("roles", role), mine.height),
            strict=True,
        ):
            label = _flow_label(role, row["proto"], row["sport"], row["dport"], style)
            if label in palette:  # one 5-tuple, several RTP streams
                label = f"{label} (flow {row['flow_id']})"
            labels.append(label)
            palette[label] = color
            delays = (
                delivered.filter(pl.col("flow_id") == row["flow_id"]).get_column("delay_ms").sort()
            )
            if delays.len() > max_points:  # evenly spaced ranks, the largest kept
                every = math.ceil(delays.len() / max_points)
                delays = pl.concat([delays.gather_every(every), delays.tail(1)])
            parts.append(pl.DataFrame({"flow": label, "delay_ms": delays}))
    data = pl.concat(parts) if parts else pl.DataFrame({"flow": [], "delay_ms": []})
    if log_x:
        data = data.with_columns(pl.col("delay_ms").clip(lower_bound=LOG_FLOOR_MS))
    f = style.figure
    with mpl.rc_context(style.rc()):
        fig = Figure(
            figsize=(f.full_width_in * 0.7, f.column_width_in * 0.75), layout="constrained"
        )
        ax = fig.subplots()
        if data.height:
            sns.ecdfplot(
                data=data.to_pandas(),
                x="delay_ms",
                hue="flow",
                hue_order=labels,
                palette=palette,
                log_scale=log_x,
                ax=ax,
            )
            legend = ax.get_legend()
            if legend is not None:
                sns.move_legend(
                    ax, "upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, title="Flow"
                )
        for t in thresholds_ms:
            ax.axvline(t, color="0.6", linestyle=":", linewidth=0.7, zorder=0)
        ax.set_ylim(0, 1.0)
        ax.set_xlabel("Queuing delay (ms)")
        ax.set_ylabel("ECDF")
        ax.grid(visible=True)
    return fig


def _labelled(
    frame: pl.DataFrame, column: str, kind: Kind, style: Style
) -> tuple[pl.DataFrame, list[str]]:
    """``column``'s values replaced by their style labels; the labels in the style's order."""
    keys = style.order(kind, frame.get_column(column).drop_nulls().unique())
    names = [style.label(kind, k) for k in keys]
    return frame.with_columns(pl.col(column).replace_strict(keys, names, default=None)), names


def metric_heatmap(
    rows: pl.DataFrame,
    value: str,
    *,
    style: Style,
    role: str | None = "cg",
    index: tuple[str, Kind] = ("qdisc", "qdisc"),
    columns: tuple[str, Kind] = ("cca", "cca"),
    fmt: str = ".2f",
    label: str | None = None,
    cmap: str = "rocket_r",
) -> Figure:
    """``value`` of ``role`` (METRICS_ROLES rows of the analysis window, e.g.
    :meth:`cganalysis.run.Campaign.role_rows`; ``role=None`` for METRICS_RUNS rows) as an
    annotated heatmap, ``index`` labels down and ``columns`` across (each a column and its
    style kind), repetitions averaged; a cell without runs is left blank."""
    if role is not None:
        rows = rows.filter((pl.col("role") == role) & (pl.col("phase") == "window"))
    rows, down = _labelled(rows, index[0], index[1], style)
    rows, across = _labelled(rows, columns[0], columns[1], style)
    means = rows.group_by(index[0], columns[0]).agg(pl.col(value).mean())
    grid = np.full((len(down), len(across)), np.nan)
    for r in means.iter_rows(named=True):
        if r[value] is not None and r[index[0]] in down and r[columns[0]] in across:
            grid[down.index(r[index[0]]), across.index(r[columns[0]])] = r[value]
    f = style.figure
    with mpl.rc_context(style.rc()):
        fig = Figure(
            figsize=(min(f.full_width_in, 1.6 + 0.9 * len(across)), 0.9 + 0.4 * len(down)),
            layout="constrained",
        )
        ax = fig.subplots()
        ax.set_facecolor(style.heatmap["missing_color"])
        sns.heatmap(
            grid,
            annot=True,
            fmt=fmt,
            cmap=cmap,
            mask=np.isnan(grid),
            xticklabels=across,
            yticklabels=down,
            linewidths=0.5,
            linecolor="white",
            cbar_kws={"label": label or value},
            ax=ax,
        )
        ax.set_xlabel(style.label("roles", role) if role is not None else "")
        ax.set_ylabel("")
        ax.tick_params(length=0)
        ax.tick_params(axis="y", rotation=0)
    return fig


def timeseries_grid(
    series: pl.DataFrame,
    *,
    style: Style,
    y: str = "rate_mbps",
    label: str = "Throughput (Mbit/s)",
    row: tuple[str, Kind] = ("cca", "cca"),
    col: tuple[str, Kind] = ("qdisc", "qdisc"),
    roles: Sequence[str] = ("cg", "competitor"),
) -> Figure:
    """Every run's ``y`` against time (RUN_TIMESERIES rows with ``run_id`` and the labels
    named by ``row`` and ``col``: :meth:`cganalysis.run.Campaign.timeseries`), one panel per
    ``row`` x ``col`` condition, one line per run and role in the role's colour."""
    data = series.filter(pl.col("role").is_in(list(roles)) & (pl.col("packets") > 0))
    data, rows = _labelled(data, row[0], row[1], style)
    data, cols = _labelled(data, col[0], col[1], style)
    data, role_names = _labelled(data, "role", "roles", style)
    palette = {style.label("roles", r): style.color("roles", r) for r in roles}
    f = style.figure
    fig = Figure(figsize=(f.full_width_in, 0.6 + 1.5 * max(1, len(rows))))
    frame = data.select("t_s", y, "role", "run_id", row[0], col[0]).to_pandas()
    plot = (
        so.Plot(frame, x="t_s", y=y, color="role", group="run_id")
        .facet(col=col[0], row=row[0], order={"col": cols, "row": rows})
        .add(so.Line(linewidth=0.8, alpha=0.85))
        .scale(color=so.Nominal(palette, order=role_names))
        .label(x="Time (s)", y=label, color="")
        .theme({**sns.axes_style("whitegrid"), **style.rc()})
        .layout(engine="constrained")
        .on(fig)
    )
    with warnings.catch_warnings():
        # seaborn 0.13 passes pandas 3 a keyword it deprecated (copy=): noise, not ours.
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="seaborn")
        plot.plot()
    # seaborn puts the legend beside the figure, where only a tight bounding box would
    # keep it: above the panels instead, inside the figure.
    for legend in list(fig.legends):
        handles = [h for h in legend.legend_handles if h is not None]
        texts = [t.get_text() for t in legend.get_texts()]
        fig.legends.remove(legend)
        with mpl.rc_context(style.rc()):
            fig.legend(handles, texts, loc="outside upper center", ncols=len(texts), frameon=False)
    return fig
