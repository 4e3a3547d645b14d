"""A run file (``configs/runs/*.yaml``): the schedule, the traffic, and the testbed sections.

Everything is validated here, before anything on the host is touched: unknown keys,
values out of range, names that could reach a shell. Errors name the file and the key.
Keys are documented in docs/testbed.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cganalysis.cg import reference
from cganalysis.cg.encoders import ENCODERS
from cganalysis.cg.senderargs import check_sender_args
from cganalysis.errors import ConfigError
from cganalysis.experiment.cgconfig import ECN_CODEPOINTS, CgConfig
from cganalysis.experiment.labelkeys import check_label_key, system_label_error
from cganalysis.experiment.schedule import Schedule, parse_schedule
from cganalysis.io import read_yaml
from cganalysis.testbed.bedfile import load_testbed_file
from cganalysis.testbed.shared.lock import lock_name
from cganalysis.testbed.spec import config as tbc
from cganalysis.testbed.spec.qdisc import Htb
from cganalysis.testbed.spec.validate import SAFE_PATH, TOKEN, Section
from cganalysis.testbed.types import TESTBED_TYPES, testbed_type

#: The run file's `offloads` (RunConfig.offloads).
OFFLOAD_MODES = ("off", "kernel")


@dataclass(frozen=True)
class CompetitorConfig:
    tool: str = "iperf3"
    cca: str = "cubic"
    port: int = 5201  # first iperf3 server port; one server per step
    ecn: bool = False  # TMA 2024 disabled ECN on the TCP flow (best-effort queue)
    #: iperf3's burst mode (`-b RATE/N`): N writes of 128 KB back to back between its
    #: rate checks instead of one; None: iperf3's own pacing (a check before each write).
    burst_blocks: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class TestbedRef:
    kind: str  # "netns", "uml", "ssh" or "vm"
    path: Path | None = None  # the testbed file (ssh; vm or uml with options; a named netns)
    #: A netns testbed file's `name`: a second testbed on this machine (functional checks).
    name: str | None = None
    #: The pool this testbed was taken from (their labels), empty without a pool.
    pool: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """What meta.json calls it: the netns `name`, the testbed file's stem, or the kind."""
        if self.name is not None:
            return self.name
        return self.path.stem if self.path is not None else self.kind

    def lock_name(self) -> str:
        """One lock per testbed: every unnamed netns testbed is this one machine, and so is
        a uml testbed (its router is a process of this machine: same cores, same timers)."""
        if testbed_type(self.kind).local:
            return "netns" if self.name is None else f"netns-{self.name}"
        return lock_name(self.kind, self.path)


@dataclass(frozen=True)
class RunConfig:
    name: str
    description: str
    schedule: Schedule
    bottleneck: tbc.Bottleneck
    propagation: tbc.Propagation
    cg: CgConfig
    competitor: CompetitorConfig
    capture: tbc.CaptureConfig
    monitor: tbc.Monitor
    calibration: tbc.Calibration
    checks: tbc.Checks
    testbed: TestbedRef
    labels: Mapping[str, str | int | float] = field(default_factory=dict)
    source: str = "<memory>"
    #: "off": every offload off on every veth, so that each packet on the wire is one
    #: packet in the qdisc and the captures. "kernel": the kernel's defaults (TSO/GSO on
    #: the veths), as on hosts whose NICs segment and coalesce: TCP reaches the router's
    #: qdisc as super-packets of up to 64 KB, each one packet for a packet-counted queue.
    offloads: str = "off"

    def default_labels(self) -> dict[str, str | int | float]:
        """qdisc, cca, system, queue: what tables and figures group by."""
        fwd = self.bottleneck.forward
        q = fwd.qdisc
        if isinstance(q, Htb):
            queue = "+".join(f"{c.leaf.kind}{c.leaf.params.get('limit', '')}" for c in q.classes)
        elif q.limit_bdp is not None:
            queue = f"{q.limit_bdp:g}xBDP"
        else:
            limit = q.params.get("limit")
            queue = "default" if limit is None else f"{limit}{'p' if q.kind != 'bfifo' else 'B'}"
        return {
            "qdisc": q.kind,
            "cca": self.competitor.cca,
            "system": self.cg.source,
            "queue": queue,
        }

    def all_labels(self) -> dict[str, str | int | float]:
        return {**self.default_labels(), **self.labels}

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "testbed": {
                "kind": self.testbed.kind,
                "path": None if self.testbed.path is None else str(self.testbed.path),
                **({"name": self.testbed.name} if self.testbed.name else {}),
                **({"pool": list(self.testbed.pool)} if self.testbed.pool else {}),
            },
            "schedule": self.schedule.to_dict(),
            "bottleneck": self.bottleneck.to_dict(),
            "propagation": self.propagation.to_dict(),
            "cg": self.cg.to_dict(),
            "competitor": self.competitor.to_dict(),
            "capture": self.capture.to_dict(),
            "monitor": {"interval_ms": self.monitor.interval_ms},
            "calibration": self.calibration.to_dict(),
            "checks": dict(self.checks.__dict__),
            "labels": dict(self.labels),
            # only when set: the resolved configuration of every earlier run stays as it was
            **({"offloads": self.offloads} if self.offloads != "off" else {}),
        }


