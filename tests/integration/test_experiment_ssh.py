"""The ssh backend for real: three "bare hosts" (namespaces), each with Debian's OpenSSH
server on its management address only, key-based root login with a key made for the
test, and a controller namespace that runs the experiment over ssh.

::

    ctl --mgmt-- srv [eth1] ---- [eth1] rtr [eth2] ---- [eth1] cli
         --mgmt-- rtr
         --mgmt-- cli

Host keys are this machine's business: the fixture accepts each sshd's key into its own
known-hosts file (as a user would once), and the runs get it through CGA_SSH_KNOWN_HOSTS,
never through the (shared) testbed file. The data links, addresses and routes are the
operator's (made here by the fixture); the testbed only checks them, changes offloads and
sysctls (restored afterwards), installs the bottleneck on rtr eth2, captures there, and
fetches everything back with checksums.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
import yaml

from cganalysis.matching import match_files
from tests.conftest import need_root, need_tool
from tests.integration.experiment_helpers import TOOLS, short_run, write

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]
SSHD = "/usr/sbin/sshd"
ROLES = ("srv", "rtr", "cli")


@dataclass
class Lab:
    ns: dict[str, str]
    testbed: Path
    tmp: Path

    def run(self, role: str, *argv: str) -> str:
        res = subprocess.run(
            ["ip", "netns", "exec", self.ns[role], *argv],
            capture_output=True,
            text=True,
            check=False,
        )
        return res.stdout

    def pids(self, role: str) -> set[int]:
        res = subprocess.run(
            ["ip", "netns", "pids", self.ns[role]], capture_output=True, text=True, check=False
        )
        return {int(x) for x in res.stdout.split()}


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True)


def nsx(ns: str, *argv: str) -> None:
    sh("ip", "netns", "exec", ns, *argv)


SSHD_CONFIG = """\
ListenAddress {addr}
Port 22
HostKey {tmp}/hostkey
AuthorizedKeysFile {tmp}/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
PidFile none
MaxSessions 50
MaxStartups 50
LogLevel ERROR
"""


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    need_root()
    need_tool(*TOOLS, "ssh", "ssh-keygen")
    if not Path(SSHD).exists():
        pytest.skip("needs Debian's openssh-server (bash scripts/install.sh installs it)")
    tag = f"cgassh{os.getpid()}"
    ns = {r: f"{tag}-{r}" for r in ("ctl", *ROLES)}
    sshds: list[subprocess.Popen[bytes]] = []
    try:
        for name in ns.values():
            sh("ip", "netns", "add", name)
            nsx(name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            nsx(name, "ip", "link", "set", "lo", "up")
        for i, role in enumerate(ROLES):
            sh(
                "ip",
                "-n",
                ns["ctl"],
                "link",
                "add",
                f"m{i}",
                "type",
                "veth",
                "peer",
                "name",
                "mgmt",
                "netns",
                ns[role],
            )
            nsx(ns["ctl"], "ip", "addr", "add", f"10.250.{i}.1/24", "dev", f"m{i}")
            nsx(ns["ctl"], "ip", "link", "set", f"m{i}", "up")
            nsx(ns[role], "ip", "addr", "add", f"10.250.{i}.2/24", "dev", "mgmt")
            nsx(ns[role], "ip", "link", "set", "mgmt", "up")
        sh(
            "ip",
            "-n",
            ns["srv"],
            "link",
            "add",
            "eth1",
            "type",
            "veth",
            "peer",
            "name",
            "eth1",
            "netns",
            ns["rtr"],
        )
        sh(
            "ip",
            "-n",
            ns["rtr"],
            "link",
            "add",
            "eth2",
            "type",
            "veth",
            "peer",
            "name",
            "eth1",
            "netns",
            ns["cli"],
        )
        for role, dev, addr in (
            ("srv", "eth1", "10.251.1.1/24"),
            ("rtr", "eth1", "10.251.1.2/24"),
            ("rtr", "eth2", "10.251.2.2/24"),
            ("cli", "eth1", "10.251.2.1/24"),
        ):
            nsx(ns[role], "ip", "addr", "add", addr, "dev", dev)
            nsx(ns[role], "ip", "link", "set", dev, "up")
        nsx(ns["rtr"], "sysctl", "-qw", "net.ipv4.ip_forward=1")
        nsx(ns["srv"], "ip", "route", "add", "10.251.2.0/24", "via", "10.251.1.2")
        nsx(ns["cli"], "ip", "route", "add", "10.251.1.0/24", "via", "10.251.2.2")

        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "id"))
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "hostkey"))
        shutil.copy(tmp_path / "id.pub", tmp_path / "authorized_keys")
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation dir
        for i, role in enumerate(ROLES):
            conf = tmp_path / f"sshd_{role}"
            conf.write_text(SSHD_CONFIG.format(addr=f"10.250.{i}.2", tmp=tmp_path))
            sshds.append(
                subprocess.Popen(
                    ["ip", "netns", "exec", ns[role], SSHD, "-D", "-e", "-f", str(conf)],
                    stderr=subprocess.DEVNULL,
                )
            )
        testbed = tmp_path / "lab.yaml"
        testbed.write_text(
            yaml.safe_dump(
                {
                    "backend": "ssh",
                    "ssh": {
                        "user": "root",
                        "identity": str(tmp_path / "id"),
                    },
                    "workdir": "/tmp",
                    "hosts": {
                        "server": {"address": "10.250.0.2", "dev": "eth1", "data_ip": "10.251.1.1"},
                        "router": {"address": "10.250.1.2", "in_dev": "eth1", "out_dev": "eth2"},
                        "client": {"address": "10.250.2.2", "dev": "eth1", "data_ip": "10.251.2.1"},
                    },
                },
                sort_keys=False,
            )
        )
        the_lab = Lab(ns, testbed, tmp_path)
        deadline = time.monotonic() + 20
        for i in range(3):
            while (
                subprocess.run(
                    [
                        "ip",
                        "netns",
                        "exec",
                        ns["ctl"],
                        "ssh",
                        "-i",
                        str(tmp_path / "id"),
                        "-o",
                        "BatchMode=yes",
                        "-o",
                        "StrictHostKeyChecking=accept-new",
                        "-o",
                        f"UserKnownHostsFile={tmp_path / 'known_hosts'}",
                        f"root@10.250.{i}.2",
                        "true",
                    ],
                    capture_output=True,
                    check=False,
                ).returncode
                != 0
            ):
                assert time.monotonic() < deadline, "sshd did not come up"
                time.sleep(0.2)
        yield the_lab
    finally:
        for p in sshds:
            p.terminate()
            p.wait(5)
        for name in ns.values():
            subprocess.run(["ip", "netns", "pids", name], capture_output=True, check=False)
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


def local_ssh_env(known_hosts: Path) -> dict[str, str]:
    """This machine's host-key settings (ssh/host.py): strict checking against ``known_hosts``."""
    env = {k: v for k, v in os.environ.items() if k != "CGA_SSH_HOST_KEY_POLICY"}
    return {**env, "CGA_SSH_KNOWN_HOSTS": str(known_hosts)}


