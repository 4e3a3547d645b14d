"""The whole match in native code (``cga_core::table``): both captures read on two
threads, matched and written as Parquet with no Python table in between, for
``cganalysis packets`` on captures that fit in memory. The tables equal the Python
pipeline's (:mod:`cganalysis.matching.pipeline`, a test checks it), which stays the
reference and serves the other readers and the library API. Polars is imported only to
write the flow table: the command's native path needs none of it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cganalysis import _native
from cganalysis.capture.nativeinfo import info_from_raw, native_errors
from cganalysis.capture.toollog import with_saved_log
from cganalysis.errors import CaptureError, MatchError
from cganalysis.io import atomic_path
from cganalysis.matching.options import MatchOptions
from cganalysis.matching.summary import MatchSummary, SummaryCounts, make_summary


@dataclass(frozen=True)
class NativeMatch:
    tables: Any  # _native.PairedTables: the packet and egress-only tables, not yet written
    summary: MatchSummary

    def flow_table(self) -> dict[str, Any]:
        """The flow table's columns (``cganalysis.schemas.FLOWS``)."""
        columns: dict[str, Any] = self.tables.flow_table()
        return columns

    def write(self, packets: Path, egress_only: Path) -> None:
        """Writes both tables atomically, with the summary as their provenance."""
        provenance = json.dumps({"summary": self.summary.to_dict()}, default=str)
        with atomic_path(packets) as tmp_packets, atomic_path(egress_only) as tmp_eg:
            self.tables.write(str(tmp_packets), str(tmp_eg), provenance)


def match_files_native(
    ingress: Path,
    egress: Path,
    options: MatchOptions | None = None,
) -> NativeMatch:
    """Reads and matches the two captures natively (see the module's docstring)."""
    options = options or MatchOptions()
    for path in (ingress, egress):  # before reading the other one
        if not path.exists():
            raise CaptureError(path, "no such file")
    pending = _native.start_match(
        str(ingress), str(egress), options.max_delay_ns, options.end_guard_ns
    )
    try:
        tables, result = pending.result()
    except OSError as err:
        with native_errors(Path(err.filename) if err.filename else ingress):
            raise
    except ValueError as err:  # (message, byte offset, file) of a capture it cannot read
        message, offset, path = err.args
        with native_errors(Path(path)):
            raise ValueError(message, offset) from None
    infos = [
        with_saved_log(info_from_raw(path, result[point]))
        for path, point in ((ingress, "ingress"), (egress, "egress"))
    ]
    error = result.get("error")
    if error is not None:
        raise match_error(error, ingress, egress)
    span = result["span_ns"]
    summary = make_summary(
        infos[0],
        infos[1],
        SummaryCounts(**result["counts"]),
        None if span is None else (int(span[0]), int(span[1])),
        int(result["guard_ns"]),
        options.max_delay_ms,
    )
    return NativeMatch(tables=tables, summary=summary)


def match_error(error: tuple[Any, ...], ingress: Path, egress: Path) -> MatchError:
    """The Python pipeline's messages (cganalysis.matching.pipeline)."""
    if error[0] == "no_ip":
        path = (ingress, egress)[int(error[1])]
        return MatchError(
            f"{path}: no IP packets in the capture; check the interface and the capture filter"
        )
    reverse_eg, matched_in = int(error[1]), int(error[2])
    return MatchError(
        f"most packets reach {egress} before {ingress} ({reverse_eg} egress packets precede "
        f"their ingress twin, {matched_in} follow it): were ingress and egress given the "
        "wrong way round? Pass the capture taken where packets enter the bottleneck first."
    )


def write_flows(columns: dict[str, Any], flows: Path, summary: MatchSummary) -> None:
    """Writes the flow table a native match made (``flow_table()`` of its tables: the same
    native code in memory and streaming, so both give the same file)."""
    import polars as pl

    from cganalysis import schemas
    from cganalysis.io import write_parquet

    table = pl.DataFrame(columns, schema=schemas.FLOWS)
    write_parquet(
        schemas.check_schema(table, schemas.FLOWS, "flows"), flows, {"summary": summary.to_dict()}
    )
