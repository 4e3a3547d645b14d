"""``cganalysis figures KIND INPUT... -o STEM``: a paper figure as STEM.pdf and STEM.png."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from cganalysis.errors import ConfigError
from cganalysis.report.figures import (
    adaptation_heatmaps,
    adaptiveness_scatter,
    fairness_heatmaps,
    save_figure,
    timeseries_figure,
)
from cganalysis.report.inputs import load_metrics, read_timeseries, schedule_of, window_of
from cganalysis.report.style import load_style

KINDS = ("timeseries", "fairness", "adaptation", "adaptiveness")
DELAY_COLUMNS = {"mean": "delay_mean_ms", "p95": "delay_p95_ms", "max": "delay_max_ms"}


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "figures",
        help="TMA 2024 time series and Xu & Claypool Figs. 3-5 as PDF and PNG",
        description=(
            "timeseries TIMESERIES.parquet --metrics METRICS.json: throughput, queuing delay "
            "and loss against time (TMA Figs. 4, 6-11). fairness / adaptation / adaptiveness "
            "METRICS.json...: Xu Fig. 3 / Fig. 4 / Fig. 5 over the runs given."
        ),
    )
    p.add_argument("kind", choices=KINDS)
    p.add_argument("inputs", type=Path, nargs="+", help="time series (parquet) or metrics files")
    p.add_argument("-o", "--output", type=Path, required=True, help="output stem (no suffix)")
    p.add_argument("--metrics", type=Path, help="timeseries: the run's METRICS.json")
    p.add_argument(
        "--delay",
        choices=tuple(DELAY_COLUMNS),
        default="mean",
        help="timeseries: delay per bin shown (default mean)",
    )
    p.add_argument(
        "--panel-key",
        choices=("qdisc", "system"),
        default="qdisc",
        help="Xu figures: one panel per queue discipline (default) or system",
    )
    p.add_argument("--style", type=Path, help="plotting style (default configs/plotting.yaml)")
    p.set_defaults(run=run)


def build(args: argparse.Namespace) -> Figure:
    style = load_style(args.style)
    if args.kind == "timeseries":
        if args.metrics is None or len(args.inputs) != 1:
            raise ConfigError("figures timeseries: give one TIMESERIES.parquet and --metrics")
        docs, _, _ = load_metrics([args.metrics])
        return timeseries_figure(
            read_timeseries(args.inputs[0]),
            style=style,
            schedule=schedule_of(docs[0]),
            window=window_of(docs[0]),
            delay_column=DELAY_COLUMNS[args.delay],
        )
    _, runs, _ = load_metrics(args.inputs)
    maker = {
        "fairness": fairness_heatmaps,
        "adaptation": adaptation_heatmaps,
        "adaptiveness": adaptiveness_scatter,
    }[args.kind]
    return maker(runs, style=style, panel_key=args.panel_key)


def run(args: argparse.Namespace) -> int:
    for path in save_figure(build(args), args.output, dpi=load_style(args.style).figure.dpi):
        print(f"wrote {path}", file=sys.stderr)
    return 0
