"""TMA 2024 Figs. 4 and 6-11: throughput, queuing delay and loss rate of one run against
time, CG and TCP styled apart, the competing flow's rate steps marked."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from cganalysis.metrics.steps import Step
from cganalysis.report.style import Style
from cganalysis.report.tables import num2

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
    title: str | None = None,
) -> Figure:
    """Three stacked panels over RUN_TIMESERIES rows (one run).

    ``delay_column`` may be ``delay_p95_ms`` or ``delay_max_ms`` to show spikes that a mean
    over a bin hides. ``window`` shades the analysis window. ``title`` goes above the
    legend (a paper figure's caption, e.g. "Drop-tail: CG vs Cubic"). A role without a
    packet in the series (no competitor on a trace link) is neither drawn nor in the
    legend.
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
            if d.height == 0 or not (d.get_column("packets") > 0).any():
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
        if window is not None:  # what the shading is: the window the statistics cover
            handles.append(Patch(color="0.5", alpha=0.15, linewidth=0))
            labels.append("Statistics window")
        # The title as the legend's: constrained layout stacks the two (a suptitle and an
        # "outside" legend would share the top and overlap).
        fig.legend(
            handles,
            labels,
            loc="outside upper center",
            ncols=len(labels) if len(labels) <= 3 else 2,
            frameon=False,
            title=title,
            alignment="center",
            title_fontsize="medium",
        )
    return fig
