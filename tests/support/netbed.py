"""A three-namespace bed to exercise ``cga-emu`` next to the kernel's qdiscs on one host,
used by the emulator's integration tests and its benchmark (run as root)::

    srv [s0] --veth-- [r0] rtr [r1] --veth-- [c0] cli
    10.66.0.1/24                              10.66.0.2/24

rtr has no addresses: either ``cga-emu`` bridges r0 and r1 (the emulator contract), or a
Linux bridge does (the kernel reference, with tc on r1), so both run with the same
addresses and the same capture points: ``-Q in`` on r0 and ``-Q out`` on r1, as the
testbed's router taps. Offloads and IPv6 are off; neighbours are static (no ARP in the
captures). Namespace names carry a tag and the pid; :func:`bed` removes them however the
block ends (exception, SIGINT, SIGTERM).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import polars as pl

from cganalysis.emulator.config import write_config
from cganalysis.emulator.process import Emulator

SRV_IP, CLI_IP = "10.66.0.1", "10.66.0.2"
OFFLOADS = ("tso", "gso", "gro", "tx", "rx")

#: A paced UDP sender (stdlib only): ``RATE_MBIT SECONDS SIZE ECN DST PORT``. It schedules
#: packets on an absolute clock (late wake-ups send what is due), uses a connected socket
#: (so IP IDs count up and every packet is identifiable) and numbers its payloads.
PACED_UDP = """
import socket, struct, sys, time
rate, secs, size, ecn, dst, port = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), \
    int(sys.argv[4]), sys.argv[5], int(sys.argv[6])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, ecn)
s.connect((dst, port))
gap = size * 8 / (rate * 1e6)
pad = bytes(max(0, size - 8))
n, start = 0, time.perf_counter()
while True:
    now = time.perf_counter()
    if now - start >= secs:
        break
    while start + n * gap <= now:
        try:
            s.send(struct.pack("!Q", n) + pad)
        except ConnectionRefusedError:  # an ICMP error for an earlier packet; keep going
            pass
        n += 1
    time.sleep(max(0.0, start + n * gap - time.perf_counter()))
print(n)
"""

#: Discards UDP on a port (so the receiver sends no ICMP port-unreachable back).
UDP_SINK = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    s.recv(65536)
"""


def sh(argv: list[str], check: bool = True, timeout: float = 30) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout)
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({res.returncode}): {res.stderr.strip()}")
    return res.stdout


@dataclass(frozen=True)
class Taps:
    ingress: Path
    egress: Path


