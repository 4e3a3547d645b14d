"""Installing the bottleneck (kernel qdiscs or the link emulator) and reading it back.

Both data planes offer the same operations to the runner: apply, verify what was
installed, read the counters now, poll statistics into ``qdisc-stats.jsonl``, dump the
state for the metadata, remove. The propagation delay (netem, or a delay-only emulator
hop) is installed here too, always off the router's capture span.
"""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path
from typing import Any

from cganalysis.emulator.binary import NAME
from cganalysis.emulator.config import check_argv, raise_for_check, write_config
from cganalysis.emulator.process import READY
from cganalysis.testbed.dataplane.mmlog import MahimahiBottleneck
from cganalysis.testbed.rendering import emuconf, tcparse
from cganalysis.testbed.rendering.render import render_delete, render_direction, render_netem
from cganalysis.testbed.shared.hosts import Host, Proc, TestbedError, stop, wait_for_text
from cganalysis.testbed.shared.topology import Topology
from cganalysis.testbed.spec.config import Bottleneck, Direction, Monitor, Propagation
from cganalysis.testbed.spec.qdisc import Htb

POLLER = Path(__file__).with_name("poller.py")
_RATE = re.compile(r"^([\d.]+)([KMG]?)bit$")
_RATE_UNITS = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}


def tc_rate_mbit(text: str) -> float | None:
    """``8Mbit`` -> 8.0 (tc prints SI units for rates)."""
    m = _RATE.match(text)
    return None if not m else float(m.group(1)) * _RATE_UNITS[m.group(2)] / 1e6


def start_emulator(host: Host, config: dict[str, Any], workdir: Path, role: str) -> Proc:
    """``cga-emu`` with ``config`` (written to ``workdir/emu-ROLE.json``) on ``host``, once
    ready. The file is first read by ``cga-emu --check`` on that host, the program that will
    run it: a configuration it refuses is a ConfigError naming the file and the key, before
    anything starts."""
    local = write_config(config, workdir / f"emu-{role}.json")
    staged = host.stage(local)
    checked = host.run(check_argv(staged), check=False, timeout_s=60.0)
    raise_for_check(checked.returncode, checked.stderr)
    out = host.path(f"emu-{role}.out")
    proc = host.spawn(
        f"cga-emu ({role})",
        [NAME, "--config", staged],
        stdout=out,
        stderr=host.path(f"emu-{role}.log"),
    )
    wait_for_text(host, out, READY, proc, timeout_s=10.0)
    return proc


