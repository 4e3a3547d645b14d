"""The papers' tables and figures, each named once: the registry everything else derives from.

An :class:`Artefact` is one table or figure over a campaign's metrics documents: its file
stem (``results/tables/<campaign>/<name>.*``, ``results/figures/<campaign>/<name>.*``), its
command-line kind (``cganalysis tables|figures KIND``), the paper it reproduces, the
``artefacts:`` group a campaign asks for in ``configs/config.yaml``, and its one recipe.
The command line, the workflow's rules and scripts, the configuration check and the
report's inputs all read :data:`ARTEFACTS`; adding an artefact is adding an entry here.
An artefact drawn from the runs' time series too (``timeseries=True``: TMA Figs. 4, 6-11,
each one run of the campaign) is given them as a :data:`RunSeries`; the others ignore it.
The figures of each run (the TMA time series) are ``report/runfigures.py``'s registry.

Defaults are the same wherever an artefact is made: the columns and CCAs are the runs' own,
in the plotting style's order, unless :class:`Options` names them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from cganalysis.metrics.rows import role_rows, run_rows
from cganalysis.repolayout import DATASETS_DIR
from cganalysis.report.cells_out import factor_datasets
from cganalysis.report.cells_out_table import cells_out_table
from cganalysis.report.claims_tma import tma_claims_table
from cganalysis.report.claims_xu import xu_claims_table
from cganalysis.report.conditions import require_one_condition, split_conditions
from cganalysis.report.factors import factor_table
from cganalysis.report.inputs import (
    RunSeries,
    load_metrics,
    no_series,
    series_files,
)
from cganalysis.report.papercells import paper_cells_tables
from cganalysis.report.style import Style, load_style
from cganalysis.report.tablefmt import Table, write_tables
from cganalysis.report.tables import tma_table1, tma_table2_tables
from cganalysis.report.tmafigures import TMA_FIGURES, PaperFigure, draw_tma_figure
from cganalysis.report.xutables import XuMetric, xu_cell_keys, xu_table

if TYPE_CHECKING:
    # matplotlib is imported where a figure is drawn: a job that makes tables never pays
    # for it (0.9 s of a table job's 1.3 s, most of it importing).
    from matplotlib.figure import Figure

Docs = Sequence[Mapping[str, Any]]
Paper = Literal["TMA 2024", "Xu & Claypool 2022"]
_Made = TypeVar("_Made")


@dataclasses.dataclass(frozen=True)
class Options:
    """What a user may choose when making an artefact; None means "the runs' own"."""

    qdiscs: Sequence[str] | None = None
    ccas: Sequence[str] | None = None
    variants: Sequence[str] | None = None
    by: Literal["system", "cca", "qdisc"] = "system"
    panel_key: Literal["qdisc", "system"] = "qdisc"
    paper_labels: bool = False
    ci: bool = False
    #: The published datasets an account of the cells out reads its factors from
    #: (``tma_cells_out``): the repository's ``datasets/`` from where the workflow runs.
    datasets: Path = Path(DATASETS_DIR)


@dataclasses.dataclass(frozen=True)
class Artefact:
    name: str  # file stem
    cli: str  # `cganalysis tables|figures` kind
    kind: Literal["table", "figure"]
    paper: Paper
    title: str  # what the paper calls it
    group: str  # entry of a campaign's `artefacts:` list (configs/config.yaml)
    make: Callable[[Docs, RunSeries, Style, Options], list[Table] | Figure]
    #: Drawn from the runs' time series as well as their metrics: the workflow gives it
    #: each run's `<run>.timeseries.parquet` (a dataset's `timeseries/<run>.parquet`).
    timeseries: bool = False
    #: The published datasets it reads besides the runs (folders of `Options.datasets`).
    datasets: tuple[str, ...] = ()


def _metrics_only(
    recipe: Callable[[Docs, Style, Options], _Made],
) -> Callable[[Docs, RunSeries, Style, Options], _Made]:
    """A recipe over the metrics documents alone, in the registry's signature."""

    def make(docs: Docs, series: RunSeries, style: Style, options: Options) -> _Made:
        return recipe(docs, style, options)

    return make


def _tma_figure(figure: PaperFigure) -> Callable[[Docs, RunSeries, Style, Options], Figure]:
    def make(docs: Docs, series: RunSeries, style: Style, options: Options) -> Figure:
        return draw_tma_figure(figure, docs, series, style)

    return make


