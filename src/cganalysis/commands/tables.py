"""``cganalysis tables KIND METRICS.json... -o STEM``: a paper table as CSV, Markdown, LaTeX."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cganalysis.report.inputs import load_metrics
from cganalysis.report.style import load_style
from cganalysis.report.tablefmt import Table, write_table
from cganalysis.report.tables import tma_table1, tma_table2, xu_table

KINDS = (
    "tma-table2",
    "tma-table1",
    "xu-delay-without",
    "xu-delay-with",
    "xu-loss-without",
    "xu-loss-with",
)


def _names(text: str | None) -> list[str] | None:
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "tables",
        help="TMA 2024 Tables I-II and Xu & Claypool Tables 2-5 from metrics files",
        description=(
            "Write STEM.csv, STEM.md and STEM.tex. tma-table2: CG/TCP blocks and link "
            "utilisation per queue discipline and CCA; tma-table1: CG delay per variant; "
            "xu-{delay,loss}-{without,with}: Xu Tables 2-5 (capacity rows, queue size columns)."
        ),
    )
    p.add_argument("kind", choices=KINDS)
    p.add_argument("metrics", type=Path, nargs="+", help="METRICS.json files (any number)")
    p.add_argument("-o", "--output", type=Path, required=True, help="output stem (no suffix)")
    p.add_argument("--style", type=Path, help="plotting style (default configs/plotting.yaml)")
    p.add_argument("--qdiscs", help="column order, default pfifo,htb,dualpi2 (tma-table2)")
    p.add_argument("--ccas", help="competing CCAs, default cubic,bbr")
    p.add_argument("--variants", help="tma-table1 columns, e.g. ecgp-none,ecgp-scream,gfn")
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
    p.set_defaults(run=run)


def build(args: argparse.Namespace) -> Table:
    style = load_style(args.style)
    _, runs, roles = load_metrics(args.metrics)
    ccas = _names(args.ccas)
    if args.kind == "tma-table2":
        return tma_table2(
            roles,
            runs,
            style=style,
            qdiscs=_names(args.qdiscs) or ("pfifo", "htb", "dualpi2"),
            ccas=ccas or ("cubic", "bbr"),
            paper_labels=args.paper_labels,
            ci=args.ci,
        )
    if args.kind == "tma-table1":
        variants = _names(args.variants) or style.order(args.by, roles.get_column(args.by))
        return tma_table1(roles, style=style, variants=variants, by=args.by, ci=args.ci)
    _, metric, when = args.kind.split("-")
    return xu_table(
        roles,
        style=style,
        metric="delay" if metric == "delay" else "loss",
        phase="before_competitor" if when == "without" else "with_competitor",
        panel_key=args.panel_key,
        ccas=None if when == "without" else (ccas or ("cubic", "bbr")),
    )


def run(args: argparse.Namespace) -> int:
    for path in write_table(build(args), args.output):
        print(f"wrote {path}", file=sys.stderr)
    return 0