class Bed:
    def __init__(self, tag: str) -> None:
        suffix = f"{tag}{os.getpid()}"
        self.ns = {"srv": f"es{suffix}", "rtr": f"er{suffix}", "cli": f"ec{suffix}"}
        self.procs: list[subprocess.Popen[bytes]] = []
        self.sinks: dict[int, subprocess.Popen[bytes]] = {}
        self.bridged = False

    def ip(self, role: str, *args: str, check: bool = True) -> str:
        """Runs a command in namespace ``role`` (srv, rtr or cli); returns its stdout."""
        return sh(["ip", "netns", "exec", self.ns[role], *args], check=check)

    def spawn(self, role: str, argv: list[str], **kw: Any) -> subprocess.Popen[bytes]:
        proc: subprocess.Popen[bytes] = subprocess.Popen(
            ["ip", "netns", "exec", self.ns[role], *argv], **kw
        )
        self.procs.append(proc)
        return proc

    def up(self) -> Bed:
        for role, ns in self.ns.items():
            sh(["ip", "netns", "add", ns])
            for key in ("all", "default"):
                self.ip(role, "sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1")
            self.ip(role, "ip", "link", "set", "lo", "up")
        for end, dev, peer in (("srv", "s0", "r0"), ("cli", "c0", "r1")):
            sh(["ip", "-n", self.ns[end], "link", "add", dev, "type", "veth", "peer", "name",
                peer, "netns", self.ns["rtr"]])  # fmt: skip
        for role, dev in (("srv", "s0"), ("rtr", "r0"), ("rtr", "r1"), ("cli", "c0")):
            self.ip(role, "ethtool", "-K", dev, *(w for o in OFFLOADS for w in (o, "off")))
            self.ip(role, "ip", "link", "set", dev, "up")
        self.ip("srv", "ip", "addr", "add", f"{SRV_IP}/24", "dev", "s0")
        self.ip("cli", "ip", "addr", "add", f"{CLI_IP}/24", "dev", "c0")
        for role, dev, addr, peer, peer_dev in (
            ("srv", "s0", CLI_IP, "cli", "c0"),
            ("cli", "c0", SRV_IP, "srv", "s0"),
        ):
            mac = self.mac(peer, peer_dev)
            self.ip(role, "ip", "neigh", "replace", addr, "lladdr", mac, "dev", dev, "nud",
                    "permanent")  # fmt: skip
        return self

    def mac(self, role: str, dev: str) -> str:
        info = json.loads(self.ip(role, "ip", "-j", "link", "show", dev))
        return str(info[0]["address"])

    def down(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(5)
        for ns in self.ns.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)

    # --- the two kinds of router -------------------------------------------------------

    def kernel_bridge(self, tc_on_r1: list[list[str]]) -> None:
        """A Linux bridge r0 <-> r1 with ``tc`` commands on r1 (the kernel reference)."""
        self.ip("rtr", "ip", "link", "add", "br0", "type", "bridge")
        for dev in ("r0", "r1"):
            self.ip("rtr", "ip", "link", "set", dev, "master", "br0")
        self.ip("rtr", "ip", "link", "set", "br0", "up")
        self.bridged = True
        for cmd in tc_on_r1:
            self.ip("rtr", "tc", *cmd)

    def unbridge(self) -> None:
        if self.bridged:
            self.ip("rtr", "tc", "qdisc", "del", "dev", "r1", "root", check=False)
            self.ip("rtr", "ip", "link", "del", "br0", check=False)
            self.bridged = False

    @contextlib.contextmanager
    def emulator(
        self,
        workdir: Path,
        a_to_b: Mapping[str, Any] | None,
        events: bool = True,
        extra_args: tuple[str, ...] = (),
        **top: Any,
    ) -> Iterator[Emulator]:
        """cga-emu on rtr between r0 (a, server side) and r1 (b, client side); writes
        EMU.json, stats.jsonl, events.csv and emu.log into ``workdir``."""
        config = {
            "interfaces": {"a": "r0", "b": "r1"},
            "a_to_b": a_to_b,
            "b_to_a": None,
            "stats": {"path": str(workdir / "stats.jsonl"), "interval_ms": 100},
            "events": {"path": str(workdir / "events.csv")} if events else None,
            "seed": 1,
            **top,
        }
        path = write_config(config, workdir / "EMU.json")
        emu = Emulator(
            path, netns=self.ns["rtr"], stderr_path=workdir / "emu.log", extra_args=extra_args
        )
        with emu:
            yield emu

    # --- captures and traffic ------------------------------------------------------------

    def _tap(self, path: Path, dev: str, direction: str) -> subprocess.Popen[bytes]:
        log = path.with_name(path.name + ".log")
        argv = ["tcpdump", "-i", dev, "-Q", direction, "--time-stamp-precision", "nano",
                "-s", "128", "-B", "8192", "-Z", "root", "-w", str(path)]  # fmt: skip
        with log.open("wb") as fh:
            proc = self.spawn("rtr", argv, stdout=fh, stderr=fh)
        deadline = time.monotonic() + 10
        while "listening on" not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"tcpdump on {dev} did not start: {log.read_text()}")
            time.sleep(0.05)
        return proc

    @contextlib.contextmanager
    def taps(self, workdir: Path, drain_s: float = 0.3) -> Iterator[Taps]:
        """tcpdump on rtr: ingress.pcap (-Q in on r0) and egress.pcap (-Q out on r1)."""
        taps = Taps(workdir / "ingress.pcap", workdir / "egress.pcap")
        procs = [self._tap(taps.ingress, "r0", "in"), self._tap(taps.egress, "r1", "out")]
        try:
            yield taps
        finally:
            time.sleep(drain_s)
            for proc in procs:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)
                    proc.wait(10)

    def iperf_server(self, port: int) -> None:
        self.spawn("cli", ["iperf3", "-s", "-1", "-p", str(port)], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 10
        while f":{port} " not in self.ip("cli", "ss", "-ltnH"):
            if time.monotonic() > deadline:
                raise RuntimeError("iperf3 server did not start")
            time.sleep(0.05)

    def iperf(self, port: int, seconds: float, *args: str) -> subprocess.Popen[bytes]:
        """An iperf3 client srv -> cli (its one-shot server started first), JSON output;
        ``args`` such as ``-u -b 20M -l 1000`` or ``-C cubic``."""
        self.iperf_server(port)
        argv = ["iperf3", "-c", CLI_IP, "-p", str(port), "-t", f"{seconds:g}", "-J", *args]
        return self.spawn("srv", argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def udp_sink(self, port: int) -> None:
        if port in self.sinks and self.sinks[port].poll() is None:
            return
        self.sinks[port] = self.spawn("cli", [sys.executable, "-c", UDP_SINK, CLI_IP, str(port)])
        deadline = time.monotonic() + 10
        while f":{port} " not in self.ip("cli", "ss", "-lunH"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the UDP sink on port {port} did not start")
            time.sleep(0.02)

    def paced_udp(
        self, port: int, rate_mbit: float, seconds: float, size: int = 1000, ecn: int = 0
    ) -> subprocess.Popen[bytes]:
        """A smooth UDP flow srv -> cli of ``size``-byte payloads (see :data:`PACED_UDP`)."""
        self.udp_sink(port)
        argv = [sys.executable, "-c", PACED_UDP, f"{rate_mbit:g}", f"{seconds:g}", str(size),
                str(ecn), CLI_IP, str(port)]  # fmt: skip
        return self.spawn("srv", argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_ok(proc: subprocess.Popen[bytes], timeout: float) -> bytes:
    """Waits for a spawned command; its stdout, or RuntimeError with its stderr."""
    out, err = proc.communicate(timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{proc.args!r} failed ({proc.returncode}): {err.decode()[-500:]}")
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def bed(tag: str) -> Iterator[Bed]:
    """A bed that is removed however the block ends (exception, SIGINT or SIGTERM)."""
    b = Bed(tag)

    def on_term(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    old = signal.signal(signal.SIGTERM, on_term)
    try:
        yield b.up()
    finally:
        b.down()
        signal.signal(signal.SIGTERM, old)


# --- analysis helpers over the matcher's packet table --------------------------------------


def steady(packets: pl.DataFrame, skip_s: float = 1.0, guard_s: float = 0.5) -> pl.DataFrame:
    """Rows whose ingress time is ``skip_s`` after the first and ``guard_s`` before the last
    (the queue has filled and has not started draining)."""
    t = packets["t_ingress_ns"]
    lo = int(t.min()) + int(skip_s * 1e9)  # type: ignore[arg-type]
    hi = int(t.max()) - int(guard_s * 1e9)  # type: ignore[arg-type]
    return packets.filter(pl.col("t_ingress_ns").is_between(lo, hi))


def wire_mbit(delivered: pl.DataFrame) -> float:
    """Delivered rate on the wire: IP bytes plus the 14-byte Ethernet header (what HTB and
    cga-emu count), over the egress time span."""
    t = delivered["t_egress_ns"]
    span_s = (int(t.max()) - int(t.min())) / 1e9  # type: ignore[arg-type]
    wire_bytes = int(delivered["size_bytes"].sum()) + 14 * delivered.height
    return wire_bytes * 8 / span_s / 1e6


def quantiles(values: pl.Series, qs: tuple[float, ...] = (0.1, 0.5, 0.9, 0.99)) -> dict[str, float]:
    return {f"p{round(q * 100)}": round(float(values.quantile(q) or 0.0), 3) for q in qs}
