"""``cganalysis dataset export CAMPAIGN -o DIR``: a campaign as a publication dataset.

Reads the workflow's layout under ``root`` (data/raw/<campaign>/<run>/meta.json, the
processed tables data/processed/<campaign>/<run>/, the metrics results/metrics/<campaign>/)
and writes, for an archive such as Zenodo::

    DIR/runs.csv                 one row per run: labels, capacity, headline metrics
    DIR/packets/<run>.parquet    one row per ingress packet (schemas.PACKETS)
    DIR/flows/<run>.parquet      one row per flow (schemas.FLOWS)
    DIR/metrics/<run>.json       the papers' metrics of the run
    DIR/meta/<run>.json          run metadata (configuration, hosts, tools, calibration)
    DIR/match/<run>.json         the capture matching summary (loss, capture drops)
    DIR/captures/<run>/*.pcap    the raw captures (with --with-captures)
    DIR/datasheet.md, .json      schemas with units, provenance, how to cite
    DIR/SHA256SUMS               checksums of every file above

With ``--published`` it writes the flavour committed under ``datasets/`` instead
(cganalysis.dataset.published: no packets tables or captures; calibrations and time
series), by default to ``datasets/<campaign>-<YYYY-MM-DD>``.

The directory is built beside DIR and renamed into place when complete, so an
interrupted export leaves nothing half written; an existing DIR is never overwritten.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from cganalysis import __version__
from cganalysis.dataset.datasheet import render_datasheet
from cganalysis.dataset.published import (
    PUBLISHED_RUN_FILES,
    calibration_of,
    dated_name,
)
from cganalysis.dataset.rawcheck import campaign_command
from cganalysis.errors import ConfigError
from cganalysis.io import read_json_object, sha256_file, write_json
from cganalysis.metrics.io import read_meta, read_metrics
from cganalysis.repolayout import DATASETS_DIR
from cganalysis.schemas import FLOWS, PACKETS, RUN_TIMESERIES
from cganalysis.tablefile import check_table_file

#: Files copied per run: (source relative to the workspace, destination in the dataset).
RUN_FILES: tuple[tuple[str, str], ...] = (
    ("data/processed/{c}/{r}/packets.parquet", "packets/{r}.parquet"),
    ("data/processed/{c}/{r}/flows.parquet", "flows/{r}.parquet"),
    ("data/processed/{c}/{r}/match.json", "match/{r}.json"),
    ("results/metrics/{c}/{r}.json", "metrics/{r}.json"),
    ("data/raw/{c}/{r}/meta.json", "meta/{r}.json"),
)
CAPTURE_SUFFIXES = (".pcap", ".pcapng")

#: The tables a dataset publishes, by file name, with their declared schemas.
TABLE_SCHEMAS = {
    "packets.parquet": ("packets table", PACKETS),
    "flows.parquet": ("flows table", FLOWS),
}


#: Where a path names the same thing on every machine: the system's own folders, the
#: project's install prefix (/usr/local) and the sim guest's job folder. Any other
#: absolute path (a home, a checkout, a user's build of a reference program) is the
#: runner's machine: a published dataset keeps only its file name.
SHARED_PREFIXES = ("/usr/", "/bin/", "/sbin/", "/lib/", "/etc/", "/dev/", "/proc/", "/sys/",
                   "/run/", "/tmp/", "/mnt/cga-job/", "/mnt/cga-code/")  # fmt: skip


#: An absolute path anywhere in a string: a "/" that no name character, dot or slash
#: precedes (so "Mbit/s", "1/8" and a URL's "//" are not paths), then its components.
ABSOLUTE_PATH = re.compile(r"(?<![\w./:-])/(?:[\w.+-]+/)*[\w.+-]+")


def local_path_free(value: Any) -> Any:
    """``value`` (meta.json, a metrics document, or any part of them) with every absolute
    path outside :data:`SHARED_PREFIXES` cut to its file name, wherever it stands in a
    string: a whole value, a list item (command lines), a word of a command, or inside a
    sentence ("a trace-driven rate (/home/x/trace.down; ...)")."""
    if isinstance(value, dict):
        return {k: local_path_free(v) for k, v in value.items()}
    if isinstance(value, list):
        return [local_path_free(v) for v in value]
    if isinstance(value, str) and "/" in value:
        return ABSOLUTE_PATH.sub(
            lambda m: m[0] if m[0].startswith(SHARED_PREFIXES) else Path(m[0]).name, value
        )
    return value


def _local_paths_out(path: Path) -> None:
    """A committed dataset names no path of the machine that ran it (the controller's
    ``/home/x/.venv/bin/cganalysis`` becomes ``cganalysis``, a user's build of Ericsson's
    SCReAM ``scream_bw_test_tx``, a trace file its name); the programs' checksums stay.
    Everything else of the document (meta.json, a metrics document) is the run's own."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    write_json(local_path_free(doc), path)


