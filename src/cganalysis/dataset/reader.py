"""Reading a dataset back: ``open_dataset(DIR)`` (``cganalysis.open_dataset``).

Works on both flavours ``cganalysis dataset export`` writes (a published one under
``datasets/``, or a full export with packets tables); what it gives is what tables,
figures and comparisons need: the runs' metrics documents and rows, metadata,
calibrations, flow tables and time series. Opening checks every file against
``SHA256SUMS`` first, so a table is never rendered from a file edited by hand.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from cganalysis.dataset.compare import compare
from cganalysis.errors import ConfigError
from cganalysis.io import read_json_object, sha256_file
from cganalysis.metrics.io import read_meta, read_metrics
from cganalysis.metrics.rows import role_rows, run_rows
from cganalysis.repolayout import DATASETS_DIR
from cganalysis.report import artefacts
from cganalysis.report.inputs import read_timeseries
from cganalysis.report.style import Style, load_style
from cganalysis.report.tablefmt import Table
from cganalysis.schemas import FLOWS
from cganalysis.tablefile import read_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: One line of SHA256SUMS as ``sha256sum`` writes it: digest, two spaces (or space and
#: ``*``, binary mode), name.
_SUMS_LINE = re.compile(r"([0-9a-f]{64}) [ *](.+)")


def _listed_name(directory: Path, name: str, line_no: int) -> str:
    """``name`` if it is a plain relative path that stays in ``directory``: a shared
    SHA256SUMS must not make us read files elsewhere (``../``, ``/etc/...``, a symlink)."""
    parts = name.split("/")
    plain = not name.startswith("/") and all(p not in ("", ".", "..") for p in parts)
    inside = plain and (directory / name).resolve().is_relative_to(directory.resolve())
    if not inside or "\\" in name or "\0" in name:
        raise ConfigError(
            f"dataset {directory}: SHA256SUMS line {line_no}: {name!r} is not a file inside the "
            "dataset (absolute, `..`, or a symlink leading out): refused, nothing read"
        )
    return name


def _listed(directory: Path) -> dict[str, str]:
    listed: dict[str, str] = {}
    text = (directory / "SHA256SUMS").read_text(encoding="utf-8")
    for line_no, line in enumerate(text.splitlines(), 1):
        m = _SUMS_LINE.fullmatch(line)
        if m is None:
            raise ConfigError(
                f"dataset {directory}: SHA256SUMS line {line_no}: not `<sha256>  <name>`: "
                f"{line[:80]!r} (a dataset is never edited: export it again)"
            )
        listed[_listed_name(directory, m.group(2), line_no)] = m.group(1)
    return listed


def _present(directory: Path) -> set[str]:
    """The dataset's files, symlinks not followed (one leading out is refused)."""
    out: set[str] = set()
    for folder, dirs, files in os.walk(directory):
        for name in [*files, *(d for d in dirs if (Path(folder) / d).is_symlink())]:
            path = Path(folder) / name
            rel = path.relative_to(directory).as_posix()
            if path.is_symlink() and not path.resolve().is_relative_to(directory.resolve()):
                raise ConfigError(
                    f"dataset {directory}: {rel} is a symlink leading out of the dataset: "
                    "refused, nothing read"
                )
            if path.is_file():
                out.add(rel)
    return out - {"SHA256SUMS"}


def verify_checksums(directory: Path) -> None:
    """Every file of ``SHA256SUMS`` present and unchanged, and no file left out of it."""
    sums = directory / "SHA256SUMS"
    if not sums.is_file():
        raise ConfigError(f"dataset {directory}: no SHA256SUMS (not written by `dataset export`)")
    if sums.is_symlink():
        raise ConfigError(f"dataset {directory}: SHA256SUMS is a symlink: refused, nothing read")
    listed = _listed(directory)
    present = _present(directory)
    bad = [n for n, d in listed.items() if not (directory / n).is_file()]
    bad += [n for n, d in listed.items() if n not in bad and sha256_file(directory / n) != d]
    extra = sorted(present - set(listed))
    if bad or extra:
        raise ConfigError(
            f"dataset {directory}: "
            + "; ".join(
                ([f"missing or changed: {', '.join(bad)}"] if bad else [])
                + ([f"not in SHA256SUMS: {', '.join(extra)}"] if extra else [])
            )
            + " (a dataset is never edited: export it again under a new name)"
        )


