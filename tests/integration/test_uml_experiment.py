"""A whole experiment on the ``uml`` testbed, its refusals, and the UML kernel's end when
the run is interrupted or killed.

``configs/runs/quick-htb-sfq-uml.yaml`` (TMA 2024's HTB with its SFQ CG leaf at 8 Mbit/s,
15 ms each way, ``backend: kernel``) runs with a user-mode Linux kernel as the router: its
HTB, SFQ and netem are the Linux kernel's own, which this machine's kernel lacks. The
run directory is an ordinary one: the metadata name the router's kernel, the captures
measure exactly the bottleneck (every egress packet has its ingress twin, the packets lost
between the taps are the qdisc's drops), the delay hop is off the capture span and in the
round trip, and the CG flow stays out of the TCP flow's queue.
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
import yaml

from cganalysis.matching import match_files
from tests.conftest import REPO, need_root, need_tool
from tests.integration.experiment_helpers import TOOLS, assert_flows_started

RUN = REPO / "configs" / "runs" / "quick-htb-sfq-uml.yaml"

pytestmark = [pytest.mark.root, pytest.mark.tools, pytest.mark.slow]


def _need_uml(kernel: str = "auto") -> None:
    need_root()
    need_tool(*TOOLS, "setpriv")
    from cganalysis.testbed.shared.hosts import TestbedError
    from cganalysis.testbed.uml.config import UmlOptions, find_kernel

    try:
        find_kernel(UmlOptions(kernel=kernel))
    except TestbedError as e:
        pytest.skip(str(e))


def _cli(
    *args: str | Path, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cganalysis.cli", *map(str, args)],
        capture_output=True, text=True, timeout=timeout, check=False,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def _uml_pids() -> set[int]:
    """Every user-mode Linux process of this project on the machine (its kernels are
    started with ``umid=cga-...``)."""
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if b"umid=cga-" in cmd:
                out.add(int(d.name))
    return out


def test_experiment_runs_on_the_uml_router(tmp_path: Path) -> None:
    _need_uml("built")
    before = _uml_pids()
    out = tmp_path / "uml-htb-sfq"
    res = _cli("experiment", RUN, "-o", out, "--max-duration-s", "16")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    meta = json.loads((out / "meta.json").read_text())
    tb = meta["testbed"]
    assert tb["backend"] == "uml" and tb["uml"]["kernel"]["origin"] == "built"
    # The router's kernel runs at real-time priority where the host allows it (as root on
    # an ordinary host it does), so the traffic generators beside it cannot delay its timers.
    fifo_allowed = subprocess.run(["chrt", "--fifo", "1", "true"], check=False).returncode == 0
    assert tb["uml"]["scheduling"] == (
        "fifo 20" if fifo_allowed else "normal, nice -20 (SCHED_FIFO refused)"
    )
    release = tb["uml"]["release"]
    assert release != os.uname().release and release in meta["hosts"]["router"]["kernel"]
    assert release not in meta["hosts"]["server"]["kernel"]
    # The router's interfaces carry no offloads (GRO would merge TCP bursts before the qdisc).
    for dev in ("rtr0", "rtr1"):
        assert meta["hosts"]["router"]["offloads"][dev]["gro"] == "off", meta["hosts"]["router"]
    assert meta["bottleneck_backend"] == "kernel" and meta["delay_via"] == "netem"
    kinds = {q["kind"] for dev in meta["qdisc_after"].values() for q in dev["qdisc"]}
    assert {"htb", "sfq", "pfifo"} <= kinds, kinds
    assert not [f for f in meta["flags"] if "not where configured" in f], meta["flags"]
    # The captures measure the router alone: idle, a packet crosses the UML kernel in a
    # fraction of a millisecond (the delay hop is after the egress tap).
    floor = meta["calibration"]["idle_delay_floor"]
    assert floor["packets"] > 50 and floor["median_ms"] < 1.0, floor
    # The kernel's HTB, timed by the UML kernel's clock (8.00 of 8 on a quiet host here;
    # late timers on a loaded host cost a few per cent, as for this machine's own HTB).
    assert meta["capacity_measured_mbps"] > 0.9 * 8, meta["calibration"]
    m = match_files(out / "ingress.pcap", out / "egress.pcap")
    assert m.summary.egress_only_packets == 0, m.summary
    assert_flows_started(meta, out, m.packets, allowed_late_s=4.0)
    # Lost between the taps: the qdisc's drops, and what the router's input dropped
    # before its kernel read it (none on a quiet host; counted, so never unexplained). Both
    # are counts since the router started, read at both ends of the capture: calibration's
    # line-rate bursts before it may overflow the router's input too (61 of them once in CI).
    c0, c1 = (meta["counters"][k] for k in ("at_capture_start", "at_capture_end"))
    qdisc_drops = c1["dropped"] - c0["dropped"]
    input_drops = c1["router_input_drops"] - c0["router_input_drops"]
    assert c1["router_input_drops"] == tb["uml_counters"]["socket_drops"].get("rtr0", 0)
    assert meta["checks"]["drops"]["router_input_drops"] == input_drops, meta["checks"]
    lost = m.summary.packets_lost
    assert abs(lost - qdisc_drops - input_drops) <= 2, (lost, qdisc_drops, meta["counters"])
    # The delay hop is in the round trip: 15 ms each way, netem's own. (iperf3's min_rtt
    # is the least of its once-a-second smoothed RTTs, which include the TCP flow's own
    # queue: a floor, not the propagation delay itself.)
    rtts = [
        json.loads(p.read_text())["end"]["streams"][0]["sender"]["min_rtt"]
        for p in sorted(out.glob("iperf3-step*.json"))
    ]
    assert rtts and all(r >= 29_500 for r in rtts), rtts  # us
    # The CG flow (UDP 30002, SFQ class at priority 0) does not wait behind TCP's queue.
    delivered = m.packets.filter(~m.packets["lost"])
    cg = delivered.filter(delivered["dport"] == 30002)["delay_ms"]
    tcp = delivered.filter(delivered["proto"] == 6)["delay_ms"]
    cg_ms, tcp_ms = float(cg.median()), float(tcp.median())  # type: ignore[arg-type]
    assert cg.len() > 500 and cg_ms < 2.0 and tcp_ms > 20.0, (cg_ms, tcp_ms)
    assert _uml_pids() <= before, "a UML kernel outlived the run"


def test_interrupted_and_killed_runs_leave_no_uml(tmp_path: Path) -> None:
    """SIGTERM: teardown powers the kernel off. SIGKILL: the kernel dies with its owner
    (setpriv --pdeathsig), and `cganalysis testbed clean` removes the namespaces left."""
    _need_uml()
    before = _uml_pids()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        proc = subprocess.Popen(
            [sys.executable, "-m", "cganalysis.cli", "experiment", str(RUN), "-o",
             str(tmp_path / sig.name)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        for line in proc.stdout:
            if "traffic:" in line or time.monotonic() > deadline:
                break
        ours = _uml_pids() - before
        assert ours, "no UML kernel under the run"
        proc.send_signal(sig)
        proc.wait(60)
        assert proc.returncode != 0
        deadline = time.monotonic() + 10
        while _uml_pids() & ours and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _uml_pids() & ours, f"UML outlived a {sig.name}"
        assert not (tmp_path / sig.name).exists()
    clean = _cli("testbed", "clean")
    assert clean.returncode == 0, clean.stderr
    assert "UML control folder" in clean.stdout, clean.stdout
    left = subprocess.run(
        ["ip", "netns", "list"], capture_output=True, text=True, check=True
    ).stdout
    assert not [ln for ln in left.splitlines() if f"cgatb-{proc.pid}-" in ln], left


def test_refusals_name_what_to_do(tmp_path: Path) -> None:
    """Before any testbed exists: a kernel path in a (shared) testbed file, a local kernel
    that is not there, and Debian's UML kernel, which lacks DualPI2 (or, on a CPU whose
    extended state it cannot hold, does not boot), each in one line naming what to do."""
    _need_uml("debian")
    from cganalysis.testbed.uml.boot import boot_failure
    from cganalysis.testbed.uml.config import UmlOptions, find_kernel

    doc = yaml.safe_load(RUN.read_text())
    bed = tmp_path / "bed.yaml"
    bed.write_text(yaml.safe_dump({"backend": "uml", "uml": {"kernel": "/nowhere/linux"}}))
    doc["testbed"] = str(bed)
    run = tmp_path / "run.yaml"
    run.write_text(yaml.safe_dump(doc))
    res = _cli("experiment", run, "-o", tmp_path / "a")
    assert res.returncode != 0 and "key uml.kernel: '/nowhere/linux'" in res.stderr
    assert "$CGA_UML_KERNEL" in res.stderr
    bed.write_text(yaml.safe_dump({"backend": "uml", "uml": {"kernel": "debian"}}))
    res = _cli("experiment", run, "-o", tmp_path / "a", env={"CGA_UML_KERNEL": "/nowhere/linux"})
    assert res.returncode != 0 and "$CGA_UML_KERNEL: /nowhere/linux not found" in res.stderr
    doc["bottleneck"]["qdisc"] = {"kind": "dualpi2", "limit": 1000}
    run.write_text(yaml.safe_dump(doc))
    res = _cli("experiment", run, "-o", tmp_path / "b")
    last = res.stderr.strip().splitlines()[-1]
    assert res.returncode != 0 and "build-uml.sh" in last
    if boot_failure(find_kernel(UmlOptions(kernel="debian"))) is None:
        assert "lacks qdisc dualpi2" in last
    else:
        assert "uml.kernel debian" in last and "cannot boot on this host" in last
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
