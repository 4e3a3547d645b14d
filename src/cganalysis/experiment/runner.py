"""One experiment, end to end: checks, testbed up, bottleneck, calibration, captures,
traffic on schedule, drain, checks, metadata, teardown, and the run directory renamed
into place.

Everything that can be refused is refused before anything is touched (configuration,
tools, what the kernel or the emulator can run). From the moment the testbed comes up,
teardown runs whatever happens: success, error, SIGINT or SIGTERM.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cganalysis.errors import ConfigError
from cganalysis.experiment import competitor, rundir
from cganalysis.experiment.config import RunConfig
from cganalysis.experiment.meta import build_meta
from cganalysis.experiment.schedule import Schedule
from cganalysis.experiment.sources import SOURCES, Started
from cganalysis.interrupts import signals_ignored, signals_raise
from cganalysis.io import write_json
from cganalysis.testbed import backend, calibration, provenance
from cganalysis.testbed.bottleneck import AnyBottleneck, Delay, EmulatorBottleneck, KernelBottleneck
from cganalysis.testbed.capture import Tap, start_tap, stop_taps
from cganalysis.testbed.hosts import Host, NetnsHost, Proc, TestbedError, stop_all
from cganalysis.testbed.lock import testbed_lock
from cganalysis.testbed.probe import missing_tools
from cganalysis.testbed.topology import Layout, Testbed, Topology

Progress = Callable[[str], None]
NEEDED_TOOLS = ("ip", "tc", "ethtool", "iperf3", "python3", "ping", "ss")


@dataclass
class RunOptions:
    run_id: str
    campaign: str | None = None
    repetition: int | None = None
    time_scale: float = 1.0
    max_duration_s: float | None = None
    calibration_file: Path | None = None
    keep_failed: bool = False
    progress: Progress = print


@dataclass
class Plan:
    cfg: RunConfig
    schedule: Schedule
    resolution: backend.Resolution
    calibration: dict[str, Any] | None


def plan(cfg: RunConfig, opts: RunOptions, probe_host: Host) -> Plan:
    """Everything decided and checked before the testbed exists (nothing is touched)."""
    schedule = cfg.schedule.scaled(opts.time_scale).fit(opts.max_duration_s)
    # ssh testbeds check each host's own tools when they are read (sshbed._check_host).
    local = _local_kind(cfg) == "netns"
    tools = (*NEEDED_TOOLS, cfg.capture.tool) if local else ("tc",)
    missing = missing_tools(probe_host, tools)
    if missing:
        raise TestbedError(
            f"on {probe_host.name}: {', '.join(missing)} not found; `bash scripts/install.sh` "
            "installs them (Debian packages iproute2, ethtool, iperf3, tcpdump, iputils-ping)"
        )
    available = probe_host.run(
        ["sysctl", "-n", "net.ipv4.tcp_available_congestion_control"], check=False
    ).stdout.split()
    if available and cfg.competitor.cca not in available:
        raise TestbedError(
            f"{cfg.source}: key competitor.cca: {cfg.competitor.cca!r} is not offered by "
            f"the kernel of {probe_host.name} (available: {', '.join(available)})"
        )
    SOURCES[cfg.cg.source].check(probe_host)
    resolution = backend.resolve(cfg.bottleneck, cfg.propagation, probe_host)
    calib = None
    if opts.calibration_file is not None:
        calib = json.loads(opts.calibration_file.read_text(encoding="utf-8"))
        if calib.get("bottleneck") != cfg.bottleneck.to_dict():
            raise ConfigError(
                f"{opts.calibration_file}: calibrated another bottleneck than {cfg.source}'s; "
                "calibrate this one (cganalysis testbed calibrate)"
            )
    return Plan(cfg, schedule, resolution, calib)


def make_bottleneck(p: Plan, topo: Topology, workdir: Path) -> AnyBottleneck:
    b = p.cfg.bottleneck
    if p.resolution.bottleneck == "emulator":
        return EmulatorBottleneck(topo, b, p.cfg.monitor, workdir)
    bn = KernelBottleneck(topo, b, p.cfg.monitor)
    if p.calibration and p.calibration.get("shaper") in ("htb", "tbf"):
        bn = bn.with_forward(replace(b.forward, shaper=p.calibration["shaper"]))
    return bn


def make_testbed(cfg: RunConfig, p: Plan, workdir: Path) -> Testbed:
    layout = Layout(
        l2_router=p.resolution.bottleneck == "emulator",
        delay_via=p.resolution.delay_via,
        cca=cfg.competitor.cca,
        ecn=1 if cfg.competitor.ecn else 0,
    )
    if cfg.testbed.kind == "vm" and _local_kind(cfg) == "netns":
        from cganalysis.testbed.vmguest import VmNetnsTestbed

        return VmNetnsTestbed(layout, workdir)
    if cfg.testbed.kind == "netns":
        from cganalysis.testbed.netns import NetnsTestbed

        return NetnsTestbed(layout, workdir)
    from cganalysis.testbed.sshbed import SshTestbed

    assert cfg.testbed.path is not None
    return SshTestbed.from_file(cfg.testbed.path, layout, workdir)


@contextmanager
def probing(cfg: RunConfig) -> Iterator[Host]:
    """The host whose kernel and tools decide what the run can use (read-only checks):
    this machine for netns, the router for an ssh testbed (after every host was checked),
    a booted guest for vm (inside it: the guest itself, as netns)."""
    if cfg.testbed.kind == "vm" and _local_kind(cfg) != "netns":
        from cganalysis.testbed.vmrun import probing_vm

        with probing_vm(cfg.testbed.path) as guest:
            yield guest
        return
    if _local_kind(cfg) == "netns":
        import os

        if os.geteuid() != 0:
            raise TestbedError(
                "the netns testbed needs root (network namespaces, tc); run as root or through sudo"
            )
        yield NetnsHost("this host", None, Path("/"))
        return
    from cganalysis.testbed.sshbed import probing_ssh

    assert cfg.testbed.path is not None
    with probing_ssh(cfg.testbed.path) as host:
        yield host


def _local_kind(cfg: RunConfig) -> str:
    """The testbed this process builds: a vm run is a netns run inside its guest."""
    from cganalysis.testbed.vmconf import in_guest

    return "netns" if cfg.testbed.kind == "vm" and in_guest() else cfg.testbed.kind


def _vm_host_side(cfg: RunConfig) -> bool:
    """True on the host of a vm run: the guest runs it (testbed/vmrun.py)."""
    return cfg.testbed.kind == "vm" and _local_kind(cfg) == "vm"


def check(cfg: RunConfig, opts: RunOptions) -> Plan:
    with probing(cfg) as host:
        return plan(cfg, opts, host)


class Session:
    """The state of one run between testbed up and teardown."""

    def __init__(self, p: Plan, opts: RunOptions, workdir: Path) -> None:
        self.p = p
        self.cfg = p.cfg
        self.opts = opts
        self.say = opts.progress
        self.workdir = workdir
        self.procs: list[Proc] = []
        self.fetch: list[tuple[Host, str]] = []
        self.taps: list[Tap] = []
        self.times: dict[str, Any] = {}
        self.flags: list[str] = []
        self.data: dict[str, Any] = {}
        self.senders: list[Proc] = []

    def execute(self, bed: Testbed) -> dict[str, Any]:
        cfg, p = self.cfg, self.p
        self.times["setup_start_utc"] = _now()
        topo = bed.up()
        self.say(f"testbed up: {json.dumps(topo.details)}")
        delay = Delay(topo, cfg.propagation, self.workdir)
        delay.apply()
        bn = make_bottleneck(p, topo, self.workdir)
        bn.apply()
        self.data["bottleneck_commands"] = [" ".join(c) for c in getattr(bn, "commands", [])]
        self.data["delay_commands"] = [" ".join(c) for c in delay.commands]
        # ARP and routes warm before any capture, so the captures hold only the run.
        topo.server.run(["ping", "-c", "2", "-i", "0.2", "-W", "2", topo.client_ip], timeout_s=15)
        if bn.forward.trace is not None:
            # A trace's capacity varies by design: no constant rate to calibrate against.
            self.data["calibration"] = {
                "skipped": "trace-driven link: the capacity varies with the trace; the "
                "metrics take it from capacity_trace"
            }
            if cfg.calibration.enabled or p.calibration is not None:
                self.say("calibration skipped: the bottleneck follows a trace")
        elif p.calibration is not None:
            self.data["calibration"] = p.calibration
        elif cfg.calibration.enabled:
            calib, bn = calibration.calibrate(
                topo, bn, cfg.capture, cfg.calibration, self.workdir, self.say
            )
            self.data["calibration"] = calib
        self.data["bottleneck_backend"] = bn.backend
        if isinstance(bn, EmulatorBottleneck) and bn.started_ns is not None:
            self.data["emulator_started_ns"] = bn.started_ns
            self.data["emulator_started_uncertainty_ns"] = bn.started_uncertainty_ns
        self.data["shaper"] = bn.forward.shaper
        self.data["qdisc_before"] = bn.dump()
        self.data["hosts"] = {
            role: provenance.host_facts(h, _devs(topo, role)) for role, h in topo.hosts().items()
        }
        self._traffic(topo, bn)
        self.data["qdisc_after"] = bn.dump()
        self.data["testbed"] = {**bed.describe(), **topo.details}
        self.data["topology"] = {
            "server_ip": topo.server_ip,
            "client_ip": topo.client_ip,
            "router_in": topo.router_in,
            "router_out": topo.router_out,
            "server_dev": topo.server_dev,
            "client_dev": topo.client_dev,
            "delay_via": topo.delay_via,
        }
        by_host: dict[str, tuple[Host, list[tuple[str, Path]]]] = {}
        for host, path in self.fetch:
            by_host.setdefault(host.name, (host, []))[1].append(
                (path, self.workdir / Path(path).name)
            )
        for host, pairs in by_host.values():
            host.fetch_all(pairs)
        return self.data

    def _traffic(self, topo: Topology, bn: AnyBottleneck) -> None:
        cfg, sched = self.cfg, self.p.schedule
        steps = competitor.plan(sched.phases(), cfg.competitor, topo.server)
        servers = competitor.start_servers(topo, steps)
        self.procs += servers
        for s in steps:
            calibration.wait_listening(topo.client, s.port)
        source = SOURCES[cfg.cg.source]
        rx = source.start_receiver(topo, cfg.cg)
        self._keep(rx)
        bn.start_stats("qdisc-stats.jsonl")
        rate = bn.forward.rate_mbit
        self.taps = [
            start_tap(topo.router, cfg.capture, "ingress", topo.router_in, "in", rate),
            start_tap(topo.router, cfg.capture, "egress", topo.router_out, "out", rate),
        ]
        c0 = bn.counters()
        events = self._events(sched, steps)
        t0_ns = time.time_ns()
        t0 = time.monotonic()
        self.times["start_ns"] = t0_ns
        self.times["start_utc"] = _now()
        self.say(f"traffic: {sched.duration_s:g} s, {len(steps)} competitor step(s)")
        last_report = -1e9
        report_every = 10.0 if sched.duration_s > 60 else 5.0
        for at, label, action in events:
            while (wait := t0 + at - time.monotonic()) > 0:
                elapsed = time.monotonic() - t0
                if elapsed - last_report >= report_every:
                    self.say(_where(elapsed, sched, steps))
                    last_report = elapsed
                time.sleep(min(wait, 0.5))
            if label:
                self.say(f"[{time.monotonic() - t0:7.1f} s / {sched.duration_s:g} s] {label}")
            action(topo)
        self.times["traffic_end_ns"] = time.time_ns()
        for s in steps:
            if s.client is not None and not s.client.wait(15.0):
                self.flags.append(f"iperf3 step {s.phase.index + 1} did not end on time")
            elif s.client is not None and s.client.returncode() != 0:
                err = topo.server.read_text(s.json_path + ".err").strip()
                raise TestbedError(
                    f"iperf3 step {s.phase.index + 1} failed (exit {s.client.returncode()}): "
                    f"{err[-300:] or topo.server.read_text(s.json_path)[-300:]}"
                )
        for proc in self.senders:
            proc.wait(15.0)
        self._drain(bn)
        c1 = bn.counters()
        self.times["end_ns"] = time.time_ns()
        self.times["end_utc"] = _now()
        stop_taps(topo.router, self.taps)
        for tap in self.taps:
            self.fetch += [(topo.router, tap.path), (topo.router, tap.log)]
        n = bn.stop_stats(self.workdir / "qdisc-stats.jsonl")
        self.data["qdisc_stats_records"] = n
        stop_all(self.procs)
        self.data["counters"] = {"at_capture_start": _slim(c0), "at_capture_end": _slim(c1)}
        self.data["steps"] = [
            {
                "index": s.phase.index + 1,
                "start_s": s.phase.start_s,
                "seconds": s.seconds,
                "rate_mbit": s.phase.rate_mbit,
                "port": s.port,
                "returncode": None if s.client is None else s.client.returncode(),
            }
            for s in steps
        ]
        self.fetch += [(topo.server, s.json_path) for s in steps]
        self.fetch += [(topo.server, s.json_path + ".err") for s in steps]

    def _events(
        self, sched: Schedule, steps: list[competitor.Step]
    ) -> list[tuple[float, str, Callable[[Topology], None]]]:
        cfg = self.cfg
        self.senders = []
        cg_end = sched.cg_stop_s if sched.cg_stop_s is not None else sched.duration_s

        def start_cg(topo: Topology) -> None:
            started = SOURCES[cfg.cg.source].start_sender(topo, cfg.cg, cg_end - sched.cg_start_s)
            self._keep(started)
            self.senders += started.procs

        events: list[tuple[float, str, Callable[[Topology], None]]] = [
            (sched.cg_start_s, f"CG stream ({cfg.cg.source}) starts", start_cg)
        ]
        for s in steps:
            label = f"step {s.phase.index + 1}/{len(steps)}: competitor " + (
                "bulk" if s.phase.rate_mbit is None else f"{s.phase.rate_mbit:g} Mbit/s"
            )

            def start(topo: Topology, s: competitor.Step = s) -> None:
                self.procs.append(competitor.start_client(topo, s, cfg.competitor))

            events.append((s.phase.start_s, label, start))
        events.append((sched.duration_s, "schedule over", lambda _t: None))
        return sorted(events, key=lambda e: e[0])

    def _keep(self, started: Started) -> None:
        self.procs += started.procs
        self.fetch += started.files
        if started.info:
            self.data.setdefault("cg_source", {}).update(started.info)

    def _drain(self, bn: AnyBottleneck) -> None:
        """Waits until the queue is empty, so the egress capture sees every packet leave."""
        deadline = time.monotonic() + self.cfg.capture.drain_timeout_s
        while time.monotonic() < deadline:
            if not bn.counters().get("backlog_packets"):
                break
            time.sleep(0.05)
        else:
            self.flags.append("queue not drained when the captures stopped")
        time.sleep(0.2)


def _devs(topo: Topology, role: str) -> list[str]:
    return {
        "server": [topo.server_dev],
        "router": [topo.router_in, topo.router_out],
        "client": [topo.client_dev],
        "delay": list(topo.delay_devs or ()),
    }[role]


def _where(elapsed: float, sched: Schedule, steps: list[competitor.Step]) -> str:
    current = [s for s in steps if s.phase.start_s <= elapsed]
    step = (
        f"step {current[-1].phase.index + 1}/{len(steps)}" if current else "before the competitor"
    )
    return (
        f"[{elapsed:7.1f} s / {sched.duration_s:g} s] {step}; "
        f"remaining {max(0.0, sched.duration_s - elapsed):.0f} s"
    )


def _slim(c: dict[str, Any]) -> dict[str, Any]:
    keys = ("sent_bytes", "sent_packets", "dropped", "overlimits", "marked", "backlog_packets")
    return {k: c.get(k) for k in keys}


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _hold_testbed(cfg: RunConfig, what: str, opts: RunOptions) -> AbstractContextManager[None]:
    """One run at a time on a testbed (cganalysis.testbed.lock), waiting if need be."""
    return testbed_lock(cfg.testbed.lock_name(), what, opts.progress)


def run_experiment(cfg: RunConfig, out: Path, opts: RunOptions) -> dict[str, Any]:
    """Runs one experiment into ``out`` (created; never overwritten). Returns meta.json."""
    if _vm_host_side(cfg):
        from cganalysis.experiment.inguest import run_in_guest

        return run_in_guest("experiment", cfg, out, opts)
    rundir.check_new(out)
    p = check(cfg, opts)
    opts.progress(
        f"run {opts.run_id}: bottleneck {p.resolution.bottleneck} ({p.resolution.reason}), "
        f"delay {p.resolution.delay_via}, {p.schedule.duration_s:g} s"
    )
    tmp: Path | None = None
    bed: Testbed | None = None
    ok = False
    try:
        with signals_raise(), _hold_testbed(cfg, opts.run_id, opts):
            tmp = rundir.temp_dir(out)
            bed = make_testbed(cfg, p, tmp)
            session = Session(p, opts, tmp)
            try:
                data = session.execute(bed)
            finally:
                with signals_ignored():
                    bed.down()
                    opts.progress("testbed down")
            meta = build_meta(cfg, p, opts, session, data, tmp)
            write_json(meta, tmp / "meta.json")
            rundir.commit(tmp, out)
            ok = True
    finally:
        if not ok and tmp is not None:
            with signals_ignored():
                kept = rundir.discard(tmp, opts.keep_failed)
            if kept:
                opts.progress(f"kept the failed run's files in {kept}")
    for flag in meta["flags"]:
        opts.progress(f"FLAG: {flag}")
    opts.progress(f"wrote {out}")
    return meta


def run_calibration(cfg: RunConfig, out: Path, opts: RunOptions) -> dict[str, Any]:
    """Calibrates ``cfg``'s bottleneck alone into directory ``out`` (calibration.json and
    its captures); experiments then take it with ``--calibration out/calibration.json``."""
    if cfg.bottleneck.forward.trace is not None:
        raise ConfigError(
            f"{cfg.source}: bottleneck.trace: a trace-driven link has no constant capacity to "
            "calibrate; its runs skip calibration and the metrics use the trace"
        )
    if _vm_host_side(cfg):
        from cganalysis.experiment.inguest import run_in_guest

        return run_in_guest("calibration", cfg, out, opts)
    rundir.check_new(out)
    p = check(cfg, opts)
    tmp: Path | None = None
    ok = False
    try:
        with signals_raise(), _hold_testbed(cfg, f"calibration of {opts.run_id}", opts):
            tmp = rundir.temp_dir(out)
            bed = make_testbed(cfg, p, tmp)
            try:
                topo = bed.up()
                delay = Delay(topo, cfg.propagation, tmp)
                delay.apply()
                bn = make_bottleneck(p, topo, tmp)
                bn.apply()
                topo.server.run(
                    ["ping", "-c", "2", "-i", "0.2", "-W", "2", topo.client_ip], timeout_s=15
                )
                calib, bn = calibration.calibrate(
                    topo, bn, cfg.capture, cfg.calibration, tmp, opts.progress
                )
                calib.update(
                    bottleneck=cfg.bottleneck.to_dict(),
                    propagation=cfg.propagation.to_dict(),
                    backend=bn.backend,
                    created_utc=_now(),
                    qdisc=bn.dump(),
                    testbed=bed.describe(),
                    controller=provenance.controller(),
                )
            finally:
                with signals_ignored():
                    bed.down()
            write_json(calib, tmp / "calibration.json")
            rundir.commit(tmp, out)
            ok = True
    finally:
        if not ok and tmp is not None:
            with signals_ignored():
                rundir.discard(tmp, opts.keep_failed)
    opts.progress(f"wrote {out / 'calibration.json'}")
    return calib
