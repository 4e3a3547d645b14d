"""A minimal namespace bottleneck for the CG generator's integration tests (needs root).

Three namespaces made for one test module and removed afterwards (also on error, SIGINT or
SIGTERM)::

    srv 10.89.1.1 [s0] --veth-- [r0] 10.89.1.2  rtr  10.89.2.2 [r1] --veth-- [c0] 10.89.2.1 cli

rtr forwards; its interface towards cli is the bottleneck: a kernel shaper (TBF, burst
32 kB, or HTB) with a ``pfifo limit 250`` leaf. Offloads are off on every veth, so the
pfifo holds real packets. Two taps on rtr (``tcpdump -Q in`` on r0, ``-Q out`` on r1,
nanosecond timestamps, snaplen 128) give per-packet queuing delay through
``cganalysis.matching.match_files``. Names carry the pid and a counter, so parallel runs of
the suite never collide.

Kept independent of ``cganalysis.testbed`` on purpose: these tests check the generator,
not the testbed.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

SRV_IP, CLI_IP = "10.89.1.1", "10.89.2.1"
_counter = itertools.count()


class NetnsError(RuntimeError):
    pass


class Bottleneck:
    """srv -> rtr -> cli with a shaped, drop-tail bottleneck on rtr towards cli."""

    def __init__(
        self,
        rate_mbit: float = 20.0,
        limit_packets: int = 250,
        shaper: str = "tbf",
        burst: str = "32k",
    ) -> None:
        n = next(_counter)
        tag = f"{os.getpid() % 100000}x{n}"
        self.ns = {"srv": f"cgs{tag}", "rtr": f"cgr{tag}", "cli": f"cgc{tag}"}
        self.rate_mbit = rate_mbit
        self.limit_packets = limit_packets
        self.shaper = shaper
        self.burst = burst
        self.out_dev = "r1"
        self.in_dev = "r0"
        self.procs: list[subprocess.Popen[bytes]] = []
        self._old_term: Any = None

    # -- commands ---------------------------------------------------------------------

    def argv(self, ns: str, cmd: Sequence[str] | str) -> list[str]:
        args = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
        return ["ip", "netns", "exec", self.ns[ns], *args]

    def run(self, ns: str, cmd: Sequence[str] | str, check: bool = True) -> str:
        argv = self.argv(ns, cmd)
        res = subprocess.run(argv, capture_output=True, text=True, check=False)
        if check and res.returncode != 0:
            raise NetnsError(f"{shlex.join(argv)} failed: {res.stderr.strip()}")
        return res.stdout

    def spawn(self, ns: str, cmd: Sequence[str] | str, **kw: Any) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(self.argv(ns, cmd), **kw)
        self.procs.append(proc)
        return proc

    # -- life cycle -------------------------------------------------------------------

    def __enter__(self) -> Bottleneck:
        self._old_term = signal.signal(signal.SIGTERM, _raise_exit)
        try:
            self._setup()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.teardown()

    def _setup(self) -> None:
        for ns in self.ns.values():
            _host(f"ip netns add {ns}")
        for key in self.ns:
            self.run(key, "sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
            self.run(key, "ip link set lo up")
        srv, rtr, cli = self.ns["srv"], self.ns["rtr"], self.ns["cli"]
        _host(f"ip -n {srv} link add s0 type veth peer name r0 netns {rtr}")
        _host(f"ip -n {rtr} link add r1 type veth peer name c0 netns {cli}")
        for ns, dev, addr in (
            ("srv", "s0", f"{SRV_IP}/24"),
            ("rtr", "r0", "10.89.1.2/24"),
            ("rtr", "r1", "10.89.2.2/24"),
            ("cli", "c0", f"{CLI_IP}/24"),
        ):
            self.run(ns, f"ethtool -K {dev} tso off gso off gro off")
            self.run(ns, f"ip addr add {addr} dev {dev}")
            self.run(ns, f"ip link set {dev} up")
        self.run("rtr", "sysctl -qw net.ipv4.ip_forward=1")
        self.run("srv", "ip route add default via 10.89.1.2")
        self.run("cli", "ip route add default via 10.89.2.2")
        dev, rate = self.out_dev, f"{self.rate_mbit:g}mbit"
        if self.shaper == "tbf":
            self.run(
                "rtr",
                f"tc qdisc add dev {dev} root handle 1: tbf rate {rate} burst {self.burst} "
                "latency 1s",
            )
            self.run(
                "rtr",
                f"tc qdisc add dev {dev} parent 1:1 handle 10: pfifo limit {self.limit_packets}",
            )
        elif self.shaper == "htb":
            self.run("rtr", f"tc qdisc add dev {dev} root handle 1: htb default 1")
            self.run(
                "rtr",
                f"tc class add dev {dev} parent 1: classid 1:1 htb rate {rate} ceil {rate} "
                f"burst {self.burst} quantum 1514",
            )
            self.run(
                "rtr",
                f"tc qdisc add dev {dev} parent 1:1 handle 10: pfifo limit {self.limit_packets}",
            )
        else:
            raise NetnsError(f"unknown shaper {self.shaper!r} (tbf or htb)")
        self.run("srv", f"ping -c 2 -i 0.2 -W 1 {CLI_IP}")  # ARP resolved before any capture

    def teardown(self) -> None:
        for proc in self.procs:
            stop(proc, signal.SIGTERM, 3.0)
        self.procs.clear()
        for ns in self.ns.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        if self._old_term is not None:
            signal.signal(signal.SIGTERM, self._old_term)
            self._old_term = None

    # -- measurement ------------------------------------------------------------------

    def start_taps(self, out: Path) -> list[subprocess.Popen[bytes]]:
        """tcpdump on rtr: ingress.pcap (r0, in) and egress.pcap (r1, out); waits until both
        listen. Their stderr goes to ``<pcap>.log`` (the matcher reads capture drops)."""
        taps = []
        for name, dev, direction in (
            ("ingress.pcap", self.in_dev, "in"),
            ("egress.pcap", self.out_dev, "out"),
        ):
            log_path = out / f"{name}.log"
            cmd = shlex.split(
                f"tcpdump -i {dev} -Q {direction} --time-stamp-precision nano -s 128 "
                f"-B 8192 -Z root -w {out / name} 'udp or tcp'"
            )
            with log_path.open("wb") as log:
                proc = self.spawn("rtr", cmd, stdout=log, stderr=log)
            deadline = time.monotonic() + 10
            while "listening on" not in log_path.read_text(errors="replace"):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise NetnsError(f"tcpdump on {dev} did not start: {log_path.read_text()}")
                time.sleep(0.05)
            taps.append(proc)
        return taps

    def qdisc_stats(self) -> dict[str, int]:
        """Bytes, packets and drops of the pfifo leaf (what left through the shaper)."""
        stats = json.loads(self.run("rtr", f"tc -s -j qdisc show dev {self.out_dev}"))
        leaf = next(q for q in stats if q.get("kind") == "pfifo")
        return {k: int(leaf.get(k, 0)) for k in ("bytes", "packets", "drops")}


def _host(cmd: str) -> None:
    res = subprocess.run(shlex.split(cmd), capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise NetnsError(f"{cmd} failed: {res.stderr.strip()}")


def stop(
    proc: subprocess.Popen[bytes], sig: int = signal.SIGINT, timeout: float = 10
) -> int | None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def _raise_exit(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)