def _ccas(docs: Docs, style: Style, options: Options) -> Sequence[str]:
    return options.ccas or style.order("cca", run_rows(docs).get_column("cca"))


def _tma_table2(docs: Docs, style: Style, options: Options) -> list[Table]:
    return tma_table2_tables(
        docs,
        style=style,
        qdiscs=options.qdiscs,
        ccas=_ccas(docs, style, options),
        paper_labels=options.paper_labels,
        ci=options.ci,
    )


def _tma_factors(docs: Docs, style: Style, options: Options) -> list[Table]:
    return [factor_table(docs, style=style, ccas=_ccas(docs, style, options))]


def _tma_table1(docs: Docs, style: Style, options: Options) -> list[Table]:
    # Its columns are the runs' `by` label: runs differing in another label (a trace's
    # scale, say) are other conditions, one table each, never one cell.
    tables = []
    for cond in split_conditions(docs, (options.by,)):
        roles = role_rows([docs[i] for i in cond.indices])
        variants = options.variants or style.order(options.by, roles.get_column(options.by))
        table = tma_table1(roles, style=style, variants=variants, by=options.by, ci=options.ci)
        if cond.labels:
            table = replace(
                table, caption=f"{table.caption} ({cond.describe()})", condition=cond.pairs()
            )
        tables.append(table)
    return tables


def _tma_paper_cells(docs: Docs, style: Style, options: Options) -> list[Table]:
    return paper_cells_tables(docs, style)


def _tma_claims(docs: Docs, style: Style, options: Options) -> list[Table]:
    return [tma_claims_table(docs)]


def _tma_cells_out(docs: Docs, style: Style, options: Options) -> list[Table]:
    return [cells_out_table(docs, style, options.datasets)]


def _xu_claims(docs: Docs, style: Style, options: Options) -> list[Table]:
    return [xu_claims_table(docs)]


def _xu_table(
    metric: XuMetric, with_competitor: bool, name: str
) -> Callable[[Docs, Style, Options], list[Table]]:
    def make(docs: Docs, style: Style, options: Options) -> list[Table]:
        # Runs differing in a label other than the cells' keys must not be averaged.
        require_one_condition(
            docs,
            xu_cell_keys(options.panel_key, by_cca=with_competitor),
            table=name,
            pooled=() if with_competitor else ("cca",),
        )
        table = xu_table(
            role_rows(docs),
            style=style,
            metric=metric,
            phase="with_competitor" if with_competitor else "before_competitor",
            panel_key=options.panel_key,
            ccas=_ccas(docs, style, options) if with_competitor else None,
            runs=run_rows(docs),
        )
        return [table]

    return make


def _xu_figure(maker: str) -> Callable[[Docs, Style, Options], Figure]:
    """The recipe of a figure drawn by ``cganalysis.report.figures.<maker>``."""

    def make(docs: Docs, style: Style, options: Options) -> Figure:
        from cganalysis.report import figures

        draw: Callable[..., Figure] = getattr(figures, maker)
        return draw(run_rows(docs), style=style, panel_key=options.panel_key)

    return make


_TMA: Paper = "TMA 2024"
_XU: Paper = "Xu & Claypool 2022"
#: Xu Tables 2-6: (number, metric, with the competing flow).
_XU_TABLES: tuple[tuple[int, XuMetric, bool], ...] = (
    (2, "delay", False),
    (3, "delay", True),
    (4, "loss", False),
    (5, "loss", True),
    (6, "frame_rate", True),
)
_XU_FIGURES = (
    (3, "fairness", "fairness_heatmaps"),
    (4, "adaptation", "adaptation_heatmaps"),
    (5, "adaptiveness", "adaptiveness_scatter"),
)

_M = _metrics_only