def experiment(
    lab: Lab, cfg: Path, out: Path, known_hosts: Path | None = None
) -> subprocess.CompletedProcess[str]:
    import sys

    return subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            lab.ns["ctl"],
            sys.executable,
            "-m",
            "cganalysis.cli",
            "experiment",
            str(cfg),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env=local_ssh_env(known_hosts or lab.tmp / "known_hosts"),
    )


def test_ssh_backend_runs_an_experiment_and_restores_the_hosts(lab: Lab) -> None:
    offloads_before = lab.run("srv", "ethtool", "-k", "eth1")
    qdisc_before = lab.run("rtr", "tc", "qdisc", "show", "dev", "eth2")
    sysctl_before = lab.run("cli", "sysctl", "-n", "net.ipv4.tcp_no_metrics_save")
    # Calibration is covered by the netns tests; here it would only add round trips.
    doc = short_run("test-ssh", testbed=str(lab.testbed), **{"calibration.enabled": False})
    cfg = write(doc, lab.tmp / "run.yaml")
    out = lab.tmp / "ssh-run"
    res = experiment(lab, cfg, out)
    assert res.returncode == 0, res.stderr

    meta = json.loads((out / "meta.json").read_text())
    assert meta["testbed"]["backend"] == "ssh"
    assert meta["topology"]["router_out"] == "eth2"
    assert meta["checks"]["drops"]["ok"], meta["checks"]
    assert meta["hosts"]["router"]["offloads"]["eth2"]["tso"] == "off"
    for name in (
        "ingress.pcap",
        "egress.pcap",
        "iperf3-step01.json",
        "cg-sender.json",
        "qdisc-stats.jsonl",
    ):
        assert meta["files"][name]["bytes"] > 0
    # Queuing appears only while TCP runs, as in the netns runs.
    m = match_files(out / "ingress.pcap", out / "egress.pcap")
    p = m.packets.with_columns(((pl.col("t_ingress_ns") - meta["start_ns"]) / 1e9).alias("t_s"))
    cg = p.filter((pl.col("proto") == 17) & (pl.col("dport") == 30002) & ~pl.col("lost"))
    before = cg.filter(pl.col("t_s") < 5.5)["delay_ms"].median()
    during = cg.filter((pl.col("t_s") > 9) & (pl.col("t_s") < 13.5))["delay_ms"].median()
    assert isinstance(before, float) and isinstance(during, float)
    assert before < 2.0 and during > max(5.0, 10 * before), (before, during)

    # The hosts are as they were: qdisc, offloads, sysctls, no process, no work directory.
    assert lab.run("rtr", "tc", "qdisc", "show", "dev", "eth2") == qdisc_before
    assert lab.run("srv", "ethtool", "-k", "eth1") == offloads_before
    assert lab.run("cli", "sysctl", "-n", "net.ipv4.tcp_no_metrics_save") == sysctl_before
    for role in ROLES:
        cmdlines = [
            Path(f"/proc/{pid}/cmdline").read_bytes()
            for pid in lab.pids(role)
            if Path(f"/proc/{pid}").exists()
        ]
        assert all(b"sshd" in c for c in cmdlines), (role, cmdlines)
    for remote_dir in meta["testbed"]["remote_dirs"].values():
        assert not Path(remote_dir).exists()


