"""The names of ``cga-cg``'s log files, apart from their schemas.

Kept free of polars: the generator's start path (``cganalysis cg send|receive``) checks
these names before it starts ``cga-cg``, and importing polars there would delay the CG
flow's first packet (by ~0.1 s on a host, seconds in a vm guest under TCG).
"""

from __future__ import annotations

#: CSV file written by cga-cg -> (parquet file, table name).
LOG_FILES: dict[str, tuple[str, str]] = {
    "sender_packets.csv": ("sender_packets.parquet", "cg sender packets"),
    "sender_frames.csv": ("sender_frames.parquet", "cg sender frames"),
    "controller.csv": ("controller.parquet", "cg controller"),
    "receiver_packets.csv": ("receiver_packets.parquet", "cg receiver packets"),
    "receiver_frames.csv": ("receiver_frames.parquet", "cg receiver frames"),
}
#: JSON summaries cga-cg writes, copied as they are.
SUMMARIES: tuple[str, ...] = ("sender_summary.json", "receiver_summary.json")
