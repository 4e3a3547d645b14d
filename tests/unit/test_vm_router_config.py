"""An ssh testbed whose router is a vm guest: its keys, and what is refused before a boot."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from cganalysis.errors import ConfigError
from cganalysis.testbed.shared.hosts import TestbedError as BedError
from cganalysis.testbed.ssh.testbed import parse_testbed
from cganalysis.testbed.ssh.vmrouter import VmRouter
from tests.conftest import REPO

EXAMPLE = REPO / "configs" / "testbeds" / "lab-vm-router.yaml"


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    return copy.deepcopy(doc)


def test_the_example_reads_as_a_vm_router() -> None:
    cfg = parse_testbed(_doc(), str(EXAMPLE))
    router = cfg.hosts["router"]
    assert router.vm is not None
    assert router.devs == {"in_dev": "eth1", "out_dev": "eth2"}
    assert router.vm.bridges == {"in": "cgabr-in", "out": "cgabr-out"}
    assert router.vm.addresses == {"in": "10.251.1.2/24", "out": "10.251.2.2/24"}
    assert router.vm.options.memory_mb == 1024
    # Root over 127.0.0.1 with the testbed's key; the port is known once it boots.
    assert (router.target.address, router.target.user, router.target.become) == (
        "127.0.0.1",
        "root",
        "none",
    )
    assert router.target.identity == "~/.ssh/cga_testbed"
    assert cfg.hosts["server"].vm is None


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("in_ip", "10.251.1.2", "give the prefix too"),
        ("in_ip", "10.251.1.300/24", "give an IPv4 address/prefix"),
        ("out_ip", "10.0.2.7/24", "management network"),
        ("out_bridge", "cgabr-in", "own interface and bridge"),
        ("in_bridge", "br;rm", "in_bridge"),
        ("address", "192.0.2.11", "through 127.0.0.1 as root"),
        ("become", "sudo", "through 127.0.0.1 as root"),
        ("vm", {"cpus": 0}, "vm.cpus"),
        ("bogus", 1, "bogus"),
    ],
)
def test_bad_router_keys_name_the_key(key: str, value: Any, message: str) -> None:
    doc = _doc()
    doc["hosts"]["router"][key] = value
    with pytest.raises(ConfigError) as e:
        parse_testbed(doc, "lab.yaml")
    assert "lab.yaml" in str(e.value) and message in str(e.value), str(e.value)


def test_missing_bridge_or_key_is_refused_before_qemu(tmp_path: Path) -> None:
    cfg = parse_testbed(_doc(), "lab.yaml")
    spec = cfg.hosts["router"]
    assert spec.vm is not None
    router = VmRouter(spec.vm, "lab.yaml", spec.target, None)
    with pytest.raises(BedError) as e:
        router.boot()  # no such bridge here: nothing was started
    text = str(e.value)
    assert "hosts.router.in_bridge: bridge 'cgabr-in' does not exist" in text
    assert "\n" not in text and router.guest is None

    # A key ssh-keygen cannot read (a passphrase, or not a key): one line naming ssh.identity.
    bad = tmp_path / "key"
    bad.write_text("not a key\n")
    from dataclasses import replace

    router = VmRouter(spec.vm, "lab.yaml", replace(spec.target, identity=str(bad)), None)
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    with pytest.raises(BedError) as e:
        router._keys(ctl, 2222)
    assert "ssh.identity: cannot read the public key" in str(e.value)


def test_keys_for_a_boot(tmp_path: Path) -> None:
    """Per-boot host key in known_hosts (strict checking), the testbed's key authorised."""
    key = tmp_path / "id"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    cfg = parse_testbed(_doc(), "lab.yaml")
    spec = cfg.hosts["router"]
    assert spec.vm is not None
    from dataclasses import replace

    router = VmRouter(spec.vm, "lab.yaml", replace(spec.target, identity=str(key)), None)
    router._keys(tmp_path, 40022)
    pub = (tmp_path / "id.pub").read_text().split()[:2]
    assert (tmp_path / "authorized_keys").read_text().split()[:2] == pub
    host = (tmp_path / "hostkey.pub").read_text().split()[:2]
    assert (tmp_path / "known_hosts").read_text().split() == ["[127.0.0.1]:40022", *host]
    conf = (tmp_path / "sshd_config").read_text()
    assert "ListenAddress 10.0.2.15:22" in conf and "PasswordAuthentication no" in conf
    # Two boots, two host keys.
    other = tmp_path / "other"
    other.mkdir()
    router._keys(other, 40022)
    assert (other / "hostkey.pub").read_text() != (tmp_path / "hostkey.pub").read_text()
