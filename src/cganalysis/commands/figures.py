"""``cganalysis figures KIND INPUT... -o STEM``: a paper figure as STEM.pdf and STEM.png."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cganalysis.commands import COMMANDS
from cganalysis.commands.tables import options
from cganalysis.errors import ConfigError
from cganalysis.report import artefacts, runfigures
from cganalysis.report.inputs import load_metrics, read_timeseries, series_files
from cganalysis.report.style import load_style

#: The figures of the registries: each run's (report/runfigures.py), then a campaign's
#: (report/artefacts.py).
RUN_KINDS = tuple(f.cli for f in runfigures.RUN_FIGURES)
KINDS = (*RUN_KINDS, *(a.cli for a in artefacts.of_kind("figure")))
DELAY_COLUMNS = {"mean": "delay_mean_ms", "p95": "delay_p95_ms", "max": "delay_max_ms"}


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "figures",
        help=COMMANDS["figures"],
        description=(
            "timeseries TIMESERIES.parquet --metrics METRICS.json: throughput, queuing delay "
            "and loss against time of one run. tma-fig4, tma-fig6 ... tma-fig11 METRICS.json... "
            "--timeseries SERIES.parquet...: the paper's figure, from the campaign's run it "
            "shows. fairness / adaptation / adaptiveness METRICS.json...: Xu Fig. 3 / Fig. 4 / "
            "Fig. 5 over the runs given."
        ),
    )
    p.add_argument("kind", choices=KINDS)
    p.add_argument("inputs", type=Path, nargs="+", help="time series (parquet) or metrics files")
    p.add_argument("-o", "--output", type=Path, required=True, help="output stem (no suffix)")
    p.add_argument("--metrics", type=Path, help="timeseries: the run's METRICS.json")
    p.add_argument(
        "--timeseries",
        type=Path,
        nargs="+",
        default=[],
        help="tma-fig4, tma-fig6 ... tma-fig11: the runs' time series "
        "(<run>.timeseries.parquet, or a dataset's timeseries/<run>.parquet)",
    )
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


def run_figure(args: argparse.Namespace, style: Any) -> list[Path]:
    if args.metrics is None or len(args.inputs) != 1:
        raise ConfigError(f"figures {args.kind}: give one TIMESERIES.parquet and --metrics")
    docs, _, _ = load_metrics([args.metrics])
    figure = runfigures.run_figure(args.kind)
    series = read_timeseries(args.inputs[0])
    return runfigures.write_run(
        figure, series, docs[0], style, args.output, DELAY_COLUMNS[args.delay]
    )


def run(args: argparse.Namespace) -> int:
    style = load_style(args.style)
    if args.kind in RUN_KINDS:
        written = run_figure(args, style)
    else:
        docs, _, _ = load_metrics(args.inputs)
        artefact = artefacts.by_name(args.kind)
        series = series_files(args.timeseries)
        written = artefacts.write(artefact, docs, style, args.output, options(args), series)
    for path in written:
        print(f"wrote {path}", file=sys.stderr)
    return 0
