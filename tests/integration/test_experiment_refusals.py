"""Runs the host cannot do, or that are badly configured, are refused before anything is
touched: wrappers on the PATH log every call of ip, tc, tcpdump, iperf3 and ethtool, and
the log must show no set-up at all (configuration errors) or no traffic (missing qdisc)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.conftest import need_root, need_tool
from tests.integration.experiment_helpers import (
    RUNS,
    TOOLS,
    calls,
    inproc,
    logging_path,
    namespaces,
    short_run,
    write,
)

pytestmark = [pytest.mark.root, pytest.mark.tools]
LOGGED = ("ip", "tc", "tcpdump", "iperf3", "ethtool")


@pytest.mark.parametrize(
    ("override", "words"),
    [
        ({"bottleneck.qdisc.kind": "cake2"}, ["bottleneck.qdisc.kind", "'cake2'", "pfifo"]),
        ({"competitor.cca": "cubic; reboot"}, ["competitor.cca", "shell metacharacters"]),
        ({"cg.source": "$(touch /tmp/pwned)"}, ["cg.source", "shell metacharacters"]),
        ({"labels.qdisc": "x`id`"}, ["labels.qdisc", "letters, digits"]),
        ({"testbed": "lab;rm.yaml"}, ["testbed", "not allowed"]),
        ({"offloads": "on"}, ["offloads", "'on'", "kernel"]),
    ],
)
def test_bad_configuration_touches_nothing(
    tmp_path: Path, override: dict[str, object], words: list[str]
) -> None:
    need_root()
    need_tool(*TOOLS)
    cfg = write(short_run("test-bad", **override), tmp_path / "bad.yaml")
    before = namespaces()
    res = inproc("experiment", cfg, "-o", tmp_path / "out", env=logging_path(tmp_path, LOGGED))
    assert res.returncode == 2
    err = res.stderr.strip()
    assert err.count("\n") == 0, "a user error is one line, not a traceback"
    assert "bad.yaml" in err
    for w in words:
        assert w in err
    assert calls(tmp_path) == [], "something was run before the configuration was refused"
    assert not (tmp_path / "out").exists()
    assert not (namespaces() - before)


def test_kernel_offloads_through_the_emulator_are_refused_before_any_traffic(
    tmp_path: Path,
) -> None:
    """Super-packets cannot pass the emulator, which reads frames: the plan (after its
    read-only probe of the data plane) refuses the run in one line, before any testbed."""
    need_root()
    need_tool(*TOOLS)
    doc = short_run("test-bad", offloads="kernel", **{"bottleneck.backend": "emulator"})
    cfg = write(doc, tmp_path / "bad.yaml")
    before = namespaces()
    res = inproc("experiment", cfg, "-o", tmp_path / "out", env=logging_path(tmp_path, LOGGED))
    assert res.returncode == 2
    err = res.stderr.strip()
    assert err.count("\n") == 0 and "bad.yaml" in err, err
    for w in ("offloads", "kernel's data plane", "emulator"):
        assert w in err
    ran = calls(tmp_path)
    assert not [c for c in ran if c.startswith(("iperf3", "tcpdump", "ethtool"))], ran
    assert not (tmp_path / "out").exists()
    assert not (namespaces() - before)


def test_unknown_testbed_interface_is_refused(tmp_path: Path) -> None:
    """A testbed file whose interface name could reach a shell is refused when read."""
    need_root()
    need_tool(*TOOLS)
    bed = tmp_path / "lab.yaml"
    bed.write_text(
        "backend: ssh\nhosts:\n"
        "  server: {address: 10.0.0.1, dev: eth1, data_ip: 10.0.1.1}\n"
        "  router: {address: 10.0.0.2, in_dev: 'eth1;reboot', out_dev: eth2}\n"
        "  client: {address: 10.0.0.3, dev: eth1, data_ip: 10.0.2.1}\n"
    )
    cfg = write(short_run("test-bad", testbed=str(bed)), tmp_path / "run.yaml")
    res = inproc("experiment", cfg, "-o", tmp_path / "out", env=logging_path(tmp_path, LOGGED))
    assert res.returncode == 2
    assert "hosts.router.in_dev" in res.stderr and "shell metacharacters" in res.stderr
    assert calls(tmp_path) == []


def test_existing_run_directory_is_never_overwritten(tmp_path: Path) -> None:
    need_root()
    need_tool(*TOOLS)
    out = tmp_path / "run"
    out.mkdir()
    (out / "meta.json").write_text("{}")
    cfg = write(short_run("test-exists"), tmp_path / "run.yaml")
    res = inproc("experiment", cfg, "-o", out, env=logging_path(tmp_path, LOGGED))
    assert res.returncode == 2 and "never overwritten" in res.stderr
    assert (out / "meta.json").read_text() == "{}"
    assert calls(tmp_path) == []


def _path_without_emulator(env: dict[str, str]) -> dict[str, str]:
    """The same PATH minus every directory holding cga-emu, and no CGA_EMU override (the
    message must say how to get it)."""
    parts = [p for p in env["PATH"].split(os.pathsep) if not (Path(p) / "cga-emu").exists()]
    env = {k: v for k, v in env.items() if k != "CGA_EMU"}
    return {**env, "PATH": os.pathsep.join(parts)}


def test_quick_dualpi2_fails_clearly_without_dualpi2_or_the_emulator(tmp_path: Path) -> None:
    need_root()
    need_tool(*TOOLS)
    probe = inproc("testbed", "probe", "--json")
    assert probe.returncode == 0, probe.stderr
    import json

    if json.loads(probe.stdout)["qdiscs"]["dualpi2"]["accepted"]:
        # A kernel with dualpi2: the run is accepted (on the kernel, given iproute2 >= 6.18).
        res = inproc("testbed", "check", RUNS / "quick-dualpi2.yaml")
        assert res.returncode == 0 or "iproute2 >= 6.18" in res.stderr, res.stderr
        return
    env = _path_without_emulator(logging_path(tmp_path, LOGGED))
    before = namespaces()
    res = inproc("experiment", RUNS / "quick-dualpi2.yaml", "-o", tmp_path / "out", env=env)
    assert res.returncode == 2
    err = res.stderr.strip().splitlines()[-1]
    for w in ("dualpi2", "cga-emu", "CONFIG_NET_SCH_DUALPI2", "iproute2 >= 6.18"):
        assert w in err, err
    made = calls(tmp_path)
    # Only the scratch-namespace probe ran: no testbed, no capture, no traffic.
    assert not [c for c in made if c.startswith(("tcpdump", "iperf3", "ethtool"))], made
    assert not [c for c in made if "netns add" in c and "-probe" not in c], made
    assert not (tmp_path / "out").exists()
    assert not (namespaces() - before)


def test_clean_removes_what_a_dead_run_left(tmp_path: Path) -> None:
    """A namespace named for a run whose process is gone, with a process still inside."""
    import subprocess

    need_root()
    dead = 4_000_000  # above pid_max: no live process has it
    ns = f"cgatb-{dead}-beef-srv"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    sleeper = subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "300"])
    try:
        time.sleep(0.3)
        dry = inproc("testbed", "clean", "-n")
        assert dry.returncode == 0 and f"would remove namespace {ns}" in dry.stdout
        assert ns in namespaces()
        res = inproc("testbed", "clean")
        assert res.returncode == 0 and f"removing namespace {ns}" in res.stdout
        assert ns not in namespaces()
        assert sleeper.wait(5) != 0  # killed
        live = f"cgatb-{os.getpid()}-beef-srv"  # our own pid: a live run, left alone
        subprocess.run(["ip", "netns", "add", live], check=True)
        try:
            assert live not in inproc("testbed", "clean", "-n").stdout
        finally:
            subprocess.run(["ip", "netns", "del", live], check=False)
    finally:
        sleeper.kill()
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
