"""``cganalysis dataset export CAMPAIGN -o DIR``: a campaign as a publication dataset."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cganalysis.dataset import export_campaign


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "dataset",
        help="export a campaign as a publication dataset (parquet, metrics, datasheet)",
        description="Publication datasets (docs/datasets.md).",
    )
    dsub = p.add_subparsers(dest="dataset_command", required=True, metavar="COMMAND")
    e = dsub.add_parser(
        "export",
        help="write a campaign's packets, flows, metrics, metadata and datasheet to DIR",
        description=(
            "Write DIR/runs.csv, packets/<run>.parquet, flows/<run>.parquet, "
            "metrics/<run>.json, meta/<run>.json, match/<run>.json, datasheet.md/.json and "
            "SHA256SUMS for every run of data/raw/CAMPAIGN (its packet tables and metrics "
            "must exist: run snakemake first). DIR must be new or empty; it appears only "
            "when complete."
        ),
    )
    e.add_argument("campaign", help="campaign name as in data/raw/ (e.g. tma2024)")
    e.add_argument(
        "-o",
        "--output",
        type=Path,
        help="dataset directory (with --published, default datasets/CAMPAIGN-YYYY-MM-DD)",
    )
    e.add_argument(
        "--root", type=Path, default=Path(), help="workspace with data/ and results/ (.)"
    )
    e.add_argument("--with-captures", action="store_true", help="include the raw pcaps")
    e.add_argument("--title", help="dataset title (default: cganalysis campaign CAMPAIGN)")
    e.add_argument(
        "--published",
        action="store_true",
        help=(
            "the flavour committed under datasets/: no packets tables or captures; "
            "calibration/<run>.json and timeseries/<run>.parquet (docs/datasets.md)"
        ),
    )
    e.set_defaults(run=run)
    c = dsub.add_parser(
        "check-docs",
        help="check the numbers README.md and docs/results.md print from datasets/",
        description=(
            "Every Markdown table after a marker '<!-- printed from datasets/NAME: TABLE, "
            "rows \", LABEL\" -->' prints numbers of that dataset's rendered TABLE, and the "
            "line after a marker '<!-- printed from datasets/NAME: TABLE, note -->' one of "
            "its notes (a verdict line: 'Table II: 9 of 24 cells ...', 'Claims: ...'): list "
            "those that differ (exit status 1), or write the rendered ones with --fix."
        ),
    )
    c.add_argument("--root", type=Path, default=Path(), help="the repository (.)")
    c.add_argument("--fix", action="store_true", help="write the rendered numbers")
    c.add_argument("-o", "--output", type=Path, help="also write the report to this file")
    c.set_defaults(run=run_check_docs)
    v = dsub.add_parser("verify", help="check a dataset's files against its SHA256SUMS and open it")
    v.add_argument("dataset", type=Path, help="dataset folder (e.g. datasets/NAME)")
    v.set_defaults(run=run_verify)
    r = dsub.add_parser(
        "raw-check",
        help="are a campaign's raw runs in data/raw/? (dvc.yaml's raw-<campaign> stages)",
        description=(
            "Succeed when data/raw/CAMPAIGN holds runs, including every run a published "
            "dataset of the campaign lists; otherwise name what is missing and how to get "
            "it (dvc pull from a remote, or the campaign's profile)."
        ),
    )
    r.add_argument("campaign", help="campaign name as in data/raw/ (e.g. tma2024-kernel)")
    r.add_argument("--root", type=Path, default=Path(), help="the repository (.)")
    r.set_defaults(run=run_raw_check)


def run(args: argparse.Namespace) -> int:
    summary = export_campaign(
        args.root,
        args.campaign,
        args.output,
        with_captures=args.with_captures,
        title=args.title,
        published=args.published,
    )
    print(
        f"wrote {summary.output}: {len(summary.runs)} runs, {summary.files} files, "
        f"{summary.bytes / 1e6:.1f} MB"
    )
    return 0


def run_check_docs(args: argparse.Namespace) -> int:
    from cganalysis.dataset.printed import fix, mismatches, printed_cells

    if args.fix:
        for cell in fix(args.root):
            print(f"fixed {cell}")
    cells = printed_cells(args.root)
    bad = mismatches(args.root)
    lines = [str(c) for c in bad]
    lines.append(
        f"{len(cells)} printed numbers from datasets/, "
        + (f"{len(bad)} differ from the rendered tables" if bad else "all as rendered")
    )
    report = "\n".join(lines) + "\n"
    print(report, end="")
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(report, encoding="utf-8")
    return 1 if bad else 0


def run_verify(args: argparse.Namespace) -> int:
    from cganalysis.dataset.reader import open_dataset

    ds = open_dataset(args.dataset)
    print(f"{ds.name}: campaign {ds.campaign}, {len(ds.runs)} runs, every file as in SHA256SUMS")
    return 0


def run_raw_check(args: argparse.Namespace) -> int:
    from cganalysis.dataset.rawcheck import check_raw

    runs = check_raw(args.root, args.campaign)
    print(f"data/raw/{args.campaign}/: {len(runs)} runs")
    return 0
