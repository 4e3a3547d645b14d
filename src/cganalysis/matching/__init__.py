"""Matching the packets of two capture points of one bottleneck (ingress and egress).

Both points are captured on the same host, so one clock serves both and the per-packet
queuing delay is simply ``t_egress - t_ingress``. :func:`match_files` is the entry point;
the steps live in small modules: identity keys and pairing (:mod:`.pairing`), the packet
table and loss verdicts (:mod:`.table`), the flow table (:mod:`.flows`) and the run summary
(:mod:`.summary`).
"""

from __future__ import annotations

from cganalysis.matching.pipeline import MatchedPackets, MatchOptions, match_captures, match_files

__all__ = ["MatchOptions", "MatchedPackets", "match_captures", "match_files"]
