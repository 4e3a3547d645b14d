"""What a run records between testbed up and teardown, typed: the session fills it, and
``meta.build_meta`` turns it into meta.json (the keys there keep these names)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunTimes:
    """Wall-clock marks of the run (``start_ns`` is its time origin, t0)."""

    setup_start_utc: str | None = None
    start_ns: int | None = None
    start_utc: str | None = None
    traffic_end_ns: int | None = None
    end_ns: int | None = None
    end_utc: str | None = None


@dataclass
class RunRecord:
    #: The commands that built the bottleneck and the delay hop (provenance).
    bottleneck_commands: list[str] = field(default_factory=list)
    delay_commands: list[str] = field(default_factory=list)
    #: The calibration used (given, made in the run, or why none: a trace link).
    calibration: dict[str, Any] | None = None
    #: The data plane's name (dataplane/planes.py): kernel, emulator or mahimahi.
    bottleneck_backend: str | None = None
    #: When cga-emu started (a trace's time 0) and how uncertain that is.
    emulator_started_ns: int | None = None
    emulator_started_uncertainty_ns: int | None = None
    shaper: str | None = None  # htb or tbf after calibration
    qdisc_before: Any = None  # the bottleneck's statistics dump before and after traffic
    qdisc_after: Any = None
    hosts: dict[str, Any] | None = None  # per role: kernel, sysctls, offloads, tools
    testbed: dict[str, Any] | None = None  # the testbed's own description
    topology: dict[str, Any] | None = None  # addresses and devices
    qdisc_stats_records: int | None = None  # lines of qdisc-stats.jsonl
    counters: dict[str, Any] | None = None  # qdisc counters at capture start and end
    steps: list[dict[str, Any]] | None = None  # the competitor's iperf3 clients
    cg_source: dict[str, Any] = field(default_factory=dict)  # what the CG source reported
    times: RunTimes = field(default_factory=RunTimes)
    #: What went wrong without stopping the run (meta.json's flags).
    flags: list[str] = field(default_factory=list)