def _check_table(path: Path) -> None:
    """A table is published only if it has its declared columns and types."""
    if path.name in TABLE_SCHEMAS:
        table, schema = TABLE_SCHEMAS[path.name]
        check_table_file(path, schema, table, make_with="remake it with `snakemake`")
    elif path.name.endswith(".timeseries.parquet"):
        check_table_file(
            path, RUN_TIMESERIES, "time series", make_with="remake it with `snakemake`"
        )


@dataclass(frozen=True)
class ExportSummary:
    output: Path
    runs: tuple[str, ...]
    files: int
    bytes: int


def campaign_runs(root: Path, campaign: str) -> list[str]:
    """Run ids of ``data/raw/<campaign>``: directories holding a meta.json (calibrations
    (``_calibration``) and unfinished runs (``.name.tmp-*``) are not runs)."""
    raw = root / "data" / "raw" / campaign
    if not raw.is_dir():
        raise ConfigError(
            f"{raw}: no such campaign directory (give the campaign's name as in data/raw/, "
            "and --root for a workspace other than the current directory)"
        )
    runs = sorted(
        p.name
        for p in raw.iterdir()
        if p.is_dir() and p.name[0] not in "._" and (p / "meta.json").is_file()
    )
    if not runs:
        raise ConfigError(f"{raw}: no runs (directories with a meta.json)")
    return runs


def _missing(
    root: Path, campaign: str, runs: list[str], run_files: tuple[tuple[str, str], ...]
) -> list[str]:
    return [
        src.format(c=campaign, r=r)
        for r in runs
        for src, _ in run_files
        if not (root / src.format(c=campaign, r=r)).is_file()
    ]


def _scalar_items(prefix: str, obj: Any) -> dict[str, Any]:
    """Nested metrics flattened to ``prefix_key`` columns (numbers, strings, booleans)."""
    out: dict[str, Any] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(_scalar_items(f"{prefix}_{k}" if prefix else str(k), v))
    elif isinstance(obj, bool | int | float | str) or obj is None:
        out[prefix] = obj
    return out


def _run_row(meta: dict[str, Any], metrics: dict[str, Any]) -> dict[str, Any]:
    labels = {f"label_{k}": str(v) for k, v in (meta.get("labels") or {}).items()}
    for key in ("qdisc", "cca", "system", "queue"):
        if key in meta and f"label_{key}" not in labels:
            labels[f"label_{key}"] = str(meta[key])
    row: dict[str, Any] = {
        "run_id": meta.get("run_id"),
        "campaign": meta.get("campaign"),
        "repetition": meta.get("repetition"),
        **labels,
        "capacity_mbps": meta.get("capacity_mbps"),
        "capacity_measured_mbps": meta.get("capacity_measured_mbps"),
    }
    for role, values in (metrics.get("roles") or {}).items():
        row.update(_scalar_items(f"{role}", values))
    for key in ("utilisation_total", "jain_index", "fairness_ratio"):
        value = metrics.get(key)
        if isinstance(value, int | float) or value is None:
            row[key] = value
    return row


