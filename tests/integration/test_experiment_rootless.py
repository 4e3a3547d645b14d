"""The netns testbed run by an ordinary user (issue 58): inside a user namespace that owns
its network namespaces, nothing of the host's changed.

CI runs the suite as root: each test drops to ``nobody`` for the run (setpriv), as a
researcher without root would run it. The quick run of the netns tests (HTB + pfifo,
iperf3 Cubic against the CG stand-in) runs once as root and once as ``nobody``: the same
set-up commands, the same kind of packet table, every file the user's.
"""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cganalysis.matching import match_files
from tests.conftest import need_root, need_tool
from tests.integration.experiment_helpers import TOOLS, cli, namespaces, short_run, write
from tests.support.nobody import NOBODY, RUNTIME_DIR, as_nobody, nobody_env, nobody_folder

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]


@pytest.fixture
def top() -> Iterator[Path]:
    """A folder every user may enter, with ``user/`` belonging to ``nobody``."""
    need_root()
    need_tool(*TOOLS, "setpriv", "unshare")
    Path("/run/netns").mkdir(exist_ok=True)  # what `ip netns` or install.sh makes as root
    with nobody_folder() as path:
        yield path


def _env(top: Path) -> dict[str, str]:
    return nobody_env(top / "user")


def _as_nobody(*args: str | Path) -> list[str]:
    return as_nobody(sys.executable, "-m", "cganalysis.cli", *args)


