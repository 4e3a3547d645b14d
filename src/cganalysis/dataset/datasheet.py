"""The dataset's datasheet (after Gebru et al., "Datasheets for Datasets"): what is in
it, every column with its type and unit, how it was produced, and how to cite it."""

from __future__ import annotations

from typing import Any

import polars as pl

from cganalysis.dataset.columns import Column, describe
from cganalysis.dataset.published import raw_data_lines

#: Tables of the dataset -> the schema in cganalysis.schemas that declares them.
TABLES: tuple[tuple[str, str, str], ...] = (
    ("packets/<run>.parquet", "PACKETS", "one row per IP packet seen entering the bottleneck"),
    ("flows/<run>.parquet", "FLOWS", "one row per directional flow (5-tuple and RTP SSRC)"),
)
#: A published dataset's tables (cganalysis.dataset.published): no per-packet table.
PUBLISHED_TABLES: tuple[tuple[str, str, str], ...] = (
    TABLES[1],
    (
        "timeseries/<run>.parquet",
        "RUN_TIMESERIES",
        "one row per role (the CG flow, the competing TCP flow) and bin of the run's "
        "analysis.bin_s (0.5 s): rates, queuing delay, loss",
    ),
)

PAPERS = (
    "TMA 2024: cloud gaming (SCReAM) against TCP Cubic / BBRv2 through drop-tail, HTB and "
    "L4S (DualPI2) queues",
    "Xu & Claypool 2022: congestion response of cloud-based game streaming to competing "
    "TCP Cubic and BBR flows",
)


def papers_for(campaign: str) -> list[str]:
    """The papers a campaign reproduces, by its name (both for other campaigns)."""
    if campaign.startswith("tma"):
        return [PAPERS[0]]
    if campaign.startswith("xu"):
        return [PAPERS[1]]
    return list(PAPERS)


def _column_rows(columns: list[Column]) -> list[str]:
    return [f"| `{c.name}` | {c.dtype} | {c.unit} | {c.description} |" for c in columns]


def _column_json(c: Column) -> dict[str, str]:
    return {"name": c.name, "dtype": str(c.dtype), "unit": c.unit, "description": c.description}


def _runs_columns(runs_table: pl.DataFrame) -> list[Column]:
    return [Column(n, t, "") for n, t in runs_table.schema.items()]


def _runs(runs: list[str]) -> str:
    return f"{len(runs)} run" + ("" if len(runs) == 1 else "s")


def software_lines(software: dict[str, Any]) -> list[str]:
    """The Python environments that computed the tables, one item each: the packages'
    versions and the lock they came from (docs/environment.md)."""
    lines = []
    for env in software["environments"]:
        packages = ", ".join(f"{k} {v}" for k, v in env["packages"].items())
        lock = env["lock"]
        if lock is None:
            source = "installed without a lock"
        else:
            exact = "exactly" if lock["matches"] else "departing from"
            source = f"{exact} the lock `{lock['file']}` (sha256 {lock['sha256']})"
        lines.append(
            f"  - Python {env['python']}: {packages}; {source}; used by "
            f"{', '.join(env['steps'])} ({_runs(env['runs'])})"
        )
    lines += [
        f"  - {step}: not recorded ({_runs(runs)}, made before cganalysis recorded it)"
        for step, runs in software["not_recorded"].items()
    ]
    return ["- Python packages that computed the tables:", *lines]


