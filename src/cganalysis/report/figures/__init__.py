"""The papers' figures as matplotlib Figures (returned, never saved: see :func:`save_figure`).

- :func:`timeseries_figure`: TMA 2024 Figs. 4 and 6-11, throughput / queuing delay / loss
  rate against time, CG and TCP styled apart, the competing flow's rate steps marked.
- :func:`fairness_heatmaps`: Xu & Claypool Fig. 3, bitrate difference / capacity.
- :func:`adaptation_heatmaps`: Xu Fig. 4, response and recovery times, "never" in black.
- :func:`adaptiveness_scatter`: Xu Fig. 5, adaptiveness against fairness.
- :func:`delay_cdf_figure`: queuing-delay CDFs per role (TMA Table I/II thresholds marked).
- :func:`packet_delay_figure`: every packet's delay against time, losses marked.

Every look (labels, colours, markers, sizes) comes from the :class:`Style`. One module per
kind of figure: :mod:`.timeseries`, :mod:`.heatmaps`, :mod:`.scatter`, :mod:`.delay`, and
:mod:`.save` to write them.
"""

from __future__ import annotations

from cganalysis.report.figures.delay import delay_cdf_figure, packet_delay_figure
from cganalysis.report.figures.heatmaps import adaptation_heatmaps, fairness_heatmaps
from cganalysis.report.figures.save import save_figure
from cganalysis.report.figures.scatter import adaptiveness_scatter
from cganalysis.report.figures.timeseries import TIMESERIES_PANELS, timeseries_figure

__all__ = [
    "TIMESERIES_PANELS",
    "adaptation_heatmaps",
    "adaptiveness_scatter",
    "delay_cdf_figure",
    "fairness_heatmaps",
    "packet_delay_figure",
    "save_figure",
    "timeseries_figure",
]
