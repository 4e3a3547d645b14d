"""What a match of two captures amounts to, and what makes its loss figures suspect."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from cganalysis.capture.fingerprint import capture_fingerprint
from cganalysis.matching.options import NS_PER_MS

if TYPE_CHECKING:
    from cganalysis.capture.model import CaptureInfo


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
    #: Each capture file's size and head checksum (capture.fingerprint): which files
    #: these tables were made from, for the workflow to notice a run made again.
    fingerprint_ingress: dict[str, Any] = field(default_factory=dict)
    fingerprint_egress: dict[str, Any] = field(default_factory=dict)

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


@dataclass(frozen=True)
class SummaryCounts:
    """The packet counts of a match (however they were counted)."""

    packets_in: int
    packets_delivered: int
    packets_lost: int
    packets_unknown: int
    egress_only_packets: int
    reverse_packets_in: int
    reverse_packets_out: int
    non_ip_packets_in: int
    non_ip_packets_out: int
    truncated_packets_in: int


def _fingerprint(capture: CaptureInfo) -> dict[str, Any]:
    # A capture read from something other than a file has none.
    return capture_fingerprint(capture.path) if capture.path.is_file() else {}


def make_summary(
    ingress: CaptureInfo,
    egress: CaptureInfo,
    counts: SummaryCounts,
    span: tuple[int, int] | None,
    guard_ns: int,
    max_delay_ms: float,
) -> MatchSummary:
    """The summary, with the warnings and notes the counts and the captures call for."""
    warnings: list[str] = []
    notes = [f"{c.path}: {n}" for c in (ingress, egress) for n in c.quirks.notes()]
    drops = (ingress.capture_drops, egress.capture_drops)
    for name, cap, dropped in (("ingress", ingress, drops[0]), ("egress", egress, drops[1])):
        if dropped:
            warnings.append(
                f"the {name} capture {cap.path} lost {dropped} packets itself: loss "
                "figures are suspect (bigger capture buffer, -B, or a smaller snaplen)"
            )
        warnings.extend(f"{cap.path}: {w}" for w in cap.warnings)
    if counts.egress_only_packets:
        warnings.append(
            f"{counts.egress_only_packets} packets seen only at egress (not from the ingress "
            "link, or the ingress capture missed them)"
        )
    return MatchSummary(
        ingress=str(ingress.path),
        egress=str(egress.path),
        engine=ingress.engine,
        **asdict(counts),
        capture_drops_ingress=drops[0],
        capture_drops_egress=drops[1],
        egress_span_ns=span,
        end_guard_ms=guard_ns / NS_PER_MS,
        max_delay_ms=max_delay_ms,
        warnings=warnings,
        notes=notes,
        quirks_ingress=asdict(ingress.quirks),
        quirks_egress=asdict(egress.quirks),
        fingerprint_ingress=_fingerprint(ingress),
        fingerprint_egress=_fingerprint(egress),
    )
