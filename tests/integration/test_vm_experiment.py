"""A whole experiment on the ``vm`` testbed, and the VM's end when the run is killed.

``configs/runs/quick-htb-sfq-vm.yaml`` (TMA 2024's HTB with its SFQ CG leaf, 8 Mbit/s,
``backend: kernel``) runs inside the guest's kernel, which has sch_sfq; this machine's
does not. The run directory is an ordinary one: the metadata say vm (and KVM or TCG),
the captures measure exactly the bottleneck (an idle floor well under a millisecond,
every egress packet has its ingress twin, losses between the taps are the qdisc's drops),
and the CG and TCP flows started when scheduled.
Slow under TCG (~5 min): Python starts 10-20x slower in the guest than here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cganalysis.matching import match_files
from tests.conftest import REPO, need_root
from tests.integration.experiment_helpers import assert_flows_started

pytestmark = pytest.mark.vm

RUN = REPO / "configs" / "runs" / "quick-htb-sfq-vm.yaml"


def _need_vm() -> None:
    need_root()
    from cganalysis.testbed.shared.hosts import TestbedError
    from cganalysis.testbed.vm.testbed import VmOptions, find_kernel, find_tools

    try:
        find_kernel(VmOptions())
        find_tools()
    except TestbedError as e:
        pytest.skip(str(e))


def test_experiment_runs_in_the_guest_kernel(tmp_path: Path) -> None:
    _need_vm()
    out = tmp_path / "vm-htb-sfq"
    res = subprocess.run(
        [sys.executable, "-m", "cganalysis.cli", "experiment", str(RUN), "-o", str(out),
         "--max-duration-s", "16"],
        capture_output=True, text=True, timeout=1500, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    meta = json.loads((out / "meta.json").read_text())
    tb = meta["testbed"]
    assert tb["backend"] == "vm" and tb["inner_backend"] == "netns"
    assert tb["vm"]["accel"] in ("kvm", "tcg")
    assert tb["vm"]["guest_kernel"] == tb["vm"]["kernel_version"] != os.uname().release
    assert meta["bottleneck_backend"] == "kernel"
    kinds = {q["kind"] for dev in meta["qdisc_after"].values() for q in dev["qdisc"]}
    assert {"htb", "sfq", "pfifo"} <= kinds, kinds
    assert not [f for f in meta["flags"] if "not where configured" in f], meta["flags"]
    # The captures measure the router alone: idle, a packet crosses it in microseconds.
    floor = meta["calibration"]["idle_delay_floor"]
    assert floor["packets"] > 50 and floor["median_ms"] < 1.0, floor
    m = match_files(out / "ingress.pcap", out / "egress.pcap")
    # Every egress packet has its ingress twin. Under TCG a handful (13 of 6,461 in one
    # run, 0 in another, no capture drops counted) had none: open, see docs/testbed.md.
    limit = (m.summary.capture_drops_ingress or 0) + 0.01 * m.packets.height
    assert m.summary.egress_only_packets <= limit, m.summary
    # The CG and TCP flows are in the captures and started in time (beside a loaded host
    # the guest once started the rtp-cbr sender over 30 s late, and the checks above
    # passed without a CG packet). Under TCG the guest starts a Python sender 10-20x more
    # slowly than the host (~3 s on a quiet one): the metrics flag a start over 2 s late,
    # the test accepts up to 8 s.
    assert_flows_started(meta, out, m.packets, allowed_late_s=8.0)
    # Undecided packets only at the very end: a sender the guest ran late, still sending
    # when the egress tap stopped.
    p = m.packets
    unknown = p.filter(p["lost"].is_null())
    if unknown.height:
        last = int(p["t_ingress_ns"].max())  # type: ignore[arg-type]
        assert int(unknown["t_ingress_ns"].min()) > last - 1_000_000_000, unknown  # type: ignore[arg-type]
    # Calibration measured the shaper (not HTB's accuracy: TCG timers are late): its
    # window lay inside the flow, even when the loaded host stalled the guest.
    cal = meta["calibration"]
    assert cal["attempts"][0]["offered_mbps"] == 12.0
    assert "problem" not in cal["attempts"][0], cal["attempts"]
    assert meta["capacity_measured_mbps"] > 0.5 * 8, cal
    c0, c1 = (meta["counters"][k] for k in ("at_capture_start", "at_capture_end"))
    qdisc_drops = c1["dropped"] - c0["dropped"]
    assert abs(m.summary.packets_lost - qdisc_drops) <= max(2, 0.02 * qdisc_drops), (
        m.summary.packets_lost,
        qdisc_drops,
    )


def test_killed_run_leaves_no_vm(tmp_path: Path) -> None:
    """SIGTERM to the host process: the guest tears down and QEMU is gone."""
    _need_vm()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cganalysis.cli", "experiment", str(RUN), "-o",
         str(tmp_path / "killed")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    deadline = time.monotonic() + 600
    for line in proc.stdout:
        if "up in" in line or time.monotonic() > deadline:
            break
    qemu = _qemu_children(proc.pid)
    assert qemu, "no QEMU under the run"
    proc.send_signal(signal.SIGTERM)
    proc.wait(120)
    assert proc.returncode != 0
    time.sleep(1)
    assert not [p for p in qemu if Path(f"/proc/{p}").exists()], "QEMU outlived the run"
    assert not (tmp_path / "killed").exists()


def _qemu_children(root: int) -> list[int]:
    """QEMU processes started by ``root`` (they sit in their own process group)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes()
            stat = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if b"qemu-system" in cmd.split(b"\0")[0] and _descends(int(stat[1]), root):
            out.append(int(d.name))
    return out


def _descends(pid: int, root: int) -> bool:
    while pid > 1:
        if pid == root:
            return True
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            return False
    return False