ARTEFACTS: tuple[Artefact, ...] = (
    Artefact("tma_table1", "tma-table1", "table", _TMA, "Table I", "tma_table1", _M(_tma_table1)),
    Artefact("tma_table2", "tma-table2", "table", _TMA, "Table II", "tma_table2", _M(_tma_table2)),
    Artefact(
        "tma_factors",
        "tma-factors",
        "table",
        _TMA,
        "Table II by factor",
        "tma_factors",
        _M(_tma_factors),
    ),
    Artefact(
        "tma_paper_cells",
        "tma-paper-cells",
        "table",
        _TMA,
        "Table II against the paper",
        "tma_paper_cells",
        _M(_tma_paper_cells),
    ),
    Artefact("tma_claims", "tma-claims", "table", _TMA, "Claims", "tma_claims", _M(_tma_claims)),
    Artefact(
        "tma_cells_out",
        "tma-cells-out",
        "table",
        _TMA,
        "Cells and claims still out, and why",
        "tma_cells_out",
        _M(_tma_cells_out),
        datasets=factor_datasets(),
    ),
    # Fig. 4 needs the cellular campaign's SCReAM run, Figs. 6-11 the queue x CCA cells of
    # a TMA campaign: two groups, so each campaign asks for the ones its runs can draw.
    *(
        Artefact(
            f.name,
            f"tma-fig{f.number}",
            "figure",
            _TMA,
            f"Fig. {f.number}",
            "tma_fig4" if f.number == 4 else "tma_figures",
            _tma_figure(f),
            timeseries=True,
        )
        for f in TMA_FIGURES
    ),
    *(
        Artefact(
            f"xu_table{n}",
            f"xu-{metric.replace('_', '-')}-{'with' if with_tcp else 'without'}",
            "table",
            _XU,
            f"Table {n}",
            "xu_tables",
            _M(_xu_table(metric, with_tcp, f"xu_table{n}")),
        )
        for n, metric, with_tcp in _XU_TABLES
    ),
    Artefact("xu_claims", "xu-claims", "table", _XU, "Claims", "xu_claims", _M(_xu_claims)),
    *(
        Artefact(
            f"xu_fig{n}_{what}", what, "figure", _XU, f"Fig. {n}", "xu_figures", _M(_xu_figure(f))
        )
        for n, what, f in _XU_FIGURES
    ),
)

#: The groups a campaign's `artefacts:` list may name, in registry order.
GROUPS: tuple[str, ...] = tuple(dict.fromkeys(a.group for a in ARTEFACTS))


def of_kind(kind: Literal["table", "figure"]) -> tuple[Artefact, ...]:
    return tuple(a for a in ARTEFACTS if a.kind == kind)


def by_name(name: str) -> Artefact:
    """The artefact whose file stem or command-line kind is ``name``."""
    for a in ARTEFACTS:
        if name in (a.name, a.cli):
            return a
    raise KeyError(name)


def in_group(group: str) -> tuple[Artefact, ...]:
    return tuple(a for a in ARTEFACTS if a.group == group)


def output_files(artefact: Artefact, campaign: str) -> list[str]:
    """The files the workflow writes for ``artefact`` of ``campaign``."""
    if artefact.kind == "table":
        exts = ("csv", "md", "tex", "html")
        return [f"results/tables/{campaign}/{artefact.name}.{ext}" for ext in exts]
    return [f"results/figures/{campaign}/{artefact.name}.{ext}" for ext in ("pdf", "png")]


def report_file(artefact: Artefact, campaign: str) -> str:
    """Its copy in the Snakemake report: a table's HTML page, a figure's PNG (what a
    browser shows in the report; a CSV would only be offered as a download)."""
    ext = "html" if artefact.kind == "table" else "png"
    return f"results/report/{campaign}/{artefact.name}.{ext}"


def write(
    artefact: Artefact,
    docs: Docs,
    style: Style,
    stem: Path,
    options: Options,
    series: RunSeries = no_series,
) -> list[Path]:
    """Makes ``artefact`` over ``docs`` (and the runs' ``series`` where it is drawn from
    them) and writes it next to ``stem`` (tables: CSV, Markdown, LaTeX, HTML; figures: PDF,
    PNG); the files written. The one path from metrics to an artefact's files, for the
    command line and the workflow alike."""
    made = artefact.make(docs, series, style, options)
    if isinstance(made, list):
        return write_tables(made, stem)
    from cganalysis.report.figures import save_figure

    return save_figure(made, stem, dpi=style.figure.dpi)


def write_from_files(
    name: str,
    metrics: Sequence[Path],
    style: Path,
    stem: Path,
    timeseries: Sequence[Path] = (),
) -> list[Path]:
    """:func:`write` from metrics files, the runs' time-series files (for an artefact drawn
    from them) and a style file, with the default options: what the workflow's ``table``
    and ``figure`` rules run."""

    docs, _, _ = load_metrics(metrics)
    return write(by_name(name), docs, load_style(style), stem, Options(), series_files(timeseries))
