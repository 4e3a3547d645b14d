"""The figures of each run, each named once: :data:`RUN_FIGURES`, the registry the command
line (``cganalysis figures timeseries``) and the workflow's per-run figure rules read.

A :class:`RunFigure` is drawn from one run's time series (``metrics --timeseries``) and its
metrics document, into ``results/figures/<campaign>/<run_id>.<name>.{pdf,png}``; the
campaign's tables and figures are ``report/artefacts.py``'s.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import polars as pl

from cganalysis.errors import ConfigError
from cganalysis.report.artefacts import Paper
from cganalysis.report.inputs import load_metrics, read_timeseries, schedule_of, window_of
from cganalysis.report.style import Style, load_style

if TYPE_CHECKING:
    # matplotlib is imported where a figure is drawn (report/artefacts.py says why).
    from matplotlib.figure import Figure


@dataclasses.dataclass(frozen=True)
class RunFigure:
    """A figure of one run, from its time series (``metrics --timeseries``) and its metrics
    document: ``results/figures/<campaign>/<run_id>.<name>.{pdf,png}``."""

    name: str  # file suffix after the run id
    cli: str  # `cganalysis figures` kind
    paper: Paper
    title: str
    #: (time series, metrics document, style, delay column shown) -> figure
    make: Callable[[pl.DataFrame, Mapping[str, Any], Style, str], Figure]


def _timeseries(series: pl.DataFrame, doc: Mapping[str, Any], style: Style, delay: str) -> Figure:
    from cganalysis.report.figures import timeseries_figure

    return timeseries_figure(
        series,
        style=style,
        schedule=schedule_of(doc),
        window=window_of(doc),
        delay_column=delay,
    )


RUN_FIGURES: tuple[RunFigure, ...] = (
    RunFigure("timeseries", "timeseries", "TMA 2024", "Figs. 4, 6-11", _timeseries),
)


def run_figure(name: str) -> RunFigure:
    """The per-run figure whose file suffix or command-line kind is ``name``."""
    for f in RUN_FIGURES:
        if name in (f.name, f.cli):
            return f
    raise KeyError(name)


def run_output_files(figure: RunFigure, campaign: str, run_id: str) -> list[str]:
    return [f"results/figures/{campaign}/{run_id}.{figure.name}.{ext}" for ext in ("pdf", "png")]


def run_report_file(figure: RunFigure, campaign: str, run_id: str) -> str:
    return f"results/report/{campaign}/{run_id}.{figure.name}.png"


def write_run(
    figure: RunFigure,
    series: pl.DataFrame,
    doc: Mapping[str, Any],
    style: Style,
    stem: Path,
    delay_column: str = "delay_mean_ms",
) -> list[Path]:
    """Makes ``figure`` of one run and writes STEM.pdf and STEM.png; the files written."""
    from cganalysis.report.figures import save_figure

    return save_figure(figure.make(series, doc, style, delay_column), stem, dpi=style.figure.dpi)


def write_run_from_files(
    name: str, timeseries: Path, metrics: Path, style: Path, stem: Path
) -> list[Path]:
    """:func:`write_run` from the run's files, with the defaults: what the workflow's
    ``run_figure_<figure>_<campaign>`` rules run for each run."""

    docs, _, _ = load_metrics([metrics])
    return write_run(
        run_figure(name), read_timeseries(timeseries), docs[0], load_style(style), stem
    )


def write_runs_from_files(
    name: str, runs: Sequence[tuple[Path, Path, Path]], style: Path, log: TextIO
) -> None:
    """:func:`write_run_from_files` for each run's (series, metrics, stem), one after another
    in one process (the workflow's ``run_figure_<figure>_<campaign>`` job: importing
    matplotlib and polars costs more than drawing a run); a line per run in ``log``, and an
    error naming the run that failed."""
    for i, (timeseries, metrics, stem) in enumerate(runs, 1):
        start = time.perf_counter()
        try:
            write_run_from_files(name, timeseries, metrics, style, stem)
        except Exception as err:  # any: the job's log names the run that stopped it
            raise ConfigError(f"{name} of {stem.name} ({metrics}): {err}") from err
        took = time.perf_counter() - start
        print(f"[{i}/{len(runs)}] {stem.name}: {took:.2f} s", file=log, flush=True)
