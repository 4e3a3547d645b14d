"""The network half of a run's configuration: bottleneck, propagation, capture, monitoring.

Parsed from the ``bottleneck``, ``propagation``, ``capture``, ``monitor`` and
``calibration`` sections of a run file (``configs/runs/*.yaml``; keys in docs/testbed.md).
Parsing looks at the host only to find a trace named without a path (the trace search
path, :mod:`cganalysis.traces.find`); :mod:`cganalysis.testbed.dataplane.resolve` decides
what the host can run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from cganalysis.testbed.spec.qdisc import AnyQdisc, Htb, parse_qdisc
from cganalysis.testbed.spec.validate import SAFE_PATH, Section

#: The data planes a bottleneck may run in, as run files and meta.json name them; what
#: each one does is its entry in :mod:`cganalysis.testbed.dataplane.planes`.
PlaneName = Literal["kernel", "emulator", "mahimahi"]
#: ``auto``: the kernel where it runs everything, else the emulator (dataplane/resolve.py).
Backend = Literal["auto"] | PlaneName
BACKENDS: tuple[Backend, ...] = ("auto", *get_args(PlaneName))
Shaper = Literal["htb", "tbf"]
DelayVia = Literal["auto", "netem", "emulator"]


@dataclass(frozen=True)
class Direction:
    """What shapes one direction: a rate (None: line rate, or the trace's) and a discipline."""

    rate_mbit: float | None
    qdisc: AnyQdisc
    shaper: Shaper = "htb"
    burst_bytes: int | None = None
    #: A mahimahi trace (absolute path) giving the rate instead of rate_mbit: cga-emu or
    #: mahimahi.
    trace: str | None = None
    #: Multiplies the bytes of each delivery opportunity (cga-emu's ``scale``).
    trace_scale: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rate_mbit": self.rate_mbit,
            "shaper": self.shaper,
            "burst_bytes": self.burst_bytes,
            "qdisc": self.qdisc.to_dict(),
        }
        if self.trace is not None:
            out.update(trace=self.trace, trace_scale=self.trace_scale)
        return out


@dataclass(frozen=True)
class Bottleneck:
    backend: Backend
    forward: Direction  # server -> client, the direction the captures measure
    reverse: Direction | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "forward": self.forward.to_dict(),
            "reverse": None if self.reverse is None else self.reverse.to_dict(),
        }


@dataclass(frozen=True)
class Propagation:
    """One-way delays placed off the bottleneck queue, plus jitter and random loss."""

    forward_ms: float = 0.0
    reverse_ms: float = 0.0
    jitter_ms: float = 0.0
    loss: float = 0.0
    via: DelayVia = "auto"

    @property
    def needed(self) -> bool:
        return any(v > 0 for v in (self.forward_ms, self.reverse_ms, self.jitter_ms, self.loss))

    @property
    def rtt_ms(self) -> float:
        return self.forward_ms + self.reverse_ms

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CaptureConfig:
    tool: Literal["tcpdump", "dumpcap"] = "tcpdump"
    snaplen: int = 128
    buffer_kib: int | None = None  # None: sized for the rate (capture.py)
    drain_timeout_s: float = 5.0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Monitor:
    interval_ms: float = 100.0


@dataclass(frozen=True)
class Calibration:
    enabled: bool = True
    idle_s: float = 1.0
    saturation_s: float = 3.0
    offered_factor: float = 1.5
    min_ratio: float = 0.97
    on_low: Literal["replace", "flag"] = "replace"

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Checks:
    """Tolerances of the after-run cross-checks."""

    drop_tolerance_packets: int = 10
    drop_tolerance_ratio: float = 0.05


def resolve_trace(sec: Section, base_dir: Path | None) -> str | None:
    """``trace``: a name on the trace search path or a relative path that stays in the
    run/campaign file's folder, ``base_dir`` (:mod:`cganalysis.traces.find`); its content
    is checked here, before anything stages it (:mod:`cganalysis.traces.check`)."""
    text = sec.opt_string("trace", pattern=SAFE_PATH)
    if text is None:
        return None
    from cganalysis.traces.check import check_trace
    from cganalysis.traces.find import find_trace

    where = f"{sec.where}: key {sec.key('trace')}"
    # Resolved (.. and links), so meta.json names the trace the same from any run folder.
    path = find_trace(text, base_dir, where=where)
    check_trace(path, where)
    return str(path)


