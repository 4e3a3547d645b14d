"""A run and a campaign as objects: the API notebooks and scripts explore results with.

``open_run(DIR)`` takes a raw run folder (``data/raw/<campaign>/<run_id>/``: the two
captures and ``meta.json``) and gives its packets, flows, metadata, run facts, metrics, time
series and standard figures. What the workflow already made is read, not redone: inside a
project (a folder above the run holding ``data/raw``), the packet tables come from
``data/processed/<campaign>/<run_id>/`` and the metrics from
``results/metrics/<campaign>/<run_id>.json`` when they exist; otherwise the captures are
matched and the metrics computed here, in memory (nothing is written). Everything is
computed once, on first use.

``open_campaign(DIR)`` is the same over every run of ``data/raw/<campaign>/``, with the
tables that compare them (one row per run or per run and role, the TMA 2024 Table II).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from cganalysis.errors import ConfigError
from cganalysis.matching import match_files
from cganalysis.metrics.compute import link_capacity, run_metrics
from cganalysis.metrics.delay import delay_cdf
from cganalysis.metrics.io import (
    read_meta,
    read_metrics,
    read_packets,
    read_trace,
)
from cganalysis.metrics.rows import role_rows, run_rows
from cganalysis.metrics.runfacts import RunFacts, facts_from_meta
from cganalysis.metrics.timebase import Prepared, prepare
from cganalysis.metrics.timeseries import run_timeseries
from cganalysis.report.figures import delay_cdf_figure, packet_delay_figure, timeseries_figure
from cganalysis.report.inputs import read_timeseries
from cganalysis.report.style import Style, load_style
from cganalysis.report.tablefmt import Table
from cganalysis.report.tables import tma_table2
from cganalysis.schemas import FLOWS
from cganalysis.tablefile import read_table

#: The captures a run folder holds (the testbed's names; the workflow's path grammar).
CAPTURES = ("ingress.pcap", "egress.pcap")


def project_root(directory: Path) -> Path | None:
    """The project a run folder belongs to: the nearest folder above it whose ``data/raw``
    holds it (links are not followed: a run may link to captures kept elsewhere)."""
    here = directory.absolute()
    for folder in here.parents:
        if (folder / "data" / "raw").is_dir() and here.is_relative_to(folder / "data" / "raw"):
            return folder
    return None


#: Names the project folder when the working folder is not inside it (nbmake runs a
#: notebook from a copy elsewhere).
PROJECT_ENV = "CGANALYSIS_REPO"


def find_project(start: Path | None = None) -> Path:
    """``$CGANALYSIS_REPO``, else the nearest folder at or above ``start`` (default: the
    working folder) that holds ``data/raw``: where notebooks find the project's runs."""
    if os.environ.get(PROJECT_ENV):
        return Path(os.environ[PROJECT_ENV])
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "data" / "raw").is_dir():
            return folder
    raise ConfigError(f"no project (a folder with data/raw) at or above {here}: set {PROJECT_ENV}")


