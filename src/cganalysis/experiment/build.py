"""The testbed and the bottleneck a planned run uses (netns, uml, ssh or vm guest; kernel
or emulator data plane)."""

from __future__ import annotations

from pathlib import Path

from cganalysis.experiment.config import RunConfig
from cganalysis.experiment.plan import Plan
from cganalysis.testbed.dataplane.bottleneck import AnyBottleneck, Delay
from cganalysis.testbed.rendering.mahimahi import link_of
from cganalysis.testbed.shared.topology import Layout, Testbed, Topology
from cganalysis.testbed.types import testbed_type


def make_bottleneck(p: Plan, topo: Topology, workdir: Path) -> AnyBottleneck:
    install = p.resolution.bottleneck.install
    return install(topo, p.cfg.bottleneck, p.cfg.monitor, workdir, p.calibration)


def make_testbed(cfg: RunConfig, p: Plan, workdir: Path) -> Testbed:
    plane = p.resolution.bottleneck
    mahimahi = None
    if plane.testbed_starts_it:
        mahimahi = link_of(cfg.bottleneck, cfg.propagation)
    layout = Layout(
        l2_router=plane.bridges_router,
        delay=p.resolution.delay,
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
