"""Reading what the emulator writes: the statistics lines (JSONL) and the event log (CSV)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from cganalysis.errors import CganalysisError
from cganalysis.schemas import Schema

#: The ground-truth event log (``events.path``), one row per event. Times are CLOCK_REALTIME
#: ns like the captures'. ``event``: enqueue, dequeue, drop, mark, send. ``pkt`` numbers the
#: frames of one direction in arrival order. ``sojourn_ns``: on dequeue the time since
#: arrival (queueing), on send the time since arrival (queueing, delay line and the
#: emulator's own lateness). ``reason``: why a drop or mark happened.
EVENTS: Schema = {
    "t_ns": pl.Int64,
    "event": pl.String,
    "direction": pl.String,
    "pkt": pl.UInt64,
    "size_bytes": pl.UInt32,
    "proto": pl.UInt8,
    "src": pl.String,
    "dst": pl.String,
    "sport": pl.UInt16,
    "dport": pl.UInt16,
    "ip_id": pl.UInt32,
    "tcp_seq": pl.UInt32,
    "ecn": pl.UInt8,
    "sojourn_ns": pl.Int64,
    "reason": pl.String,
}


def read_events(path: Path) -> pl.DataFrame:
    """The event log as a typed table."""
    try:
        return pl.read_csv(path, schema=dict(EVENTS), null_values=[""])
    except (pl.exceptions.ComputeError, OSError) as e:
        raise CganalysisError(f"{path}: not a cga-emu event log: {e}") from e


def read_stats(path: Path) -> list[dict[str, Any]]:
    """The statistics lines as dictionaries (kind-specific keys and HTB classes kept as
    they are); a partly written last line (the emulator was killed) is ignored."""
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.endswith("\n"):
                break
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise CganalysisError(f"{path}:{n}: not a statistics line: {e}") from e
    return rows


def stats_table(rows: list[dict[str, Any]], direction: str) -> pl.DataFrame:
    """The scalar counters of one direction as a table (one row per line, in file order)."""
    flat = [
        {k: v for k, v in r.items() if not isinstance(v, dict | list)}
        for r in rows
        if r.get("direction") == direction
    ]
    return pl.DataFrame(flat, infer_schema_length=None)
