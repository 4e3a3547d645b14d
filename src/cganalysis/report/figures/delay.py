"""Packet-level delay views for exploration: every packet's queuing delay against time
(losses marked) and queuing-delay CDFs per role."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.figure import Figure

from cganalysis.metrics.steps import Step
from cganalysis.report.style import Style


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
