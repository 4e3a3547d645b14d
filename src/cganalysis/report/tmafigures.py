"""TMA 2024 Fig. 4 and Figs. 6-11 as figures of a campaign: each paper figure is one run
(the paper reports a single run per experiment), found among the campaign's runs by its
labels and drawn from that run's time series in the paper's layout (throughput, queuing
delay and loss rate stacked against time; the iperf3 target's steps marked).

Which run each figure is, from the paper's captions:

- Fig. 4, "SCReAM performance on an emulated cellular network": the SCReAM sender
  (system ``cga-cg-scream``, an older dataset's ``ecgp-scream``) over the trace link
  (campaign ``tma2024-cellular``).
- Figs. 6-11, "<queuing policy> : SCReAM vs <CCA>": drop-tail (``pfifo``), HTB, L4S
  (``dualpi2``), each against Cubic then BBRv2 (``bbr``) (campaigns ``tma2024*``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cganalysis.errors import ConfigError
from cganalysis.experiment.labelkeys import canonical_system
from cganalysis.report.inputs import RunSeries, schedule_of, window_of
from cganalysis.report.style import Style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Docs = Sequence[Mapping[str, Any]]


@dataclasses.dataclass(frozen=True)
class PaperFigure:
    number: int
    #: The run labels (metrics document's ``run``) that pick the figure's run.
    labels: Mapping[str, str]
    #: Whether the run has a competing flow (a schedule of target rates): the cellular
    #: campaign's runs carry a ``cca`` label too, for a competitor they never start.
    competitor: bool = True

    @property
    def name(self) -> str:
        return f"tma_fig{self.number}"


TMA_FIGURES: tuple[PaperFigure, ...] = (
    PaperFigure(4, {"system": "cga-cg-scream"}, competitor=False),
    PaperFigure(6, {"qdisc": "pfifo", "cca": "cubic"}),
    PaperFigure(7, {"qdisc": "pfifo", "cca": "bbr"}),
    PaperFigure(8, {"qdisc": "htb", "cca": "cubic"}),
    PaperFigure(9, {"qdisc": "htb", "cca": "bbr"}),
    PaperFigure(10, {"qdisc": "dualpi2", "cca": "cubic"}),
    PaperFigure(11, {"qdisc": "dualpi2", "cca": "bbr"}),
)


def figure_run(docs: Docs, figure: PaperFigure) -> Mapping[str, Any]:
    """The run ``figure`` shows: the one whose labels match, or, where repetitions
    match, the first repetition (the paper shows one run). None matching is an error
    naming the labels looked for, never an empty figure."""
    found = [
        d
        for d in docs
        if all(_label(d["run"], k) == v for k, v in figure.labels.items())
        and bool(d["inputs"]["schedule"]) == figure.competitor
    ]
    if not found:
        wanted = ", ".join(f"{k}={v}" for k, v in figure.labels.items())
        wanted += ", a competing flow" if figure.competitor else ", no competing flow"
        raise ConfigError(
            f"{figure.name}: no run with {wanted} among the {len(docs)} runs given "
            f"({', '.join(sorted(d['run']['run_id'] for d in docs)) or 'none'})"
        )
    return min(found, key=lambda d: (int(d["run"]["repetition"]), str(d["run"]["run_id"])))


def _label(run: Mapping[str, Any], key: str) -> Any:
    """A run's label, ``system`` in today's spelling (older datasets' ``ecgp-*``)."""
    value = run.get(key)
    return canonical_system(value) if key == "system" and isinstance(value, str) else value


def figure_title(doc: Mapping[str, Any], figure: PaperFigure, style: Style) -> str:
    """The paper's caption in our labels, with the run it shows."""
    run = doc["run"]
    if figure.number == 4:
        what = f"{style.label('system', run['system'])} over the cellular trace"
    else:
        what = f"{style.label('qdisc', run['qdisc'])}: CG vs {style.label('cca', run['cca'])}"
    return f"TMA Fig. {figure.number} \N{EM DASH} {what}\n{run['run_id']}"


def draw_tma_figure(figure: PaperFigure, docs: Docs, series: RunSeries, style: Style) -> Figure:
    from cganalysis.report.figures import timeseries_figure

    doc = figure_run(docs, figure)
    return timeseries_figure(
        series(str(doc["run"]["run_id"])),
        style=style,
        schedule=schedule_of(doc),
        window=window_of(doc),
        title=figure_title(doc, figure, style),
    )
