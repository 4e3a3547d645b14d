"""``cganalysis inspect CAPTURE``: link type, packets, duration, flows and their rates."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import polars as pl

from cganalysis.capture import ENGINES, read_capture
from cganalysis.capture.summary import overview
from cganalysis.commands import COMMANDS


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("inspect", help=COMMANDS["inspect"])
    p.add_argument("capture", type=Path)
    p.add_argument("--engine", choices=ENGINES, default="native")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--top", type=int, default=20, help="flows to list (default %(default)s)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    o = overview(read_capture(args.capture, engine=args.engine))
    flows = o.flows.head(args.top)
    if args.json:
        print(json.dumps({**o.facts, "flows": flows.to_dicts()}, indent=2, default=str))
        return 0
    for key, value in o.facts.items():
        if key not in ("warnings", "notes", "quirks"):
            print(f"{key:>18}: {value}")
    for n in o.facts["notes"]:
        print(f"{'note':>18}: {n}")
    for w in o.facts["warnings"]:
        print(f"{'warning':>18}: {w}")
    print(f"\nflows ({o.flows.height} in all, busiest first):")
    with pl.Config(
        tbl_rows=args.top, tbl_cols=20, tbl_width_chars=140, tbl_hide_dataframe_shape=True
    ):
        print(flows.with_columns(pl.col("duration_s", "rate_mbps").round(3)))
    return 0
