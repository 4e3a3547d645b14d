"""How two captures are matched (shared by the Python pipeline and the native match)."""

from __future__ import annotations

from dataclasses import dataclass

#: Packets read at a time per capture by the streaming match: memory grows with it and
#: with the traffic of ``max_delay_ms``, never with the captures.
DEFAULT_CHUNK_PACKETS = 1 << 17
NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class MatchOptions:
    #: Longest plausible time through the bottleneck; also what tells a 16-bit IP ID or RTP
    #: sequence wrap from a twin (they wrap after seconds to tens of seconds).
    max_delay_ms: float = 2000.0
    #: Packets that entered this close to the end of the egress capture have an unknown
    #: fate. None: the largest delay measured in the run.
    end_guard_ms: float | None = None

    @property
    def max_delay_ns(self) -> int:
        return round(self.max_delay_ms * NS_PER_MS)

    @property
    def end_guard_ns(self) -> int | None:
        return None if self.end_guard_ms is None else round(self.end_guard_ms * NS_PER_MS)