def _gone(pid: int) -> bool:
    """Ended (a zombie waiting for its reaper has ended too)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_an_ordinary_user_gets_root_s_kind_of_run(top: Path) -> None:
    # No calibration here (test_an_ordinary_user_calibrates_... has it): set-up alone.
    cfg = write(short_run("test-rootless", **{"calibration.enabled": False}), top / "run.yaml")
    root_out, user_out = top / "root", top / "user" / "run"
    as_root = cli("experiment", cfg, "-o", root_out)
    assert as_root.returncode == 0, as_root.stderr[-2000:]
    before = namespaces()
    as_user = subprocess.run(
        _as_nobody("experiment", cfg, "-o", user_out),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=_env(top),
    )
    assert as_user.returncode == 0, as_user.stderr[-2000:]
    # The run's files, captures first, are the user's; its namespaces were never the host's.
    assert {p.stat().st_uid for p in [user_out, *user_out.iterdir()]} == {NOBODY}
    root_bed = json.loads((root_out / "meta.json").read_text())["testbed"]
    user_bed = json.loads((user_out / "meta.json").read_text())["testbed"]
    assert user_bed["user_namespace"] is True and "user_namespace" not in root_bed
    assert not set(user_bed["namespaces"].values()) & (before | namespaces())

    def commands(bed: dict[str, Any]) -> list[str]:
        return [re.sub(r"cgatb-\d+-[0-9a-f]+", "NS", c) for c in bed["setup_commands"]]

    assert commands(user_bed) == commands(root_bed)
    root_m = match_files(root_out / "ingress.pcap", root_out / "egress.pcap")
    user_m = match_files(user_out / "ingress.pcap", user_out / "egress.pcap")
    assert user_m.packets.schema == root_m.packets.schema
    assert user_m.summary.egress_only_packets == 0
    for m in (root_m, user_m):
        flows = m.packets.filter(m.packets["proto"] == 17)["dport"].unique().to_list()
        assert flows == [30002], flows  # the CG stream, and TCP beside it
        assert m.packets.filter(m.packets["proto"] == 6).height > 1000
    # Its lock and (removed) state file were in its own runtime folder.
    assert (RUNTIME_DIR / "locks" / "netns.lock").is_file()
    tag = user_bed["tag"]
    assert not (RUNTIME_DIR / "testbeds" / f"{tag}.json").exists()


def test_testbed_clean_ends_what_a_killed_rootless_run_left(top: Path) -> None:
    cfg = write(short_run("test-rootless-kill", **{"calibration.enabled": False}), top / "r.yaml")
    runner = subprocess.Popen(
        _as_nobody("experiment", cfg, "-o", top / "user" / "killed"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(top),
    )
    assert runner.stderr is not None
    lines = []
    deadline = time.monotonic() + 90
    while not any("step 1/1:" in line for line in lines):
        assert time.monotonic() < deadline and runner.poll() is None, "".join(lines)
        lines.append(runner.stderr.readline())
    tag = json.loads(next(x for x in lines if "testbed up:" in x).split("testbed up:", 1)[1])["tag"]
    state = RUNTIME_DIR / "testbeds" / f"{tag}.json"
    userns = json.loads(state.read_text())["user_namespace"]
    runner.send_signal(signal.SIGKILL)  # no teardown at all
    runner.wait(10)

    def in_userns() -> list[int]:
        out = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and not _gone(int(entry.name)):
                try:
                    if (entry / "ns" / "user").stat().st_ino == userns:
                        out.append(int(entry.name))
                except OSError:
                    continue
        return out

    left = in_userns()
    assert len(left) >= 5, left  # tcpdump x2, poller, iperf3 server + client, CG sender, sink
    cleaned = subprocess.run(
        _as_nobody("testbed", "clean"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=_env(top),
    )
    assert cleaned.returncode == 0, cleaned.stderr
    assert f"ending {len(left)} process(es) of run {tag}'s user namespace" in cleaned.stdout
    deadline = time.monotonic() + 5
    while in_userns() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not in_userns(), "processes of the killed run were left"
    assert not state.exists()


def test_a_host_without_user_namespaces_says_which_setting(top: Path) -> None:
    """A host whose user.max_user_namespaces is 0, as seen from a user namespace of root's
    with that limit (the host's own setting stays as it is)."""
    cfg = write(short_run("test-rootless-refused"), top / "run.yaml")
    run = _as_nobody("experiment", cfg, "-o", top / "user" / "no")
    # Once its map is written, the shell executes another to be root of its namespace.
    script = (
        'while [ -z "$(cat /proc/self/uid_map)" ]; do sleep 0.05; done; exec sh -c '
        + shlex.quote('echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"')
        + ' sh "$@"'
    )
    proc = subprocess.Popen(
        ["unshare", "--user", "sh", "-c", script, "sh", *run],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(top),
    )
    ours = Path("/proc/self/ns/user").stat().st_ino
    while Path(f"/proc/{proc.pid}/ns/user").stat().st_ino == ours:  # unshare not done yet
        time.sleep(0.01)
    for name in ("uid_map", "gid_map"):  # root and nobody, as they are on the host
        Path(f"/proc/{proc.pid}/{name}").write_text(f"0 0 1\n{NOBODY} {NOBODY} 1\n")
    _, err = proc.communicate(timeout=120)
    lines = err.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, err
    assert "max_user_namespaces=0" in lines[0], lines[0]
    assert "sysctl -w user.max_user_namespaces=" in lines[0], lines[0]


def test_an_ordinary_user_calibrates_a_netns_bottleneck(top: Path) -> None:
    """`testbed calibrate` (what the workflow runs before a campaign's experiments) enters
    the user namespace as an experiment does; its files are the user's."""
    cfg = write(short_run("test-rootless-cal"), top / "cal.yaml")
    out = top / "user" / "cal"
    res = subprocess.run(
        _as_nobody("testbed", "calibrate", cfg, "-o", out),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=_env(top),
    )
    assert res.returncode == 0, res.stderr[-2000:]
    calib = json.loads((out / "calibration.json").read_text())
    assert calib["capacity_measured_mbps"] > 0.5 * calib["configured_mbps"], calib
    assert {p.stat().st_uid for p in [out, *out.iterdir()]} == {NOBODY}


def test_an_ordinary_user_s_probe_tries_what_its_runs_get(top: Path) -> None:
    """`testbed probe` by an ordinary user tries each qdisc in a user namespace of theirs,
    as their runs use one, and boots the installed UML kernels as that user: root's
    answers."""
    as_root = cli("testbed", "probe", "--json")
    assert as_root.returncode == 0, as_root.stderr
    as_user = subprocess.run(
        _as_nobody("testbed", "probe", "--json"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=_env(top),
    )
    assert as_user.returncode == 0 and "cannot be tried" not in as_user.stderr, as_user.stderr
    root_report, user_report = json.loads(as_root.stdout), json.loads(as_user.stdout)

    def accepted(report: dict[str, Any]) -> list[str]:
        return sorted(k for k, v in report["qdiscs"].items() if v["accepted"])

    assert "htb" in accepted(user_report) and accepted(user_report) == accepted(root_report)
    assert user_report["uml_kernels"] == root_report["uml_kernels"]
