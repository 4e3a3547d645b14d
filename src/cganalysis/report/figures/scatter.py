"""Xu & Claypool Fig. 5: adaptiveness against fairness, one point per condition, each
system's area of operation shaded by its convex hull."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.patches import Polygon

from cganalysis.metrics.adaptiveness import adaptiveness
from cganalysis.metrics.aggregate import summarise_conditions
from cganalysis.report.style import Kind, Style


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
    conditions = adaptiveness(
        summarise_conditions(runs, [panel_key, "cca", "capacity_mbps", "queue"])
    )
    # Panels for every competing CCA of the runs, also one whose conditions have no
    # adaptiveness (no event to respond to, or no baseline): it says so instead of
    # vanishing (a campaign without one would otherwise be a figure without axes).
    panels = (
        list(panels) if panels is not None else style.order(kind, conditions.get_column(panel_key))
    )
    ccas = list(ccas) if ccas is not None else style.order("cca", conditions.get_column("cca"))
    summary = conditions.drop_nulls(["fairness_ratio", "adaptiveness"])
    f = style.figure
    with mpl.rc_context(style.rc()):
        fig = Figure(
            figsize=(min(f.full_width_in, 0.3 + 2.4 * len(ccas)), 2.4), layout="constrained"
        )
        axes = fig.subplots(1, max(1, len(ccas)), squeeze=False, sharey=True)[0]
        for ax, cca in zip(axes, ccas, strict=False):
            ax.axvline(0.0, color="0.5", linestyle="--", linewidth=0.7, zorder=0)
            if summary.filter(pl.col("cca") == cca).height == 0:
                ax.text(
                    0.5,
                    0.5,
                    "no condition with an adaptiveness\n(no response or recovery measured)",
                    transform=ax.transAxes,
                    ha="center",
                    va="center",
                    color="0.4",
                )
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
