"""The ``uml`` backend: a real Linux kernel as the router, at native speed, without KVM.

Server and client are network namespaces of this machine, as in ``netns``; the router is
a user-mode Linux kernel (``uml.host.UmlKernel``) started inside a third namespace, whose
veth ends it attaches with raw sockets. Its bottleneck qdiscs (htb, sfq, netem, fq_codel,
cake, pie, and DualPI2 with scripts/build-uml.sh's kernel), its delay hop and its reverse
path are that kernel's own; the traffic and both captures stay on this machine, so both
taps keep one clock::

    srv [srv0] --veth-- [rtr0]  rtr namespace: UML kernel    [rtr1] --veth-- [cli0] cli
                          vec0 = rtr0 (routes)  bottleneck on vec1 = rtr1

    with a propagation delay, a hairpin after the egress tap:
    ... [rtr1] --veth-- [rtr2] ; [rtr3] --veth-- [cli0] cli
        UML: rtr0, rtr1 in its root namespace (the router), rtr2, rtr3 in its namespace
        ``dly`` with netem: forward delay on rtr3 (towards the client), reverse on rtr2

- The captures are ``-Q in`` on this machine's ``rtr0`` (what the server sent, before the
  kernel reads it) and ``-Q out`` on ``rtr1`` (what the kernel wrote after its
  bottleneck), so ``t_egress - t_ingress`` is the time through the UML router: its queue
  plus its own forwarding time (measured by the calibration's idle floor and in
  docs/testbed.md). The delay hop is after the egress tap, off that span, like the
  emulator's delay hop on the netns testbed.
- The kernel's interfaces are renamed to this machine's names of the veth ends they
  attach (vecN -> rtrN), so the tc commands and the captures name the same interfaces.
- Addresses as the netns backend's kernel router: srv 10.201.1.1/24, router 10.201.1.2 |
  10.201.2.2, cli 10.201.2.1/24; the hairpin is 10.201.3.0/30.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from cganalysis.testbed.netns.testbed import NET, OFFLOADS, NetnsTestbed
from cganalysis.testbed.shared import state
from cganalysis.testbed.shared.hosts import TestbedError, stop_all
from cganalysis.testbed.shared.topology import Layout, Topology
from cganalysis.testbed.uml.boot import usable_kernel
from cganalysis.testbed.uml.config import UmlOptions
from cganalysis.testbed.uml.host import UmlHost, UmlKernel

DELAY_NS = "dly"


def router_script(delay: bool, super_packets: bool = False) -> str:
    """The router's set-up inside the UML kernel, as one shell script (one request: each
    process started in a UML kernel costs tens of milliseconds). ``super_packets`` (the
    run file's ``offloads: kernel``) leaves the interfaces' offloads on and turns TSO on,
    so GSO super-packets cross the router whole, as on a router whose NICs coalesce."""
    lines = [
        "set -e",
        "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true",
        "sysctl -qw net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true",
    ]
    devs = ["rtr0", "rtr1", "rtr2", "rtr3"] if delay else ["rtr0", "rtr1"]
    lines += [f"ip link set vec{i} name {dev}" for i, dev in enumerate(devs)]
    lines += [f"ip addr add {NET}.1.2/24 dev rtr0", "ip link set rtr0 up"]
    if delay:
        d = f"ip netns exec {DELAY_NS}"
        lines += [
            f"ip addr add {NET}.3.1/30 dev rtr1",
            "ip link set rtr1 up",
            f"ip netns add {DELAY_NS}",
            f"ip link set rtr2 netns {DELAY_NS}",
            f"ip link set rtr3 netns {DELAY_NS}",
            f"{d} ip link set lo up",
            f"{d} ip addr add {NET}.3.2/30 dev rtr2",
            f"{d} ip addr add {NET}.2.2/24 dev rtr3",
            f"{d} ip link set rtr2 up",
            f"{d} ip link set rtr3 up",
            f"{d} sysctl -qw net.ipv4.ip_forward=1",
            f"{d} ip route add {NET}.1.0/24 via {NET}.3.1",
            f"ip route add {NET}.2.0/24 via {NET}.3.2",
        ]
    else:
        lines += [f"ip addr add {NET}.2.2/24 dev rtr1", "ip link set rtr1 up"]
    # The vector driver holds back the packets of a batch (xmit_more: GSO segments, bulk
    # dequeues, neither of which happens here with offloads off and no BQL) up to its tx
    # coalescing time before writing them out: 2 jiffies, 20 ms at UML's fixed HZ=100;
    # the shortest it takes is one jiffy.
    # Offloads off in the router too, as on every veth: with GRO on, the kernel merges a
    # TCP burst into one large packet before the qdisc, so a 100-packet pfifo held twice
    # the bytes (measured: 325 ms through HTB 8 Mbit/s + pfifo 100, which drains in 151).
    offloads = " ".join(f"{o} off" for o in OFFLOADS)
    for dev in devs:
        ns = f"ip netns exec {DELAY_NS} " if delay and dev in ("rtr2", "rtr3") else ""
        if super_packets:
            # The vector driver starts with TSO off: it would segment what it forwards.
            lines.append(f"{ns}ethtool -K {dev} tso on 2>/dev/null || true")
        else:
            lines.append(f"{ns}ethtool -K {dev} {offloads} 2>/dev/null || true")
        lines.append(f"{ns}ethtool -C {dev} tx-usecs 0 2>/dev/null || true")
    lines.append("sysctl -qw net.ipv4.ip_forward=1")
    return "\n".join(lines) + "\n"


#: The receiving socket of an interface is bound to every protocol (``*``); the kernel's
#: sending socket (bound to ``[2048]``) never reads, so its count of drops means nothing.
_SKMEM_DROPS = re.compile(r"\s\*:(?P<dev>rtr\d)\s.*skmem:\(.*\bd(?P<drops>\d+)\)")


def socket_drops(ss_output: str) -> dict[str, int]:
    """Packets this machine dropped before the UML kernel read them, per interface: its
    receiving raw socket's buffer overflowed (``ss -0 -m``'s ``d``). Such a packet was
    captured at ingress but never reached the qdisc."""
    out: dict[str, int] = {}
    for m in _SKMEM_DROPS.finditer(ss_output):
        out[m.group("dev")] = out.get(m.group("dev"), 0) + int(m.group("drops"))
    return out


class UmlTestbed(NetnsTestbed):
    """The netns testbed's server and client, and a UML kernel as the router."""

    kind = "uml"

    def __init__(
        self, layout: Layout, workdir: Path, opts: UmlOptions | None = None, tag: str | None = None
    ) -> None:
        if layout.l2_router or layout.delay.emulator_hop:
            raise TestbedError("the uml testbed runs the bottleneck and the delay in its kernel")
        super().__init__(layout, workdir, tag)
        # The netns testbed's record, its user namespace included (an ordinary user's run).
        self.state = state.StateFile(self.tag, {**self.state.data, "backend": "uml"})
        self.opts = opts or UmlOptions()
        self.kernel: UmlKernel | None = None
        self.delay = layout.delay.netem
        self.router_devs: list[str] = []

    def up(self) -> Topology:
        for role in ("srv", "rtr", "cli"):
            self._namespace(role)
        self._veth(("srv", "srv0"), ("rtr", "rtr0"))
        router_devs = ["rtr0", "rtr1"]
        if self.delay:
            self._veth(("rtr", "rtr1"), ("rtr", "rtr2"))
            self._veth(("rtr", "rtr3"), ("cli", "cli0"))
            router_devs += ["rtr2", "rtr3"]
        else:
            self._veth(("rtr", "rtr1"), ("cli", "cli0"))
        self.router_devs = router_devs
        super_packets = self.layout.kernel_offloads
        for role, dev in [("srv", "srv0"), ("cli", "cli0")] + [("rtr", d) for d in router_devs]:
            # `offloads: kernel`: every veth on the path keeps the kernel's defaults (the
            # delay hop is the UML kernel's netem, so its veths too).
            if not super_packets:
                self._offloads_off(role, dev)
            self._run(["ip", "link", "set", dev, "up"], role)
        self._run(["ip", "addr", "add", f"{NET}.1.1/24", "dev", "srv0"], "srv")
        self._run(["ip", "addr", "add", f"{NET}.2.1/24", "dev", "cli0"], "cli")
        self._run(["ip", "route", "add", "default", "via", f"{NET}.1.2"], "srv")
        self._run(["ip", "route", "add", "default", "via", f"{NET}.2.2"], "cli")
        self._endpoints()
        self.kernel = UmlKernel(
            self.opts,
            netns=self.ns("rtr"),
            ifaces=router_devs,
            kernel=usable_kernel(self.opts),
            keep=[self.workdir],
            super_packets=super_packets,
        )
        self.kernel.boot()
        self.state.update(uml_console=str(self.kernel.console))
        router = UmlHost("router", self.kernel, self.workdir)
        script = router_script(self.delay, super_packets)
        self.commands.append(["uml", "sh", "-c", script])
        done = router.run(["sh", "-c", script], check=False)
        if done.returncode != 0:
            raise TestbedError(f"uml router set-up failed: {done.stderr.strip()[-300:]}")
        delay = UmlHost("delay", self.kernel, self.workdir, DELAY_NS) if self.delay else None
        self.topology = Topology(
            server=self.hosts["srv"],
            router=router,
            client=self.hosts["cli"],
            server_ip=f"{NET}.1.1",
            client_ip=f"{NET}.2.1",
            router_in="rtr0",
            router_out="rtr1",
            server_dev="srv0",
            client_dev="cli0",
            delay=self.layout.delay,
            delay_host=delay,
            delay_devs=("rtr2", "rtr3") if self.delay else None,
            details={
                "namespaces": {r: self.ns(r) for r in self.hosts},
                "tag": self.tag,
                "uml": self.kernel.facts,
            },
            tap_host=self.hosts["rtr"],
            input_drops=self._input_drops,
        )
        return self.topology

    def _input_drops(self) -> int:
        return socket_drops(self._ss()).get("rtr0", 0)

    def down(self) -> None:
        """Processes on this machine, the kernel (powered off, then killed), namespaces."""
        stop_all([p for host in self.hosts.values() for p in host.procs], timeout_s=2.0)
        if self.kernel is not None:
            # The kernel's boot and shutdown messages stay with the run.
            self.kernel.stop(console_to=self.workdir / "uml-console.log")
        super().down()

    def _ss(self) -> str:
        return subprocess.run(
            ["ip", "netns", "exec", self.ns("rtr"), "ss", "-0", "-m", "-n"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout

    def counters(self) -> dict[str, Any]:
        """The router's own losses, outside any qdisc: this machine's raw sockets (packets
        the kernel was too slow to read) and the kernel's interface counters."""
        if self.kernel is None or not self.created:
            return {}
        ss = self._ss()
        links: dict[str, Any] = {}
        try:
            router = UmlHost("router", self.kernel, self.workdir)
            hosts = [router] + (
                [UmlHost("delay", self.kernel, self.workdir, DELAY_NS)] if self.delay else []
            )
            for host in hosts:
                text = host.run(["ip", "-s", "-j", "link", "show"], check=False).stdout
                for dev in ("rtr0", "rtr1", "rtr2", "rtr3"):
                    ethtool = host.run(["ethtool", "-S", dev], check=False).stdout
                    if ethtool:
                        links.setdefault("ethtool", {})[dev] = {
                            k.strip(): int(v)
                            for k, _, v in (ln.partition(":") for ln in ethtool.splitlines()[1:])
                            if v.strip().isdigit() and int(v) != 0
                        }
                for link in json.loads(text or "[]"):
                    st = link.get("stats64") or link.get("stats") or {}
                    if str(link.get("ifname", "")).startswith("rtr"):
                        links[link["ifname"]] = {
                            "rx_packets": st.get("rx", {}).get("packets"),
                            "rx_dropped": st.get("rx", {}).get("dropped"),
                            "tx_packets": st.get("tx", {}).get("packets"),
                            "tx_dropped": st.get("tx", {}).get("dropped"),
                        }
        except (TestbedError, ValueError) as err:
            links = {"error": str(err)}
        host_links = subprocess.run(
            ["ip", "netns", "exec", self.ns("rtr"), "ip", "-s", "-j", "link", "show"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        machine: dict[str, Any] = {}
        for link in json.loads(host_links or "[]"):
            st = link.get("stats64") or {}
            if str(link.get("ifname", "")).startswith("rtr"):
                machine[link["ifname"]] = {
                    "rx_dropped": st.get("rx", {}).get("dropped"),
                    "tx_dropped": st.get("tx", {}).get("dropped"),
                }
        return {"socket_drops": socket_drops(ss), "links": links, "machine_links": machine}

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "backend": "uml",
            "uml": self.kernel.facts if self.kernel is not None else None,
            "uml_counters": self.counters(),
            **(
                {"offloads_kept_on": ["srv0", *self.router_devs, "cli0"]}
                if self.layout.kernel_offloads
                else {}
            ),
            "delay_placement": (
                f"netem in the UML kernel's namespace {DELAY_NS}, after the egress tap"
                if self.delay
                else "none"
            ),
        }


def clean_control_folder(st: dict[str, Any], dry_run: bool) -> list[str]:
    """For ``cganalysis testbed clean``: a dead run's control folder (its kernel died with
    its namespace)."""
    console = st.get("uml_console")
    if not console:
        return []
    ctl = Path(str(console)).parent
    if not (ctl.is_dir() and ctl.name.startswith("cga-uml-")):
        return []
    if not dry_run:
        shutil.rmtree(ctl, ignore_errors=True)
    return [f"{'would remove' if dry_run else 'removing'} UML control folder {ctl}"]
