"""``cganalysis metrics PACKETS.parquet -o METRICS.json``: one run's metrics.

What the run was comes from ``--run meta.json`` or from flags; flags given with ``--run``
override the metadata's values (e.g. another ``--window``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from cganalysis.commands import COMMANDS
from cganalysis.errors import ConfigError
from cganalysis.metrics.io import metrics_to_files, read_run_facts
from cganalysis.metrics.roles import parse_rules
from cganalysis.metrics.runfacts import (
    DEFAULT_BIN_S,
    LABEL_KEYS,
    RunFacts,
    choose_capacity,
    facts_from_values,
    parse_window,
)
from cganalysis.metrics.steps import ResponseSettings, parse_step


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "metrics",
        help=COMMANDS["metrics"],
        description=(
            "Compute one run's metrics (TMA 2024 Table II, Xu & Claypool IMC 2022) from its "
            "per-packet table. Describe the run with --run meta.json, or with --capacity-mbps, "
            "--window and --role; flags given with --run override the metadata. Definitions: "
            "docs/metrics.md."
        ),
    )
    p.add_argument("packets", type=Path, help="PACKETS.parquet written by `cganalysis packets`")
    p.add_argument("-o", "--output", type=Path, required=True, help="METRICS.json to write")
    # dest is not "run": cli.py dispatches on args.run.
    p.add_argument(
        "--run",
        dest="meta",
        type=Path,
        help="the run's meta.json (keys: docs/metrics.md)",
    )
    g = p.add_argument_group("link capacity")
    g.add_argument("--capacity-mbps", type=float, help="configured bottleneck capacity, Mbit/s")
    g.add_argument("--capacity-measured-mbps", type=float, help="measured capacity, Mbit/s")
    g.add_argument(
        "--capacity-source",
        choices=("measured", "configured"),
        help="which capacity to divide by when both are known (default: measured)",
    )
    g.add_argument("--capacity-trace", type=Path, help="mahimahi trace of the link (ms per line)")
    g.add_argument("--trace-scale", type=float, help="capacity multiplier of the trace")
    g.add_argument("--trace-offset-s", type=float, help="when the trace started, s from t0")
    w = p.add_argument_group("time")
    w.add_argument("--window", help="analysis window START:END in s from the run's start")
    w.add_argument("--bin-s", type=float, help=f"bin size in s (default {DEFAULT_BIN_S})")
    w.add_argument("--t0-ns", type=int, help="the run's start, ns (default: first packet)")
    w.add_argument(
        "--fairness-window", help="START:END for fairness (default: window & competitor on)"
    )
    w.add_argument(
        "--step",
        action="append",
        metavar="T:RATE",
        help="competing flow's schedule: from T s, target RATE Mbit/s, 'bulk' or 'off' (repeat)",
    )
    w.add_argument("--before-s", type=float, help="response baseline length (default 60)")
    w.add_argument("--settle-s", type=float, help="response target length (default 60)")
    w.add_argument("--smooth-s", type=float, help="moving average before response search (0)")
    r = p.add_argument_group("flows")
    r.add_argument(
        "--role",
        action="append",
        metavar="NAME=RULE",
        help="e.g. cg=udp:30002, competitor=tcp, cg=udp:ssrc=0x64 (repeat; first match wins)",
    )
    r.add_argument("--bitrate-point", choices=("egress", "ingress"), help="default egress")
    r.add_argument(
        "--direction",
        choices=("dominant", "all"),
        help="dominant (default): per connection keep only the direction with more bytes",
    )
    p.add_argument(
        "--label",
        action="append",
        metavar="KEY=VALUE",
        help=f"run label copied to the output ({', '.join(LABEL_KEYS)}) (repeat)",
    )
    p.add_argument("--timeseries", type=Path, help="also write the per-bin series (parquet)")
    p.set_defaults(run=run)


def _labels(items: list[str] | None) -> dict[str, str | int | float]:
    labels: dict[str, str | int | float] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or key not in LABEL_KEYS:
            raise ConfigError(f"--label {item!r}: expected KEY=VALUE with KEY in {LABEL_KEYS}")
        labels[key] = int(value) if key == "repetition" and value.isdigit() else value
    return labels


def build_facts(args: argparse.Namespace) -> RunFacts:
    """The run's facts from --run and/or flags (flags win)."""
    if args.meta is not None:
        facts = read_run_facts(args.meta)
    else:
        missing = [
            f
            for f, v in (
                (
                    "--capacity-mbps (or --capacity-measured-mbps / --capacity-trace)",
                    args.capacity_mbps or args.capacity_measured_mbps or args.capacity_trace,
                ),
                ("--window", args.window),
                ("--role", args.role),
            )
            if not v
        ]
        if missing:
            raise ConfigError(
                "without --run meta.json, give " + ", ".join(missing) + " (see --help)"
            )
        facts = facts_from_values(
            capacity=choose_capacity(
                args.capacity_mbps, args.capacity_measured_mbps, args.capacity_trace
            ),
            window=parse_window(args.window),
            rules=parse_rules(args.role),
        )
    changes: dict[str, Any] = {}
    cap = facts.capacity
    if any(
        v is not None
        for v in (
            args.capacity_mbps,
            args.capacity_measured_mbps,
            args.capacity_trace,
            args.capacity_source,
            args.trace_scale,
            args.trace_offset_s,
        )
    ):
        changes["capacity"] = choose_capacity(
            args.capacity_mbps if args.capacity_mbps is not None else cap.configured_mbps,
            args.capacity_measured_mbps
            if args.capacity_measured_mbps is not None
            else cap.measured_mbps,
            args.capacity_trace if args.capacity_trace is not None else cap.trace,
            prefer=args.capacity_source or "measured",
            trace_scale=args.trace_scale if args.trace_scale is not None else cap.trace_scale,
            trace_offset_s=args.trace_offset_s
            if args.trace_offset_s is not None
            else cap.trace_offset_s,
            trace_bytes_per_opportunity=cap.trace_bytes_per_opportunity,
        )
    if args.window is not None:
        changes["window"] = parse_window(args.window)
    if args.role:
        changes["rules"] = parse_rules(args.role)
    if args.bin_s is not None:
        changes["bin_s"] = args.bin_s
    if args.t0_ns is not None:
        changes["t0_ns"] = args.t0_ns
    if args.fairness_window is not None:
        changes["fairness_window"] = parse_window(args.fairness_window, "--fairness-window")
    if args.step:
        changes["schedule"] = tuple(parse_step(s) for s in args.step)
    if any(v is not None for v in (args.before_s, args.settle_s, args.smooth_s)):
        old = facts.response
        changes["response"] = ResponseSettings(
            before_s=old.before_s if args.before_s is None else args.before_s,
            settle_s=old.settle_s if args.settle_s is None else args.settle_s,
            smooth_s=old.smooth_s if args.smooth_s is None else args.smooth_s,
        )
    if args.bitrate_point is not None:
        changes["bitrate_point"] = args.bitrate_point
    if args.direction is not None:
        changes["direction"] = args.direction
    if args.label:
        changes["labels"] = {**facts.labels, **_labels(args.label)}
    if changes and args.meta is not None:
        changes["source"] = f"{facts.source} + flags"
    return dataclasses.replace(facts, **changes) if changes else facts


def run(args: argparse.Namespace) -> int:
    doc = metrics_to_files(
        args.packets, build_facts(args), args.output, args.timeseries, progress=True
    )
    for warning in doc["warnings"]:
        print(f"cganalysis metrics: warning: {warning}", file=sys.stderr)
    return 0
