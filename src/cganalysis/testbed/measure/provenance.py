"""What the host was when a run ran: kernel, sysctls, tool versions, offloads, git state.

Collected per host (server, router, client) through the same :class:`Host` interface the
run uses, so ssh testbeds record the remote machines, not the controller. One shell
script per host gathers everything (a round trip per fact would cost seconds over ssh).
"""

from __future__ import annotations

import platform
import re
import subprocess
from pathlib import Path
from typing import Any

from cganalysis import __version__
from cganalysis.dependencies import software
from cganalysis.testbed.shared.hosts import Host

SYSCTLS = (
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_available_congestion_control",
    "net.ipv4.tcp_ecn",
    "net.ipv4.tcp_no_metrics_save",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.default_qdisc",
    "net.ipv4.ip_forward",
)
OFFLOAD_KEYS = {
    "tcp-segmentation-offload": "tso",
    "generic-segmentation-offload": "gso",
    "generic-receive-offload": "gro",
    "tx-checksumming": "tx",
    "rx-checksumming": "rx",
    "large-receive-offload": "lro",
}
#: tool -> the command that prints its version (first line kept).
VERSIONS = {
    "tc": "tc -V",
    "tcpdump": "tcpdump --version 2>&1",
    "iperf3": "iperf3 --version",
    "ethtool": "ethtool --version",
    "python3": "python3 --version 2>&1",
    "cga-emu": "command -v cga-emu",
    "cga-cg": "command -v cga-cg",
}
#: git is asked about the checkout holding the package's own source (an editable install);
#: a wheel install is in no work tree, and then the commit is unknown (null).
PACKAGE_DIR = Path(__file__).resolve().parents[2]

# Devices come as "$@"; everything else is constant text.
_SCRIPT = "\n".join(
    [
        "echo @@hostname; uname -n",
        "echo @@kernel; uname -srvm",
        *[f"echo '@@sysctl {k}'; sysctl -n {k} 2>/dev/null" for k in SYSCTLS],
        'for d in "$@"; do echo "@@ethtool $d"; ethtool -k "$d" 2>/dev/null; done',
        *[f"echo '@@tool {t}'; {cmd} 2>/dev/null | head -n 1" for t, cmd in VERSIONS.items()],
    ]
)


def parse_offloads(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([a-z-]+):\s+(on|off)", line.strip())
        if m and m.group(1) in OFFLOAD_KEYS:
            out[OFFLOAD_KEYS[m.group(1)]] = m.group(2)
    return out


def offloads(host: Host, dev: str) -> dict[str, str]:
    return parse_offloads(host.run(["ethtool", "-k", dev], check=False).stdout)


def host_facts(host: Host, devs: list[str]) -> dict[str, Any]:
    out = host.run(["sh", "-c", _SCRIPT, "sh", *devs], check=False, timeout_s=60).stdout
    sections: dict[str, list[str]] = {}
    current = ""
    for line in out.splitlines():
        if line.startswith("@@"):
            current = line[2:]
            sections[current] = []
        elif current:
            sections[current].append(line)

    def text(key: str) -> str | None:
        value = " ".join(" ".join(sections.get(key, [])).split())
        return value or None

    return {
        "hostname": text("hostname"),
        "kernel": text("kernel"),
        "sysctls": {k: text(f"sysctl {k}") for k in SYSCTLS},
        "offloads": {d: parse_offloads("\n".join(sections.get(f"ethtool {d}", []))) for d in devs},
        "tools": {t: text(f"tool {t}") for t in VERSIONS},
    }


def git_state() -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            res = subprocess.run(
                ["git", "-C", str(PACKAGE_DIR), *args],
                capture_output=True,
                text=True,
                check=False,
                timeout=10,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return res.stdout.strip() if res.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def controller() -> dict[str, Any]:
    """The machine that ran the run and the software its Python side ran (the versions of
    the packages that computed its tables, and the lock they were installed from)."""
    return {
        "hostname": platform.node(),
        "python": platform.python_version(),
        "cganalysis": __version__,
        "git": git_state(),
        "software": software(),
    }