class KernelBottleneck:
    """tc qdiscs on the router's client-side interface (and server-side for reverse)."""

    def __init__(self, topo: Topology, b: Bottleneck, monitor: Monitor) -> None:
        self.topo = topo
        self.b = b
        self.forward = b.forward
        self.monitor = monitor
        self.commands: list[list[str]] = []
        self.poller: Proc | None = None
        self.raw_stats: str | None = None

    def devices(self) -> list[tuple[str, str, Direction]]:
        out = [(self.topo.router_out, "a_to_b", self.forward)]
        if self.b.reverse is not None:
            out.append((self.topo.router_in, "b_to_a", self.b.reverse))
        return out

    def with_forward(self, d: Direction) -> KernelBottleneck:
        """The same bottleneck with another forward direction (calibration's TBF swap)."""
        other = KernelBottleneck(self.topo, self.b, self.monitor)
        other.forward = d
        return other

    def apply(self) -> None:
        for dev, _, d in self.devices():
            for argv in render_direction(dev, d):
                self.commands.append(argv)
                self.topo.router.run(argv)
        self.verify()

    def verify(self) -> None:
        """Reads back what the kernel installed and compares it with the configuration."""
        for dev, _, d in self.devices():
            qdiscs = tcparse.parse_qdisc_json(
                self.topo.router.run(["tc", "-j", "qdisc", "show", "dev", dev]).stdout
            )
            want = _expected(d)
            got = {(q.get("kind"), q.get("handle")) for q in qdiscs}
            missing = sorted(str(w) for w in want - got)
            if missing:
                raise TestbedError(
                    f"bottleneck on {dev}: the kernel shows {sorted(got)}, expected {missing} "
                    "as well (tc accepted the commands but the qdisc tree differs)"
                )
            for q in qdiscs:
                limit = (q.get("options") or {}).get("limit")
                exp = _expected_limit(d, q.get("handle"))
                if exp is not None and limit is not None and int(limit) != exp:
                    raise TestbedError(
                        f"bottleneck on {dev}: {q.get('kind')} {q.get('handle')} "
                        f"has limit {limit}, configured {exp}"
                    )
            if d.rate_mbit is not None and d.shaper == "htb":
                text = self.topo.router.run(["tc", "class", "show", "dev", dev]).stdout
                link = [c for c in tcparse.parse_class_text(text) if c["classid"] == "1:1"]
                rate = tc_rate_mbit(link[0].get("rate", "")) if link else None
                if rate is None or abs(rate - d.rate_mbit) > 0.01 * d.rate_mbit:
                    raise TestbedError(
                        f"bottleneck on {dev}: HTB class 1:1 has rate {rate} "
                        f"Mbit/s, configured {d.rate_mbit:g}"
                    )

    def counters(self) -> dict[str, Any]:
        dev = self.topo.router_out
        res = self.topo.router.run(["tc", "-s", "-j", "qdisc", "show", "dev", dev])
        return tcparse.record(0, "a_to_b", dev, tcparse.parse_qdisc_json(res.stdout), [])

    def dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for dev, _, _ in self.devices():
            r = self.topo.router
            out[dev] = {
                "qdisc": tcparse.parse_qdisc_json(
                    r.run(["tc", "-s", "-j", "qdisc", "show", "dev", dev]).stdout
                ),
                "classes": tcparse.parse_class_text(
                    r.run(["tc", "-s", "class", "show", "dev", dev]).stdout
                ),
            }
        return out

    def start_stats(self, name: str) -> None:
        r = self.topo.router
        self.raw_stats = r.path(name + ".raw")
        devs = [w for dev, direction, _ in self.devices() for w in ("--dev", f"{dev}:{direction}")]
        argv = [
            "python3",
            r.stage(POLLER),
            "--out",
            self.raw_stats,
            "--interval-ms",
            str(self.monitor.interval_ms),
            *devs,
        ]
        log = r.path(name + ".log")
        self.poller = r.spawn("qdisc poller", argv, stdout=None, stderr=log)
        wait_for_text(r, log, "poller: ready", self.poller, timeout_s=10.0)

    def stop_stats(self, local: Path) -> int:
        """Stops polling; writes the records to ``local`` (JSONL); returns how many."""
        if self.poller is None or self.raw_stats is None:
            return 0
        stop(self.poller, signal.SIGTERM, timeout_s=5.0)
        raw = local.with_name(local.name + ".raw")
        self.topo.router.fetch(self.raw_stats, raw)
        n = 0
        with raw.open(encoding="utf-8") as src, local.open("w", encoding="utf-8") as dst:
            for line in src:
                try:
                    d = json.loads(line)
                except ValueError:
                    continue  # a line cut by the stop
                rec = tcparse.record(
                    d["t_ns"],
                    d["direction"],
                    d["dev"],
                    tcparse.parse_qdisc_json(d["qdisc_json"]),
                    tcparse.parse_class_text(d["class_text"]),
                )
                dst.write(json.dumps(rec) + "\n")
                n += 1
        raw.unlink()
        return n

    def remove(self) -> None:
        for dev, _, _ in self.devices():
            self.topo.router.run(render_delete(dev), check=False)


def _expected(d: Direction) -> set[tuple[str, str]]:
    if isinstance(d.qdisc, Htb):
        return {("htb", "1:")} | {(c.leaf.kind, f"{c.classid}:") for c in d.qdisc.classes}
    if d.rate_mbit is None:
        return {(d.qdisc.kind, "1:")}
    return {(d.shaper, "1:"), (d.qdisc.kind, "10:")}


def _expected_limit(d: Direction, handle: object) -> int | None:
    leaves = (
        {f"{c.classid}:": c.leaf for c in d.qdisc.classes}
        if isinstance(d.qdisc, Htb)
        else {("1:" if d.rate_mbit is None else "10:"): d.qdisc}
    )
    leaf = leaves.get(str(handle))
    if leaf is None or leaf.kind not in ("pfifo", "bfifo"):
        return None
    limit = leaf.params.get("limit")
    return None if limit is None else int(limit)


