"""The delay placements' registry (testbed/shared/delays.py): every name meta.json may hold
has an entry, and what each entry says is what the testbeds, the bottleneck and the plan do
with it."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from cganalysis.errors import ConfigError
from cganalysis.experiment.plan import _check_offloads
from cganalysis.testbed.dataplane.bottleneck import Delay
from cganalysis.testbed.dataplane.planes import KERNEL, Resolution
from cganalysis.testbed.shared import hosts
from cganalysis.testbed.shared.delays import DELAYS, DelayPlace, DelayPlacement
from cganalysis.testbed.shared.topology import Layout, Topology
from cganalysis.testbed.spec.config import Propagation
from cganalysis.testbed.ssh.testbed import SshTestbed, SshTestbedConfig
from cganalysis.testbed.uml.testbed import UmlTestbed
from tests.unit.test_dataplane_planes import _run

HOST = hosts.NetnsHost("this host", None, Path("/"))
EVERY = list(DELAYS.values())


def test_every_published_name_has_its_entry() -> None:
    # meta.json's delay_via: published datasets hold these strings.
    assert tuple(DELAYS) == get_args(DelayPlace) == ("none", "netem", "emulator", "mahimahi")
    assert all(str(d) == d.name == name for name, d in DELAYS.items())
    # (netem, emulator_hop, in_kernel): what the testbeds decided from the names before.
    assert {d.name: (d.netem, d.emulator_hop, d.in_kernel) for d in EVERY} == {
        "none": (False, False, True),
        "netem": (True, False, True),
        "emulator": (False, True, False),
        "mahimahi": (False, False, False),
    }


@pytest.mark.parametrize("delay", EVERY, ids=str)
def test_netem_is_installed_only_where_the_entry_says(delay: DelayPlacement) -> None:
    topo = Topology(HOST, HOST, HOST, "10.0.0.1", "10.0.1.2", "rtr0", "rtr1", "srv0", "cli0")
    topo.delay = delay
    netem = Delay(topo, Propagation(forward_ms=10, reverse_ms=5), Path("/nonexistent"))._netem()
    expected = [(HOST, "srv0", 10), (HOST, "cli0", 5)] if delay.netem else []
    assert netem == expected


@pytest.mark.parametrize("delay", EVERY, ids=str)
def test_offloads_refuse_a_delay_outside_the_kernel(delay: DelayPlacement) -> None:
    cfg = _run(offloads="kernel")
    resolution = Resolution(KERNEL, delay, "test")
    if delay.in_kernel:
        _check_offloads(cfg, resolution)
        return
    with pytest.raises(ConfigError, match="goes through"):
        _check_offloads(cfg, resolution)


@pytest.mark.parametrize("delay", [d for d in EVERY if d.emulator_hop], ids=str)
def test_testbeds_without_a_hop_host_refuse_an_emulator_hop(
    delay: DelayPlacement, tmp_path: Path
) -> None:
    layout = Layout(l2_router=False, delay=delay, cca="cubic", ecn=0)
    with pytest.raises(hosts.TestbedError, match="delay"):
        UmlTestbed(layout, tmp_path)
    with pytest.raises(hosts.TestbedError, match="delay-only emulator hop"):
        SshTestbed(SshTestbedConfig(tmp_path / "bed.yaml", "/tmp", {}), layout, tmp_path)
