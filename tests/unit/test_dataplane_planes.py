"""The data-plane registry (testbed/dataplane/planes.py): its names are the strings run
files and published meta.json files hold, and what callers used to decide by comparing
those names (what a plane installs, whether it runs in a router's kernel, whether it
keeps the kernel's offloads) comes from its entry."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from cganalysis.errors import ConfigError
from cganalysis.experiment.config import RunConfig, parse_run
from cganalysis.experiment.plan import _check_offloads
from cganalysis.testbed.dataplane.bottleneck import EmulatorBottleneck, KernelBottleneck
from cganalysis.testbed.dataplane.mmlog import MahimahiBottleneck
from cganalysis.testbed.dataplane.planes import (
    EMULATOR,
    KERNEL,
    MAHIMAHI,
    PLANES,
    DataPlane,
    Resolution,
    chosen,
)
from cganalysis.testbed.dataplane.resolve import resolve_in_router_kernel
from cganalysis.testbed.shared import hosts
from cganalysis.testbed.shared.delays import NO_DELAY
from cganalysis.testbed.shared.topology import Topology
from cganalysis.testbed.spec.config import BACKENDS, Monitor

RUNS = Path(__file__).resolve().parents[2] / "configs" / "runs"
HOST = hosts.NetnsHost("this host", None, Path("/"))


def _run(**overrides: Any) -> RunConfig:
    doc = yaml.safe_load((RUNS / "quick-pfifo.yaml").read_text())
    for dotted, value in overrides.items():
        node = doc
        *path, last = dotted.split(".")
        for key in path:
            node = node.setdefault(key, {})
        node[last] = value
    return parse_run(doc, "run.yaml", RUNS)


def _topology() -> Topology:
    return Topology(HOST, HOST, HOST, "10.0.0.1", "10.0.1.2", "rtr0", "rtr1", "srv0", "cli0")


def test_the_names_are_the_published_strings() -> None:
    # meta.json's bottleneck_backend and run files' bottleneck.backend: datasets hold them.
    assert tuple(PLANES) == ("kernel", "emulator", "mahimahi")
    assert ("auto", *PLANES) == BACKENDS
    assert all(PLANES[name].name == name for name in PLANES)
    assert chosen("auto") is None and chosen("emulator") is EMULATOR


@pytest.mark.parametrize(
    ("plane", "installed"),
    [(KERNEL, KernelBottleneck), (EMULATOR, EmulatorBottleneck), (MAHIMAHI, MahimahiBottleneck)],
)
def test_each_plane_installs_its_own_bottleneck(
    plane: DataPlane, installed: type, tmp_path: Path
) -> None:
    cfg = _run()
    bn = plane.install(_topology(), cfg.bottleneck, Monitor(), tmp_path, None)
    assert type(bn) is installed


def test_the_kernel_takes_a_given_calibrations_shaper(tmp_path: Path) -> None:
    cfg = _run()
    assert cfg.bottleneck.forward.shaper == "htb"
    bn = KERNEL.install(_topology(), cfg.bottleneck, Monitor(), tmp_path, {"shaper": "tbf"})
    assert bn.forward.shaper == "tbf"


@pytest.mark.parametrize("plane", [p for p in PLANES.values() if not p.in_kernel])
def test_a_router_kernel_testbed_refuses_every_plane_outside_the_kernel(
    plane: DataPlane,
) -> None:
    cfg = _run(**{"bottleneck.backend": plane.name})
    with pytest.raises(hosts.TestbedError, match=re.escape(f"bottleneck.backend {plane.name}")):
        resolve_in_router_kernel(cfg.bottleneck, cfg.propagation, HOST, "uml")


@pytest.mark.parametrize("plane", list(PLANES.values()))
def test_offloads_need_a_plane_in_the_kernel(plane: DataPlane) -> None:
    cfg = _run(offloads="kernel")
    resolution = Resolution(plane, NO_DELAY, "test")
    if plane.in_kernel:
        _check_offloads(cfg, resolution)
        return
    with pytest.raises(ConfigError, match=f"not the {plane.name} on netns"):
        _check_offloads(cfg, resolution)


def test_only_a_plane_that_skips_calibration_says_why() -> None:
    skipping = {p.name for p in PLANES.values() if p.uncalibrated_because is not None}
    assert skipping == {"mahimahi"}
    assert all(p.uncalibrated_because != "" for p in PLANES.values())
