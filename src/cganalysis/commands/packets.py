"""``cganalysis packets INGRESS EGRESS -o PACKETS.parquet``: the per-packet table."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from cganalysis import _native
from cganalysis.capture.model import ENGINES
from cganalysis.commands import COMMANDS
from cganalysis.dependencies import software
from cganalysis.io import write_json, write_parquet
from cganalysis.matching.native import match_files_native, write_flows
from cganalysis.matching.options import DEFAULT_CHUNK_PACKETS, MatchOptions
from cganalysis.matching.streaming import match_to_files
from cganalysis.matching.summary import MatchSummary
from cganalysis.progress import Progress, format_bytes

#: Captures larger than this together are matched streaming, smaller ones in memory (both
#: native, the same files byte for byte; in memory reads each capture once, not twice, and
#: holds ~1.5 bytes per capture byte).
DEFAULT_STREAM_ABOVE_MB = 1024.0


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "packets",
        help=COMMANDS["packets"],
        description=(
            "Match the captures taken where packets enter (INGRESS) and leave (EGRESS) a "
            "bottleneck, on one host, into one row per ingress packet: queuing delay, loss "
            "and ECN marking. A capture tool's stderr saved as CAPTURE.log is read for "
            "capture drops."
        ),
    )
    p.add_argument("ingress", type=Path, help="capture where packets enter the bottleneck")
    p.add_argument("egress", type=Path, help="capture where packets leave the bottleneck")
    p.add_argument("-o", "--output", type=Path, required=True, help="PACKETS.parquet to write")
    p.add_argument("--flows", type=Path, help="also write the flow table (parquet)")
    p.add_argument(
        "--egress-only",
        type=Path,
        help="where to write packets seen only at egress (default: OUTPUT stem + "
        "'.egress-only.parquet')",
    )
    p.add_argument("--summary", type=Path, help="also write the match summary (JSON)")
    p.add_argument("--engine", choices=ENGINES, default="native", help="capture reader")
    p.add_argument(
        "--max-delay-ms",
        type=float,
        default=MatchOptions.max_delay_ms,
        help="longest plausible time through the bottleneck (default %(default)s)",
    )
    p.add_argument(
        "--end-guard-ms",
        type=float,
        default=None,
        help="packets entering this close to the end of the egress capture have an unknown "
        "fate (default: the largest delay measured)",
    )
    p.add_argument(
        "--chunk-packets",
        type=int,
        default=DEFAULT_CHUNK_PACKETS,
        help="packets read at a time per capture: memory grows with it and with the "
        "traffic of --max-delay-ms, never with the captures (default %(default)s)",
    )
    p.add_argument(
        "--stream-above-mb",
        type=float,
        default=DEFAULT_STREAM_ABOVE_MB,
        help="match streaming, with memory that does not grow with the captures, when they "
        "are together larger than this; smaller ones are matched in memory, which is faster "
        "(0: always stream; default %(default)s)",
    )
    p.set_defaults(run=run)


def egress_only_path(output: Path) -> Path:
    return output.with_name(output.name.removesuffix(".parquet") + ".egress-only.parquet")


def print_summary(s: MatchSummary, seconds: float) -> None:
    out = sys.stderr
    rate = s.packets_in / seconds if seconds > 0 else float("nan")
    print(
        f"matched {s.packets_in} ingress packets in {seconds:.2f} s ({rate / 1e6:.2f} M/s): "
        f"{s.packets_delivered} delivered, {s.packets_lost} lost, {s.packets_unknown} unknown; "
        f"{s.egress_only_packets} seen only at egress",
        file=out,
    )
    if s.reverse_packets_in or s.reverse_packets_out:
        print(
            f"left out {s.reverse_packets_in}+{s.reverse_packets_out} packets of flows that "
            "cross the taps the other way (capture with -Q in / -Q out to avoid them)",
            file=out,
        )
    for name, d in (("ingress", s.capture_drops_ingress), ("egress", s.capture_drops_egress)):
        if d is None:
            print(f"note: capture drops of the {name} capture are unknown (no log)", file=out)
    for n in s.notes:
        print(f"note: {n}", file=out)
    for w in s.warnings:
        print(f"WARNING: {w}", file=out)
    if s.loss_suspect:
        print("WARNING: LOSS FIGURES ARE SUSPECT: a capture dropped packets", file=out)


def run(args: argparse.Namespace) -> int:
    started_s = time.perf_counter()
    eg_only = args.egress_only or egress_only_path(args.output)
    outputs = [p for p in (args.output, eg_only, args.flows, args.summary) if p is not None]
    _check(args, outputs)
    options = MatchOptions(max_delay_ms=args.max_delay_ms, end_guard_ms=args.end_guard_ms)
    if args.engine == "native":
        # A process that matches and exits: its C allocator may keep what it frees.
        _native.keep_freed_blocks()
        summary = _match_native(args, options, eg_only)
    else:
        summary = _match_pyshark(args, options, eg_only)
    if args.summary:
        # With the versions that matched the captures into the tables (and their lock).
        write_json({**summary.to_dict(), "software": software()}, args.summary)
    print_summary(summary, time.perf_counter() - started_s)
    return 0


def _check(args: argparse.Namespace, outputs: list[Path]) -> None:
    """The options' values, and that no output is one of the captures (raw data is never
    overwritten)."""
    if args.max_delay_ms < 0 or (args.end_guard_ms is not None and args.end_guard_ms < 0):
        raise SystemExit("--max-delay-ms and --end-guard-ms must not be negative")
    if args.chunk_packets <= 0:
        raise SystemExit(f"--chunk-packets must be positive, not {args.chunk_packets}")
    for out in outputs:
        for capture in (args.ingress, args.egress):
            if out.is_file() and capture.is_file() and out.samefile(capture):
                raise SystemExit(
                    f"{out}: an output path names the capture {capture}; write elsewhere"
                )


def _size_bytes(args: argparse.Namespace) -> int:
    return sum(p.stat().st_size for p in (args.ingress, args.egress) if p.is_file())


def _match_native(args: argparse.Namespace, options: MatchOptions, eg_only: Path) -> MatchSummary:
    """Small captures in memory, read, matched and written natively with no Python table in
    between; large ones streaming, with memory that does not grow with the captures
    (:mod:`cganalysis.matching.streaming`)."""
    size_bytes = _size_bytes(args)
    if size_bytes > args.stream_above_mb * 1e6:
        return match_to_files(
            args.ingress,
            args.egress,
            args.output,
            eg_only,
            flows=args.flows,
            options=options,
            chunk_packets=args.chunk_packets,
            progress=True,
        )
    # One native call reads both captures: no progress within it, only that it runs (the
    # summary then says how long it took).
    with Progress(f"reading and matching {format_bytes(size_bytes)} in memory", keep=False):
        native = match_files_native(args.ingress, args.egress, options)
        native.write(args.output, eg_only)
        if args.flows:
            write_flows(native.flow_table(), args.flows, native.summary)
    return native.summary


def _match_pyshark(args: argparse.Namespace, options: MatchOptions, eg_only: Path) -> MatchSummary:
    """tshark's reading (which takes a whole capture anyway), matched in memory by the
    Python pipeline."""
    # Imported here: the pipeline brings polars, which the native match does without
    # (importing it takes about as long as matching a 4 M-packet pair; performance.md).
    from cganalysis.matching.pipeline import match_files

    size = format_bytes(_size_bytes(args))
    with Progress(f"reading and matching {size} in memory", keep=False):
        result = match_files(args.ingress, args.egress, engine=args.engine, options=options)
        provenance = {"summary": result.summary.to_dict()}
        write_parquet(result.packets, args.output, provenance, fast=True)
        write_parquet(result.egress_only, eg_only, provenance, fast=True)
        if args.flows:
            write_parquet(result.flows, args.flows, provenance)
    return result.summary
