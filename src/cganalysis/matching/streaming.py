"""Matching two captures into the tables with memory that does not grow with them, natively
end to end (``cga_core::streaming``): both captures read a chunk at a time, twice (what
must be known of a whole capture first, then both side by side in time), each packet-table
row written once its fate and its place in time order are final, a row group at a time.

The tables are those of the in-memory match (:mod:`cganalysis.matching.native`), byte for
byte, and equal the Python pipeline's (:mod:`cganalysis.matching.pipeline`, the
reference); tests check both. Memory holds the packets of about ``max_delay`` plus two
chunks (plus a capture's disorder), a row group of each table and a few words per flow.
"""

from __future__ import annotations

import json
import time
from contextlib import ExitStack
from pathlib import Path

from cganalysis import _native
from cganalysis.capture.nativeinfo import info_from_raw, native_errors
from cganalysis.capture.toollog import with_saved_log
from cganalysis.errors import CaptureError
from cganalysis.io import atomic_path
from cganalysis.matching.native import match_error, write_flows
from cganalysis.matching.options import DEFAULT_CHUNK_PACKETS, MatchOptions
from cganalysis.matching.summary import MatchSummary, SummaryCounts, make_summary
from cganalysis.progress import Progress, wanted

#: Seconds between two looks at the native match's progress.
_POLL_S = 0.1


def match_to_files(
    ingress: Path,
    egress: Path,
    output: Path,
    egress_only: Path,
    *,
    flows: Path | None = None,
    options: MatchOptions | None = None,
    chunk_packets: int = DEFAULT_CHUNK_PACKETS,
    timings: dict[str, float] | None = None,
    progress: bool = False,
    keep_delays: int | None = None,
    page_cache_bytes: int | None = None,
) -> MatchSummary:
    """Matches two captures into the packet table (``output``), the egress-only table and,
    given ``flows``, the flow table; returns the summary (each file's provenance holds it,
    under "summary"). ``timings`` receives the seconds of each step (benchmarks);
    ``progress``: each pass's progress on a terminal (:mod:`cganalysis.progress`);
    ``timings`` also receives ``most_held``, the most packets held at once, and
    ``egress_first_pass``: 1 when the egress capture was read twice (a pcapng file, or one
    out of order beyond a chunk), 0 when only in the matching pass.
    ``keep_delays``: delays the flow table keeps in memory for its percentiles (the rest
    go to a file; default ``cga_core::table::KEEP_DELAYS``, 16 M). ``page_cache_bytes``:
    what the page cache may hold of the captures between the two passes (default: the
    memory the system has available, less a reserve); of captures larger than that, the
    first pass leaves each one's beginning in the cache for the second and drops the rest
    as it reads."""
    options = options or MatchOptions()
    if chunk_packets <= 0:
        raise ValueError("chunk_packets must be positive")
    for path in (ingress, egress):
        if not path.exists():
            raise CaptureError(path, "no such file")
    with ExitStack() as stack:
        partials = [stack.enter_context(atomic_path(path)) for path in (output, egress_only)]
        pending = _native.start_stream(
            str(ingress),
            str(egress),
            str(partials[0]),
            str(partials[1]),
            options.max_delay_ns,
            options.end_guard_ns,
            chunk_packets,
            flows is not None,
            **({} if keep_delays is None else {"keep_delays": keep_delays}),
            page_cache_bytes=page_cache_bytes,
        )
        if progress and wanted():
            _follow(pending, ingress, egress)
        try:
            tables, result = pending.result()
        except ValueError as err:  # (message, byte offset, file) of a capture it cannot read
            message, offset, path = err.args
            with native_errors(Path(path)):
                raise ValueError(message, offset) from None
        error = result.get("error")
        if error is not None:
            raise match_error(error, ingress, egress)
        assert tables is not None, "a match without an error has its tables"
        infos = [
            with_saved_log(info_from_raw(path, result[point]))
            for path, point in ((ingress, "ingress"), (egress, "egress"))
        ]
        span = result["span_ns"]
        summary = make_summary(
            infos[0],
            infos[1],
            SummaryCounts(**result["counts"]),
            None if span is None else (int(span[0]), int(span[1])),
            int(result["guard_ns"]),
            options.max_delay_ms,
        )
        start = time.perf_counter()
        flow_columns = tables.flow_table() if flows is not None else None
        tables.finish(json.dumps({"summary": summary.to_dict()}, default=str))
    if flow_columns is not None and flows is not None:
        write_flows(flow_columns, flows, summary)
    if timings is not None:
        timings.update(
            result["stages_s"],
            most_held=result["most_held"],
            egress_first_pass=float(result["egress_first_pass"]),
        )
        timings["flows and footers"] = time.perf_counter() - start
    return summary


def _follow(pending: _native.PendingStream, ingress: Path, egress: Path) -> None:
    """Shows each pass's progress (bytes of the captures it reads) until the match ends: a
    line per pass, each shown even when the pass was too quick to be looked at. The first
    pass reads the egress capture too only when it is not a classic pcap file."""
    sizes = ingress.stat().st_size, egress.stat().st_size
    both_first = pending.progress()[3]
    totals = {1: sizes[0] + (sizes[1] if both_first else 0), 2: sizes[0] + sizes[1]}
    what = "the captures" if both_first else "the ingress capture"
    titles = {1: f"reading {what} (pass 1 of 2)", 2: "matching (pass 2 of 2)"}
    current, done = 1, 0
    line = Progress(titles[1], totals[1])
    line.__enter__()
    try:
        while True:
            ended = pending.done()
            step, read_in, read_eg, _ = pending.progress()
            # a pass reads its captures whole before the next starts; at the end, every
            # pass was made
            for nxt in range(current + 1, (2 if ended else step) + 1):
                line.add(totals[current] - done)
                line.__exit__(None, None, None)
                current, done = nxt, 0
                line = Progress(titles[nxt], totals[nxt])
                line.__enter__()
            egress_read = read_eg if current == 2 or both_first else 0
            read = totals[current] if ended else read_in + egress_read
            line.add(max(0, read - done))
            done = max(done, read)
            if ended:
                return
            time.sleep(_POLL_S)
    finally:
        line.__exit__(None, None, None)
