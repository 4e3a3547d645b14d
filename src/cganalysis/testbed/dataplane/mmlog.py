"""The mahimahi link as the runner's bottleneck: counters and statistics from mm-link's log.

mm-link's ``--downlink-log`` has one line per event, times in ms since its start
(``# init timestamp``, CLOCK_REALTIME ms): ``T + SIZE`` an arrival, ``T - SIZE DELAY`` a
departure after DELAY ms in the link, ``T # 1504`` a delivery opportunity, ``T d PKTS
BYTES`` a drop. SIZE counts the 4-byte header of mahimahi's TUN device; the counters here
are IP bytes, as the captures see them. ``qdisc-stats.jsonl`` gets one record per 100 ms
(the monitor's interval) in the format of the kernel's and cga-emu's statistics.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cganalysis.testbed.shared.hosts import TestbedError
from cganalysis.testbed.shared.topology import Topology
from cganalysis.testbed.spec.config import Bottleneck, Direction, Monitor

TUN_HEADER_BYTES = 4


@dataclass
class LinkCounters:
    sent_bytes: int = 0
    sent_packets: int = 0
    dropped: int = 0
    arrived_packets: int = 0
    arrived_bytes: int = 0
    dropped_bytes: int = 0
    opportunities: int = 0
    init_ms: int | None = None
    last_ms: int = 0
    offset: int = 0  # bytes of the log read so far
    records: list[dict[str, Any]] = field(default_factory=list)

    def as_record(self) -> dict[str, Any]:
        backlog = self.arrived_packets - self.sent_packets - self.dropped
        return {
            "sent_bytes": self.sent_bytes,
            "sent_packets": self.sent_packets,
            "dropped": self.dropped,
            "overlimits": 0,
            "backlog_packets": max(0, backlog),
            "backlog_bytes": max(0, self.arrived_bytes - self.sent_bytes - self.dropped_bytes),
            "marked": 0,
            "opportunities": self.opportunities,
        }


def read_more(log: Path, c: LinkCounters, interval_ms: float) -> None:
    """Reads what the log gained since the last call (whole lines only) into ``c``, with a
    statistics record at every ``interval_ms`` boundary the log crossed."""
    with log.open("rb") as f:
        f.seek(c.offset)
        data = f.read()
    end = data.rfind(b"\n") + 1
    c.offset += end
    step = max(1, round(interval_ms))
    for raw in data[:end].decode(errors="replace").splitlines():
        if raw.startswith("# init timestamp:"):
            c.init_ms = int(raw.split(":")[1])
            continue
        if not raw or raw.startswith("#"):
            continue
        words = raw.split()
        t = int(words[0])
        while c.init_ms is not None and t // step > c.last_ms // step:
            c.last_ms = (c.last_ms // step + 1) * step
            c.records.append({"t_ns": (c.init_ms + c.last_ms) * 1_000_000, **c.as_record()})
        c.last_ms = max(c.last_ms, t)
        kind = words[1]
        if kind == "+":
            c.arrived_packets += 1
            c.arrived_bytes += int(words[2]) - TUN_HEADER_BYTES
        elif kind == "-":
            c.sent_packets += 1
            c.sent_bytes += int(words[2]) - TUN_HEADER_BYTES
        elif kind == "#":
            c.opportunities += 1
        elif kind == "d":
            c.dropped += int(words[2])
            c.dropped_bytes += int(words[3]) - TUN_HEADER_BYTES * int(words[2])


class MahimahiBottleneck:
    """The link the netns testbed started (netns/mahimahi.py); this reads and keeps its logs."""

    def __init__(self, topo: Topology, b: Bottleneck, monitor: Monitor, workdir: Path) -> None:
        self.topo = topo
        self.b = b
        self.forward = b.forward
        self.monitor = monitor
        self.workdir = workdir
        mm = topo.details.get("mahimahi", {})
        self.folder = Path(mm.get("folder", workdir))
        self.log = self.folder / "mm-downlink.log"
        self.c = LinkCounters()
        self.commands = [[mm.get("command", "mm-link")]]
        #: The downlink trace's time 0 (CLOCK_REALTIME ns, +- 0.5 ms: mahimahi's clock
        #: counts whole milliseconds).
        self.started_ns: int | None = topo.details.get("mahimahi_trace_start_ns")
        self.started_uncertainty_ns = 500_000

    def with_forward(self, d: Direction) -> MahimahiBottleneck:
        raise TestbedError("a mahimahi link cannot change its shaper")

    def apply(self) -> None:
        pass  # the testbed started it (mm-link is the link between router and client)

    def verify(self) -> None:
        pass

    def counters(self) -> dict[str, Any]:
        read_more(self.log, self.c, self.monitor.interval_ms)
        return {"direction": "a_to_b", **self.c.as_record()}

    def dump(self) -> dict[str, Any]:
        return {"mahimahi": self.topo.details.get("mahimahi", {}), "last_stats": self.counters()}

    def start_stats(self, name: str) -> None:
        pass  # mm-link logs every event itself

    def stop_stats(self, local: Path) -> int:
        read_more(self.log, self.c, self.monitor.interval_ms)
        with local.open("w", encoding="utf-8") as f:
            for rec in self.c.records:
                f.write(json.dumps({**rec, "direction": "a_to_b"}) + "\n")
        for name in ("mm-downlink.log", "mm-uplink.log"):
            if (self.folder / name).is_file():
                shutil.copyfile(self.folder / name, self.workdir / name)
        return len(self.c.records)

    def remove(self) -> None:
        pass  # stopped with the testbed
