"""A vm guest as the router of an ssh testbed: a second host with its own kernel and sshd.

::

    hosts:
      router:
        vm: {memory_mb: 1024, accel: auto}   # the vm testbed's options (vm/config.py)
        in_dev: eth1                  # the guest's data interfaces, named so in the guest
        out_dev: eth2
        in_bridge: cgabr-srv          # bridges of this host that they join (QEMU taps)
        out_bridge: cgabr-cli
        in_ip: 10.251.1.2/24          # the guest's addresses (it forwards between them)
        out_ip: 10.251.2.2/24

The guest boots from the distribution kernel (``vm.Guest``, serve mode) with three NICs:
a management NIC on QEMU's user-mode network, restricted (the guest reaches nothing), whose
only way in is a forward from a free port on this host's 127.0.0.1 to the guest's sshd;
and two data NICs, QEMU tap devices that join the operator's bridges once the run holds
the testbed (a guest only probed joins nothing). Through the guest's control folder the
host names the NICs (by MAC address), sets the addresses, turns forwarding on and starts
``sshd`` with a host key made for this boot and the testbed's key (``ssh.identity``) as
the only authorised one; the run's known_hosts holds that host key alone, so ssh checks
it strictly. From then on the ordinary ssh backend drives the guest as the router.

The VM never outlives the run: QEMU runs in its own process group recorded in
/run/cganalysis/testbeds (``cganalysis testbed clean``), the guest powers off when this
process's heartbeat stops, and teardown stops it (SIGTERM, then SIGKILL). A guest booted
to probe the router (``ssh.testbed.probing_ssh``) is handed to the run that follows in the same
process (one boot per run), and stopped at exit if no run takes it.
"""

from __future__ import annotations

import atexit
import ipaddress
import json
import os
import secrets
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cganalysis.testbed.shared.hosts import TIMEOUT_SCALE_ENV, TestbedError
from cganalysis.testbed.spec.validate import IFNAME, Section
from cganalysis.testbed.ssh.host import SshHost, SshTarget
from cganalysis.testbed.vm.config import VmOptions, parse_vm_section
from cganalysis.testbed.vm.testbed import Guest

SIDES = ("in", "out")
#: The management NIC's guest address: QEMU's user-mode network's default for the guest.
MGMT_IP = "10.0.2.15"
MACS = {"mgmt": "52:54:00:c6:a0:01", "in": "52:54:00:c6:a0:02", "out": "52:54:00:c6:a0:03"}
SSHD = "/usr/sbin/sshd"
SSHD_CONFIG = """\
ListenAddress {ip}:22
HostKey /run/cga-sshd/hostkey
AuthorizedKeysFile /run/cga-sshd/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
PidFile /run/cga-sshd/sshd.pid
MaxSessions 100
MaxStartups 100
"""


@dataclass(frozen=True)
class VmRouterEntry:
    """The testbed file's ``hosts.router.vm``: the router as a guest booted for the run."""

    options: VmOptions
    devs: dict[str, str]  # side -> interface name in the guest
    bridges: dict[str, str]  # side -> bridge on this host
    addresses: dict[str, str]  # side -> address/prefix in the guest


def is_vm_router(h: Section) -> bool:
    return h.has("vm")


def parse_router(h: Section) -> VmRouterEntry:
    """The router keys when the router is a guest (``vm`` given); the caller finishes."""
    options = parse_vm_section(h.sub("vm"))
    devs = {s: h.string(f"{s}_dev", pattern=IFNAME) for s in SIDES}
    bridges = {s: h.string(f"{s}_bridge", pattern=IFNAME) for s in SIDES}
    addresses = {}
    for side in SIDES:
        text = h.string(f"{side}_ip")
        try:
            iface = ipaddress.IPv4Interface(text)
        except ValueError:
            raise h.error(f"{side}_ip", f"{text!r}: give an IPv4 address/prefix") from None
        if not 8 <= iface.network.prefixlen <= 30 or "/" not in text:
            raise h.error(f"{side}_ip", f"{text!r}: give the prefix too, /8 to /30")
        if iface.ip in ipaddress.IPv4Network("10.0.2.0/24"):
            raise h.error(f"{side}_ip", "10.0.2.0/24 is the guest's management network")
        addresses[side] = text
    if devs["in"] == devs["out"] or bridges["in"] == bridges["out"]:
        raise h.error("out_dev", "in and out need their own interface and bridge")
    for key in ("address", "port", "user", "become"):
        if h.has(key):
            raise h.error(key, "a vm router is reached through 127.0.0.1 as root; leave it out")
    return VmRouterEntry(options, devs, bridges, addresses)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _run(argv: list[str]) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
    if res.returncode != 0:
        raise TestbedError(f"vm router: `{' '.join(argv)}` failed: {res.stderr.strip()[-300:]}")
    return res.stdout