def parse_cg(sec: Section) -> CgConfig:
    d = CgConfig()
    cg = CgConfig(
        source=sec.string("source", d.source, pattern=TOKEN),
        port=sec.integer("port", d.port, minimum=1, maximum=65535),
        sport=sec.integer("sport", d.sport, minimum=1, maximum=65535),
        rate_mbit=sec.number("rate_mbit", d.rate_mbit, minimum=0.0, exclusive_minimum=True),
        fps=sec.number("fps", d.fps, minimum=1.0, maximum=1000.0),
        ecn=sec.choice("ecn", tuple(ECN_CODEPOINTS), d.ecn),
        cc=sec.choice("cc", ("scream", "none", "tfrc", "gtfrc"), d.cc),
        min_mbit=sec.opt_number("min_mbit", minimum=0.0, exclusive_minimum=True),
        max_mbit=sec.opt_number("max_mbit", minimum=0.0, exclusive_minimum=True),
        ssrc=sec.integer("ssrc", d.ssrc, minimum=0, maximum=2**32 - 1),
        sender_args=tuple(_sender_args(sec)),
        encoder=sec.choice("encoder", tuple(ENCODERS)) if sec.has("encoder") else None,
        reference_controller=(
            sec.choice("reference_controller", reference.CONTROLLERS)
            if sec.has("reference_controller")
            else None
        ),
    )
    from cganalysis.experiment.sources import SOURCES

    if cg.source not in SOURCES:
        raise sec.error("source", f"unknown CG source {cg.source!r} (known: {', '.join(SOURCES)})")
    if cg.sender_args and not SOURCES[cg.source].takes_sender_args:
        takers = " or ".join(n for n, s in SOURCES.items() if s.takes_sender_args)
        raise sec.error("sender_args", f"options of the CG sender: only with source: {takers}")
    if cg.sender_args:
        check_sender_args(cg.source, cg.sender_args, sec.where)
    SOURCES[cg.source].check_config(cg, sec)
    sec.finish()
    return cg


def _sender_args(sec: Section) -> list[str]:
    """``sender_args``: a list of words for the CG sender (no shell); which options and
    values each sender accepts is :mod:`cganalysis.cg.senderargs`'s allow-list."""
    words = sec.items("sender_args")
    for i, word in enumerate(words):
        if not isinstance(word, str | int | float) or isinstance(word, bool):
            raise sec.error(f"sender_args[{i}]", "give words, e.g. [--l4s-alpha-gain, 0.0625]")
    return [str(w) for w in words]


def parse_competitor(sec: Section) -> CompetitorConfig:
    c = CompetitorConfig(
        tool=sec.choice("tool", ("iperf3",), "iperf3"),
        cca=sec.string("cca", "cubic", pattern=TOKEN),
        port=sec.integer("port", 5201, minimum=1024, maximum=65000),
        ecn=sec.boolean("ecn", False),
        burst_blocks=sec.opt_integer("burst_blocks", minimum=1, maximum=1000),
    )
    sec.finish()
    return c


