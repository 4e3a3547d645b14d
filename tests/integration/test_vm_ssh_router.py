"""The vm guest as a real second host of an ssh testbed: the router is a VM booted from
Debian's kernel (its own sshd), server and client are bare hosts (namespaces with sshd).

::

    ctl: controller, QEMU (user-mode net: 127.0.0.1:PORT -> guest sshd)
         cgabr-in  (tap <-> guest eth1) -- veth -- srv eth1   10.251.1.1
         cgabr-out (tap <-> guest eth2) -- veth -- cli eth1   10.251.2.1
         m0 -- srv mgmt (sshd)      m1 -- cli mgmt (sshd)

HTB 10 Mbit/s with TMA 2024's SFQ CG leaf (this host's kernel has no sch_sfq; the
guest's has) runs through the guest over ssh, driven by the ordinary ssh backend; one
boot for the probe and the run. ~2-3 min under TCG.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from cganalysis.matching import match_files
from tests.conftest import REPO, need_root, need_tool
from tests.integration.experiment_helpers import TOOLS, write

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow, pytest.mark.vm]
SSHD = "/usr/sbin/sshd"
RUN = REPO / "configs" / "runs" / "quick-htb-sfq-vm.yaml"
SSHD_CONFIG = """\
ListenAddress {addr}
HostKey {tmp}/hostkey
AuthorizedKeysFile {tmp}/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
MaxSessions 50
MaxStartups 50
"""


@dataclass
class Lab:
    ctl: str
    testbed: Path
    tmp: Path


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def _need_vm() -> None:
    need_root()
    need_tool(*TOOLS, "ssh", "ssh-keygen")
    if not Path(SSHD).exists():
        pytest.skip("needs Debian's openssh-server (bash scripts/install.sh installs it)")
    from cganalysis.testbed.shared.hosts import TestbedError
    from cganalysis.testbed.vm.testbed import VmOptions, find_kernel, find_tools

    try:
        find_kernel(VmOptions())
        find_tools()
    except TestbedError as e:
        pytest.skip(str(e))


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    _need_vm()
    ns = {r: f"cgavmssh{os.getpid()}-{r}" for r in ("ctl", "srv", "cli")}
    sshds: list[subprocess.Popen[bytes]] = []
    try:
        for name in ns.values():
            sh("ip", "netns", "add", name)
            sh("ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            sh("ip", "-n", name, "link", "set", "lo", "up")
        c = ["ip", "-n", ns["ctl"]]
        for i, (role, side, net) in enumerate((("srv", "in", 1), ("cli", "out", 2))):
            peer = ["type", "veth", "peer", "name"]
            sh(*c, "link", "add", f"m{i}", *peer, "mgmt", "netns", ns[role])
            sh(*c, "addr", "add", f"10.250.{i}.1/24", "dev", f"m{i}")
            sh("ip", "-n", ns[role], "addr", "add", f"10.250.{i}.2/24", "dev", "mgmt")
            sh(*c, "link", "add", f"cgabr-{side}", "type", "bridge")
            sh(*c, "link", "add", f"v{side}", *peer, "eth1", "netns", ns[role])
            sh(*c, "link", "set", f"v{side}", "master", f"cgabr-{side}")
            for dev in (f"m{i}", f"cgabr-{side}", f"v{side}"):
                sh(*c, "link", "set", dev, "up")
            r = ["ip", "-n", ns[role]]
            sh(*r, "addr", "add", f"10.251.{net}.1/24", "dev", "eth1")
            for dev in ("mgmt", "eth1"):
                sh(*r, "link", "set", dev, "up")
            sh(*r, "route", "add", f"10.251.{3 - net}.0/24", "via", f"10.251.{net}.2")
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "id"))
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "hostkey"))
        shutil.copy(tmp_path / "id.pub", tmp_path / "authorized_keys")
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        for i, role in enumerate(("srv", "cli")):
            conf = tmp_path / f"sshd_{role}"
            conf.write_text(SSHD_CONFIG.format(addr=f"10.250.{i}.2", tmp=tmp_path))
            argv = ["ip", "netns", "exec", ns[role], SSHD, "-D", "-e", "-f", str(conf)]
            sshds.append(subprocess.Popen(argv, stderr=subprocess.DEVNULL))
        testbed = tmp_path / "vm-router.yaml"
        doc = yaml.safe_load((REPO / "configs" / "testbeds" / "lab-vm-router.yaml").read_text())
        doc["ssh"].update(
            identity=str(tmp_path / "id"),
            known_hosts=str(tmp_path / "known_hosts"),
            strict_host_key_checking="accept-new",
        )
        doc["hosts"]["server"]["address"] = "10.250.0.2"
        doc["hosts"]["client"]["address"] = "10.250.1.2"
        testbed.write_text(yaml.safe_dump(doc, sort_keys=False))
        _wait_sshd(ns["ctl"], tmp_path)
        yield Lab(ns["ctl"], testbed, tmp_path)
    finally:
        for p in sshds:
            p.terminate()
            p.wait(5)
        for name in ns.values():
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


def _wait_sshd(ctl: str, tmp: Path) -> None:
    """The endpoints' sshd answer (the run's own checks do not retry)."""
    deadline = time.monotonic() + 20
    for addr in ("10.250.0.2", "10.250.1.2"):
        argv = ["ip", "netns", "exec", ctl, "ssh", "-i", str(tmp / "id"), "-o", "BatchMode=yes",
                "-o", "StrictHostKeyChecking=accept-new", "-o",
                f"UserKnownHostsFile={tmp / 'known_hosts'}", f"root@{addr}", "true"]  # fmt: skip
        while subprocess.run(argv, capture_output=True, check=False).returncode != 0:
            assert time.monotonic() < deadline, f"sshd on {addr} did not come up"
            time.sleep(0.2)


def _qemus() -> set[int]:
    out = set()
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and b"qemu-system" in (d / "cmdline").read_bytes():
                out.add(int(d.name))
        except OSError:
            pass
    return out


def test_ssh_testbed_with_a_vm_router(lab: Lab) -> None:
    doc = yaml.safe_load(RUN.read_text())
    doc.update(name="test-vm-ssh-router", testbed=str(lab.testbed))
    doc["bottleneck"]["rate_mbit"] = 10
    doc["bottleneck"]["qdisc"]["classes"][0]["ceil_mbit"] = 10
    doc["bottleneck"]["qdisc"]["classes"][1]["ceil_mbit"] = 10
    doc["calibration"] = {"enabled": False}  # one boot, a short run
    cfg = write(doc, lab.tmp / "run.yaml")
    out = lab.tmp / "run"
    qemus_before = _qemus()
    res = subprocess.run(
        ["ip", "netns", "exec", lab.ctl, sys.executable, "-m", "cganalysis.cli",
         "experiment", str(cfg), "-o", str(out), "--max-duration-s", "22"],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    # One boot: the probe's guest is the run's.
    assert (res.stdout + res.stderr).count("vm router: guest") == 1, res.stdout + res.stderr

    meta = json.loads((out / "meta.json").read_text())
    tb = meta["testbed"]
    assert tb["backend"] == "ssh"
    vm = tb["vm"]
    assert vm["accel"] in ("kvm", "tcg") and vm["role"] == "router"
    # The router's kernel, as uname says over ssh, is the guest's, not this host's.
    router_kernel = meta["hosts"]["router"]["kernel"]
    assert vm["guest_kernel"] == vm["kernel_version"] != os.uname().release
    assert vm["kernel_version"] in router_kernel, (router_kernel, vm)
    assert meta["hosts"]["server"]["kernel"] == meta["hosts"]["client"]["kernel"]
    assert os.uname().release in meta["hosts"]["server"]["kernel"]
    # The qdiscs read back from the guest: HTB with the SFQ leaf, on the router's eth2.
    assert meta["bottleneck_backend"] == "kernel"
    kinds = {q["kind"] for dev in meta["qdisc_after"].values() for q in dev["qdisc"]}
    assert {"htb", "sfq", "pfifo"} <= kinds, kinds
    assert not [f for f in meta["flags"] if "not where configured" in f], meta["flags"]
    assert meta["topology"]["router_out"] == "eth2"

    # The captures measure the router alone: every egress packet has its ingress twin,
    # and the packets lost between the taps are the qdisc's drops.
    m = match_files(out / "ingress.pcap", out / "egress.pcap")
    assert m.packets.height > 1000, m.summary
    limit = (m.summary.capture_drops_ingress or 0) + 0.01 * m.packets.height
    assert m.summary.egress_only_packets <= limit, m.summary
    c0, c1 = (meta["counters"][k] for k in ("at_capture_start", "at_capture_end"))
    qdisc_drops = c1["dropped"] - c0["dropped"]
    assert abs(m.summary.packets_lost - qdisc_drops) <= max(2, 0.02 * qdisc_drops), (
        m.summary.packets_lost,
        qdisc_drops,
    )

    # Nothing outlives the run: no QEMU, the guest's sshd port closed, no tap, no state.
    time.sleep(1)
    assert _qemus() <= qemus_before, "QEMU outlived the run"
    port = int(vm["ssh"].rsplit(":", 1)[1])
    probe = ["ip", "netns", "exec", lab.ctl, sys.executable, "-c",
             f"import socket; socket.create_connection(('127.0.0.1', {port}), 2)"]  # fmt: skip
    assert subprocess.run(probe, capture_output=True, check=False).returncode != 0
    links = sh("ip", "-n", lab.ctl, "-br", "link")
    assert not [t for t in vm["taps"].values() if t in links], links
    from cganalysis.testbed.shared import state

    assert not [s for s in state.leftover_states(True) if vm["taps"]["in"] in str(s)]
