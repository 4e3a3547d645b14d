"""The papers' figures as matplotlib Figures (returned, never saved: see :func:`save_figure`).

- :func:`timeseries_figure`: TMA 2024 Figs. 4 and 6-11, throughput / queuing delay / loss
  rate against time, CG and TCP styled apart, the competing flow's rate steps marked.
- :func:`fairness_heatmaps`: Xu & Claypool Fig. 3, bitrate difference / capacity.
- :func:`adaptation_heatmaps`: Xu Fig. 4, response and recovery times, "never" in black.
- :func:`adaptiveness_scatter`: Xu Fig. 5, adaptiveness against fairness.
- :func:`delay_cdf_figure`: queuing-delay CDFs per role (TMA Table I/II thresholds marked).
- :func:`packet_delay_figure`: every packet's delay against time, losses marked.

Every look (labels, colours, markers, sizes) comes from the :class:`Style`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.colors import Normalize, TwoSlopeNorm, to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Polygon, Rectangle

from cganalysis.io import atomic_path
from cganalysis.metrics.adaptiveness import adaptiveness
from cganalysis.metrics.aggregate import summarise_conditions
from cganalysis.metrics.spec import Step
from cganalysis.report.style import Kind, Style
from cganalysis.report.tables import num2, sorted_queues

#: Panel rows of the time-series figure: column of RUN_TIMESERIES, axis label.
TIMESERIES_PANELS: tuple[tuple[str, str], ...] = (
    ("rate_mbps", "Throughput\n(Mbit/s)"),
    ("delay_mean_ms", "Queuing delay\n(ms)"),
    ("loss_pct", "Loss rate\n(%)"),
)


def _step_label(step: Step) -> str:
    return "bulk" if step.rate_mbps is None else num2(step.rate_mbps)


def timeseries_figure(
    series: pl.DataFrame,
    *,
    style: Style,
    schedule: Sequence[Step] = (),
    roles: Sequence[str] = ("cg", "competitor"),
    delay_column: str = "delay_mean_ms",
    window: tuple[float, float] | None = None,
    width_in: float | None = None,
    height_in: float | None = None,
) -> Figure:
    """Three stacked panels over RUN_TIMESERIES rows (one run).

    ``delay_column`` may be ``delay_p95_ms`` or ``delay_max_ms`` to show spikes that a mean
    over a bin hides. ``window`` shades the analysis window.
    """
    f = style.figure
    with mpl.rc_context(style.rc()):
        fig = Figure(
            figsize=(width_in or f.column_width_in, height_in or 0.95 * f.column_width_in * 1.25),
            layout="constrained",
        )
        axes = fig.subplots(3, 1, sharex=True, height_ratios=[1.5, 1.0, 0.8])
        columns = [c if c != "delay_mean_ms" else delay_column for c, _ in TIMESERIES_PANELS]
        t_all = series.get_column("t_s").to_numpy()
        bin_s = float(np.min(np.diff(np.unique(t_all)))) if np.unique(t_all).size > 1 else 1.0
        for rank, role in enumerate(roles):
            e = style.entry("roles", role)
            d = series.filter(pl.col("role") == role).sort("t_s")
            if d.height == 0:
                continue
            x = d.get_column("t_s").to_numpy() + bin_s / 2  # a bin's value at its centre
            # Before its first packet and after its last, a flow has no rate (not a zero
            # one): leave those bins out, so a competitor that starts at 60 s starts there.
            active = np.flatnonzero(d.get_column("packets").to_numpy() > 0)
            span = np.zeros(x.size, dtype=bool)
            if active.size:
                span[active[0] : active[-1] + 1] = True
            for ax, col in zip(axes, columns, strict=True):
                y = d.get_column(col).cast(pl.Float64).fill_null(np.nan).to_numpy()
                y = np.where(span, y, np.nan)
                ax.plot(
                    x,
                    y,
                    color=e.color,
                    linestyle=e.linestyle,
                    marker=e.marker or None,
                    markevery=max(1, x.size // 25),  # ~25 markers: readable, not a smear
                    markerfacecolor="white" if e.marker else None,
                    markeredgewidth=0.8,
                    label=e.label,
                    zorder=3 + len(roles) - rank,  # the first role (CG) drawn on top
                )
        cap = series.filter(pl.col("role") == roles[0]).sort("t_s") if roles else series
        if cap.height and cap.get_column("capacity_mbps").null_count() < cap.height:
            t_cap = cap.get_column("t_s").to_numpy()
            y_cap = cap.get_column("capacity_mbps").cast(pl.Float64).fill_null(np.nan).to_numpy()
            # The last bin's capacity holds until the bin's end, not its start.
            t_cap, y_cap = np.append(t_cap, t_cap[-1] + bin_s), np.append(y_cap, y_cap[-1])
            varies = np.nanmax(y_cap) > np.nanmin(y_cap)
            color = style.events["capacity_color"]
            axes[0].step(
                t_cap,
                y_cap,
                where="post",
                color=color,
                # A trace's capacity jumps every bin: a dotted staircase would dissolve.
                linestyle="-" if varies else style.events["capacity_linestyle"],
                linewidth=(0.5 if varies else 0.8) * f.line_width,
                label="Capacity",
                zorder=1,
            )
            if varies:
                axes[0].fill_between(
                    t_cap, y_cap, step="post", color=color, alpha=0.12, linewidth=0, zorder=0
                )
        for ax in axes:
            for step in schedule:
                ax.axvline(
                    step.t_s,
                    color=style.events["step_color"],
                    linestyle=style.events["step_linestyle"],
                    linewidth=0.7,
                    zorder=0,
                )
            if window is not None:
                ax.axvspan(*window, color="0.5", alpha=0.08, linewidth=0, zorder=0)
            ax.set_ylim(bottom=0)
            ax.grid(visible=True, axis="y")
            ax.margins(x=0)
        for ax, (_, label) in zip(axes, TIMESERIES_PANELS, strict=True):
            ax.set_ylabel(label)
        axes[2].set_ylim(top=max(1.0, float(np.nanmax([*axes[2].get_ylim(), 1.0]))))
        axes[-1].set_xlabel("Time (s)")
        fig.align_ylabels(axes)
        if schedule:
            top = axes[0].secondary_xaxis("top")
            top.set_xticks([s.t_s for s in schedule], labels=[_step_label(s) for s in schedule])
            top.tick_params(axis="x", length=2, pad=1, colors=style.events["step_color"])
            top.set_xlabel("TCP target rate (Mbit/s)", color=style.events["step_color"])
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside upper center", ncols=len(labels), frameon=False)
    return fig


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


def _axes_for(fig: Figure, n_rows: int, n_cols: int) -> list[list[Axes]]:
    grid = fig.subplots(n_rows, n_cols, squeeze=False, sharex=True, sharey=True)
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
    queues: Sequence[str],
    col_titles: Sequence[str],
    row_titles: Sequence[str],
) -> None:
    for r, row in enumerate(axes):
        for c, ax in enumerate(row):
            ax.set_xticks(range(len(queues)), labels=list(queues))
            ax.set_yticks(range(len(capacities)), labels=[num2(x) for x in capacities])
            if r == 0:
                ax.set_title(col_titles[c])
            if c == 0:
                ax.set_ylabel(f"{row_titles[r]}\nCapacity (Mbit/s)")
            if r == len(axes) - 1:
                bdp = all(q.endswith("x") for q in queues)
                ax.set_xlabel("Queue size (\u00d7 BDP)" if bdp else "Queue size")


def _conditions(
    runs: pl.DataFrame,
    panel_key: str,
    style: Style,
    panels: Sequence[str] | None,
    ccas: Sequence[str] | None,
) -> tuple[pl.DataFrame, list[str], list[str], list[float], list[str], Kind]:
    kind: Kind = "system" if panel_key == "system" else "qdisc"
    summary = summarise_conditions(runs, [panel_key, "cca", "capacity_mbps", "queue"])
    panels = (
        list(panels) if panels is not None else style.order(kind, summary.get_column(panel_key))
    )
    ccas = list(ccas) if ccas is not None else style.order("cca", summary.get_column("cca"))
    capacities = sorted(set(summary.get_column("capacity_mbps").drop_nulls()), reverse=True)
    queues = _queue_order(list(set(summary.get_column("queue").drop_nulls())))
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
        axes = _axes_for(fig, len(ccas), len(panels))
        im = None
        for r, cca in enumerate(ccas):
            for c, panel in enumerate(panels):
                sel = summary.filter((pl.col("cca") == cca) & (pl.col(panel_key) == panel))
                m = _grid(sel, "fairness_ratio", capacities, queues)
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
        axes = _axes_for(fig, len(rows), len(panels))
        im = None
        for r, (cca, what) in enumerate(rows):
            for c, panel in enumerate(panels):
                sel = summary.filter((pl.col("cca") == cca) & (pl.col(panel_key) == panel))
                m = _grid(sel, f"{what}_time_s", capacities, queues)
                never = _grid(
                    sel.with_columns(
                        (pl.col(f"{what}_status") == "never").cast(pl.Float64).alias("_never")
                    ),
                    "_never",
                    capacities,
                    queues,
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


def _hull(points: np.ndarray) -> np.ndarray | None:
    """Convex hull vertices (Andrew's monotone chain), or None for < 3 distinct points."""
    pts = np.unique(points, axis=0)
    if len(pts) < 3:
        return None
    pts = pts[np.lexsort((pts[:, 1], pts[:, 0]))]

    def half(seq: np.ndarray) -> list[np.ndarray]:
        out: list[np.ndarray] = []
        for p in seq:
            while len(out) >= 2 and np.cross(out[-1] - out[-2], p - out[-2]) <= 0:
                out.pop()
            out.append(p)
        return out

    lower, upper = half(pts), half(pts[::-1])
    hull = np.array(lower[:-1] + upper[:-1])
    return hull if len(hull) >= 3 else None


def adaptiveness_scatter(
    runs: pl.DataFrame,
    *,
    style: Style,
    panel_key: str = "qdisc",
    panels: Sequence[str] | None = None,
    ccas: Sequence[str] | None = None,
) -> Figure:
    """Xu Fig. 5: one point per condition, adaptiveness (y) against fairness (x), one panel
    per competing CCA; shaded hulls show each system's area of operation.

    Adaptiveness is normalised over every condition in ``runs`` (Cmax, Emax over them all).
    """
    kind: Kind = "system" if panel_key == "system" else "qdisc"
    summary = adaptiveness(
        summarise_conditions(runs, [panel_key, "cca", "capacity_mbps", "queue"])
    ).drop_nulls(["fairness_ratio", "adaptiveness"])
    panels = (
        list(panels) if panels is not None else style.order(kind, summary.get_column(panel_key))
    )
    ccas = list(ccas) if ccas is not None else style.order("cca", summary.get_column("cca"))
    f = style.figure
    with mpl.rc_context(style.rc()):
        fig = Figure(
            figsize=(min(f.full_width_in, 0.3 + 2.4 * len(ccas)), 2.4), layout="constrained"
        )
        axes = fig.subplots(1, max(1, len(ccas)), squeeze=False, sharey=True)[0]
        for ax, cca in zip(axes, ccas, strict=False):
            ax.axvline(0.0, color="0.5", linestyle="--", linewidth=0.7, zorder=0)
            for panel in panels:
                e = style.entry(kind, panel)
                sel = summary.filter((pl.col("cca") == cca) & (pl.col(panel_key) == panel))
                if sel.height == 0:
                    continue
                pts = sel.select("fairness_ratio", "adaptiveness").to_numpy()
                hull = _hull(pts)
                if hull is not None:
                    ax.add_patch(Polygon(hull, closed=True, color=e.color, alpha=0.15, lw=0))
                ax.scatter(
                    pts[:, 0],
                    pts[:, 1],
                    color=e.color,
                    marker=e.marker or "o",
                    s=20,
                    label=e.label,
                    zorder=3,
                    edgecolors="white",
                    linewidths=0.4,
                )
            ax.set_xlim(-1.0, 1.0)
            ax.set_ylim(-0.04, 1.04)  # points at 0 and 1 stay whole
            ax.set_title(f"vs {style.label('cca', cca)}")
            ax.set_xlabel("Fairness: (CG $-$ TCP) / capacity")
            ax.grid(visible=True)
        axes[0].set_ylabel("Adaptiveness")
        handles, labels = axes[0].get_legend_handles_labels()
        if handles:
            fig.legend(
                handles,
                labels,
                loc="outside upper center",
                ncols=len(labels),
                frameon=False,
                markerscale=1.3,
            )
    return fig


def packet_delay_figure(
    packets: pl.DataFrame,
    *,
    style: Style,
    roles: Sequence[str] = ("cg", "competitor"),
    schedule: Sequence[Step] = (),
    max_points: int = 20_000,
) -> Figure:
    """Every packet's queuing delay against its ingress time, per role; lost packets as
    crosses on the time axis. ``packets`` is :attr:`metrics.timebase.Prepared.packets`.

    Runs of millions of packets are thinned to ``max_points`` per role (evenly), so the file
    stays small; the spikes a bin mean hides stay visible.
    """
    f = style.figure
    with mpl.rc_context(style.rc()):
        fig = Figure(figsize=(f.column_width_in, 0.65 * f.column_width_in), layout="constrained")
        ax = fig.subplots()
        for rank, role in enumerate(roles):
            e = style.entry("roles", role)
            d = packets.filter(pl.col("role") == role)
            if d.height > max_points:
                d = d.gather_every(d.height // max_points + 1)
            ok = d.filter(pl.col("delay_ms").is_not_null())
            ax.scatter(
                ok.get_column("t_in_ns").to_numpy() / 1e9,
                ok.get_column("delay_ms").to_numpy(),
                s=2,
                color=e.color,
                marker="o" if e.marker == "" else e.marker,
                linewidths=0,
                alpha=0.6,
                label=e.label,
                zorder=3 + len(roles) - rank,
                rasterized=True,  # thousands of dots: a vector PDF would be huge and slow
            )
            lost = d.filter(pl.col("lost").fill_null(value=False))
            if lost.height:
                ax.scatter(
                    lost.get_column("t_in_ns").to_numpy() / 1e9,
                    np.zeros(lost.height),
                    marker="x",
                    s=12,
                    color=e.color,
                    linewidths=0.8,
                    label=f"{e.label} lost",
                    zorder=6,
                    clip_on=False,
                )
        for step in schedule:
            ax.axvline(
                step.t_s,
                color=style.events["step_color"],
                linestyle=style.events["step_linestyle"],
                linewidth=0.7,
                zorder=0,
            )
        ax.set_ylim(bottom=0)
        ax.set_xlabel("Time (s)")
        ax.set_ylabel("Queuing delay (ms)")
        ax.grid(visible=True, axis="y")
        handles, labels = ax.get_legend_handles_labels()
        fig.legend(
            handles, labels, loc="outside upper center", ncols=2, frameon=False, markerscale=2
        )
    return fig


def delay_cdf_figure(
    cdfs: Mapping[str, pl.DataFrame],
    *,
    style: Style,
    thresholds_ms: Sequence[float] = (10.0, 20.0, 50.0, 100.0),
    log_x: bool = True,
) -> Figure:
    """Delay CDFs (``delay_ms``, ``cdf`` frames from :func:`metrics.delay.delay_cdf`) keyed by
    role; dotted lines at the TMA thresholds."""
    f = style.figure
    with mpl.rc_context(style.rc()):
        fig = Figure(figsize=(f.column_width_in, 0.7 * f.column_width_in), layout="constrained")
        ax = fig.subplots()
        lows = []
        for role, cdf in cdfs.items():
            e = style.entry("roles", role)
            x = cdf.get_column("delay_ms").to_numpy()
            if log_x:
                x = np.maximum(x, 1e-3)  # 0 ms (no queue) cannot sit on a log axis
                if x.size:
                    lows.append(float(np.quantile(x, 0.005)))
            ax.step(
                x,
                cdf.get_column("cdf").to_numpy(),
                where="post",
                color=e.color,
                linestyle=e.linestyle,
                label=e.label,
            )
        for t in thresholds_ms:
            ax.axvline(t, color="0.6", linestyle=":", linewidth=0.7, zorder=0)
        if log_x:
            ax.set_xscale("log")
            if lows:
                # Start at the decade holding the 0.5 % quantile: sub-microsecond forwarding
                # times would otherwise take half the axis.
                ax.set_xlim(left=10 ** math.floor(math.log10(max(min(lows), 1e-3))))
        ax.set_ylim(0, 1.0)
        ax.set_xlabel("Queuing delay (ms)")
        ax.set_ylabel("CDF")
        ax.grid(visible=True)
        ax.legend(frameon=False, loc="upper left")
    return fig


def save_figure(fig: Figure, stem: Path, dpi: int = 300) -> list[Path]:
    """Writes ``stem.pdf`` and ``stem.png`` (each atomically) and returns their paths.

    Metadata that changes at every run (creation date, software version) is left out, so an
    unchanged figure gives an unchanged file.
    """
    paths = []
    for ext, meta in (
        ("pdf", {"CreationDate": None, "Producer": None}),
        ("png", {"Software": None}),
    ):
        path = stem.with_name(f"{stem.name}.{ext}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=dpi, metadata=meta)
        paths.append(path)
    return paths
