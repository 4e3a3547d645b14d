"""The router's two taps: ``-Q in`` where packets enter, ``-Q out`` where they leave.

tcpdump (default): nanosecond timestamps, snaplen >= 128, a kernel buffer sized for the
rate, started before the traffic (we wait for "listening on") and stopped with SIGINT once
the queue has drained, so it prints its counters ("N packets dropped by kernel") into
``<capture>.log``, which the matcher reads. dumpcap: pcapng with a direction filter;
it has no nanosecond option (4.0), and its own counters are copied into the log in
tcpdump's words so the matcher reads them the same way.
"""

from __future__ import annotations

import math
import re
import signal
import time
from dataclasses import dataclass

from cganalysis.testbed.shared.hosts import Host, Proc, stop_all, wait_for_text
from cganalysis.testbed.spec.config import CaptureConfig

#: Bytes the kernel ring holds per captured packet at snaplen 128 (headers + alignment).
RING_BYTES_PER_PACKET = 256
#: Seconds of traffic the ring must absorb if the writer stalls (a loaded 2-core VM).
RING_SECONDS = 2.0
MIN_BUFFER_KIB = 16 * 1024
MAX_BUFFER_KIB = 512 * 1024


def buffer_kib(cfg: CaptureConfig, rate_mbit: float | None) -> int:
    """Kernel buffer: ``RING_SECONDS`` of traffic at 4x the bottleneck rate (the ingress
    side sees what senders offer, above the bottleneck), in minimum-size-agnostic packets."""
    if cfg.buffer_kib is not None:
        return cfg.buffer_kib
    offered_bps = 4 * (rate_mbit or 250.0) * 1e6
    packets = offered_bps / 8 / 1500 * RING_SECONDS
    kib = math.ceil(packets * max(RING_BYTES_PER_PACKET, cfg.snaplen + 128) / 1024)
    return min(MAX_BUFFER_KIB, max(MIN_BUFFER_KIB, kib))


def file_name(point: str, cfg: CaptureConfig) -> str:
    return f"{point}.pcap" if cfg.tool == "tcpdump" else f"{point}.pcapng"


def capture_argv(
    cfg: CaptureConfig, dev: str, direction: str, path: str, buf_kib: int
) -> list[str]:
    if cfg.tool == "tcpdump":
        return [
            "tcpdump",
            "-i",
            dev,
            "-Q",
            direction,
            "--time-stamp-precision",
            "nano",
            "-s",
            str(cfg.snaplen),
            "-B",
            str(buf_kib),
            "-n",
            "-Z",
            "root",
            "-w",
            path,
        ]
    return [
        "dumpcap",
        "-i",
        dev,
        "-f",
        "inbound" if direction == "in" else "outbound",
        "-s",
        str(cfg.snaplen),
        "-B",
        str(max(1, buf_kib // 1024)),
        "-q",
        "-w",
        path,
    ]


@dataclass
class Tap:
    point: str  # "ingress" or "egress"
    dev: str
    direction: str
    path: str
    log: str
    proc: Proc
    argv: list[str]


def start_tap(
    host: Host,
    cfg: CaptureConfig,
    point: str,
    dev: str,
    direction: str,
    rate_mbit: float | None,
    prefix: str = "",
) -> Tap:
    name = prefix + file_name(point, cfg)
    path = host.path(name)
    log = host.path(name + ".log")
    argv = capture_argv(cfg, dev, direction, path, buffer_kib(cfg, rate_mbit))
    proc = host.spawn(f"{cfg.tool} {point}", argv, stdout=None, stderr=log)
    ready = "listening on" if cfg.tool == "tcpdump" else "Capturing on"
    wait_for_text(host, log, ready, proc, timeout_s=10.0)
    return Tap(point, dev, direction, path, log, proc, argv)


_DUMPCAP = re.compile(r"Packets received/dropped on interface '[^']*': (\d+)/(\d+)")


#: libpcap's TPACKET_V3 ring hands packets over a block at a time, a block retired when
#: full or after the capture timeout (tcpdump: 1 s). A tool stopped sooner than that after
#: the last packet loses the packets of its last, partial block.
RING_RETIRE_S = 1.2


def stop_taps(host: Host, taps: list[Tap]) -> None:
    """SIGINT (to all at once, once their last ring block has been handed over): both tools
    flush the file and print their counters."""
    time.sleep(RING_RETIRE_S)
    stop_all([t.proc for t in taps], signal.SIGINT, timeout_s=10.0)
    for tap in taps:
        _dumpcap_counts(host, tap)


def _dumpcap_counts(host: Host, tap: Tap) -> None:
    if tap.argv[0] == "dumpcap":
        text = host.read_text(tap.log)
        m = _DUMPCAP.search(text)
        if m:  # the matcher reads tcpdump's wording
            note = f"{m.group(1)} packets captured\n{m.group(2)} packets dropped by kernel\n"
            host.run(["sh", "-c", 'printf "%s" "$1" >> "$2"', "sh", note, tap.log])