@dataclasses.dataclass
class Run:
    """One raw run folder and what is derived from it (each computed once, when asked)."""

    directory: Path
    #: The project's folder (``data/raw`` inside), for the workflow's outputs; None outside.
    project: Path | None = None
    style_path: Path | None = None

    @cached_property
    def meta(self) -> dict[str, Any]:
        return read_meta(self.directory / "meta.json")

    @property
    def run_id(self) -> str:
        return str(self.meta.get("run_id", self.directory.name))

    @property
    def campaign(self) -> str:
        return str(self.meta.get("campaign", self.directory.parent.name))

    @property
    def labels(self) -> dict[str, Any]:
        return dict(self.facts.labels)

    @property
    def flags(self) -> list[str]:
        """Every flag of the run: meta.json's (the runner's) and those the metrics derive from
        the captures (e.g. a flow that started late), as the tables show them."""
        return [str(f) for f in self.metrics.get("flags", [])]

    @cached_property
    def facts(self) -> RunFacts:
        """How the metrics read this run: roles, window, capacity, schedule (meta.json)."""
        return facts_from_meta(self.meta, self.directory, where=str(self.directory / "meta.json"))

    @property
    def spec(self) -> RunFacts:
        """:attr:`facts` under its older name, for notebooks written before the rename."""
        return self.facts

    def _made(self, *parts: str) -> Path | None:
        """A file the workflow made for this run, named (as the workflow names it) after the
        run's folder and its campaign's folder; None outside a project or when not made."""
        if self.project is None:
            return None
        campaign, run_id = self.directory.parent.name, self.directory.name
        path = self.project.joinpath(*(p.format(campaign=campaign, run_id=run_id) for p in parts))
        return path if path.is_file() else None

    @cached_property
    def _tables(self) -> tuple[pl.DataFrame, pl.DataFrame | None]:
        made = self._made("data", "processed", "{campaign}", "{run_id}", "packets.parquet")
        if made is not None:
            flows = self._made("data", "processed", "{campaign}", "{run_id}", "flows.parquet")
            if flows is None:
                return read_packets(made), None
            return read_packets(made), read_table(
                flows, FLOWS, "flow table", make_with="make it with `cganalysis packets --flows`"
            )
        missing = [c for c in CAPTURES if not (self.directory / c).is_file()]
        if missing:
            raise ConfigError(
                f"run {self.directory}: no {' or '.join(missing)}, and no packets table made "
                "by the workflow (data/processed/...)"
            )
        matched = match_files(*(self.directory / c for c in CAPTURES))
        return matched.packets, matched.flows

    @property
    def packets(self) -> pl.DataFrame:
        """One row per packet seen entering the bottleneck (the PACKETS schema)."""
        return self._tables[0]

    @property
    def flows(self) -> pl.DataFrame | None:
        """One row per flow (the FLOWS schema), when known."""
        return self._tables[1]

    @cached_property
    def trace_ms(self) -> np.ndarray | None:
        trace = self.facts.capacity.trace
        return read_trace(trace) if trace is not None else None

    @cached_property
    def prepared(self) -> Prepared:
        """The packets with their roles and times relative to the run's start."""
        return prepare(self.packets, self.facts)

    @cached_property
    def metrics(self) -> dict[str, Any]:
        """The run's metrics document (what ``cganalysis metrics`` writes)."""
        made = self._made("results", "metrics", "{campaign}", "{run_id}.json")
        if made is not None:
            return read_metrics([made])[0]
        return run_metrics(self.packets, self.facts, trace_ms=self.trace_ms)

    @cached_property
    def timeseries(self) -> pl.DataFrame:
        """Per role and bin: throughput, delay, loss (the RUN_TIMESERIES schema)."""
        made = self._made("results", "metrics", "{campaign}", "{run_id}.timeseries.parquet")
        if made is not None:
            return read_timeseries(made)
        capacity = link_capacity(self.facts, self.trace_ms)
        return run_timeseries(self.prepared, bin_s=self.facts.bin_s, capacity=capacity)

    @cached_property
    def style(self) -> Style:
        return load_style(self.style_path)

    def timeseries_figure(self) -> Figure:
        """Throughput, queuing delay and loss against time (TMA 2024 Figs. 4, 6-11)."""
        return timeseries_figure(self.timeseries, style=self.style, schedule=self.facts.schedule)

    def packet_delay_figure(self) -> Figure:
        """Every packet's queuing delay against time; drops marked."""
        return packet_delay_figure(
            self.prepared.packets, style=self.style, schedule=self.facts.schedule
        )

    def delay_cdf_figure(self, roles: Sequence[str] = ("cg", "competitor")) -> Figure:
        """The queuing delay's CDF per role."""
        pk = self.prepared.packets
        cdfs = {r: delay_cdf(pk.filter(pl.col("role") == r).get_column("delay_ms")) for r in roles}
        return delay_cdf_figure(cdfs, style=self.style)

    def __repr__(self) -> str:
        return f"Run({self.campaign}/{self.run_id}, {self.directory})"


def open_run(directory: Path | str, *, style: Path | None = None) -> Run:
    """The run in ``directory`` (a raw run folder with ``meta.json``)."""
    path = Path(directory)
    if not (path / "meta.json").is_file():
        raise ConfigError(f"run {path}: no meta.json (a raw run folder: data/raw/<campaign>/<run>)")
    return Run(path, project_root(path), style)


@dataclasses.dataclass
class Campaign:
    """Several runs, compared: per-run and per-role rows, and the papers' tables."""

    name: str
    runs: list[Run]

    def __iter__(self) -> Iterator[Run]:
        return iter(self.runs)

    def __len__(self) -> int:
        return len(self.runs)

    def run(self, run_id: str) -> Run:
        for r in self.runs:
            if r.run_id == run_id:
                return r
        raise KeyError(f"campaign {self.name}: no run {run_id!r}")

    @cached_property
    def metrics(self) -> list[dict[str, Any]]:
        return [r.metrics for r in self.runs]

    def run_rows(self) -> pl.DataFrame:
        """One row per run: labels, utilisation, fairness, response and recovery."""
        return run_rows(self.metrics)

    def role_rows(self) -> pl.DataFrame:
        """One row per run and role: delay, bitrate and loss statistics."""
        return role_rows(self.metrics)

    def timeseries(self) -> pl.DataFrame:
        """Every run's time series (RUN_TIMESERIES) with its ``run_id`` and labels
        (``qdisc``, ``cca``, ...) as columns, for plots across runs."""
        frames = []
        for r in self.runs:
            labels = {"run_id": r.run_id, **{k: str(v) for k, v in r.labels.items()}}
            frames.append(r.timeseries.with_columns(**{k: pl.lit(v) for k, v in labels.items()}))
        return pl.concat(frames, how="diagonal")

    def tma_table2(self, **options: Any) -> Table:
        """TMA 2024 Table II over these runs (options: see report.tables.tma_table2)."""
        style = self.runs[0].style if self.runs else load_style()
        return tma_table2(self.role_rows(), self.run_rows(), style=style, **options)


def open_campaign(
    directory: Path | str, *, runs: Sequence[Path | str] = (), style: Path | None = None
) -> Campaign:
    """Every run under ``directory`` (``data/raw/<campaign>``: one folder per run with a
    ``meta.json``; ``_calibration`` and the like are not runs), or the given ``runs``."""
    path = Path(directory)
    folders = [Path(r) for r in runs] or sorted(
        p.parent for p in path.glob("*/meta.json") if not p.parent.name.startswith("_")
    )
    if not folders:
        raise ConfigError(f"campaign {path}: no run folders with a meta.json")
    return Campaign(path.name, [open_run(f, style=style) for f in folders])
