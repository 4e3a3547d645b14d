"""One run between testbed up and teardown: delay hop and bottleneck, calibration, the
captures, the traffic on schedule, the drain; everything it learns goes into a
:class:`RunRecord`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cganalysis.experiment import competitor
from cganalysis.experiment.build import network_up
from cganalysis.experiment.plan import Plan, RunOptions
from cganalysis.experiment.record import RunRecord
from cganalysis.experiment.schedule import Schedule
from cganalysis.experiment.sources import SOURCES, Started
from cganalysis.testbed.dataplane import calibration
from cganalysis.testbed.dataplane.bottleneck import AnyBottleneck, KernelBottleneck
from cganalysis.testbed.measure import provenance
from cganalysis.testbed.measure.capture import Tap, start_tap, stop_taps
from cganalysis.testbed.shared.hosts import Host, Proc, TestbedError, stop_all
from cganalysis.testbed.shared.topology import Testbed, Topology


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
        self.record = RunRecord()
        self.senders: list[Proc] = []

    def execute(self, bed: Testbed) -> RunRecord:
        cfg, p = self.cfg, self.p
        self.record.times.setup_start_utc = _now()
        topo, delay, bn = network_up(bed, p, self.workdir)
        self.say(f"testbed up: {json.dumps(topo.details)}")
        self.record.bottleneck_commands = [" ".join(c) for c in getattr(bn, "commands", [])]
        self.record.delay_commands = [" ".join(c) for c in delay.commands]
        uncalibrated = p.resolution.bottleneck.uncalibrated_because
        if bn.forward.trace is not None or uncalibrated is not None:
            # A trace's capacity varies by design: no constant rate to calibrate against.
            self.record.calibration = {
                "skipped": "trace-driven link: the capacity varies with the trace; the "
                "metrics take it from capacity_trace"
                if bn.forward.trace is not None
                else uncalibrated
            }
            if cfg.calibration.enabled or p.calibration is not None:
                self.say("calibration skipped: the bottleneck follows a trace")
        elif p.calibration is not None:
            self.record.calibration = p.calibration
        elif cfg.calibration.enabled:
            calib, bn = calibration.calibrate(
                topo, bn, cfg.capture, cfg.calibration, self.workdir, self.say
            )
            self.record.calibration = calib
        self.record.bottleneck_backend = p.resolution.bottleneck.name
        if not isinstance(bn, KernelBottleneck) and bn.started_ns is not None:
            self.record.emulator_started_ns = bn.started_ns
            self.record.emulator_started_uncertainty_ns = bn.started_uncertainty_ns
        self.record.shaper = bn.forward.shaper
        self.record.qdisc_before = bn.dump()
        self.record.hosts = {
            role: provenance.host_facts(h, _devs(topo, role)) for role, h in topo.hosts().items()
        }
        self._traffic(topo, bn)
        self.record.qdisc_after = bn.dump()
        self.record.testbed = {**bed.describe(), **topo.details}
        self.record.topology = {
            "server_ip": topo.server_ip,
            "client_ip": topo.client_ip,
            "router_in": topo.router_in,
            "router_out": topo.router_out,
            "server_dev": topo.server_dev,
            "client_dev": topo.client_dev,
            "delay_via": topo.delay.name,
        }
        by_host: dict[str, tuple[Host, list[tuple[str, Path]]]] = {}
        for host, path in self.fetch:
            by_host.setdefault(host.name, (host, []))[1].append(
                (path, self.workdir / Path(path).name)
            )
        for host, pairs in by_host.values():
            host.fetch_all(pairs)
        return self.record

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
            start_tap(topo.taps, cfg.capture, "ingress", topo.router_in, "in", rate),
            start_tap(
                topo.egress_host or topo.taps,
                cfg.capture,
                "egress",
                topo.router_out,
                topo.egress_direction,
                rate,
            ),
        ]
        c0 = {**bn.counters(), **_input_drops(topo)}
        events = self._events(sched, steps)
        t0_ns = time.time_ns()
        t0 = time.monotonic()
        self.record.times.start_ns = t0_ns
        self.record.times.start_utc = _now()
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
        self.record.times.traffic_end_ns = time.time_ns()
        for s in steps:
            if s.client is not None and not s.client.wait(15.0):
                self.record.flags.append(f"iperf3 step {s.phase.index + 1} did not end on time")
            elif s.client is not None and s.client.returncode() != 0:
                err = topo.server.read_text(s.json_path + ".err").strip()
                raise TestbedError(
                    f"iperf3 step {s.phase.index + 1} failed (exit {s.client.returncode()}): "
                    f"{err[-300:] or topo.server.read_text(s.json_path)[-300:]}"
                )
        for proc in self.senders:
            proc.wait(15.0)
        self._drain(bn)
        c1 = {**bn.counters(), **_input_drops(topo)}
        self.record.times.end_ns = time.time_ns()
        self.record.times.end_utc = _now()
        stop_taps(topo.taps, self.taps)
        for tap in self.taps:
            self.fetch += [(topo.taps, tap.path), (topo.taps, tap.log)]
        n = bn.stop_stats(self.workdir / "qdisc-stats.jsonl")
        self.record.qdisc_stats_records = n
        stop_all(self.procs)
        self.record.counters = {"at_capture_start": _slim(c0), "at_capture_end": _slim(c1)}
        self.record.steps = [
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
                # The kernel's name for the run file's cca (bbr3 is bbr on a v3 kernel).
                kernel_cca = replace(cfg.competitor, cca=self.p.cca_kernel)
                self.procs.append(competitor.start_client(topo, s, kernel_cca))

            events.append((s.phase.start_s, label, start))
        events.append((sched.duration_s, "schedule over", lambda _t: None))
        return sorted(events, key=lambda e: e[0])

    def _keep(self, started: Started) -> None:
        self.procs += started.procs
        self.fetch += started.files
        if started.info:
            self.record.cg_source.update(started.info)

    def _drain(self, bn: AnyBottleneck) -> None:
        """Waits until the queue is empty, so the egress capture sees every packet leave."""
        deadline = time.monotonic() + self.cfg.capture.drain_timeout_s
        while time.monotonic() < deadline:
            if not bn.counters().get("backlog_packets"):
                break
            time.sleep(0.05)
        else:
            self.record.flags.append("queue not drained when the captures stopped")
        time.sleep(0.2)


def _devs(topo: Topology, role: str) -> list[str]:
    return {
        "server": [topo.server_dev],
        "router": [topo.router_in, topo.router_out],
        "taps": [topo.router_in, topo.router_out],
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


def _input_drops(topo: Topology) -> dict[str, int]:
    return {} if topo.input_drops is None else {"router_input_drops": topo.input_drops()}


def _slim(c: dict[str, Any]) -> dict[str, Any]:
    keys = ("sent_bytes", "sent_packets", "dropped", "overlimits", "marked", "backlog_packets")
    out = {k: c.get(k) for k in keys}
    if "router_input_drops" in c:
        out["router_input_drops"] = c["router_input_drops"]
    return out


def _now() -> str:
    return datetime.now(UTC).isoformat()