class EmulatorBottleneck:
    """``cga-emu`` bridging the router's two interfaces (docs/emulator.md)."""

    def __init__(self, topo: Topology, b: Bottleneck, monitor: Monitor, workdir: Path) -> None:
        self.topo = topo
        self.b = b
        self.forward = b.forward
        self.monitor = monitor
        self.workdir = workdir
        self.proc: Proc | None = None
        self.stats_path = topo.router.path("emu-stats.jsonl")
        self.config: dict[str, Any] = {}
        #: When the emulator started (CLOCK_REALTIME ns, +- half the start-up time in
        #: ``started_uncertainty_ns``): a trace's time 0 (docs/emulator.md, trace rates).
        self.started_ns: int | None = None
        self.started_uncertainty_ns: int | None = None

    def with_forward(self, d: Direction) -> EmulatorBottleneck:
        other = EmulatorBottleneck(self.topo, self.b, self.monitor, self.workdir)
        other.forward = d
        return other

    def apply(self) -> None:
        r = self.topo.router
        traces = {
            d.trace: r.stage(Path(d.trace))
            for d in (self.forward, self.b.reverse)
            if d is not None and d.trace is not None
        }
        self.config = emuconf.bottleneck_config(
            self.topo.router_in,
            self.topo.router_out,
            self.forward,
            self.b.reverse,
            self.stats_path,
            self.monitor.interval_ms,
            traces,
        )
        spawned_ns = time.time_ns()
        self.proc = start_emulator(r, self.config, self.workdir, "bottleneck")
        # The emulator starts its links (a trace's time 0) just before printing ready.
        ready_ns = time.time_ns()
        self.started_ns = (spawned_ns + ready_ns) // 2
        self.started_uncertainty_ns = (ready_ns - spawned_ns) // 2

    def verify(self) -> None:
        if self.proc is None or self.proc.returncode() is not None:
            raise TestbedError("cga-emu (bottleneck) is not running")

    def counters(self) -> dict[str, Any]:
        lines = [ln for ln in self.topo.router.read_text(self.stats_path).splitlines() if ln]
        for line in reversed(lines):
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("direction") == "a_to_b":
                return dict(rec)
        return {"sent_bytes": 0, "sent_packets": 0, "dropped": 0, "backlog_packets": 0}

    def dump(self) -> dict[str, Any]:
        return {"emulator_config": self.config, "last_stats": self.counters()}

    def start_stats(self, name: str) -> None:
        pass  # the emulator writes its statistics itself

    def stop_stats(self, local: Path) -> int:
        self.remove()
        if not self.topo.router.read_text(self.stats_path):
            return 0
        self.topo.router.fetch(self.stats_path, local)
        return sum(1 for _ in local.open(encoding="utf-8"))

    def remove(self) -> None:
        if self.proc is not None:
            stop(self.proc, signal.SIGTERM, timeout_s=5.0)


AnyBottleneck = KernelBottleneck | EmulatorBottleneck | MahimahiBottleneck


class Delay:
    """Propagation delay off the bottleneck: netem on the endpoints' own interfaces
    (forward on the server's, reverse on the client's) or on the router kernel's delay hop,
    or a delay-only emulator hop."""

    def __init__(self, topo: Topology, p: Propagation, workdir: Path) -> None:
        self.topo = topo
        self.p = p
        self.workdir = workdir
        self.proc: Proc | None = None
        self.commands: list[list[str]] = []

    def apply(self) -> None:
        for host, dev, ms in self._netem():
            argv = render_netem(dev, ms, self.p)
            self.commands.append(argv)
            host.run(argv)
        t = self.topo
        if t.delay.emulator_hop:
            assert t.delay_host is not None and t.delay_devs is not None
            h = t.delay_host
            config = emuconf.delay_config(t.delay_devs[0], t.delay_devs[1], self.p)
            self.proc = start_emulator(h, config, self.workdir, "delay")

    def _netem(self) -> list[tuple[Host, str, float]]:
        """(host, interface, ms) of each direction's netem: on the endpoints, or on a delay
        hop of the router's kernel (uml: its namespace after the egress tap, forward on the
        client's side, reverse on the router's) when the topology has one."""
        t = self.topo
        if not t.delay.netem:
            return []
        if t.delay_host is not None and t.delay_devs is not None:
            return [
                (t.delay_host, t.delay_devs[1], self.p.forward_ms),
                (t.delay_host, t.delay_devs[0], self.p.reverse_ms),
            ]
        return [
            (t.server, t.server_dev, self.p.forward_ms),
            (t.client, t.client_dev, self.p.reverse_ms),
        ]

    def remove(self) -> None:
        for host, dev, _ in self._netem():
            host.run(render_delete(dev), check=False)
        if self.proc is not None:
            stop(self.proc, signal.SIGTERM, timeout_s=5.0)
