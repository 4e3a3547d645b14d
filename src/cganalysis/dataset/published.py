"""The published flavour of a campaign's dataset: small enough to commit (``datasets/``).

``cganalysis dataset export CAMPAIGN --published`` keeps what a reader needs to open every
run behind a table, re-render the tables and compare a run of their own, and leaves out
what DVC keeps (the captures and the per-packet tables, 40 MB a run)::

    datasets/<campaign>-<YYYY-MM-DD>/       dated by the day the campaign's first run began
        runs.csv, datasheet.md/.json, SHA256SUMS
        meta/<run>.json                     run metadata (configuration, hosts, tools)
        calibration/<run>.json              the bottleneck's calibration the run used
        metrics/<run>.json                  the papers' metrics
        flows/<run>.parquet                 one row per flow (schemas.FLOWS)
        timeseries/<run>.parquet            per role (the CG flow, the TCP flow) and bin of
                                            the run's analysis.bin_s (0.5 s, the papers'
                                            resolution): schemas.RUN_TIMESERIES
        match/<run>.json                    capture matching summary (loss, drops)

The time series are the ones the workflow's metrics rule writes
(``results/metrics/<campaign>/<run>.timeseries.parquet``, cganalysis.metrics.timeseries),
the ones the run figures are drawn from.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from cganalysis.errors import ConfigError
from cganalysis.io import read_json_object

#: Files copied per run in a published dataset: (source in the workspace, destination).
PUBLISHED_RUN_FILES: tuple[tuple[str, str], ...] = (
    ("data/processed/{c}/{r}/flows.parquet", "flows/{r}.parquet"),
    ("data/processed/{c}/{r}/match.json", "match/{r}.json"),
    ("results/metrics/{c}/{r}.json", "metrics/{r}.json"),
    ("results/metrics/{c}/{r}.timeseries.parquet", "timeseries/{r}.parquet"),
    ("data/raw/{c}/{r}/meta.json", "meta/{r}.json"),
)


def dated_name(campaign: str, metas: list[dict[str, Any]]) -> str:
    """``<campaign>-<YYYY-MM-DD>``: the UTC day the campaign's first run started (on this
    host's clock: a sim run's own times are simulated, its host's start is recorded)."""
    hosts = [((m.get("testbed") or {}).get("sim") or {}).get("host_start_utc") for m in metas]
    if hosts and all(isinstance(h, str) for h in hosts):
        return f"{campaign}-{min(str(h) for h in hosts)[:10]}"
    starts = [int(m["start_ns"]) for m in metas if isinstance(m.get("start_ns"), int)]
    if not starts:
        raise ConfigError(
            f"campaign {campaign}: no run's meta.json has start_ns; give the dataset's "
            "folder with -o"
        )
    day = dt.datetime.fromtimestamp(min(starts) / 1e9, dt.UTC).date()
    return f"{campaign}-{day.isoformat()}"


def calibration_of(root: Path, campaign: str, meta: dict[str, Any]) -> bytes | None:
    """The calibration file the run used, byte for byte: the one of
    ``data/raw/<campaign>/_calibration/*/calibration.json`` whose document is the one the
    run's meta.json embeds (the runner copies it in); the embedded document itself when the
    file is gone; None for a run without calibration (a trace-driven link)."""
    embedded = meta.get("calibration")
    if not isinstance(embedded, dict):
        return None
    for path in sorted((root / "data" / "raw" / campaign / "_calibration").glob("*/*.json")):
        if path.name == "calibration.json" and read_json_object(path, "calibration") == embedded:
            return path.read_bytes()
    return (json.dumps(embedded, indent=2) + "\n").encode()


def raw_data_lines(campaign: str, command: str) -> list[str]:
    """The datasheet's section on what is not in the dataset, and how to get it
    (``command``: the workflow command that plans the campaign, from its profile)."""
    return [
        "## What is not here: captures and per-packet tables",
        "",
        "The raw runs (`ingress.pcap` and `egress.pcap` of every run, 300-400 MB each, the "
        "iperf3 and CG logs, the calibrations' captures) are versioned by DVC, not "
        f"committed (`data/raw/{campaign}.dvc`), and the per-packet tables "
        "(`data/processed/<campaign>/<run>/packets.parquet`) are made from them. Where a "
        "DVC remote holds them (docs/datasets.md, 'Other remotes'):",
        "",
        "```sh",
        f"dvc pull data/raw/{campaign}",
        ".venv/bin/snakemake --profile profiles/analyse   # its tables again, no experiment",
        "```",
        "",
        f"Without a remote, run the campaign again on a testbed (`{command}`) and compare "
        f"it with this dataset: `cganalysis compare data/raw/{campaign} --baseline "
        "<this folder>`.",
        "",
    ]