def render_datasheet(
    *,
    campaign: str,
    title: str,
    runs_table: pl.DataFrame,
    provenance: dict[str, Any],
    with_captures: bool,
    checksums: dict[str, str],
    published: bool = False,
    rerun_command: str = "",
) -> tuple[str, dict[str, Any]]:
    """(Markdown, JSON document) of the datasheet (``published``: the committed flavour,
    without per-packet tables, with calibrations and time series)."""
    label_cols = [c for c in runs_table.columns if c.startswith("label_")]
    table_list = PUBLISHED_TABLES if published else TABLES
    tables = {schema: describe(schema) for _, schema, _ in table_list}
    md: list[str] = [
        f"# {title}",
        "",
        f"Campaign `{campaign}`: {runs_table.height} runs, exported by "
        f"{provenance['exported_by']} on {provenance['exported_at']}.",
        "",
        "## Motivation and composition",
        "",
        "Dual-point captures of a cloud-gaming (CG) RTP/UDP flow competing with TCP at a "
        "network bottleneck, taken on one clock on both sides of the bottleneck so that the "
        "queuing delay and the loss of every packet are measured, not estimated, in "
        "experiments after:",
        "",
        *[f"- {p}" for p in papers_for(campaign)],
        "",
        "The CG flow is the project's synthetic generator (cga-cg: SCReAM v2, constant "
        "rate, TFRC, gTFRC), not a commercial game service; the competing flows are iperf3. "
        "No personal data: addresses are private testbed addresses.",
        "",
        "Runs and their factors (labels):",
        "",
    ]
    if label_cols:
        md.append("| run | " + " | ".join(c.removeprefix("label_") for c in label_cols) + " |")
        md.append("|---" * (len(label_cols) + 1) + "|")
        md.extend(
            "| " + " | ".join("" if v is None else str(v) for v in row) + " |"
            for row in runs_table.select(["run_id", *label_cols]).iter_rows()
        )
    else:
        md += [f"- {r}" for r in runs_table.get_column("run_id")]
    md += [
        "",
        "## Files",
        "",
        "| path | content |",
        "|---|---|",
        "| `runs.csv` | one row per run: labels, configured and measured capacity, the "
        "headline metrics per role (`cg_*`, `competitor_*`) over the analysis window |",
        *[f"| `{path}` | {text} (schema below) |" for path, _, text in table_list],
        "| `metrics/<run>.json` | the papers' metrics of the run (docs/metrics.md) |",
        "| `meta/<run>.json` | run metadata: resolved configuration, schedule, roles, "
        "calibration, hosts, tool versions, commands, checksums of the raw files "
        "(docs/testbed.md) |",
        "| `match/<run>.json` | capture matching summary: packets in / delivered / lost, "
        "capture drops |",
    ]
    if published:
        md.append(
            "| `calibration/<run>.json` | the calibration of the bottleneck the run used "
            "(delivered rate against the configured one, idle delay floor, qdisc state) |"
        )
    if with_captures:
        md.append(
            "| `captures/<run>/` | the raw captures: ingress.pcap (entering the bottleneck), "
            "egress.pcap (leaving it), nanosecond timestamps, 128-byte snap length |"
        )
    md += [
        "| `SHA256SUMS` | `sha256sum -c SHA256SUMS` checks every file |",
        "",
        "## Schemas",
        "",
        "Units are in the column names (`_ns` nanoseconds since the epoch for `t_*`, `_ms`, "
        "`_bytes`, `_mbps`); ECN code points: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE.",
        "",
    ]
    for path, schema, text in table_list:
        md += [
            f"### `{path}` ({text})",
            "",
            "| column | type | unit | description |",
            "|---|---|---|---|",
            *_column_rows(tables[schema]),
            "",
        ]
    md += [
        "### `runs.csv`",
        "",
        "| column | type | unit |",
        "|---|---|---|",
        *[f"| `{c.name}` | {c.dtype} | {c.unit} |" for c in _runs_columns(runs_table)],
        "",
        "## Collection and provenance",
        "",
        "Testbed (`testbeds` below; docs/testbed.md): server, router and client as Linux "
        "network namespaces joined by veth pairs (`netns`), or with the router a user-mode "
        "Linux kernel (`uml`, `sim`) or in a VM (`vm`); the bottleneck on the router "
        "(kernel qdiscs, or the cga-emu link emulator for disciplines the kernel lacks), "
        "propagation delay from a delay-only hop (`delay_via`); captures on the router's "
        "two interfaces. Each run's meta.json records everything (configuration, "
        "calibration, hosts, commands, file checksums).",
        "",
        f"- testbeds: {', '.join(map(str, provenance.get('testbeds', []))) or '?'}",
        f"- cganalysis versions: {', '.join(map(str, provenance['cganalysis_versions'])) or '?'}",
        f"- git commits: {', '.join(map(str, provenance['git_commits'])) or '?'}"
        + (" (uncommitted changes present)" if provenance["git_dirty"] else ""),
        f"- kernels: {', '.join(map(str, provenance['kernels'])) or '?'}",
        f"- bottleneck backends: {', '.join(map(str, provenance['bottleneck_backends'])) or '?'}",
        f"- propagation delay via: {', '.join(map(str, provenance['delay_via'])) or '?'}",
        *software_lines(provenance["python_software"]),
        "",
        *(raw_data_lines(campaign, rerun_command) if published else []),
        "## How to cite",
        "",
        f"Cite this dataset as: *{title}*, cganalysis project, version "
        f"{provenance['exported_by'].split()[-1]}, with the archive's DOI once deposited "
        "(e.g. Zenodo), and the papers whose experiments it reproduces (above). Licence: "
        "choose one (e.g. CC BY 4.0) when depositing.",
        "",
    ]
    doc = {
        "title": title,
        "campaign": campaign,
        "runs": runs_table.get_column("run_id").to_list(),
        "provenance": provenance,
        "published": published,
        "schemas": {
            path: [_column_json(c) for c in tables[schema]] for path, schema, _ in table_list
        }
        | {"runs.csv": [c.__dict__ for c in _runs_columns(runs_table)]},
        "files": dict(sorted(checksums.items())),
        "reproduces": papers_for(campaign),
    }
    return "\n".join(md), doc
