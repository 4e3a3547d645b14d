"""mahimahi driven for real on the netns testbed: its shell between router and client.

::

    srv [srv0] --veth-- [rtr0] rtr [link-PID] ~mm-link~ [ingress] shell [mm1] --veth-- [cli0] cli
    with a delay:    ... shell [delay-PID] ~mm-delay~ [ingress] inner [mm1] --veth-- ...

``mm-link`` starts in the router's namespace as an unprivileged user (mahimahi's tools are
setuid root and refuse to start as root), the command inside its shell only sleeps: the
testbed names the shell's namespace (``ip netns attach``) and joins it to the client's by
a veth, so the client stays an ordinary namespace and the shell routes between router and
client (mahimahi's NAT only rewrites connections opened from inside, which none is). The
captures keep one clock: ``-Q in`` on the router's server side (as for every backend) and
``-Q in`` on the shell's ``ingress`` device, where packets leave mm-link; ``mm-delay``
comes after that, so the propagation delay stays off the capture span.

mahimahi's own logs (``--downlink-log``, ``--uplink-log``: arrivals, departures with their
queueing time, drops, opportunities) are kept in the run directory, and the downlink's is
turned into ``qdisc-stats.jsonl`` records (:mod:`.mmlog`).
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cganalysis.testbed.rendering.mahimahi import MahimahiLink, unprivileged_user
from cganalysis.testbed.shared.hosts import NetnsHost, Proc, TestbedError, wait_for_text

if TYPE_CHECKING:
    from cganalysis.testbed.netns.testbed import NetnsTestbed

READY = "cga-mm-shell"
LINK_READY = "cga-mm-link"
#: The command inside mahimahi's shell: says its PID, then holds the shell open.
INNER = ["sh", "-c", f'echo "{READY} $$"; exec sleep 2147483647']


def link_inner(link: MahimahiLink) -> list[str]:
    """What mm-link runs: the shell that holds it open, or, with a delay, a shell that says
    its PID (mm-link's namespace), waits until the testbed has turned forwarding on there
    (mm-delay refuses to start without it) and becomes mm-delay around that shell."""
    if not link.delay_ms:
        return INNER
    inner = shlex.join(["mm-delay", str(link.delay_ms), *INNER])
    wait = 'until [ "$(cat /proc/sys/net/ipv4/ip_forward)" = 1 ]; do sleep 0.05; done'
    return ["sh", "-c", f'echo "{LINK_READY} $$"; {wait}; exec {inner}']


_ADDR = re.compile(r"^\d+:\s+(\S+)\s+inet\s+([\d.]+)\s+peer\s+([\d.]+)/32")


def _write_rate_trace(rate_mbps: float, path: Path) -> str:
    """A constant rate as a one-second trace (the project's trace writer)."""
    from cganalysis.traces.mahimahi import close_period, opportunities, write_trace

    write_trace(close_period(opportunities(np.full(1000, rate_mbps)), 1000), path)
    return str(path)


def prepare_folder(link: MahimahiLink, user: str) -> tuple[Path, list[str]]:
    """A folder only the unprivileged user (and root) can read and write: the traces
    (copied: the user's folders or a test's may not be readable by it) and the logs mm-link
    writes. Not readable by other users: a trace may be a lab's own measurement."""
    folder = Path(tempfile.mkdtemp(prefix="cga-mm-"))  # 0700
    entry = pwd.getpwnam(user)
    os.chown(folder, entry.pw_uid, entry.pw_gid)
    paths = []
    for name, trace, rate in (
        ("mm-down.trace", link.down_trace, link.down_rate_mbps),
        ("mm-up.trace", link.up_trace, link.up_rate_mbps),
    ):
        if trace is not None:
            shutil.copyfile(trace, folder / name)
        else:
            assert rate is not None
            _write_rate_trace(rate, folder / name)
        (folder / name).chmod(0o600)
        os.chown(folder / name, entry.pw_uid, entry.pw_gid)
        paths.append(str(folder / name))
    for name in ("mm-downlink.log", "mm-uplink.log"):
        (folder / name).touch(mode=0o600)
        os.chown(folder / name, entry.pw_uid, entry.pw_gid)
        paths.append(str(folder / name))
    return folder, paths


def start_shell(router: NetnsHost, link: MahimahiLink) -> tuple[Proc, Path, str]:
    user = unprivileged_user()
    folder, (down, up, down_log, up_log) = prepare_folder(link, user)
    inner = link_inner(link)
    argv = ["runuser", "-u", user, "--", *link.argv(down, up, down_log, up_log, inner)]
    out = router.path("mm-shell.out")
    proc = router.spawn("mm-link", argv, stdout=out, stderr=router.path("mm-shell.log"))
    return proc, folder, user


def shell_pid(router: NetnsHost, proc: Proc, word: str, user: str) -> int:
    """The PID the shell printed after ``word`` (waiting for it)."""
    out = router.path("mm-shell.out")
    try:
        wait_for_text(router, out, word, proc, timeout_s=15.0)
    except TestbedError as err:
        log = router.read_text(router.path("mm-shell.log")).strip()[-400:]
        raise TestbedError(f"mahimahi did not start as {user}: {err}; its output: {log}") from None
    for line in router.read_text(out).splitlines():
        if line.startswith(word + " "):
            return int(line.split()[1])
    raise TestbedError("mahimahi's shell did not say its PID")


def _forwarding(host: NetnsHost) -> None:
    """A shell namespace routes between router and client, over IPv4 only."""
    host.run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
    host.run(["sysctl", "-qw", "net.ipv4.ip_forward=1"])


def tun_peers(host: NetnsHost) -> dict[str, tuple[str, str]]:
    """Point-to-point devices of ``host``: name -> (own address, peer address)."""
    out = {}
    for line in host.run(["ip", "-o", "-4", "addr", "show"]).stdout.splitlines():
        m = _ADDR.match(line)
        if m:
            out[m.group(1)] = (m.group(2), m.group(3))
    return out


def trace_start_ns(log: Path, timeout_s: float = 5.0) -> int | None:
    """mm-link's log header: ``# init timestamp: MS`` (CLOCK_REALTIME) and ``# base
    timestamp: MS`` (since init) give the trace's time 0; its opportunities at millisecond
    m happen in [m, m + 1) ms after it, hence + 0.5 ms."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        head = dict(
            line[2:].split(": ", 1)
            for line in log.read_text(errors="replace").splitlines()[:8]
            if line.startswith("# ") and ": " in line
        )
        if "init timestamp" in head and "base timestamp" in head:
            ms = int(head["init timestamp"]) + int(head["base timestamp"])
            return ms * 1_000_000 + 500_000
        time.sleep(0.05)
    return None


def wire(bed: NetnsTestbed, link: MahimahiLink, net: str) -> dict[str, Any]:
    """mm-link between the testbed's router and client namespaces (module docstring):
    started, its namespaces named and recorded (teardown and ``testbed clean`` remove them),
    the veth to the client, addresses and routes. Returns what the topology needs."""
    router = bed.hosts["rtr"]
    proc, folder, user = start_shell(router, link)
    bed.mm_folder = folder
    shells = []
    if link.delay_ms:
        shells.append(bed.attach("mml", shell_pid(router, proc, LINK_READY, user)))
        _forwarding(shells[-1])  # mm-delay starts once it is on
    shells.append(bed.attach("mmi", shell_pid(router, proc, READY, user)))
    _forwarding(shells[-1])
    shell = shells[0]  # mm-link's: where packets leave the link (the egress tap)
    rtr_tun = next(d for d in tun_peers(router) if d.startswith("link-"))
    bed._veth(("mmi", "mm1"), ("cli", "cli0"))
    for role, dev in (("mmi", "mm1"), ("cli", "cli0")):
        bed._offloads_off(role, dev)
    bed._addr("mmi", "mm1", f"{net}.2.2/24")
    bed._addr("cli", "cli0", f"{net}.2.1/24")
    bed._run(["ip", "route", "add", "default", "via", f"{net}.2.2"], "cli")
    client_net = f"{net}.2.0/24"
    bed._run(["ip", "route", "add", client_net, "via", tun_peers(router)[rtr_tun][1]], "rtr")
    if link.delay_ms:
        delay_tun = next(d for d in tun_peers(shell) if d.startswith("delay-"))
        peer = tun_peers(shell)[delay_tun][1]
        bed._run(["ip", "route", "add", client_net, "via", peer], "mml")
    start_ns = trace_start_ns(folder / "mm-downlink.log")
    return {
        "proc": proc,
        "shell": shell,
        "user": user,
        "trace_start_ns": start_ns,
        "folder": str(folder),
        "router_tun": rtr_tun,
        "command": shlex.join(link.argv("DOWN", "UP", "DOWNLOG", "UPLOG", link_inner(link))),
    }