@dataclasses.dataclass
class Dataset:
    """A dataset folder: its datasheet, its runs and their files."""

    directory: Path
    style_path: Path | None = None

    @cached_property
    def datasheet(self) -> dict[str, Any]:
        return read_json_object(self.directory / "datasheet.json", "datasheet")

    @property
    def name(self) -> str:
        """The folder's name (``<campaign>-<YYYY-MM-DD>`` for a published one)."""
        return self.directory.name

    @property
    def campaign(self) -> str:
        return str(self.datasheet["campaign"])

    @property
    def runs(self) -> list[str]:
        runs = [str(r) for r in self.datasheet["runs"]]
        for run in runs:  # each names files: metrics/<run>.json, ...
            if "/" in run or "\\" in run or run.startswith(".") or not run:
                raise ConfigError(
                    f"dataset {self.directory}: datasheet.json: runs: {run!r} is not a run id "
                    "(a plain name, no `/`, no leading dot)"
                )
        return runs

    @cached_property
    def metrics(self) -> list[dict[str, Any]]:
        """The runs' metrics documents, in the datasheet's order."""
        return read_metrics([self.directory / "metrics" / f"{r}.json" for r in self.runs])

    def run_rows(self) -> pl.DataFrame:
        return run_rows(self.metrics)

    def role_rows(self) -> pl.DataFrame:
        return role_rows(self.metrics)

    def meta(self, run: str) -> dict[str, Any]:
        return read_meta(self._file("meta", f"{run}.json"))

    def calibration(self, run: str) -> dict[str, Any] | None:
        """The run's calibration (None for a run without one, e.g. a trace link)."""
        path = self.directory / "calibration" / f"{run}.json"
        return read_json_object(path, "calibration") if path.is_file() else None

    def flows(self, run: str) -> pl.DataFrame:
        return read_table(
            self._file("flows", f"{run}.parquet"), FLOWS, "flow table", make_with="export again"
        )

    def timeseries(self, run: str) -> pl.DataFrame:
        """Per role and bin (RUN_TIMESERIES): rates, queuing delay, loss."""
        return read_timeseries(self._file("timeseries", f"{run}.parquet"))

    def _file(self, folder: str, name: str) -> Path:
        path = self.directory / folder / name
        if not path.is_file():
            raise ConfigError(f"dataset {self.directory}: no {folder}/{name}")
        return path

    @cached_property
    def style(self) -> Style:
        return load_style(self.style_path)

    def tables(self, name: str) -> list[Table]:
        """One of the papers' tables over the dataset's runs (``tma_table2``, ...), as the
        workflow renders it (default options)."""
        made = self._make(name)
        if not isinstance(made, list):
            raise ConfigError(f"{name}: a figure, not a table")
        return made

    def figure(self, name: str) -> Figure:
        """One of the papers' figures over the dataset's runs (``tma_fig6``, ...), drawn as
        the workflow draws it: from the runs' metrics and, where it needs them, their time
        series."""
        made = self._make(name)
        if isinstance(made, list):
            raise ConfigError(f"{name}: a table, not a figure")
        return made

    def _make(self, name: str) -> list[Table] | Figure:
        # An artefact reading other published datasets reads this one's neighbours.
        options = artefacts.Options(datasets=self.directory.parent)
        return artefacts.by_name(name).make(self.metrics, self.timeseries, self.style, options)

    def compare(self, new: Any, *, by: Sequence[str] | None = None) -> pl.DataFrame:
        """``new`` against this dataset, cell by cell (cganalysis.dataset.compare):
        another Dataset, a run API Campaign or Run, or metrics documents."""

        if isinstance(new, Dataset):
            docs = new.metrics
        elif hasattr(new, "metrics"):  # a Campaign (documents) or a Run (one document)
            docs = new.metrics if isinstance(new.metrics, list) else [new.metrics]
        else:
            docs = list(new)
        return compare(docs, self.metrics, campaign=self.campaign, by=by)

    def __repr__(self) -> str:
        return f"Dataset({self.name}: {self.campaign}, {len(self.runs)} runs)"


def open_dataset(
    directory: Path | str, *, verify: bool = True, style: Path | None = None
) -> Dataset:
    """The dataset in ``directory`` (a folder with datasheet.json and SHA256SUMS, as
    ``cganalysis dataset export`` writes it), its checksums checked unless ``verify`` is
    False."""
    path = Path(directory)
    if not (path / "datasheet.json").is_file():
        raise ConfigError(
            f"dataset {path}: no datasheet.json (a folder written by `cganalysis dataset "
            f"export`, e.g. {DATASETS_DIR}/<campaign>-<date>)"
        )
    if verify:
        verify_checksums(path)
    return Dataset(path, style)


def published_datasets(repo: Path) -> list[Path]:
    """The dataset folders committed under ``<repo>/datasets/``, sorted by name."""
    return sorted(p.parent for p in (repo / DATASETS_DIR).glob("*/datasheet.json"))


def read_new(path: Path) -> tuple[str, list[dict[str, Any]]]:
    """(name, metrics documents) of what ``cganalysis compare`` is given: a dataset
    folder, a raw campaign folder (``data/raw/<campaign>``: the workflow's metrics, or
    computed), a folder of metrics files (``results/metrics/<campaign>``), or one metrics
    file."""
    if path.is_file():
        return path.stem, read_metrics([path])
    if (path / "datasheet.json").is_file():
        ds = open_dataset(path)
        return ds.name, ds.metrics
    if any(path.glob("*/meta.json")):
        from cganalysis.run import open_campaign

        camp = open_campaign(path)
        return camp.name, camp.metrics
    files = sorted(p for p in path.glob("*.json"))
    if files:
        return path.name, read_metrics(files)
    raise ConfigError(
        f"{path}: not a dataset, a raw campaign (data/raw/<campaign>), a folder of metrics "
        "files or a metrics file"
    )
