"""``cganalysis testbed probe`` against this host's own answers, and the golden tc command
lines applied to a real kernel wherever it has the disciplines they use."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import need_root, need_tool
from tests.integration.experiment_helpers import cli, inproc

pytestmark = [pytest.mark.root]
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "tc"


@pytest.fixture
def scratch_ns() -> Iterator[str]:
    """A namespace with veths rtr0 and rtr1 (the names the golden files use)."""
    import os

    ns = f"cgatest-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        for a, b in (("rtr0", "x0"), ("rtr1", "x1")):
            subprocess.run(
                ["ip", "-n", ns, "link", "add", a, "type", "veth", "peer", "name", b], check=True
            )
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


def kernel_accepts(ns: str, kind: str, args: list[str]) -> bool:
    res = subprocess.run(
        ["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "rtr0", "root", kind, *args],
        capture_output=True,
        check=False,
    )
    subprocess.run(
        ["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "rtr0", "root"],
        capture_output=True,
        check=False,
    )
    return res.returncode == 0


def test_probe_reports_what_the_host_really_offers(scratch_ns: str) -> None:
    need_root()
    need_tool("tc", "ip")
    res = cli("testbed", "probe", "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert (
        report["kernel"]
        == subprocess.run(
            ["uname", "-r"], capture_output=True, text=True, check=False
        ).stdout.strip()
    )
    tc_v = subprocess.run(["tc", "-V"], capture_output=True, text=True, check=False).stdout
    assert report["iproute2"]["version"] in tc_v
    for kind, args in {
        "htb": [],
        "pfifo": [],
        "netem": [],
        "sfq": [],
        "dualpi2": [],
        "fq_codel": [],
        "tbf": ["rate", "1mbit", "burst", "32k", "limit", "32k"],
    }.items():
        assert report["qdiscs"][kind]["accepted"] == kernel_accepts(scratch_ns, kind, args), kind
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    assert report["tcp_congestion_control"]["available"] == available
    for tool in ("iperf3", "tcpdump", "mm-link", "cga-emu"):
        assert report["tools"][tool]["path"] == shutil.which(tool), tool
    # No scratch namespace of the probe is left.
    left = subprocess.run(
        ["ip", "netns", "list"], capture_output=True, text=True, check=False
    ).stdout
    assert "-probe" not in left

    text = inproc("testbed", "probe")
    assert text.returncode == 0
    assert re.search(r"^qdiscs\s+accepted: .*\bhtb\b", text.stdout, re.MULTILINE)
    assert re.search(r"^iperf3\s", text.stdout, re.MULTILINE)


def test_golden_tc_lines_are_accepted_by_the_kernel(scratch_ns: str) -> None:
    """Each router golden file's lines, run in order, on this kernel, for every file whose
    disciplines the kernel has (the others need a fuller kernel or the emulator)."""
    need_root()
    need_tool("tc")
    applied, lacking = [], {}
    for golden in sorted(GOLDEN.glob("*.txt")):
        lines = golden.read_text().splitlines()
        if not lines[0].startswith("tc qdisc replace dev rtr"):
            continue  # netem on the endpoints, mahimahi, emulator JSON
        kinds = set(re.findall(r"handle \w+: (\w+)", "\n".join(lines)))
        tbf = ["rate", "1mbit", "burst", "32k", "limit", "32k"]
        missing = [k for k in kinds if not kernel_accepts(scratch_ns, k, tbf if k == "tbf" else [])]
        if missing:
            lacking[golden.name] = missing
            continue
        for dev in ("rtr0", "rtr1"):
            subprocess.run(
                ["ip", "netns", "exec", scratch_ns, "tc", "qdisc", "del", "dev", dev, "root"],
                capture_output=True,
                check=False,
            )
        for line in lines:
            res = subprocess.run(
                ["ip", "netns", "exec", scratch_ns, *line.split()],
                capture_output=True,
                text=True,
                check=False,
            )
            assert res.returncode == 0, f"{golden.name}: {line}: {res.stderr}"
        applied.append(golden.name)
    print(f"applied {applied}; this kernel lacks {lacking}")
    assert applied, "no golden file could be applied: does this kernel have htb and pfifo?"