def parse_direction(sec: Section, rtt_ms: float, base_dir: Path | None = None) -> Direction:
    trace = resolve_trace(sec, base_dir)
    scale = sec.number("trace_scale", 1.0, minimum=0.0, exclusive_minimum=True)
    if trace is None and sec.has("trace_scale"):
        raise sec.error("trace_scale", "scales a trace: give trace as well")
    if trace is not None:
        if sec.has("rate_mbit"):
            raise sec.error("rate_mbit", "give rate_mbit or trace (the trace is the rate)")
        if sec.has("shaper") or sec.has("burst_bytes"):
            raise sec.error("shaper", "a trace link shapes by itself; drop shaper/burst_bytes")
    rate = sec.opt_number("rate_mbit", minimum=0.0, exclusive_minimum=True)
    rtt = sec.number("bdp_rtt_ms", rtt_ms, minimum=0.0)
    bdp = None if rate is None or rtt <= 0 else rate * 1e6 / 8 * rtt / 1000
    qdisc = (
        parse_qdisc(sec.sub("qdisc"), rate, bdp, trace is not None) if sec.has("qdisc") else None
    )
    if qdisc is None:
        raise sec.error("qdisc", "required, e.g. {kind: pfifo, limit: 250}")
    shaper: Shaper = "tbf" if sec.choice("shaper", ("htb", "tbf"), "htb") == "tbf" else "htb"
    if isinstance(qdisc, Htb) and shaper != "htb":
        raise sec.error("shaper", "an HTB with classes is its own shaper; use shaper: htb")
    burst = sec.opt_integer("burst_bytes", minimum=1)
    if shaper == "tbf" and rate is None:
        raise sec.error("shaper", "tbf needs rate_mbit")
    sec.finish()
    return Direction(rate, qdisc, shaper, burst, trace, scale)


def parse_bottleneck(sec: Section, rtt_ms: float, base_dir: Path | None = None) -> Bottleneck:
    """``base_dir``: where relative trace paths start (the run or campaign file's folder)."""
    backend = sec.choice("backend", BACKENDS, "auto")
    forward = Section(
        {k: v for k, v in sec.data.items() if k not in ("backend", "reverse")},
        sec.where,
        sec.path,
    )
    fwd = parse_direction(forward, rtt_ms, base_dir)
    rev_sec = sec.opt_sub("reverse")
    rev = parse_direction(rev_sec, rtt_ms, base_dir) if rev_sec else None
    return Bottleneck(backend, fwd, rev)


def parse_propagation(sec: Section) -> Propagation:
    p = Propagation(
        forward_ms=sec.number("forward_ms", 0.0, minimum=0.0),
        reverse_ms=sec.number("reverse_ms", 0.0, minimum=0.0),
        jitter_ms=sec.number("jitter_ms", 0.0, minimum=0.0),
        loss=sec.number("loss", 0.0, minimum=0.0, maximum=1.0),
        via=sec.choice("via", get_args(DelayVia), "auto"),
    )
    sec.finish()
    return p


def parse_capture(sec: Section) -> CaptureConfig:
    c = CaptureConfig(
        tool=sec.choice("tool", ("tcpdump", "dumpcap"), "tcpdump"),
        snaplen=sec.integer("snaplen", 128, minimum=128, maximum=65535),
        buffer_kib=sec.opt_integer("buffer_kib", minimum=256),
        drain_timeout_s=sec.number("drain_timeout_s", 5.0, minimum=0.0),
    )
    sec.finish()
    return c


def parse_monitor(sec: Section) -> Monitor:
    m = Monitor(interval_ms=sec.number("interval_ms", 100.0, minimum=10.0))
    sec.finish()
    return m


def parse_calibration(sec: Section) -> Calibration:
    c = Calibration(
        enabled=sec.boolean("enabled", True),
        idle_s=sec.number("idle_s", 1.0, minimum=0.2),
        saturation_s=sec.number("saturation_s", 3.0, minimum=1.0),
        offered_factor=sec.number("offered_factor", 1.5, minimum=1.0, exclusive_minimum=True),
        # Above 1 only forces the shaper swap (tests); measured ratios hover around 1.
        min_ratio=sec.number("min_ratio", 0.97, minimum=0.0, maximum=1.2),
        on_low=sec.choice("on_low", ("replace", "flag"), "replace"),
    )
    sec.finish()
    return c


def parse_checks(sec: Section) -> Checks:
    c = Checks(
        drop_tolerance_packets=sec.integer("drop_tolerance_packets", 10, minimum=0),
        drop_tolerance_ratio=sec.number("drop_tolerance_ratio", 0.05, minimum=0.0, maximum=1.0),
    )
    sec.finish()
    return c
