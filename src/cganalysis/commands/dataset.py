"""``cganalysis dataset export CAMPAIGN -o DIR``: a campaign as a publication dataset."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from cganalysis.commands import COMMANDS
from cganalysis.dataset import export_campaign
from cganalysis.dataset.printed import fix, mismatches, printed_cells
from cganalysis.dataset.rawcheck import check_raw
from cganalysis.dataset.reader import open_dataset
from cganalysis.dataset.reproduce import report, reproduce_run, write_report
from cganalysis.errors import ConfigError


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "dataset",
        help=COMMANDS["dataset"],
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
        help="are a campaign's raw runs in data/raw/? (and how to get them: docs/datasets.md)",
        description=(
            "Succeed when data/raw/CAMPAIGN holds runs, including every run a published "
            "dataset of the campaign lists; otherwise name what is missing and how to get "
            "it (dvc pull from a remote, or the campaign's profile)."
        ),
    )
    r.add_argument("campaign", help="campaign name as in data/raw/ (e.g. tma2024-kernel)")
    r.add_argument("--root", type=Path, default=Path(), help="the repository (.)")
    r.set_defaults(run=run_raw_check)
    rp = dsub.add_parser(
        "reproduce",
        help="make a published sim run again and compare it with the dataset, bit for bit",
        description=(
            "For each run of DATASET (or those named by --run), which must have run on the "
            "sim testbed: print each recorded input (kernel, programs, interpreter, CPU "
            "features, code) that differs here, make the run again into OUT/RUN (never over "
            "a raw run), and compare the files' SHA-256 with meta.json's; where the captures "
            "differ, the first differing packet (against data/raw's copy, where present) "
            "and the metrics, number by number. Exit status 0: every run bit for bit; 1: "
            "some differ (OUT/reproduce.json says how)."
        ),
    )
    rp.add_argument("dataset", type=Path, help="dataset folder (e.g. datasets/NAME)")
    # dest must not be "run": the CLI dispatches on args.run.
    rp.add_argument(
        "--run", dest="runs", action="append", default=[], metavar="RUN_ID", help="only this run"
    )
    rp.add_argument(
        "-o",
        "--output",
        type=Path,
        help="where the runs are made (default results/reproduce/DATASET); must be new",
    )
    rp.add_argument("--root", type=Path, default=Path(), help="the repository (.)")
    rp.set_defaults(run=run_reproduce)


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
    ds = open_dataset(args.dataset)
    print(f"{ds.name}: campaign {ds.campaign}, {len(ds.runs)} runs, every file as in SHA256SUMS")
    return 0


def run_raw_check(args: argparse.Namespace) -> int:
    runs = check_raw(args.root, args.campaign)
    print(f"data/raw/{args.campaign}/: {len(runs)} runs")
    return 0


def run_reproduce(args: argparse.Namespace) -> int:
    ds = open_dataset(args.dataset)
    runs = args.runs or list(ds.runs)
    unknown = sorted(set(runs) - set(ds.runs))
    if unknown:
        raise ConfigError(f"{args.dataset}: no run {unknown[0]} (it lists {len(ds.runs)} runs)")
    out: Path = args.output or args.root / "results" / "reproduce" / args.dataset.name
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"{out} is not empty: name a new folder with -o")

    def say(text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)

    outcomes = []
    for run_id in runs:
        outcome = reproduce_run(args.root, args.dataset, run_id, out, say)
        outcomes.append(outcome)
        print("\n".join(report(outcome)), flush=True)
    write_report(outcomes, out / "reproduce.json")
    same = sum(o.identical for o in outcomes)
    print(f"{same} of {len(outcomes)} runs bit for bit; report: {out / 'reproduce.json'}")
    return 0 if same == len(outcomes) else 1
