"""A whole experiment on the ``uml`` testbed, its refusals, and the UML kernel's end when
the run is interrupted or killed.

``configs/runs/quick-htb-sfq-uml.yaml`` (TMA 2024's HTB with its SFQ CG leaf at 8 Mbit/s,
15 ms each way, ``backend: kernel``) runs with a user-mode Linux kernel as the router: its
HTB, SFQ and netem are the Linux kernel's own, which this machine's kernel lacks. The
run directory is an ordinary one: the metadata name the router's kernel, the captures
measure exactly the bottleneck (every egress packet has its ingress twin, the packets lost
between the taps are the qdisc's drops), the delay hop is off the capture span and in the
round trip, and the CG flow stays out of the TCP flow's queue. The run is an ordinary
user's (issue 58: ``nobody``, dropped to with setpriv, since CI runs the suite as root): the
testbed enters a user namespace that owns its network namespaces, and the UML kernel is one
of that user's processes.
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
from tests.support.nobody import NOBODY, RUNTIME_DIR, as_nobody, nobody_env, nobody_folder

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
    """Every user-mode Linux process of the uml testbed on the machine (its kernels are
    started with ``umid=cga-cga-uml-...``; the sim testbed's, ``umid=cga-sim``, are not)."""
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if b"umid=cga-cga-uml-" in cmd:
                out.add(int(d.name))
    return out


def test_experiment_runs_on_the_uml_router() -> None:
    _need_uml("built")
    need_tool("unshare")
    with nobody_folder() as top:
        _run_as_nobody(top / "user")


def _run_as_nobody(home: Path) -> None:
    before = _uml_pids()
    out = home / "uml-htb-sfq"
    res = subprocess.run(
        as_nobody(sys.executable, "-m", "cganalysis.cli", "experiment", RUN, "-o", out,
                  "--max-duration-s", "16"),
        capture_output=True, text=True, timeout=300, check=False, env=nobody_env(home),
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert {p.stat().st_uid for p in [out, *out.iterdir()]} == {NOBODY}
    meta = json.loads((out / "meta.json").read_text())
    tb = meta["testbed"]
    assert tb["backend"] == "uml" and tb["uml"]["kernel"]["origin"] == "built"
    assert tb["user_namespace"] is True
    # The router's kernel runs at real-time priority where the host allows it (an ordinary
    # user: its RLIMIT_RTPRIO), so the traffic generators beside it cannot delay its timers.
    chrt = subprocess.run(
        as_nobody("chrt", "--fifo", "1", "true"), capture_output=True, check=False
    )
    fifo_allowed = chrt.returncode == 0
    refused = "normal (SCHED_FIFO and a negative nice refused)"  # nobody's on most hosts
    assert tb["uml"]["scheduling"] == ("fifo 20" if fifo_allowed else refused)
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


def test_kernel_offloads_cross_the_uml_router_whole(tmp_path: Path) -> None:
    """`offloads: kernel` on uml: the server's TSO super-packets enter the UML kernel through
    its raw sockets' virtio-net headers, wait in its qdisc as one packet each and leave
    whole, so both captures hold them and they match one to one (the delay hop's veths
    keep their offloads too)."""
    _need_uml("built")
    doc = yaml.safe_load(RUN.read_text())
    doc["offloads"] = "kernel"
    doc["calibration"] = {"enabled": False}
    run = tmp_path / "run.yaml"
    run.write_text(yaml.safe_dump(doc))
    out = tmp_path / "offloads"
    res = _cli("experiment", run, "-o", out, "--max-duration-s", "14")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    meta = json.loads((out / "meta.json").read_text())
    kept = meta["testbed"]["offloads_kept_on"]
    assert kept == ["srv0", "rtr0", "rtr1", "rtr2", "rtr3", "cli0"], kept
    for dev in ("rtr0", "rtr1"):
        assert meta["hosts"]["router"]["offloads"][dev]["gro"] == "on", meta["hosts"]["router"]
    m = match_files(out / "ingress.pcap", out / "egress.pcap")
    assert m.summary.egress_only_packets == 0, m.summary
    tcp = m.packets.filter(m.packets["proto"] == 6)
    big = tcp.filter(tcp["size_bytes"] > 1514)
    assert big.height > 10, f"no super-packets: largest {tcp['size_bytes'].max()} bytes"
    assert int(big["size_bytes"].max()) <= 65535 + 14  # type: ignore[arg-type]
    assert big.filter(~big["lost"])["delay_ms"].null_count() == 0


def test_interrupted_and_killed_runs_leave_no_uml() -> None:
    """An ordinary user's runs. SIGTERM: teardown powers the kernel off. SIGKILL: the kernel
    dies with its owner (setpriv --pdeathsig), and `cganalysis testbed clean`, run by that
    user, ends the processes left in the run's user namespace (its network namespaces die
    with them) and removes the kernel's control folder."""
    _need_uml()
    need_tool("unshare")
    with nobody_folder() as top:
        _kill_runs_as_nobody(top / "user")


def _kill_runs_as_nobody(home: Path) -> None:
    before = _uml_pids()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        proc = subprocess.Popen(
            as_nobody(sys.executable, "-m", "cganalysis.cli", "experiment", RUN, "-o",
                      home / sig.name),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=nobody_env(home),
        )  # fmt: skip
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if "traffic:" in line or time.monotonic() > deadline:
                break
        ours = _uml_pids() - before
        assert ours, "no UML kernel under the run: " + "".join(lines)[-2000:]
        proc.send_signal(sig)
        proc.wait(60)
        assert proc.returncode != 0
        deadline = time.monotonic() + 10
        while _uml_pids() & ours and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _uml_pids() & ours, f"UML outlived a {sig.name}"
        assert not (home / sig.name).exists()
    up = next(ln for ln in lines if "testbed up:" in ln).split("testbed up:", 1)[1]
    tag = json.loads(up)["tag"]
    userns = json.loads((RUNTIME_DIR / "testbeds" / f"{tag}.json").read_text())["user_namespace"]
    clean = subprocess.run(
        as_nobody(sys.executable, "-m", "cganalysis.cli", "testbed", "clean"),
        capture_output=True, text=True, timeout=60, check=False, env=nobody_env(home),
    )  # fmt: skip
    assert clean.returncode == 0, clean.stderr
    assert f"process(es) of run {tag}'s user namespace" in clean.stdout, clean.stdout
    assert "UML control folder" in clean.stdout, clean.stdout
    deadline = time.monotonic() + 5
    while _in_user_namespace(userns) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _in_user_namespace(userns), "processes of the killed run were left"


def _in_user_namespace(inode: int) -> list[int]:
    """The live processes in the user namespace ``inode``."""
    out = []
    for d in Path("/proc").iterdir():
        try:
            inside = d.name.isdigit() and (d / "ns" / "user").stat().st_ino == inode
            if inside and (d / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                out.append(int(d.name))
        except OSError:
            continue
    return out


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
