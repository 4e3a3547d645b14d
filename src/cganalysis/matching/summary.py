"""What a match of two captures amounts to, and what makes its loss figures suspect."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class MatchSummary:
    ingress: str
    egress: str
    engine: str
    packets_in: int  # IP packets at ingress that travel towards egress
    packets_delivered: int
    packets_lost: int
    packets_unknown: int  # entered outside the egress capture's span: neither lost nor delivered
    egress_only_packets: int  # seen at egress with no ingress twin
    reverse_packets_in: int  # packets of flows that cross the taps the other way (excluded)
    reverse_packets_out: int
    non_ip_packets_in: int
    non_ip_packets_out: int
    truncated_packets_in: int  # a header was cut by the snaplen
    capture_drops_ingress: int | None  # None: neither the file nor the tool's log says
    capture_drops_egress: int | None
    egress_span_ns: tuple[int, int] | None
    end_guard_ms: float
    max_delay_ms: float
    warnings: list[str] = field(default_factory=list)
    #: What is worth knowing but changes no figure (e.g. TSO packets sized by their frame).
    notes: list[str] = field(default_factory=list)
    #: Each capture's CaptureQuirks as a dict (records read with a decision).
    quirks_ingress: dict[str, int | None] = field(default_factory=dict)
    quirks_egress: dict[str, int | None] = field(default_factory=dict)

    @property
    def loss_suspect(self) -> bool:
        """Loss counts cannot be trusted: a capture itself dropped packets."""
        return any(
            d is not None and d > 0 for d in (self.capture_drops_ingress, self.capture_drops_egress)
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["loss_suspect"] = self.loss_suspect
        return out
