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
    e.add_argument("-o", "--output", type=Path, required=True, help="dataset directory")
    e.add_argument(
        "--root", type=Path, default=Path(), help="workspace with data/ and results/ (.)"
    )
    e.add_argument("--with-captures", action="store_true", help="include the raw pcaps")
    e.add_argument("--title", help="dataset title (default: cganalysis campaign CAMPAIGN)")
    e.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    summary = export_campaign(
        args.root, args.campaign, args.output, with_captures=args.with_captures, title=args.title
    )
    print(
        f"wrote {summary.output}: {len(summary.runs)} runs, {summary.files} files, "
        f"{summary.bytes / 1e6:.1f} MB"
    )
    return 0
