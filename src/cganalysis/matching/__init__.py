"""Matching the packets of two capture points of one bottleneck (ingress and egress).

Both points are captured on the same host, so one clock serves both and the per-packet
queuing delay is simply ``t_egress - t_ingress``. :func:`match_files` is the entry point;
the steps live in small modules: identity keys and pairing (:mod:`.pairing`), the packet
table and loss verdicts (:mod:`.table`), the flow table (:mod:`.flows`) and the run summary
(:mod:`.summary`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cganalysis.matching.options import MatchOptions
    from cganalysis.matching.pipeline import MatchedPackets, match_captures, match_files

__all__ = ["MatchOptions", "MatchedPackets", "match_captures", "match_files"]


def __getattr__(name: str) -> Any:
    # Imported when first asked for: the native match (cganalysis.matching.native), which
    # `cganalysis packets` runs, needs neither polars nor the Python pipeline.
    if name == "MatchOptions":
        from cganalysis.matching.options import MatchOptions

        return MatchOptions
    if name in __all__:
        from cganalysis.matching import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
