"""The ``netns`` backend: server, router and client as network namespaces on this machine.

::

    srv [srv0] --veth-- [rtr0] rtr [rtr1] --veth-- [cli0] cli
    ... rtr [rtr1] --veth-- [dly0] dly [dly1] --veth-- [cli0] cli   (delay-only emulator hop)

- The delay hop sits on the client's side of the router: the bottleneck then sees the
  senders' own packet spacing, not the hop's. A userspace hop releases what became due at
  each wake-up, so on the server's side its late wake-ups reached the bottleneck as bursts
  (with DualPI2, bursts past the L queue's 1 ms step threshold: CE marks the sender did
  not cause). Forward delay is a_to_b (after the bottleneck), reverse delay b_to_a.

- Kernel bottleneck: the router routes (srv 10.201.1.1/24, rtr 10.201.1.2 | 10.201.2.2,
  cli 10.201.2.1/24). Emulator bottleneck: the router bridges frames and has no IP; server
  and client share 10.201.1.0/24 (docs/emulator.md).
- Every offload off on every veth (TSO/GSO/GRO make 64 KB super-packets; checksum offload
  leaves wrong checksums in captures), unless the run file says `offloads: kernel`: then
  the four veths of server, router and client keep the kernel's defaults and TCP reaches
  the router's qdisc as super-packets, as through hosts whose NICs segment and coalesce.
  IPv6 off (no RS/MLD noise in captures).
- TCP metrics caching off on the endpoints: otherwise each iperf3 step would start from
  the previous connection's ssthresh.
- Run by an ordinary user, the same commands run inside a user namespace that owns the
  namespaces (userns.py); the state file then names it, for ``testbed clean``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from cganalysis.testbed.netns import userns
from cganalysis.testbed.shared import state
from cganalysis.testbed.shared.hosts import NetnsHost, TestbedError
from cganalysis.testbed.shared.topology import Layout, Topology

OFFLOADS = ("tso", "gso", "gro", "tx", "rx")
#: The veths of server, router and client: those `offloads: kernel` leaves as they are.
DATA_VETHS = (("srv", "srv0"), ("rtr", "rtr0"), ("rtr", "rtr1"), ("cli", "cli0"))
NET = "10.201"


class NetnsTestbed:
    kind = "netns"

    def __init__(self, layout: Layout, workdir: Path, tag: str | None = None) -> None:
        self.layout = layout
        self.workdir = workdir
        self.tag = tag or state.new_tag()
        #: An ordinary user's run, in a user namespace of its own (userns.py).
        self.rootless = userns.inside()
        owner = userns.identity() if self.rootless else {}
        self.state = state.StateFile(self.tag, {"backend": "netns", **owner})
        self.created: list[str] = []
        self.commands: list[list[str]] = []
        self.notes: list[str] = []
        self.hosts: dict[str, NetnsHost] = {}
        self.topology: Topology | None = None
        #: The mahimahi link's folder (traces, logs; netns/mahimahi.py), removed at teardown.
        self.mm_folder: Path | None = None

    def ns(self, role: str) -> str:
        return state.ns_name(self.tag, role)

    def _run(self, argv: list[str], role: str | None = None) -> str:
        full = ["ip", "netns", "exec", self.ns(role), *argv] if role else argv
        self.commands.append(full)
        res = subprocess.run(full, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise TestbedError(f"testbed set-up: `{' '.join(full)}` failed: {res.stderr.strip()}")
        return res.stdout

    def _namespace(self, role: str) -> None:
        """A namespace for ``role``, recorded for teardown and clean, IPv6 off, lo up."""
        name = self.ns(role)
        self._run(["ip", "netns", "add", name])
        self.created.append(name)
        self.state.update(namespaces=self.created)
        # A kernel built without IPv6 (the sim testbed's UML kernel) has nothing to turn off.
        if Path("/proc/sys/net/ipv6").is_dir():
            self._run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], role)
            self._run(["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"], role)
        self._run(["ip", "link", "set", "lo", "up"], role)
        self.hosts[role] = NetnsHost(role, name, self.workdir)

    def _offloads_off(self, role: str, dev: str) -> None:
        self._run(["ethtool", "-K", dev, *[w for o in OFFLOADS for w in (o, "off")]], role)

    def _endpoints(self) -> None:
        """Server and client: the run's congestion control and ECN, no cached metrics."""
        for role in ("srv", "cli"):
            self._default_cca(role)
            self._run(["sysctl", "-qw", f"net.ipv4.tcp_ecn={self.layout.ecn}"], role)
            self._run(["sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1"], role)

    def attach(self, role: str, pid: int) -> NetnsHost:
        """Names the network namespace of process ``pid`` as this testbed's ``role`` (one
        that a program made, mahimahi's shell), recorded for teardown like the others."""
        name = self.ns(role)
        self._run(["ip", "netns", "attach", name, str(pid)])
        self.created.append(name)
        self.state.update(namespaces=self.created)
        self.hosts[role] = NetnsHost(role, name, self.workdir)
        return self.hosts[role]

    def up(self) -> Topology:
        if self.layout.mahimahi is not None:
            return self._up_mahimahi()
        roles = ["srv", "rtr", "cli"] + (["dly"] if self.layout.delay.emulator_hop else [])
        for role in roles:
            self._namespace(role)
        self._veth(("srv", "srv0"), ("rtr", "rtr0"))
        if "dly" in roles:
            self._veth(("rtr", "rtr1"), ("dly", "dly0"))
            self._veth(("dly", "dly1"), ("cli", "cli0"))
        else:
            self._veth(("rtr", "rtr1"), ("cli", "cli0"))
        devs = list(DATA_VETHS)
        if "dly" in roles:
            devs += [("dly", "dly0"), ("dly", "dly1")]
        for role, dev in devs:
            # The delay hop's veths stay off either way: its userspace emulator reads frames.
            if not (self.layout.kernel_offloads and (role, dev) in DATA_VETHS):
                self._offloads_off(role, dev)
        if self.layout.l2_router:
            srv_ip, cli_ip = f"{NET}.1.1", f"{NET}.1.2"
            self._addr("srv", "srv0", f"{srv_ip}/24")
            self._addr("cli", "cli0", f"{cli_ip}/24")
            bridged = [("rtr", "rtr0"), ("rtr", "rtr1")]
        else:
            srv_ip, cli_ip = f"{NET}.1.1", f"{NET}.2.1"
            self._addr("srv", "srv0", f"{srv_ip}/24")
            self._addr("rtr", "rtr0", f"{NET}.1.2/24")
            self._addr("rtr", "rtr1", f"{NET}.2.2/24")
            self._addr("cli", "cli0", f"{cli_ip}/24")
            self._run(["sysctl", "-qw", "net.ipv4.ip_forward=1"], "rtr")
            self._run(["ip", "route", "add", "default", "via", f"{NET}.1.2"], "srv")
            self._run(["ip", "route", "add", "default", "via", f"{NET}.2.2"], "cli")
            bridged = []
        if "dly" in roles:
            bridged += [("dly", "dly0"), ("dly", "dly1")]
        for role, dev in bridged:
            # A bump in the wire: frames for other hosts must reach the emulator's socket.
            self._run(["ip", "link", "set", dev, "promisc", "on", "up"], role)
        self._endpoints()
        self.topology = Topology(
            server=self.hosts["srv"],
            router=self.hosts["rtr"],
            client=self.hosts["cli"],
            server_ip=srv_ip,
            client_ip=cli_ip,
            router_in="rtr0",
            router_out="rtr1",
            server_dev="srv0",
            client_dev="cli0",
            delay=self.layout.delay,
            delay_host=self.hosts.get("dly"),
            delay_devs=("dly0", "dly1") if "dly" in roles else None,
            details={"namespaces": {r: self.ns(r) for r in roles}, "tag": self.tag},
        )
        return self.topology

    def _up_mahimahi(self) -> Topology:
        """Server and router as for the kernel, the client behind mahimahi's shell."""
        from cganalysis.testbed.netns.mahimahi import wire

        assert self.layout.mahimahi is not None
        if self.rootless:
            raise TestbedError(
                "netns testbed: mahimahi runs as root only (its shell changes user; "
                "mm-link's helpers are setuid): run this experiment as root"
            )
        for role in ("srv", "rtr", "cli"):
            self._namespace(role)
        self._veth(("srv", "srv0"), ("rtr", "rtr0"))
        for role, dev in (("srv", "srv0"), ("rtr", "rtr0")):
            self._offloads_off(role, dev)
        self._addr("srv", "srv0", f"{NET}.1.1/24")
        self._addr("rtr", "rtr0", f"{NET}.1.2/24")
        self._run(["sysctl", "-qw", "net.ipv4.ip_forward=1"], "rtr")
        self._run(["ip", "route", "add", "default", "via", f"{NET}.1.2"], "srv")
        mm = wire(self, self.layout.mahimahi, NET)
        self._endpoints()
        self.topology = Topology(
            server=self.hosts["srv"],
            router=self.hosts["rtr"],
            client=self.hosts["cli"],
            server_ip=f"{NET}.1.1",
            client_ip=f"{NET}.2.1",
            router_in="rtr0",
            router_out="ingress",
            server_dev="srv0",
            client_dev="cli0",
            delay=self.layout.delay,
            egress_host=mm["shell"],
            egress_direction="in",
            details={
                "namespaces": {r: self.ns(r) for r in self.hosts},
                "tag": self.tag,
                "mahimahi": {k: mm[k] for k in ("user", "router_tun", "command", "folder")},
                "mahimahi_trace_start_ns": mm["trace_start_ns"],
            },
        )
        return self.topology

    def _default_cca(self, role: str) -> None:
        """The namespace's default congestion control, where the kernel lets us set it.

        A namespace other than the initial one may only pick a control listed in
        net.ipv4.tcp_allowed_congestion_control; iperf3 -C sets it per socket anyway
        (root may pick any available one), so a refusal here is only noted.
        """
        argv = [
            "ip",
            "netns",
            "exec",
            self.ns(role),
            "sysctl",
            "-qw",
            f"net.ipv4.tcp_congestion_control={self.layout.cca}",
        ]
        self.commands.append(argv)
        res = subprocess.run(argv, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            self.notes.append(
                f"{role}: default congestion control not set to {self.layout.cca} "
                f"({res.stderr.strip()}); iperf3 -C sets it on its sockets"
            )

    def _veth(self, a: tuple[str, str], b: tuple[str, str]) -> None:
        self._run(
            [
                "ip",
                "-n",
                self.ns(a[0]),
                "link",
                "add",
                a[1],
                "type",
                "veth",
                "peer",
                "name",
                b[1],
                "netns",
                self.ns(b[0]),
            ]
        )

    def _addr(self, role: str, dev: str, cidr: str) -> None:
        self._run(["ip", "addr", "add", cidr, "dev", dev], role)
        self._run(["ip", "link", "set", dev, "up"], role)

    def down(self) -> None:
        """Processes first (each host's, politely), then whatever is left, then namespaces."""
        from cganalysis.testbed.shared.hosts import stop_all

        stop_all([p for host in self.hosts.values() for p in host.procs], timeout_s=2.0)
        for name in reversed(self.created):
            state.delete_namespace(name)
        self.created.clear()
        if self.mm_folder is not None:
            shutil.rmtree(self.mm_folder, ignore_errors=True)
        self.state.remove()

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "netns",
            "tag": self.tag,
            "namespaces": [self.ns(r) for r in self.hosts],
            **({"user_namespace": True} if self.rootless else {}),
            "offloads_off": list(OFFLOADS),
            **(
                {"offloads_kept_on": [dev for _, dev in DATA_VETHS]}
                if self.layout.kernel_offloads
                else {}
            ),
            "setup_commands": [" ".join(c) for c in self.commands],
            "notes": self.notes,
        }
