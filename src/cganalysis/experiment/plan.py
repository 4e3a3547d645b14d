"""Before a run touches anything: its options, and the plan that every check made
(tools, congestion control, CG source, the data plane, a given calibration) on the host
that decides (:func:`probing`)."""

from __future__ import annotations

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
from cganalysis.testbed import ccaname
from cganalysis.testbed.dataplane import resolve
from cganalysis.testbed.dataplane.planes import Resolution
from cganalysis.testbed.measure.probe import missing_tools
from cganalysis.testbed.shared.hosts import Host, TestbedError
from cganalysis.testbed.types import TESTBED_TYPES, built_here, testbed_type

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
    resolution: Resolution
    calibration: dict[str, Any] | None
    #: competitor.cca as the endpoints' kernel names it (``bbr3`` is ``bbr`` on a v3
    #: kernel: :mod:`cganalysis.testbed.ccaname`).
    cca_kernel: str


def plan(
    cfg: RunConfig, opts: RunOptions, probe_host: Host, router_host: Host | None = None
) -> Plan:
    """Everything decided and checked before the testbed exists (nothing is touched).
    ``router_host``: a router with a kernel of its own (uml), which decides the data plane;
    the endpoints' tools and congestion controls are ``probe_host``'s."""
    schedule = cfg.schedule.scaled(opts.time_scale).fit(opts.max_duration_s)
    # ssh testbeds check each host's own tools when they are read (ssh.testbed._check_host).
    local = built_here(cfg.testbed.kind).local
    tools = (*NEEDED_TOOLS, cfg.capture.tool) if local else ("tc",)
    missing = missing_tools(probe_host, tools)
    if missing:
        raise TestbedError(
            f"on {probe_host.name}: {', '.join(missing)} not found; `bash scripts/install.sh` "
            "installs them (Debian packages iproute2, ethtool, iperf3, tcpdump, iputils-ping)"
        )
    cca_kernel = _kernel_cca(cfg, probe_host)
    SOURCES[cfg.cg.source].check(probe_host, cfg.cg)
    if router_host is not None:
        resolution = resolve.resolve_in_router_kernel(
            cfg.bottleneck, cfg.propagation, router_host, cfg.testbed.kind
        )
    else:
        resolution = resolve.resolve(cfg.bottleneck, cfg.propagation, probe_host)
    plane = resolution.bottleneck
    if plane.testbed_starts_it and not testbed_type(cfg.testbed.kind).mahimahi:
        raise TestbedError(
            f"{cfg.source}: bottleneck.backend {plane.name} runs on the netns testbed only (its "
            f"shell sits between the router and client namespaces), not {cfg.testbed.kind}"
        )
    if cfg.offloads != "off":
        _check_offloads(cfg, resolution)
    calib = None
    if opts.calibration_file is not None:
        calib = read_json_object(opts.calibration_file, "calibration")
        if calib.get("bottleneck") != cfg.bottleneck.to_dict():
            raise ConfigError(
                f"{opts.calibration_file}: calibrated another bottleneck than {cfg.source}'s; "
                "calibrate this one (cganalysis testbed calibrate)"
            )
    return Plan(cfg, schedule, resolution, calib, cca_kernel)


def _kernel_cca(cfg: RunConfig, host: Host) -> str:
    """competitor.cca under the name the endpoints' kernel (``host``'s) offers it; raises
    one line where it does not."""
    available = host.run(
        ["sysctl", "-n", "net.ipv4.tcp_available_congestion_control"], check=False
    ).stdout.split()
    if not available:  # not readable here: the sysctl at set-up says
        return cfg.competitor.cca
    module = host.run(["cat", ccaname.BBR_VERSION_FILE], check=False).stdout
    versions = ccaname.bbr_versions(available, module)
    name = ccaname.kernel_cca(cfg.competitor.cca, available, versions)
    if name is None:
        raise TestbedError(
            ccaname.refusal(
                cfg.source,
                cfg.competitor.cca,
                f"the kernel of {host.name}",
                ccaname.describe(available, versions),
            )
        )
    return name


def _check_offloads(cfg: RunConfig, resolution: Resolution) -> None:
    """Super-packets need the kernel on every hop: a userspace emulator (bottleneck or
    delay hop) reads frames of the veth's MTU."""
    where = f"{cfg.source}: key offloads: {cfg.offloads!r}"
    if not testbed_type(cfg.testbed.kind).offloads or not resolution.bottleneck.in_kernel:
        raise ConfigError(
            f"{where} needs the kernel's data plane on a testbed whose every hop is a "
            f"kernel's ({', '.join(n for n, t in TESTBED_TYPES.items() if t.offloads)}), not "
            f"the {resolution.bottleneck.name} on {cfg.testbed.kind}; "
            "remove the key or change the testbed"
        )
    if not resolution.delay.in_kernel:
        raise ConfigError(
            f"{where}: the propagation delay goes through {resolution.delay}, outside the "
            "kernel, here (this kernel has no netem, or propagation.via asks for it); give "
            "propagation.via: netem on a kernel with netem (testbed: sim) or no delay"
        )


@contextmanager
def probing(cfg: RunConfig) -> Iterator[Host]:
    """The host whose kernel and tools decide what the run can use (read-only checks):
    this machine for netns and uml, the router for an ssh testbed (after every host was
    checked), a booted guest for vm (inside it: the guest itself, as netns)."""
    with built_here(cfg.testbed.kind).probing(cfg.testbed.path) as host:
        yield host


def guest_host_side(cfg: RunConfig) -> bool:
    """True on the host of a run that its own guest runs (vm: experiment/inguest.py; sim:
    experiment/insim.py)."""
    t = testbed_type(cfg.testbed.kind)
    return t.guest_builds is not None and built_here(t.name) is t


def check(cfg: RunConfig, opts: RunOptions) -> Plan:
    with probing(cfg) as host:
        router_probing = testbed_type(cfg.testbed.kind).router_probing
        if router_probing is not None:
            with router_probing(cfg.testbed.path) as router:
                return plan(cfg, opts, host, router)
        return plan(cfg, opts, host)