class VmRouter:
    """One guest booted as a router; ``target`` is how ssh reaches it."""

    def __init__(self, entry: VmRouterEntry, where: str, ssh: SshTarget, progress: Any) -> None:
        self.entry = entry
        self.where = where
        self.ssh = ssh
        self.say = progress or (lambda _m: None)
        rand = secrets.token_hex(2)
        self.taps = {s: f"cgvr{rand}{s[0]}" for s in SIDES}
        self.guest: Guest | None = None
        self.target: SshTarget | None = None
        self.attached = False

    # --- boot ----------------------------------------------------------------------------
    def boot(self) -> SshTarget:
        self._check_host()
        port = _free_port()
        nics = [
            f"-netdev user,id=cgam,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:22",
            f"-device virtio-net-pci,netdev=cgam,mac={MACS['mgmt']}",
        ]
        for side in SIDES:
            nics += [
                f"-netdev tap,id=cga{side},ifname={self.taps[side]},script=no,downscript=no",
                f"-device virtio-net-pci,netdev=cga{side},mac={MACS[side]}",
            ]
        guest = Guest({"mode": "serve"}, self.entry.options, [], self.say, nics)
        self.guest = guest
        try:
            self._keys(guest.ctl, port)
            guest.start()
            self.say(
                f"vm router: guest {guest.info['guest'].get('kernel', guest.version)} up in "
                f"{guest.info['boot_s']:g} s ({guest.info['accel']}), ssh on 127.0.0.1:{port}"
            )
            if guest.info["accel"] == "tcg":
                # Python helpers on the router (the qdisc poller) take seconds to start in
                # a TCG guest: this run's readiness waits get 5x longer (hosts.py).
                os.environ.setdefault(TIMEOUT_SCALE_ENV, "5")
            self._configure(guest)
            self.target = SshTarget(
                address="127.0.0.1",
                user="root",
                port=port,
                identity=self.ssh.identity,
                known_hosts=str(guest.ctl / "known_hosts"),
                strict_host_key_checking="yes",
                become="none",
                # The first handshake with a guest under TCG can take seconds.
                connect_timeout_s=max(self.ssh.connect_timeout_s, 30),
            )
            self._wait_ssh(guest)
        except BaseException:
            self.stop()
            raise
        return self.target

    def _check_host(self) -> None:
        """Read-only, before QEMU starts: the bridges exist here, the key is readable."""
        links = json.loads(_run(["ip", "-j", "link", "show", "type", "bridge"]) or "[]")
        have = [str(link.get("ifname")) for link in links]
        for side in SIDES:
            if self.entry.bridges[side] not in have:
                raise TestbedError(
                    f"{self.where}: hosts.router.{side}_bridge: bridge "
                    f"{self.entry.bridges[side]!r} does not exist in this host's network "
                    f"namespace (it has: {', '.join(have) or 'none'}); create it and connect "
                    f"the {'server' if side == 'in' else 'client'} to it"
                )
        if not self.ssh.identity:
            raise TestbedError(
                f"{self.where}: ssh.identity: a vm router needs the testbed's key (its public "
                "half becomes the guest's only authorised key)"
            )

    def _keys(self, ctl: Path, port: int) -> None:
        """A host key for this boot, the authorised key, known_hosts and sshd's config."""
        assert self.ssh.identity is not None
        identity = str(Path(self.ssh.identity).expanduser())
        res = subprocess.run(
            ["ssh-keygen", "-y", "-f", identity], capture_output=True, text=True, check=False
        )
        if res.returncode != 0:
            raise TestbedError(
                f"{self.where}: ssh.identity: cannot read the public key of {identity} "
                f"({res.stderr.strip()[-200:]}); give a key without a passphrase"
            )
        (ctl / "authorized_keys").write_text(res.stdout, encoding="utf-8")
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "cga-vm-router",
              "-f", str(ctl / "hostkey")])  # fmt: skip
        pub = (ctl / "hostkey.pub").read_text(encoding="utf-8").split()
        (ctl / "known_hosts").write_text(f"[127.0.0.1]:{port} {pub[0]} {pub[1]}\n")
        (ctl / "sshd_config").write_text(SSHD_CONFIG.format(ip=MGMT_IP), encoding="utf-8")

    def _configure(self, guest: Guest) -> None:
        """In the guest: NICs named by MAC, addresses, forwarding, then sshd."""
        # Debian builds virtio_net as a module, and nothing in the guest loads it by itself.
        guest.run(["modprobe", "virtio_net"])
        links = json.loads(guest.run(["ip", "-j", "link", "show"]).stdout or "[]")
        by_mac = {str(x.get("address")): str(x.get("ifname")) for x in links}
        names = {"mgmt": "mgmt", **self.entry.devs}
        for i, (role, mac) in enumerate(MACS.items()):
            if mac not in by_mac:
                raise TestbedError(f"vm router: the guest has no NIC {mac} ({role}): {by_mac}")
            # Two steps: a final name may be another NIC's current one (eth1, eth2).
            guest.run(["ip", "link", "set", "dev", by_mac[mac], "name", f"cgatmp{i}"])
        for i, role in enumerate(MACS):
            guest.run(["ip", "link", "set", "dev", f"cgatmp{i}", "name", names[role]])
        # No IPv6 chatter (router solicitations, DAD) in the captures.
        guest.run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                   "net.ipv6.conf.default.disable_ipv6=1", "net.ipv4.ip_forward=1"])  # fmt: skip
        guest.run(["ip", "addr", "add", f"{MGMT_IP}/24", "dev", "mgmt"])
        for side in SIDES:
            guest.run(
                ["ip", "addr", "add", self.entry.addresses[side], "dev", self.entry.devs[side]]
            )
        for dev in ("lo", "mgmt", *self.entry.devs.values()):
            guest.run(["ip", "link", "set", "dev", dev, "up"])
        ctl = str(guest.ctl)
        # The guest's /etc is a throw-away copy. virtme's init locks every account there,
        # and sshd refuses a locked root even with a key: no password ('*') instead. Root's
        # shell becomes /bin/sh: bash would source this host's ~/.bashrc for every ssh
        # command, seconds under TCG (remote commands are POSIX-quoted, shlex.join).
        for path, sed in (
            ("/etc/shadow", "s/^root:[^:]*:/root:*:/"),
            ("/etc/passwd", "s#^\\(root:[^:]*:[^:]*:[^:]*:[^:]*:[^:]*:\\).*#\\1/bin/sh#"),
        ):
            guest.run(["sh", "-c", f"s=$(sed '{sed}' {path}) && printf '%s\\n' \"$s\" > {path}"])
        guest.run(["mkdir", "-p", "-m", "0755", "/run/sshd", "/run/cga-sshd"])
        for name in ("hostkey", "authorized_keys"):
            guest.run(["install", "-m", "0600", f"{ctl}/{name}", f"/run/cga-sshd/{name}"])
        # sshd forks into the background (its own /dev/null stdio): the call returns.
        guest.run([SSHD, "-f", f"{ctl}/sshd_config", "-E", "/run/cga-sshd/sshd.log"])

    def _wait_ssh(self, guest: Guest) -> None:
        assert self.target is not None
        host = SshHost("router", self.target, guest.ctl)
        deadline = time.monotonic() + self.entry.options.boot_timeout_s
        try:
            while True:
                try:
                    host.run(["true"], timeout_s=60.0)
                    return
                except TestbedError as err:
                    if time.monotonic() > deadline:
                        log = guest.run(["cat", "/run/cga-sshd/sshd.log"], check=False)
                        raise TestbedError(
                            f"vm router: the guest's sshd does not answer ({err}); its log: "
                            f"{log.stdout.strip()[-300:] or 'empty'}"
                        ) from None
                time.sleep(1.0)
        finally:
            host.close()

    # --- under the run's lock ------------------------------------------------------------
    def attach(self) -> None:
        """The data NICs join the operator's bridges (the run holds the testbed now)."""
        for side in SIDES:
            _run(["ip", "link", "set", "dev", self.taps[side], "master", self.entry.bridges[side]])
            _run(["ip", "link", "set", "dev", self.taps[side], "up"])
        self.attached = True

    # --- teardown ------------------------------------------------------------------------
    def stop(self) -> None:
        """Powers the guest off (its taps go with QEMU); killed if it does not stop."""
        if self.guest is not None:
            self.guest.stop()
            self.guest = None
        self.attached = False

    def describe(self) -> dict[str, Any]:
        info = dict(self.guest.info) if self.guest is not None else {}
        return {
            **info,
            "guest_kernel": info.get("guest", {}).get("kernel"),
            "role": "router",
            "taps": self.taps,
            "bridges": self.entry.bridges,
            "addresses": self.entry.addresses,
            "ssh": None if self.target is None else f"127.0.0.1:{self.target.port}",
        }


# --- one boot per run: the probe's guest is the run's -------------------------------------
_parked: dict[str, VmRouter] = {}


def park(key: str, router: VmRouter) -> None:
    """Keeps a probed guest for the run that follows in this process."""
    old = _parked.pop(key, None)
    if old is not None and old is not router:
        old.stop()
    _parked[key] = router


def take(key: str) -> VmRouter | None:
    return _parked.pop(key, None)


@atexit.register
def _stop_parked() -> None:
    while _parked:
        _parked.popitem()[1].stop()
