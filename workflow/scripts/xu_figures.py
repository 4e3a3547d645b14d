"""Snakemake rule ``xu_figures``: Xu & Claypool Figs. 3-5 over a campaign's runs."""

import contextlib
from pathlib import Path
from typing import Any

from cganalysis.report.figures import (
    adaptation_heatmaps,
    adaptiveness_scatter,
    fairness_heatmaps,
    save_figure,
)
from cganalysis.report.inputs import load_metrics
from cganalysis.report.style import load_style

#: Defined by the preamble Snakemake puts above this script.
snakemake: Any = globals()["snakemake"]

with Path(snakemake.log[0]).open("w", encoding="utf-8") as log, contextlib.redirect_stderr(log):
    style = load_style(Path(snakemake.input.style))
    _, runs, _ = load_metrics([Path(p) for p in snakemake.input.metrics])
    for name, make in (
        ("fairness", fairness_heatmaps),
        ("adaptation", adaptation_heatmaps),
        ("adaptiveness", adaptiveness_scatter),
    ):
        stem = Path(snakemake.output[name][0]).with_suffix("")
        save_figure(make(runs, style=style), stem, dpi=style.figure.dpi)