def _distinct(values: list[Any]) -> list[Any]:
    seen: list[Any] = []
    for v in values:
        if v is not None and v not in seen:
            seen.append(v)
    return seen


#: The steps that record the software they ran (cganalysis.dependencies.software), and
#: where: the run (meta.json's controller), the packet tables (match.json), the metrics.
SOFTWARE_STEPS = ("experiment", "packets", "metrics")


def software_used(records: list[tuple[str, str, Any]]) -> dict[str, Any]:
    """The distinct Python environments among ``(step, run, software record)``, each with
    the steps and runs that used it, and the steps whose files hold no record (made before
    cganalysis recorded it), with their runs."""
    out: list[dict[str, Any]] = []
    unknown: dict[str, set[str]] = {}
    for step, run, record in records:
        if not isinstance(record, dict):
            unknown.setdefault(step, set()).add(run)
            continue
        lock = record.get("lock") or {}
        key = {
            "python": record.get("python"),
            "packages": record.get("packages") or {},
            "lock": {k: lock.get(k) for k in ("file", "sha256", "matches")} if lock else None,
        }
        entry = next((e for e in out if all(e[k] == v for k, v in key.items())), None)
        if entry is None:
            entry = {**key, "steps": [], "runs": []}
            out.append(entry)
        entry["steps"] = [s for s in SOFTWARE_STEPS if s in {*entry["steps"], step}]
        entry["runs"] = sorted({*entry["runs"], run})
    return {
        "environments": out,
        "not_recorded": {s: sorted(unknown[s]) for s in SOFTWARE_STEPS if s in unknown},
    }


