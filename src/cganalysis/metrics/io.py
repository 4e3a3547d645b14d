"""The files the metrics read and write: packets, run metadata, traces, metrics JSON.

Everything else in :mod:`cganalysis.metrics` is pure; this is where paths are opened.
Writes are atomic (:mod:`cganalysis.io`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import polars as pl

from cganalysis.dependencies import software
from cganalysis.errors import ConfigError
from cganalysis.io import read_json_object, write_json, write_parquet
from cganalysis.jsonrecord import to_json
from cganalysis.metrics.compute import link_capacity, metrics_record
from cganalysis.metrics.docschema import validate_metrics
from cganalysis.metrics.runfacts import RunFacts, facts_from_meta
from cganalysis.metrics.runmeta import validate_meta
from cganalysis.metrics.timebase import (
    METRIC_COLUMNS,
    REQUIRED_COLUMNS,
    check_columns,
    prepare,
)
from cganalysis.metrics.timeseries import run_timeseries
from cganalysis.progress import Progress, format_bytes
from cganalysis.schemas import PACKETS, RUN_TIMESERIES, check_schema
from cganalysis.tablefile import read_table
from cganalysis.traces.check import read_trace_times


def read_packets(path: Path, *, metrics_only: bool = False) -> pl.DataFrame:
    """A PACKETS parquet file, checked against the schema before it is read: a missing
    file, column or a column of another type is a :class:`~cganalysis.errors.SchemaError`
    naming it. The columns the metrics can do without may be absent. ``metrics_only``: only
    the columns the metrics read (:data:`METRIC_COLUMNS`: 15 of 28; the others are neither
    decoded nor held)."""
    df = read_table(
        path,
        PACKETS,
        "packets table",
        required=REQUIRED_COLUMNS,
        make_with="make it with `cganalysis packets`",
        only=METRIC_COLUMNS if metrics_only else None,
    )
    check_columns(df, f"packets table {path}")
    return df


def read_meta(path: Path) -> dict[str, Any]:
    """A run's meta.json, checked against its schema (the keys the metrics read)."""
    meta = read_json_object(path, "run metadata")
    validate_meta(meta, f"run metadata {path}")
    return meta


def read_run_facts(path: Path) -> RunFacts:
    """The run's facts from its meta.json (relative trace paths: next to the file)."""
    # facts_from_meta checks the schema (read_meta would check it a second time).
    meta = read_json_object(path, "run metadata")
    return facts_from_meta(meta, path.parent, where=f"run metadata {path}")


def read_trace(path: Path) -> np.ndarray:
    """A mahimahi trace: one delivery opportunity per line, a time in ms."""

    if not path.is_file():
        raise ConfigError(f"capacity trace {path}: no such file")
    # Errors name the line, never its text (meta.json may name any file).
    return read_trace_times(path, f"capacity trace {path}").astype(np.float64)


def write_metrics(doc: dict[str, Any], path: Path) -> None:
    """Checked against the schema first: a document the tables would refuse is never
    written (the readers check it again, for files made elsewhere)."""
    validate_metrics(doc, f"metrics file {path} (as computed)")
    write_json(doc, path)


