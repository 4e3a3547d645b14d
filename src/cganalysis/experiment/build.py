"""The testbed and the bottleneck a planned run uses (netns, uml, ssh or vm guest; kernel
or emulator data plane)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cganalysis.experiment.config import RunConfig
from cganalysis.experiment.plan import Plan
from cganalysis.testbed.backends.topology import Layout, Testbed, Topology
from cganalysis.testbed.dataplane.bottleneck import (
    AnyBottleneck,
    Delay,
    EmulatorBottleneck,
    KernelBottleneck,
)
from cganalysis.testbed.types import testbed_type


def make_bottleneck(p: Plan, topo: Topology, workdir: Path) -> AnyBottleneck:
    b = p.cfg.bottleneck
    if p.resolution.bottleneck == "mahimahi":
        from cganalysis.testbed.dataplane.mmlog import MahimahiBottleneck

        return MahimahiBottleneck(topo, b, p.cfg.monitor, workdir)
    if p.resolution.bottleneck == "emulator":
        return EmulatorBottleneck(topo, b, p.cfg.monitor, workdir)
    bn = KernelBottleneck(topo, b, p.cfg.monitor)
    if p.calibration and p.calibration.get("shaper") in ("htb", "tbf"):
        bn = bn.with_forward(replace(b.forward, shaper=p.calibration["shaper"]))
    return bn


def make_testbed(cfg: RunConfig, p: Plan, workdir: Path) -> Testbed:
    mahimahi = None
    if p.resolution.bottleneck == "mahimahi":
        from cganalysis.testbed.rendering.mahimahi import link_of

        mahimahi = link_of(cfg.bottleneck, cfg.propagation)
    layout = Layout(
        l2_router=p.resolution.bottleneck == "emulator",
        delay_via=p.resolution.delay_via,
        cca=p.cca_kernel,
        ecn=1 if cfg.competitor.ecn else 0,
        mahimahi=mahimahi,
        kernel_offloads=cfg.offloads == "kernel",
    )
    # A vm run is built inside its guest only (the host side hands the run to the guest):
    # the vm type's build is the guest's netns testbed.
    return testbed_type(cfg.testbed.kind).build(layout, workdir, cfg.testbed.path)


def network_up(bed: Testbed, p: Plan, workdir: Path) -> tuple[Topology, Delay, AnyBottleneck]:
    """The testbed up with its delay hop and bottleneck, ARP and routes warm (before any
    capture, so that the captures hold only the run)."""
    topo = bed.up()
    delay = Delay(topo, p.cfg.propagation, workdir)
    delay.apply()
    bn = make_bottleneck(p, topo, workdir)
    bn.apply()
    topo.server.run(["ping", "-c", "2", "-i", "0.2", "-W", "2", topo.client_ip], timeout_s=15)
    return topo, delay, bn