def test_ssh_backend_refuses_a_missing_interface_before_touching_anything(lab: Lab) -> None:
    doc = yaml.safe_load(lab.testbed.read_text())
    doc["hosts"]["router"]["out_dev"] = "eth9"
    bad = lab.tmp / "bad-lab.yaml"
    bad.write_text(yaml.safe_dump(doc))
    qdisc_before = lab.run("rtr", "tc", "qdisc", "show")
    offloads_before = lab.run("rtr", "ethtool", "-k", "eth2")
    cfg = write(short_run("test-ssh-bad", testbed=str(bad)), lab.tmp / "run.yaml")
    res = experiment(lab, cfg, lab.tmp / "out")
    assert res.returncode == 2
    assert "hosts.router.out_dev: interface 'eth9' does not exist on 10.250.1.2" in res.stderr
    assert "eth2" in res.stderr  # says what the host has
    assert lab.run("rtr", "tc", "qdisc", "show") == qdisc_before
    assert lab.run("rtr", "ethtool", "-k", "eth2") == offloads_before
    assert not (lab.tmp / "out").exists()
    assert not list(Path("/tmp").glob("cgatb-*-XXXXXX"))


def test_a_shared_file_cannot_turn_host_key_checking_down(lab: Lab) -> None:
    """A testbed file naming its own known_hosts and accept-new (it would accept any host
    key) is refused before any connection, in one line naming the file and the key."""
    doc = yaml.safe_load(lab.testbed.read_text())
    (lab.tmp / "empty_known_hosts").write_text("")
    doc["ssh"]["known_hosts"] = str(lab.tmp / "empty_known_hosts")
    doc["ssh"]["strict_host_key_checking"] = "accept-new"
    shared = lab.tmp / "shared-lab.yaml"
    shared.write_text(yaml.safe_dump(doc))
    cfg = write(short_run("test-ssh-shared", testbed=str(shared)), lab.tmp / "run.yaml")
    res = experiment(lab, cfg, lab.tmp / "out")
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert f"{shared}: key ssh.known_hosts: not taken from a testbed file" in line
    assert "CGA_SSH_KNOWN_HOSTS" in line
    assert (lab.tmp / "empty_known_hosts").read_text() == ""  # nobody's key was added
    assert not (lab.tmp / "out").exists()


