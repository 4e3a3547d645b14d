"""The testbed and the bottleneck a planned run uses (netns, uml, ssh or vm guest; kernel
or emulator data plane)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cganalysis.experiment.config import RunConfig
from cganalysis.experiment.plan import Plan, local_kind
from cganalysis.testbed.bottleneck import AnyBottleneck, Delay, EmulatorBottleneck, KernelBottleneck
from cganalysis.testbed.topology import Layout, Testbed, Topology


def make_bottleneck(p: Plan, topo: Topology, workdir: Path) -> AnyBottleneck:
    b = p.cfg.bottleneck
    if p.resolution.bottleneck == "mahimahi":
        from cganalysis.testbed.mmlog import MahimahiBottleneck

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
        from cganalysis.testbed.mahimahi import link_of

        mahimahi = link_of(cfg.bottleneck, cfg.propagation)
    layout = Layout(
        l2_router=p.resolution.bottleneck == "emulator",
        delay_via=p.resolution.delay_via,
        cca=cfg.competitor.cca,
        ecn=1 if cfg.competitor.ecn else 0,
        mahimahi=mahimahi,
    )
    if cfg.testbed.kind == "sim" and local_kind(cfg) == "netns":
        from cganalysis.testbed.simguest import SimNetnsTestbed

        return SimNetnsTestbed(layout, workdir)
    if cfg.testbed.kind == "vm" and local_kind(cfg) == "netns":
        from cganalysis.testbed.vmguest import VmNetnsTestbed

        return VmNetnsTestbed(layout, workdir)
    if cfg.testbed.kind == "netns":
        from cganalysis.testbed.netns import NetnsTestbed

        return NetnsTestbed(layout, workdir)
    if cfg.testbed.kind == "uml":
        from cganalysis.testbed.uml import UmlTestbed
        from cganalysis.testbed.umlconf import load_options

        return UmlTestbed(layout, workdir, load_options(cfg.testbed.path))
    from cganalysis.testbed.sshbed import SshTestbed

    assert cfg.testbed.path is not None
    return SshTestbed.from_file(cfg.testbed.path, layout, workdir)


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
