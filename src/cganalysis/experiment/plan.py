"""Before a run touches anything: its options, and the plan that every check made
(tools, congestion control, CG source, the data plane, a given calibration) on the host
that decides (:func:`probing`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cganalysis.errors import ConfigError
from cganalysis.experiment.config import RunConfig
from cganalysis.experiment.schedule import Schedule
from cganalysis.experiment.sources import SOURCES
from cganalysis.io import read_json_object
from cganalysis.testbed import backend
from cganalysis.testbed.hosts import Host, NetnsHost, TestbedError
from cganalysis.testbed.probe import missing_tools

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


def plan(
    cfg: RunConfig, opts: RunOptions, probe_host: Host, router_host: Host | None = None
) -> Plan:
    """Everything decided and checked before the testbed exists (nothing is touched).
    ``router_host``: a router with a kernel of its own (uml), which decides the data plane;
    the endpoints' tools and congestion controls are ``probe_host``'s."""
    schedule = cfg.schedule.scaled(opts.time_scale).fit(opts.max_duration_s)
    # ssh testbeds check each host's own tools when they are read (sshbed._check_host).
    local = local_kind(cfg) in ("netns", "uml")
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
    if router_host is not None:
        resolution = backend.resolve_in_router_kernel(
            cfg.bottleneck, cfg.propagation, router_host, cfg.testbed.kind
        )
    else:
        resolution = backend.resolve(cfg.bottleneck, cfg.propagation, probe_host)
    if resolution.bottleneck == "mahimahi" and cfg.testbed.kind != "netns":
        raise TestbedError(
            f"{cfg.source}: bottleneck.backend mahimahi runs on the netns testbed only (its "
            f"shell sits between the router and client namespaces), not {cfg.testbed.kind}"
        )
    calib = None
    if opts.calibration_file is not None:
        calib = read_json_object(opts.calibration_file, "calibration")
        if calib.get("bottleneck") != cfg.bottleneck.to_dict():
            raise ConfigError(
                f"{opts.calibration_file}: calibrated another bottleneck than {cfg.source}'s; "
                "calibrate this one (cganalysis testbed calibrate)"
            )
    return Plan(cfg, schedule, resolution, calib)


@contextmanager
def probing(cfg: RunConfig) -> Iterator[Host]:
    """The host whose kernel and tools decide what the run can use (read-only checks):
    this machine for netns and uml, the router for an ssh testbed (after every host was
    checked), a booted guest for vm (inside it: the guest itself, as netns)."""
    if cfg.testbed.kind == "vm" and local_kind(cfg) != "netns":
        from cganalysis.testbed.vmrun import probing_vm

        with probing_vm(cfg.testbed.path) as guest:
            yield guest
        return
    if local_kind(cfg) in ("netns", "uml"):
        if os.geteuid() != 0:
            raise TestbedError(
                f"the {cfg.testbed.kind} testbed needs root (network namespaces, tc); run as "
                "root or through sudo"
            )
        yield NetnsHost("this host", None, Path("/"))
        return
    from cganalysis.testbed.sshbed import probing_ssh

    assert cfg.testbed.path is not None
    with probing_ssh(cfg.testbed.path) as host:
        yield host


def local_kind(cfg: RunConfig) -> str:
    """The testbed this process builds: a vm or sim run is a netns run inside its guest."""
    from cganalysis.testbed import simguest, vmconf

    if cfg.testbed.kind == "vm" and vmconf.in_guest():
        return "netns"
    if cfg.testbed.kind == "sim" and simguest.in_guest():
        return "netns"
    return cfg.testbed.kind


def vm_host_side(cfg: RunConfig) -> bool:
    """True on the host of a vm run: the guest runs it (experiment/inguest.py)."""
    return cfg.testbed.kind == "vm" and local_kind(cfg) == "vm"


def sim_host_side(cfg: RunConfig) -> bool:
    """True on the host of a sim run: a kernel on simulated time runs it (experiment/insim.py)."""
    return cfg.testbed.kind == "sim" and local_kind(cfg) == "sim"


def check(cfg: RunConfig, opts: RunOptions) -> Plan:
    with probing(cfg) as host:
        if cfg.testbed.kind == "uml":
            from cganalysis.testbed.umlhost import probing_uml

            with probing_uml(cfg.testbed.path) as router:
                return plan(cfg, opts, host, router)
        return plan(cfg, opts, host)
