"""What a host offers: qdiscs its kernel accepts, TCP congestion controls, tool versions.

A qdisc counts as available only if the kernel accepts it on a real interface: each kind
is installed on a veth in a scratch namespace created for the probe and removed after
it (the host's own interfaces are never touched). ``tc`` must also know its options:
DualPI2's need iproute2 >= 6.18.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from cganalysis.testbed.shared import state
from cganalysis.testbed.shared.hosts import Host, TestbedError
from cganalysis.testbed.spec.qdisc_kinds import PROBE_ARGS

TOOLS = (
    "tc",
    "ip",
    "ethtool",
    "tcpdump",
    "dumpcap",
    "iperf3",
    "python3",
    "mm-link",
    "mm-delay",
    "cga-emu",
    "cga-cg",
    "sshd",
)
#: iproute2 that parses every DualPI2 option.
DUALPI2_IPROUTE2 = (6, 18)

_cache: dict[str, dict[str, tuple[bool, str | None]]] = {}


@dataclass
class ProbeReport:
    kernel: str
    iproute2: str
    iproute2_version: tuple[int, ...]
    qdiscs: dict[str, tuple[bool, str | None]]
    tcp_cc_available: list[str]
    tcp_cc_default: str
    tools: dict[str, dict[str, str | None]] = field(default_factory=dict)
    #: This host's UML kernels and whether each boots here ("boots" or "cannot boot: why").
    uml_kernels: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "iproute2": {
                "version": self.iproute2,
                "dualpi2_options": self.iproute2_version >= DUALPI2_IPROUTE2,
            },
            "qdiscs": {k: {"accepted": ok, "error": err} for k, (ok, err) in self.qdiscs.items()},
            "tcp_congestion_control": {
                "available": self.tcp_cc_available,
                "default": self.tcp_cc_default,
            },
            "tools": self.tools,
            "uml_kernels": self.uml_kernels,
        }


def iproute2_version(host: Host) -> tuple[str, tuple[int, ...]]:
    out = host.run(["tc", "-V"], check=False).stdout
    m = re.search(r"iproute2-v?(\d+(?:\.\d+)*)", out) or re.search(r"(\d+\.\d+(?:\.\d+)*)", out)
    if not m:
        return (out.strip() or "unknown", (0,))
    return (m.group(1), tuple(int(x) for x in m.group(1).split(".")))


def probe_qdiscs(host: Host, kinds: list[str] | None = None) -> dict[str, tuple[bool, str | None]]:
    """kind -> (accepted, tc's error). Cached per host for the life of the process."""
    kinds = kinds or list(PROBE_ARGS)
    cached = _cache.setdefault(host.name, {})
    todo = [k for k in kinds if k not in cached]
    if todo:
        ns = state.ns_name(state.new_tag(), "probe")
        host.run(["ip", "netns", "add", ns])
        try:
            host.run(["ip", "-n", ns, "link", "add", "p0", "type", "veth", "peer", "name", "p1"])
            for kind in todo:
                res = host.run(
                    [
                        "ip",
                        "netns",
                        "exec",
                        ns,
                        "tc",
                        "qdisc",
                        "add",
                        "dev",
                        "p0",
                        "root",
                        "handle",
                        "1:",
                        kind,
                        *PROBE_ARGS.get(kind, ()),
                    ],
                    check=False,
                )
                ok = res.returncode == 0
                cached[kind] = (ok, None if ok else (res.stderr.strip() or "refused"))
                if ok:
                    host.run(
                        ["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "p0", "root"],
                        check=False,
                    )
        finally:
            host.run(["ip", "netns", "del", ns], check=False)
    return {k: cached[k] for k in kinds}


def which(host: Host, tool: str) -> str | None:
    res = host.run(["sh", "-c", 'command -v "$1"', "sh", tool], check=False)
    return res.stdout.strip() or None


def missing_tools(host: Host, tools: tuple[str, ...] | list[str]) -> list[str]:
    """The tools not on the host's PATH, in one round trip."""
    script = 'for t in "$@"; do command -v "$t" >/dev/null 2>&1 || echo "$t"; done'
    return host.run(["sh", "-c", script, "sh", *tools], check=False).stdout.split()


def tool_version(host: Host, tool: str) -> str | None:
    flags = {
        "tcpdump": ["--version"],
        "ethtool": ["--version"],
        "iperf3": ["--version"],
        "dumpcap": ["--version"],
        "python3": ["--version"],
        "tc": ["-V"],
        "ip": ["-V"],
        "sshd": ["-V"],
    }
    if tool not in flags:
        return None
    res = host.run([tool, *flags[tool]], check=False, timeout_s=10)
    text = (res.stdout or res.stderr).strip()
    return text.splitlines()[0] if text else None


def probe(host: Host, with_qdiscs: bool = True) -> ProbeReport:
    kernel = host.run(["uname", "-r"]).stdout.strip()
    ip2, ip2v = iproute2_version(host)
    cc = host.run(["sysctl", "-n", "net.ipv4.tcp_available_congestion_control"], check=False)
    default = host.run(["sysctl", "-n", "net.ipv4.tcp_congestion_control"], check=False)
    tools: dict[str, dict[str, str | None]] = {}
    for tool in TOOLS:
        path = which(host, tool)
        tools[tool] = {"path": path, "version": tool_version(host, tool) if path else None}
    try:
        qdiscs = probe_qdiscs(host) if with_qdiscs else {}
    except TestbedError as err:
        qdiscs = dict.fromkeys(PROBE_ARGS, (False, f"probe failed: {err}"))
    return ProbeReport(
        kernel=kernel,
        iproute2=ip2,
        iproute2_version=ip2v,
        qdiscs=qdiscs,
        tcp_cc_available=cc.stdout.split(),
        tcp_cc_default=default.stdout.strip(),
        tools=tools,
    )


def format_report(r: ProbeReport) -> str:
    lines = [f"kernel        {r.kernel}", f"iproute2      {r.iproute2}"]
    if r.iproute2_version < DUALPI2_IPROUTE2:
        lines[-1] += "  (dualpi2 options need iproute2 >= 6.18)"
    ok = sorted(k for k, (a, _) in r.qdiscs.items() if a)
    missing = sorted(k for k, (a, _) in r.qdiscs.items() if not a)
    lines.append(f"qdiscs        accepted: {' '.join(ok) or '-'}")
    lines.append(f"              refused:  {' '.join(missing) or '-'}")
    lines.append(
        f"tcp cc        available: {' '.join(r.tcp_cc_available)}; default {r.tcp_cc_default}"
    )
    for tool, info in r.tools.items():
        where = info["path"] or "not found"
        version = f"  ({info['version']})" if info.get("version") else ""
        lines.append(f"{tool:<13} {where}{version}")
    for kernel, verdict in r.uml_kernels.items():
        lines.append(f"uml kernel    {kernel}: {verdict}")
    return "\n".join(lines) + "\n"