def _provenance(
    metas: list[dict[str, Any]], software: list[tuple[str, str, Any]]
) -> dict[str, Any]:
    """What produced the data: controller commits, tool versions, kernels, backends, the
    Python packages of each step."""
    controllers = [m.get("controller") or {} for m in metas]
    gits = [c.get("git") or {} for c in controllers]
    hosts = [h for m in metas for h in (m.get("hosts") or {}).values() if isinstance(h, dict)]
    return {
        "cganalysis_versions": _distinct([c.get("cganalysis") for c in controllers]),
        "git_commits": _distinct([g.get("commit") for g in gits]),
        "git_dirty": any(bool(g.get("dirty")) for g in gits),
        "python_software": software_used(software),
        "kernels": _distinct([h.get("kernel") for h in hosts]),
        "testbeds": _distinct([(m.get("testbed") or {}).get("backend") for m in metas]),
        "bottleneck_backends": _distinct([m.get("bottleneck_backend") for m in metas]),
        "delay_via": _distinct([m.get("delay_via") for m in metas]),
        "exported_by": f"cganalysis {__version__}",
        "exported_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def _refuse_dirty(root: Path, campaign: str, runs: list[str]) -> None:
    """A published dataset says which code made it: runs made from a tree with uncommitted
    changes (``controller.git.dirty``) name no code anyone can check out."""
    for r in runs:
        git = read_meta(root / "data" / "raw" / campaign / r / "meta.json").get("controller") or {}
        if (git.get("git") or {}).get("dirty"):
            raise ConfigError(
                f"campaign {campaign}: run {r} was made from a tree with uncommitted changes "
                "(meta.json controller.git.dirty): a published dataset comes from a clean "
                "commit; make the run again from one, or export without --published"
            )


def export_campaign(
    root: Path,
    campaign: str,
    output: Path | None,
    *,
    with_captures: bool = False,
    title: str | None = None,
    published: bool = False,
) -> ExportSummary:
    """Write the dataset of ``campaign`` (under workspace ``root``) to ``output``; with
    ``published``, the committed flavour, by default to datasets/<campaign>-<date>."""
    if published and with_captures:
        raise ConfigError("a published dataset has no captures (DVC keeps them): drop one flag")
    runs = campaign_runs(root, campaign)
    if published:
        _refuse_dirty(root, campaign, runs)
    if output is None:
        if not published:
            raise ConfigError("no output directory: give -o DIR")
        metas = [read_meta(root / "data" / "raw" / campaign / r / "meta.json") for r in runs]
        output = root / DATASETS_DIR / dated_name(campaign, metas)
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise ConfigError(f"{output}: exists and is not empty; give a new directory")
    run_files = PUBLISHED_RUN_FILES if published else RUN_FILES
    missing = _missing(root, campaign, runs, run_files)
    if missing:
        shown = ", ".join(missing[:4]) + (
            f" and {len(missing) - 4} more" if len(missing) > 4 else ""
        )
        raise ConfigError(
            f"campaign {campaign}: processed outputs missing ({shown}); make them first with "
            "`snakemake --cores 4` (the packets and metrics rules)"
        )
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.parent / f".{output.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        metas, rows = [], []
        software: list[tuple[str, str, Any]] = []
        for r in runs:
            for src, dst in run_files:
                target = tmp / dst.format(r=r)
                target.parent.mkdir(parents=True, exist_ok=True)
                source = root / src.format(c=campaign, r=r)
                _check_table(source)
                shutil.copyfile(source, target)
            if published:
                _local_paths_out(tmp / "meta" / f"{r}.json")
                _local_paths_out(tmp / "metrics" / f"{r}.json")
            # Published only if they pass the schemas their readers check them against.
            meta = read_meta(tmp / "meta" / f"{r}.json")
            (metrics,) = read_metrics([tmp / "metrics" / f"{r}.json"])
            metas.append(meta)
            calibration = calibration_of(root, campaign, meta) if published else None
            if calibration is not None:
                (tmp / "calibration").mkdir(exist_ok=True)
                (tmp / "calibration" / f"{r}.json").write_bytes(calibration)
            match = read_json_object(tmp / "match" / f"{r}.json", "match summary")
            software += [
                ("experiment", r, (meta.get("controller") or {}).get("software")),
                ("packets", r, match.get("software")),
                ("metrics", r, metrics.get("software")),
            ]
            # The directory name is the run's identity (meta.json may predate its run_id).
            rows.append({**_run_row(meta, metrics), "run_id": r})
            if with_captures:
                raw = root / "data" / "raw" / campaign / r
                for cap in sorted(raw.iterdir()):
                    if cap.suffix in CAPTURE_SUFFIXES and cap.is_file():
                        dest = tmp / "captures" / r / cap.name
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copyfile(cap, dest)
        runs_table = pl.DataFrame(rows, infer_schema_length=None)
        runs_table.write_csv(tmp / "runs.csv")
        provenance = _provenance(metas, software)
        files = sorted(p for p in tmp.rglob("*") if p.is_file())
        checksums = {str(p.relative_to(tmp)): sha256_file(p) for p in files}
        sheet_md, sheet_json = render_datasheet(
            campaign=campaign,
            title=title or f"cganalysis campaign {campaign}",
            runs_table=runs_table,
            provenance=provenance,
            with_captures=with_captures,
            checksums=checksums,
            published=published,
            rerun_command=campaign_command(root, campaign) if published else "",
        )
        (tmp / "datasheet.md").write_text(sheet_md, encoding="utf-8")
        (tmp / "datasheet.json").write_text(
            json.dumps(sheet_json, indent=2, default=str) + "\n", encoding="utf-8"
        )
        for name in ("datasheet.md", "datasheet.json"):
            checksums[name] = sha256_file(tmp / name)
        (tmp / "SHA256SUMS").write_text(
            "".join(f"{digest}  {name}\n" for name, digest in sorted(checksums.items())),
            encoding="utf-8",
        )
        total = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
        nfiles = sum(1 for p in tmp.rglob("*") if p.is_file())
        if output.exists():
            output.rmdir()  # empty (checked above)
        tmp.rename(output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ExportSummary(output, tuple(runs), nfiles, total)
