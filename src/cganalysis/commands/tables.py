"""``cganalysis tables KIND METRICS.json... -o STEM``: a paper table as CSV, Markdown, LaTeX,
HTML.

Runs that differ in a label other than a table's cell keys are never averaged together:
tma-table2 writes one table per condition, the other tables refuse (keep one condition with
``--where KEY=VALUE``; :mod:`cganalysis.report.conditions`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cganalysis.commands import COMMANDS
from cganalysis.repolayout import DATASETS_DIR
from cganalysis.report import artefacts
from cganalysis.report.conditions import parse_where, select_runs
from cganalysis.report.inputs import load_metrics
from cganalysis.report.style import load_style

#: The tables of the registry (cganalysis.report.artefacts), by command-line kind.
KINDS = tuple(a.cli for a in artefacts.of_kind("table"))


def _names(text: str | None) -> list[str] | None:
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "tables",
        help=COMMANDS["tables"],
        description=(
            "Write STEM.csv, STEM.md, STEM.tex and STEM.html. tma-table2: CG/TCP blocks and link "
            "utilisation per queue discipline and CCA; tma-table1: CG delay per variant; "
            "xu-{delay,loss}-{without,with}: Xu Tables 2-5, xu-frame-rate-with: Table 6 "
            "(capacity rows, queue size columns). "
            "Runs that differ in another label (e.g. link, cg) never share a cell: tma-table2 "
            "writes one table per condition into the same files, the others refuse; "
            "--where keeps one condition."
        ),
    )
    p.add_argument("kind", choices=KINDS)
    p.add_argument("metrics", type=Path, nargs="+", help="METRICS.json files (any number)")
    p.add_argument("-o", "--output", type=Path, required=True, help="output stem (no suffix)")
    p.add_argument("--style", type=Path, help="plotting style (default configs/plotting.yaml)")
    p.add_argument(
        "--where",
        action="append",
        metavar="KEY=VALUE",
        help="keep only runs whose label KEY is VALUE, e.g. link=fixed (repeat: every KEY "
        "must match; a KEY given twice accepts either VALUE)",
    )
    p.add_argument(
        "--qdiscs",
        help="tma-table2 columns, default the runs' own in the order pfifo,htb,dualpi2,sqf,drr",
    )
    p.add_argument("--ccas", help="competing CCAs, default the runs' own (style order)")
    p.add_argument("--variants", help="tma-table1 columns, e.g. cga-cg-none,cga-cg-scream,gfn")
    p.add_argument(
        "--by",
        choices=("system", "cca", "qdisc"),
        default="system",
        help="run label the tma-table1 variants are (default system)",
    )
    p.add_argument(
        "--panel-key",
        choices=("qdisc", "system"),
        default="qdisc",
        help="Xu tables: what the paper's 'system' columns are (default qdisc)",
    )
    p.add_argument(
        "--paper-labels",
        action="store_true",
        help="the paper's row labels verbatim ('Variance' for the std row)",
    )
    p.add_argument("--ci", action="store_true", help="add 95%% CI half-widths (repetitions)")
    p.add_argument(
        "--datasets",
        type=Path,
        default=Path(DATASETS_DIR),
        help="tma-cells-out: the published datasets its factors are read from (datasets)",
    )
    p.set_defaults(run=run)


def options(args: argparse.Namespace) -> artefacts.Options:
    return artefacts.Options(
        qdiscs=_names(getattr(args, "qdiscs", None)),
        ccas=_names(getattr(args, "ccas", None)),
        variants=_names(getattr(args, "variants", None)),
        by=getattr(args, "by", "system"),
        panel_key=args.panel_key,
        paper_labels=getattr(args, "paper_labels", False),
        ci=getattr(args, "ci", False),
        datasets=getattr(args, "datasets", Path(DATASETS_DIR)),
    )


def run(args: argparse.Namespace) -> int:
    loaded, _, _ = load_metrics(args.metrics)
    docs = select_runs(loaded, parse_where(args.where)) if args.where else loaded
    artefact = artefacts.by_name(args.kind)
    for path in artefacts.write(artefact, docs, load_style(args.style), args.output, options(args)):
        print(f"wrote {path}", file=sys.stderr)
    return 0