def read_metrics(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Metrics documents written by ``cganalysis metrics``."""
    docs = []
    for p in paths:
        doc = read_json_object(p, "metrics file")
        if "roles" not in doc or "inputs" not in doc:
            raise ConfigError(f"metrics file {p}: not written by `cganalysis metrics`")
        validate_metrics(doc, f"metrics file {p}")
        doc.setdefault("run", {}).setdefault("run_id", p.stem)
        docs.append(doc)
    return docs


def metrics_to_files(
    packets_path: Path,
    facts: RunFacts,
    output: Path,
    timeseries: Path | None = None,
    *,
    progress: bool = False,
) -> dict[str, Any]:
    """Reads a run's packets (and trace), writes its metrics JSON (and series); the document.

    The one entry point of the ``metrics`` command and the Snakemake rule. ``progress``:
    each step on a terminal (:mod:`cganalysis.progress`; each is one call, so the line says
    what runs and, after, how long it took).
    """
    show = None if progress else False
    size = packets_path.stat().st_size if packets_path.is_file() else 0
    with Progress(f"reading {packets_path.name} ({format_bytes(size)})", show=show):
        packets = read_packets(packets_path, metrics_only=True)
    trace = read_trace(facts.capacity.trace) if facts.capacity.trace is not None else None
    with Progress("computing the metrics", show=show):
        prepared = prepare(packets, facts)
        record = metrics_record(
            packets, facts, trace_ms=trace, packets_path=str(packets_path), prepared=prepared
        )
    # The versions that computed these numbers (and the lock): provenance, not a metric.
    doc: dict[str, Any] = to_json(replace(record, software=software()))
    write_metrics(doc, output)
    if timeseries is not None:
        with Progress("computing the time series", show=show):
            series = run_timeseries(
                prepared, bin_s=facts.bin_s, capacity=link_capacity(facts, trace)
            )
            write_parquet(check_schema(series, RUN_TIMESERIES, "RUN_TIMESERIES"), timeseries)
    return doc


@dataclass(frozen=True)
class RunFiles:
    """One run's files for :func:`metrics_of_runs`: what it reads, what it writes."""

    packets: Path
    meta: Path
    metrics: Path
    timeseries: Path


#: What computing a run's metrics holds at its peak, per packet of its table (measured:
#: 636 MB for a run of 1.43 M packets, 62 MB of it the imports), rounded up.
PEAK_BYTES_PER_PACKET = 512


def metrics_of_runs(runs: Sequence[RunFiles], log: TextIO, *, workers: int = 1) -> None:
    """:func:`metrics_to_files` for each run: a campaign's metrics in one process (the
    workflow's ``metrics_<campaign>`` job), where starting Python and importing polars cost
    more than a run's metrics. Up to ``workers`` runs at a time, in threads (polars and
    numpy work outside the interpreter lock), while that many of the biggest run fit in
    half the memory available (:func:`runs_at_once`). A line per run (its warnings, its
    time) goes to ``log`` in the runs' order; the first run that fails stops the job, with
    an error naming the run."""
    at_once = runs_at_once(runs, workers)
    pool = ThreadPoolExecutor(at_once, thread_name_prefix="metrics")
    try:
        pending = [pool.submit(_metrics_of_run, run) for run in runs]
        for i, (run, job) in enumerate(zip(runs, pending, strict=True), 1):
            try:
                doc, took = job.result()
            except Exception as err:  # any: the job's log names the run that stopped it
                raise ConfigError(f"run {run.metrics.stem} ({run.packets}): {err}") from err
            for warning in doc["warnings"]:
                print(f"warning: {run.metrics.stem}: {warning}", file=log)
            print(f"[{i}/{len(runs)}] {run.metrics.stem}: {took:.2f} s", file=log, flush=True)
    finally:
        pool.shutdown(cancel_futures=True)


def _metrics_of_run(run: RunFiles) -> tuple[dict[str, Any], float]:
    start = time.perf_counter()
    doc = metrics_to_files(run.packets, read_run_facts(run.meta), run.metrics, run.timeseries)
    return doc, time.perf_counter() - start


def runs_at_once(runs: Sequence[RunFiles], workers: int) -> int:
    """How many of ``runs`` :func:`metrics_of_runs` computes at a time: ``workers``, fewer
    when that many copies of the biggest run's peak (:data:`PEAK_BYTES_PER_PACKET`) would
    take more than half the memory available (a campaign of 100 M-packet runs goes one run
    at a time), at least one."""
    if workers <= 1 or len(runs) <= 1:
        return 1
    biggest = max(_packet_rows(r.packets) for r in runs)
    room = _memory_available_bytes() // 2
    fit = room // max(1, biggest * PEAK_BYTES_PER_PACKET)
    return int(max(1, min(workers, len(runs), fit)))


def _packet_rows(path: Path) -> int:
    """The rows of a parquet file from its footer; 0 for a file that cannot be read (its
    run then fails by its name, with the reader's message)."""
    try:
        return int(pl.scan_parquet(path).select(pl.len()).collect().item())
    except Exception:  # any: reported when the run itself reads the file
        return 0


def _memory_available_bytes() -> int:
    """MemAvailable of /proc/meminfo (what can be allocated without swapping); the free
    pages where there is no such line."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