def test_an_unknown_host_key_is_refused(lab: Lab) -> None:
    """Strict checking by default: with a known-hosts file that lacks the hosts' keys the
    run stops at the first connection, nothing touched, no key added."""
    empty = lab.tmp / "empty_known_hosts"
    empty.write_text("")
    offloads_before = lab.run("srv", "ethtool", "-k", "eth1")
    cfg = write(short_run("test-ssh-unknown", testbed=str(lab.testbed)), lab.tmp / "run.yaml")
    res = experiment(lab, cfg, lab.tmp / "out", known_hosts=empty)
    assert res.returncode != 0
    assert "Host key verification failed" in res.stderr, res.stderr
    assert empty.read_text() == ""
    assert lab.run("srv", "ethtool", "-k", "eth1") == offloads_before
    assert not (lab.tmp / "out").exists()


def test_clean_kills_only_recorded_processes_that_carry_their_token(lab: Lab) -> None:
    """A state file (edited, or old with pids reused) naming a live process that is not
    ours: `testbed clean` leaves it alone; a process started with its token is killed;
    pids that are no positive integer are refused in one line each, never sent to kill."""
    from cganalysis.testbed.shared.procmark import MARKER_ENV, new_marker

    marker = new_marker()
    ns = ["ip", "netns", "exec", lab.ns["srv"]]
    unrelated = subprocess.Popen([*ns, "sleep", "300"])
    ours = subprocess.Popen([*ns, "env", f"{MARKER_ENV}={marker}", "sleep", "300"])
    try:
        time.sleep(0.3)  # both exec'd into sleep
        target = {
            "address": "10.250.0.2", "user": "root", "port": 22,
            "identity": str(lab.tmp / "id"), "known_hosts": "/dev/null",
            "strict_host_key_checking": "no", "become": "none", "connect_timeout_s": 5,
        }  # fmt: skip
        st = {
            "_path": "edited.json",
            "backend": "ssh",
            "hosts": {"server": target},
            "pids": {"server": [unrelated.pid]},
            "procs": {
                "server": [
                    {"pid": unrelated.pid, "marker": new_marker()},
                    {"pid": ours.pid, "marker": marker},
                    {"pid": -1, "marker": marker},
                    {"pid": 0, "marker": marker},
                    {"pid": "1; reboot", "marker": marker},
                ]
            },
        }
        script = (
            "import json, sys\n"
            "from cganalysis.testbed.ssh.clean import clean_remote\n"
            "for line in clean_remote(json.loads(sys.argv[1]), False): print(line)\n"
        )
        import sys

        res = subprocess.run(
            ["ip", "netns", "exec", lab.ns["ctl"], sys.executable, "-c", script, json.dumps(st)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=local_ssh_env(lab.tmp / "known_hosts"),
        )
        assert res.returncode == 0, res.stderr
        assert ours.wait(10) is not None, res.stdout
        time.sleep(0.3)
        assert unrelated.poll() is None, f"an unrelated process was killed: {res.stdout}"
        for bad in ("-1", "0", "'1; reboot'"):
            assert f"procs.server: {{'pid': {bad}, 'marker'" in res.stdout, res.stdout
        assert f"pids.server: [{unrelated.pid}] not killed" in res.stdout, res.stdout
        assert f"pid {unrelated.pid} on server: not ours any more" in res.stdout, res.stdout
    finally:
        for p in (unrelated, ours):
            p.kill()
            p.wait()