def parse_testbed_ref(sec: Section, base_dir: Path) -> TestbedRef:
    value = sec.raw("testbed", "netns")
    if value in TESTBED_TYPES and TESTBED_TYPES[value].bare:
        return TestbedRef(str(value))
    text = sec.string("testbed", pattern=SAFE_PATH)
    path = Path(text)
    if not path.is_absolute() and not path.exists():
        path = base_dir / path
    if not path.exists():
        raise sec.error(
            "testbed",
            f"{text}: no such testbed file (give "
            f"{', '.join(k for k, t in TESTBED_TYPES.items() if t.bare)} or a path to "
            "configs/testbeds/NAME.yaml)",
        )
    bed = load_testbed_file(path)  # the whole file, whatever its backend, checked now
    if bed.name is not None:
        return TestbedRef(bed.backend, path, bed.name)
    if testbed_type(bed.backend).names_only:
        return TestbedRef(bed.backend)  # the file said no more than `testbed: KIND`
    return TestbedRef(bed.backend, path)


def parse_run(data: Any, where: str, base_dir: Path) -> RunConfig:
    sec = Section(data, where)
    prop = tbc.parse_propagation(sec.sub("propagation"))
    cfg = RunConfig(
        name=sec.string("name", pattern=TOKEN),
        description=str(sec.raw("description", "")),
        schedule=parse_schedule(sec.sub("schedule")),
        bottleneck=tbc.parse_bottleneck(sec.sub("bottleneck"), prop.rtt_ms, base_dir),
        propagation=prop,
        cg=parse_cg(sec.sub("cg")),
        competitor=parse_competitor(sec.sub("competitor")),
        capture=tbc.parse_capture(sec.sub("capture")),
        monitor=tbc.parse_monitor(sec.sub("monitor")),
        calibration=tbc.parse_calibration(sec.sub("calibration")),
        checks=tbc.parse_checks(sec.sub("checks")),
        testbed=parse_testbed_ref(sec, base_dir),
        labels=_labels(sec.sub("labels")),
        source=where,
        offloads=_offloads(sec),
    )
    sec.finish()
    if cfg.cg.port == cfg.competitor.port:
        raise ConfigError(f"{where}: key cg.port: {cfg.cg.port} is also competitor.port")
    _refuse_on_simulated_clock(cfg, where)
    system = cfg.labels.get("system")
    why = None if system is None else system_label_error(str(system), cfg.cg.source)
    if why is not None:
        raise ConfigError(f"{where}: key labels.system: {why}")
    return cfg


def _refuse_on_simulated_clock(cfg: RunConfig, where: str) -> None:
    """A CG source that cannot run as asked where the testbed's clock is simulated, refused
    when the run file is read (before any kernel boots)."""
    from cganalysis.experiment.sources import SOURCES

    if not testbed_type(cfg.testbed.kind).simulated_clock:
        return
    refusal = SOURCES[cfg.cg.source].simulated_clock_refusal(cfg.cg)
    if refusal is not None:
        key, why = refusal
        raise ConfigError(
            f"{where}: key cg.{key}: cannot run on the {cfg.testbed.kind} testbed's simulated "
            f"clock: {why}"
        )


def _offloads(sec: Section) -> str:
    if sec.raw("offloads") is False:
        return "off"  # YAML reads a bare `off` as false
    return sec.choice("offloads", OFFLOAD_MODES, "off")


def _labels(sec: Section) -> dict[str, str | int | float]:
    out: dict[str, str | int | float] = {}
    for key in list(sec.data):
        check_label_key(key, sec)
        value = sec.raw(key)
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise sec.error(key, f"{value!r}: a label is a string or a number")
        if isinstance(value, str) and not TOKEN.fullmatch(value):
            raise sec.error(key, f"{value!r}: use letters, digits and . _ - (it may name files)")
        out[str(key)] = value
    return out


def load_run(path: Path) -> RunConfig:
    return parse_run(read_yaml(path), str(path), path.parent)
