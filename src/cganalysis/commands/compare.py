"""``cganalysis compare NEW --baseline DATASET``: a run or campaign against a baseline."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cganalysis.commands import COMMANDS
from cganalysis.dataset.compare import compare, format_comparison
from cganalysis.dataset.reader import open_dataset, read_new
from cganalysis.errors import ConfigError
from cganalysis.report.claims_tma import tma_claims_table
from cganalysis.report.claims_xu import xu_claims_table
from cganalysis.report.tablefmt import to_markdown

HELP = COMMANDS["compare"]


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "compare",
        help=HELP,
        description=(
            "For every cell of the baseline (its conditions times the papers' table rows: "
            "TMA 2024 Table II per flow, utilisation; Xu & Claypool's delay, loss and frame "
            "rate), print the new value, the baseline's, its spread over repetitions "
            "(min-max) and whether the new value lies within it (docs/datasets.md)."
        ),
    )
    p.add_argument(
        "new",
        type=Path,
        help=(
            "a dataset folder, a raw campaign (data/raw/CAMPAIGN), a folder of metrics "
            "files (results/metrics/CAMPAIGN) or one metrics file"
        ),
    )
    p.add_argument(
        "--baseline",
        "--reference",  # its older name: the published datasheets print it
        dest="baseline",
        type=Path,
        required=True,
        help=(
            "the baseline dataset (e.g. datasets/tma2024-kernel-2026-11-27); --reference is "
            "the same flag's older name"
        ),
    )
    p.add_argument(
        "--by",
        help="comma-separated labels naming a condition (default: those varying in the baseline)",
    )
    p.add_argument("--csv", type=Path, help="also write the comparison as CSV")
    p.add_argument(
        "--all", action="store_true", help="also list the baseline's cells the new runs lack"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    baseline = open_dataset(args.baseline)
    name, docs = read_new(args.new)
    by = [k.strip() for k in args.by.split(",") if k.strip()] if args.by else None
    table = compare(docs, baseline.metrics, campaign=baseline.campaign, by=by)
    print(f"{name} ({len(docs)} runs) against {baseline.name} ({len(baseline.runs)} runs)")
    print(format_comparison(table, uncovered=args.all))
    if args.csv is not None:
        table.write_csv(args.csv)
    print()
    print(claims_of(docs, baseline.campaign))
    return 0


def claims_of(docs: list[dict[str, Any]], campaign: str) -> str:
    """The papers' claims judged on the new runs (the baseline campaign's paper), as the
    published datasets' ``tma_claims`` / ``xu_claims`` tables; or why they are not."""

    make = xu_claims_table if campaign.startswith("xu") else tma_claims_table
    try:
        return to_markdown(make(docs))
    except ConfigError as err:  # runs of several conditions in one cell
        return f"claims not judged: {err}"
