"""Host keys of an ssh testbed: checked always, with this machine's settings only. A
testbed file is shared between labs; one that names `known_hosts` or
`strict_host_key_checking` is refused in one line naming the file, the key and where
the setting lives now (CGA_SSH_KNOWN_HOSTS, CGA_SSH_HOST_KEY_POLICY)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from cganalysis.errors import ConfigError
from cganalysis.testbed.shared import hosts
from cganalysis.testbed.ssh.host import SshHost, SshTarget
from cganalysis.testbed.ssh.testbed import parse_testbed
from tests.conftest import REPO

LAB = yaml.safe_load((REPO / "configs" / "testbeds" / "lab-example.yaml").read_text())


def _with(path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(LAB)
    *parents, last = path.split(".")
    node = doc
    for key in parents:
        node = node[key]
    node[last] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "instead"),
    [
        ("ssh.known_hosts", "/tmp/theirs", "CGA_SSH_KNOWN_HOSTS"),
        ("ssh.strict_host_key_checking", "accept-new", "CGA_SSH_HOST_KEY_POLICY=accept-new"),
        ("ssh.strict_host_key_checking", "yes", "CGA_SSH_HOST_KEY_POLICY"),
        ("hosts.router.known_hosts", "/dev/null", "CGA_SSH_KNOWN_HOSTS"),
        ("hosts.client.strict_host_key_checking", "no", "CGA_SSH_HOST_KEY_POLICY"),
    ],
)
def test_a_shared_file_cannot_choose_host_key_checking(path: str, value: str, instead: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_testbed(_with(path, value), "shared-lab.yaml")
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"shared-lab.yaml: key {path}: not taken from a testbed file"), msg
    assert instead in msg, msg


def _argv(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> list[str]:
    for key in ("CGA_SSH_KNOWN_HOSTS", "CGA_SSH_HOST_KEY_POLICY"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    target = parse_testbed(LAB, "lab.yaml").hosts["server"].target
    return SshHost("server", target, Path("/tmp")).base()


def test_host_keys_are_checked_strictly_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    argv = _argv(monkeypatch, {})
    assert "StrictHostKeyChecking=yes" in argv
    assert not any(w.startswith("UserKnownHostsFile") for w in argv)  # ssh's own file


def test_the_local_environment_gives_known_hosts_and_accept_new(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv = _argv(
        monkeypatch,
        {"CGA_SSH_KNOWN_HOSTS": "/root/lab_known_hosts", "CGA_SSH_HOST_KEY_POLICY": "accept-new"},
    )
    assert "StrictHostKeyChecking=accept-new" in argv
    assert "UserKnownHostsFile=/root/lab_known_hosts" in argv


def test_no_checking_at_all_is_refused_even_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="CGA_SSH_HOST_KEY_POLICY='no': expected yes or"):
        _argv(monkeypatch, {"CGA_SSH_HOST_KEY_POLICY": "no"})
    # Nor from a record (a state file read back by `testbed clean`).
    target = SshTarget("192.0.2.1", "root", 22, None, None, "no", "none")
    with pytest.raises(hosts.TestbedError, match="StrictHostKeyChecking='no' refused"):
        SshHost("server", target, Path("/tmp")).base()
