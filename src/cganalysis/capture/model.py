"""What reading a capture file gives: the packet table and facts about the file."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import polars as pl

#: The capture readers: the Rust one, and tshark's as an independent reference.
Engine = Literal["native", "pyshark"]
ENGINES: tuple[Engine, ...] = ("native", "pyshark")

#: Names of the link types the readers decode (pcap LINKTYPE_* values).
LINK_TYPE_NAMES: dict[int, str] = {
    1: "ETHERNET",
    12: "RAW",
    14: "RAW",
    101: "RAW",
    113: "LINUX_SLL",
    228: "IPV4",
    229: "IPV6",
    276: "LINUX_SLL2",
}


@dataclass(frozen=True)
class InterfaceInfo:
    interface_id: int
    link_type: int
    name: str | None
    snaplen: int
    ts_resolution: str

    @property
    def link_type_name(self) -> str:
        return LINK_TYPE_NAMES.get(self.link_type, f"LINKTYPE_{self.link_type}")


@dataclass(frozen=True)
class InterfaceStats:
    """A pcapng interface statistics block (the last one written for the interface)."""

    interface_id: int
    start_ns: int | None
    end_ns: int | None
    received: int | None
    dropped_by_interface: int | None
    dropped_by_os: int | None
    accepted_by_filter: int | None
    delivered_to_user: int | None


@dataclass(frozen=True)
class ToolLog:
    """Packet counts that a capture tool printed when it stopped (tcpdump's stderr)."""

    path: Path
    captured: int | None
    received_by_filter: int | None
    dropped_by_kernel: int | None
    dropped_by_interface: int | None


@dataclass(frozen=True)
class CaptureQuirks:
    """Records read with a decision that tcpdump and tshark also make (counts)."""

    #: IP length field 0 (captured before TCP segmentation offload): the frame's length.
    len_from_frame: int = 0
    #: IPv6 jumbograms (BIG TCP): the hop-by-hop Jumbo Payload length.
    jumbograms: int = 0
    #: pcap sub-second fields out of range: kept, time unknown (null).
    bad_timestamps: int = 0
    first_bad_timestamp_at: int | None = None
    #: Packets of pcapng interfaces whose link type cannot be decoded: no row.
    skipped_packets: int = 0

    def notes(self) -> list[str]:
        """What is worth knowing but changes no figure."""
        out = []
        if self.len_from_frame:
            out.append(
                f"{self.len_from_frame} packets have an IP length field of 0 (captured before "
                "TCP segmentation offload): their size is the frame's length after the link "
                "header, as tshark reads them"
            )
        if self.jumbograms:
            out.append(
                f"{self.jumbograms} IPv6 jumbograms (BIG TCP): their size is the hop-by-hop "
                "Jumbo Payload length"
            )
        return out

    def warnings(self, skipped_link_types: list[str]) -> list[str]:
        """What leaves packets out of the figures."""
        out = []
        if self.bad_timestamps:
            out.append(
                f"{self.bad_timestamps} packets have an out-of-range sub-second timestamp "
                f"field (the first at byte offset {self.first_bad_timestamp_at}): kept with an "
                "unknown time, so they are neither matched nor counted lost"
            )
        if self.skipped_packets:
            out.append(
                f"skipped {self.skipped_packets} packets of interfaces with a link type this "
                f"reader cannot decode ({', '.join(skipped_link_types)})"
            )
        return out


@dataclass(frozen=True)
class CaptureInfo:
    path: Path
    format: str  # "pcap" or "pcapng"
    engine: str  # "native" or "pyshark"
    interfaces: tuple[InterfaceInfo, ...]
    stats: tuple[InterfaceStats, ...] = ()
    tool_log: ToolLog | None = None
    warnings: tuple[str, ...] = ()
    nanosecond: bool | None = None
    big_endian: bool = False
    quirks: CaptureQuirks = field(default_factory=CaptureQuirks)

    @property
    def capture_drops(self) -> int | None:
        """Packets the capture itself lost, or None when neither the file nor a log says."""
        counts: list[int] = []
        for s in self.stats:
            counts.extend(c for c in (s.dropped_by_interface, s.dropped_by_os) if c is not None)
        if self.tool_log is not None:
            counts.extend(
                c
                for c in (self.tool_log.dropped_by_kernel, self.tool_log.dropped_by_interface)
                if c is not None
            )
        return sum(counts) if counts else None

    @property
    def span_ns(self) -> tuple[int, int] | None:
        """When the capture ran, from the file's statistics blocks (None when absent)."""
        starts = [s.start_ns for s in self.stats if s.start_ns is not None]
        ends = [s.end_ns for s in self.stats if s.end_ns is not None]
        if not starts or not ends:
            return None
        return min(starts), max(ends)


@dataclass(frozen=True)
class Capture:
    """A capture file read into a table with the :data:`cganalysis.schemas.CAPTURE` schema."""

    packets: pl.DataFrame
    info: CaptureInfo
    extra: dict[str, int] = field(default_factory=dict)
