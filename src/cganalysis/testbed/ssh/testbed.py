"""The ``ssh`` backend: the same roles on bare hosts described in a testbed file.

::

    backend: ssh
    ssh: {user: root, port: 22, identity: ~/.ssh/cga_testbed, become: none,
          connect_timeout_s: 5}
    workdir: /tmp                     # remote base directory for a run's files
    hosts:
      server: {address: 192.0.2.10, dev: eth1, data_ip: 10.0.1.1}
      router: {address: 192.0.2.11, in_dev: eth1, out_dev: eth2}
      client: {address: 192.0.2.12, dev: eth1, data_ip: 10.0.2.1}

Each host may override ``user``, ``port``, ``identity`` and ``become``. Host keys are
this machine's business (ssh/host.py, :func:`local_host_keys`): a testbed file that names
``known_hosts`` or ``strict_host_key_checking`` is refused, as it is shared. The router may
instead be a VM guest booted here for the run, with its own kernel and sshd
(``router: {vm: {...}, in_bridge, out_bridge, in_ip, out_ip, ...}``, ssh/vmrouter.py). The
hosts' links, addresses and routes are the operator's: the testbed checks them (read-only) before
anything is touched, then turns offloads off on the data interfaces and sets the TCP
sysctls it needs, and restores both afterwards. Teardown also removes the qdiscs it put
on the router (and netem on the endpoints), stops every process it started and deletes
its remote work directories. ``cganalysis testbed clean`` does the same for a run that
died, from /run/cganalysis/testbeds.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from cganalysis.io import read_yaml
from cganalysis.testbed.netns.testbed import OFFLOADS
from cganalysis.testbed.shared import state
from cganalysis.testbed.shared.hosts import TestbedError, stop_all
from cganalysis.testbed.shared.topology import Layout, Topology
from cganalysis.testbed.spec.validate import HOSTNAME, IFNAME, IPV4, SAFE_PATH, USERNAME, Section
from cganalysis.testbed.ssh.host import (
    HOST_KEY_POLICY_ENV,
    KNOWN_HOSTS_ENV,
    SshHost,
    SshTarget,
    control_dir,
    local_host_keys,
)
from cganalysis.testbed.ssh.vmrouter import VmRouter, VmRouterEntry, is_vm_router, parse_router

ROLES = ("server", "router", "client")
SYSCTLS = {"net.ipv4.tcp_no_metrics_save": "1"}


@dataclass(frozen=True)
class HostEntry:
    """One host of the testbed file (``hosts.ROLE``), checked but not yet reached."""

    role: str
    target: SshTarget
    devs: dict[str, str]  # key in the file -> interface name
    data_ip: str | None
    #: The router as a VM guest booted for the run (its target is known once it runs).
    vm: VmRouterEntry | None = None


@dataclass(frozen=True)
class SshTestbedConfig:
    path: Path
    workdir: str
    hosts: dict[str, HostEntry]


#: Keys a testbed file once had and may no longer give, and where each setting lives now.
LOCAL_ONLY = {
    "known_hosts": f"set {KNOWN_HOSTS_ENV}=PATH on this machine (default: ~/.ssh/known_hosts)",
    "strict_host_key_checking": (
        f"host keys are always checked; {HOST_KEY_POLICY_ENV}=accept-new on this machine "
        "lets a first contact add its key"
    ),
}


def _refuse_local_only(sec: Section) -> None:
    """A shared testbed file must not choose how host keys are checked."""
    for key, instead in LOCAL_ONLY.items():
        if key in sec.data:
            raise sec.error(key, f"not taken from a testbed file (shared): remove it; {instead}")


def parse_testbed(data: Any, where: str) -> SshTestbedConfig:
    sec = Section(data, where)
    backend = sec.choice("backend", ("ssh", "netns"))
    if backend != "ssh":
        raise sec.error("backend", "this is a netns testbed: use `testbed: netns` in the run")
    ssh = sec.sub("ssh")
    _refuse_local_only(ssh)
    user = ssh.string("user", "root", pattern=USERNAME)
    port = ssh.integer("port", 22, minimum=1, maximum=65535)
    identity = ssh.opt_string("identity", pattern=SAFE_PATH)
    known_hosts, strict = local_host_keys()
    become = ssh.choice("become", ("none", "sudo"), "none")
    timeout = ssh.integer("connect_timeout_s", 5, minimum=1, maximum=120)
    ssh.finish()
    workdir = sec.string("workdir", "/tmp", pattern=SAFE_PATH)
    hosts_sec = sec.sub("hosts")
    hosts: dict[str, HostEntry] = {}
    dev_keys = {"server": ("dev",), "router": ("in_dev", "out_dev"), "client": ("dev",)}
    for role in ROLES:
        h = hosts_sec.sub(role)
        _refuse_local_only(h)
        if not h.data:
            raise hosts_sec.error(role, "required: address and interfaces of this host")
        if role == "router" and is_vm_router(h):
            vm = parse_router(h)
            key = h.opt_string("identity", pattern=SAFE_PATH) or identity
            h.finish()
            target = SshTarget("127.0.0.1", "root", 22, key, None, "yes", "none", timeout)
            devs = {f"{s}_dev": d for s, d in vm.devs.items()}
            hosts[role] = HostEntry(role, target, devs, None, vm)
            continue
        target = SshTarget(
            address=h.string("address", pattern=HOSTNAME),
            user=h.string("user", user, pattern=USERNAME),
            port=h.integer("port", port, minimum=1, maximum=65535),
            identity=h.opt_string("identity", pattern=SAFE_PATH) or identity,
            known_hosts=known_hosts,
            strict_host_key_checking=strict,
            become=h.choice("become", ("none", "sudo"), become),
            connect_timeout_s=timeout,
        )
        devs = {k: h.string(k, pattern=IFNAME) for k in dev_keys[role]}
        data_ip = h.string("data_ip", pattern=IPV4) if role != "router" else None
        h.finish()
        hosts[role] = HostEntry(role, target, devs, data_ip)
    hosts_sec.finish()
    sec.finish()
    return SshTestbedConfig(Path(where), workdir, hosts)


def load_testbed(path: Path) -> SshTestbedConfig:
    return parse_testbed(read_yaml(path), str(path))


TOOLS = {
    "server": ("iperf3", "python3", "ping", "ethtool", "sysctl"),
    "router": ("tc", "tcpdump", "python3", "ethtool"),
    "client": ("iperf3", "python3", "ss", "ethtool", "sysctl"),
}


def _check_host(cfg: SshTestbedConfig, entry: HostEntry, host: SshHost) -> None:
    """Read-only: the host answers, we are root there, its tools, interfaces and address
    exist."""
    uid = host.run(["id", "-u"], check=False)
    if uid.stdout.strip() != "0":
        raise TestbedError(
            f"{cfg.path}: hosts.{entry.role}: {entry.target.user}@{entry.target.address} is not "
            "root there; log in as root or set become: sudo (with passwordless sudo)"
        )
    from cganalysis.testbed.measure.probe import missing_tools

    missing = missing_tools(host, TOOLS[entry.role])
    if missing:
        raise TestbedError(
            f"{cfg.path}: hosts.{entry.role}: {', '.join(missing)} not found on "
            f"{entry.target.address}; install them there (Debian: iperf3, python3, "
            "iputils-ping, ethtool, iproute2, tcpdump)"
        )
    links = json.loads(host.run(["ip", "-j", "link", "show"]).stdout or "[]")
    names = [link.get("ifname") for link in links]
    for key, dev in entry.devs.items():
        if dev not in names:
            raise TestbedError(
                f"{cfg.path}: hosts.{entry.role}.{key}: interface {dev!r} does not exist on "
                f"{entry.target.address} (it has: {', '.join(str(n) for n in names)})"
            )
    if entry.data_ip is not None:
        dev = entry.devs["dev"]
        addrs = json.loads(host.run(["ip", "-j", "-4", "addr", "show", "dev", dev]).stdout or "[]")
        have = [a.get("local") for entry in addrs for a in entry.get("addr_info", [])]
        if entry.data_ip not in have:
            raise TestbedError(
                f"{cfg.path}: hosts.{entry.role}.data_ip: {entry.data_ip} is not an address of "
                f"{dev} on {entry.target.address} (it has: {', '.join(map(str, have)) or 'none'})"
            )


def boot_router(cfg: SshTestbedConfig, progress: Any = None) -> VmRouter | None:
    """The VM router of ``cfg``, booted (or the one a probe in this process booted)."""
    entry = cfg.hosts["router"]
    if entry.vm is None:
        return None
    from cganalysis.testbed.ssh import vmrouter

    router = vmrouter.take(str(cfg.path.resolve()))
    if router is None:
        say = progress or (lambda m: print(m, file=sys.stderr, flush=True))
        router = VmRouter(entry.vm, str(cfg.path), entry.target, say)
        router.boot()
    return router


def _target(entry: HostEntry, router: VmRouter | None) -> SshTarget:
    if entry.vm is not None and router is not None and router.target is not None:
        return router.target
    return entry.target


@contextmanager
def probing_ssh(path: Path) -> Iterator[SshHost]:
    """Checks every host (read-only) and yields the router, where qdiscs are probed. A VM
    router is booted for it and kept for the run that follows in this process."""
    cfg = load_testbed(path)
    ctl = control_dir()
    router = boot_router(cfg)
    hosts = {r: SshHost(r, _target(s, router), ctl) for r, s in cfg.hosts.items()}
    try:
        for role, entry in cfg.hosts.items():
            _check_host(cfg, entry, hosts[role])
        yield hosts["router"]
    except BaseException:
        if router is not None:
            router.stop()
            router = None
        raise
    finally:
        for h in hosts.values():
            h.close()
        shutil.rmtree(ctl, ignore_errors=True)
        if router is not None:
            from cganalysis.testbed.ssh import vmrouter

            vmrouter.park(str(cfg.path.resolve()), router)


class SshTestbed:
    kind = "ssh"

    def __init__(self, cfg: SshTestbedConfig, layout: Layout, workdir: Path) -> None:
        if layout.delay.emulator_hop:
            raise TestbedError(
                f"{cfg.path}: a delay-only emulator hop needs its own host between server and "
                "router; on bare hosts give the delay with netem (propagation.via: netem) or "
                "set it up on the hosts yourself"
            )
        self.cfg = cfg
        self.layout = layout
        self.local_workdir = workdir
        self.tag = state.new_tag()
        self.state = state.StateFile(self.tag, {"backend": "ssh", "testbed_file": str(cfg.path)})
        self.ctl = control_dir()
        self.hosts: dict[str, SshHost] = {}
        self.remote_dirs: dict[str, str] = {}
        self.saved: dict[str, dict[str, Any]] = {}
        self.vm: VmRouter | None = None

    @classmethod
    def from_file(cls, path: Path, layout: Layout, workdir: Path) -> SshTestbed:
        return cls(load_testbed(path), layout, workdir)

    def _record(self) -> None:
        self.state.update(
            hosts={r: {**h.target.__dict__} for r, h in self.hosts.items()},
            remote_dirs=self.remote_dirs,
            # With each pid its token (procmark.py): clean kills only what still carries it.
            procs={
                r: [{"pid": p.pid, "marker": p.marker} for p in h.procs]
                for r, h in self.hosts.items()
            },
            devs={r: list(s.devs.values()) for r, s in self.cfg.hosts.items()},
            saved=self.saved,
            # Nothing to undo in a guest that is gone (its own state file kills its QEMU).
            vm_roles=["router"] if self.vm is not None else [],
        )

    def up(self) -> Topology:
        self.vm = boot_router(self.cfg)
        if self.vm is not None:
            self.vm.attach()
        for role, entry in self.cfg.hosts.items():
            host = SshHost(role, _target(entry, self.vm), self.ctl)
            self.hosts[role] = host
            _check_host(self.cfg, entry, host)
            tmpl = f"{self.cfg.workdir}/cgatb-{self.tag}-XXXXXX"
            host.workdir = host.run(["mktemp", "-d", tmpl]).stdout.strip()
            self.remote_dirs[role] = host.workdir
            self._record()
            self.saved[role] = self._save(host, list(entry.devs.values()), role != "router")
            self._record()
            for dev in entry.devs.values():
                host.run(["ethtool", "-K", dev, *[w for o in OFFLOADS for w in (o, "off")]])
            if role != "router":
                for key, value in {**SYSCTLS, "net.ipv4.tcp_ecn": str(self.layout.ecn)}.items():
                    host.run(["sysctl", "-qw", f"{key}={value}"])
        s, r, c = (self.cfg.hosts[k] for k in ROLES)
        assert s.data_ip is not None and c.data_ip is not None
        return Topology(
            server=self.hosts["server"],
            router=self.hosts["router"],
            client=self.hosts["client"],
            server_ip=s.data_ip,
            client_ip=c.data_ip,
            router_in=r.devs["in_dev"],
            router_out=r.devs["out_dev"],
            server_dev=s.devs["dev"],
            client_dev=c.devs["dev"],
            delay=self.layout.delay,
            details={
                "tag": self.tag,
                "hosts": {k: v.target.address for k, v in self.hosts.items()},
                "remote_dirs": self.remote_dirs,
            },
        )

    def _save(self, host: SshHost, devs: list[str], endpoint: bool) -> dict[str, Any]:
        """Offload and sysctl settings before we change them, to put them back."""
        from cganalysis.testbed.measure.provenance import offloads

        saved: dict[str, Any] = {"offloads": {d: offloads(host, d) for d in devs}}
        if endpoint:
            keys = [*SYSCTLS, "net.ipv4.tcp_ecn"]
            saved["sysctls"] = {
                k: host.run(["sysctl", "-n", k], check=False).stdout.strip() for k in keys
            }
        return saved

    def down(self) -> None:
        stop_all([p for host in self.hosts.values() for p in host.procs], timeout_s=2.0)
        for role, host in self.hosts.items():
            if not (role == "router" and self.vm is not None):  # the guest goes whole
                undo(
                    host,
                    list(self.cfg.hosts[role].devs.values()),
                    self.saved.get(role, {}),
                    self.remote_dirs.get(role),
                )
            host.close()
        if self.vm is not None:
            self.vm.stop()
        shutil.rmtree(self.ctl, ignore_errors=True)
        self.state.remove()

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "ssh",
            "testbed_file": str(self.cfg.path),
            "hosts": {
                r: {k: v for k, v in h.target.__dict__.items() if k != "identity"}
                for r, h in self.hosts.items()
            },
            "offloads_off": list(OFFLOADS),
            "saved_settings": self.saved,
            **({"vm": self.vm.describe()} if self.vm is not None else {}),
        }


def undo(host: SshHost, devs: list[str], saved: dict[str, Any], remote_dir: str | None) -> None:
    """Removes our qdiscs, restores offloads and sysctls, deletes the work directory."""
    for dev in devs:
        host.run(["tc", "qdisc", "del", "dev", dev, "root"], check=False)
        before = saved.get("offloads", {}).get(dev, {})
        words = [w for k, v in before.items() if k in OFFLOADS for w in (k, v)]
        if words:
            host.run(["ethtool", "-K", dev, *words], check=False)
    for key, value in saved.get("sysctls", {}).items():
        # Only what up() changed, back to a number (``saved`` may come from a state file).
        if key in (*SYSCTLS, "net.ipv4.tcp_ecn") and str(value).isdigit():
            host.run(["sysctl", "-qw", f"{key}={value}"], check=False)
    if remote_dir and is_run_workdir(remote_dir):
        host.run(["rm", "-rf", "--", remote_dir], check=False)


#: The last part of a run's remote work directory (``mktemp -d .../cgatb-<tag>-XXXXXX``).
_WORKDIR_NAME = re.compile(r"cgatb-\d+-[0-9a-f]+-[A-Za-z0-9]{6}")


def is_run_workdir(path: str) -> bool:
    """Only a directory ``up()`` made is removed (the path may come from a state file)."""
    p = PurePosixPath(path)
    return p.is_absolute() and ".." not in p.parts and bool(_WORKDIR_NAME.fullmatch(p.name))
