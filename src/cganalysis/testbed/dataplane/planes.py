"""The data planes a bottleneck runs in: the kernel's qdiscs, the link emulator ``cga-emu``
and mahimahi's ``mm-link``. Each entry says what the rest of the project asks of a plane
(what the topology must look like for it, what it installs and where its statistics come
from, whether it can be calibrated, whether its packets stay in a kernel), so that no
caller compares plane names. Which plane a run gets on a host is decided in
:mod:`cganalysis.testbed.dataplane.resolve`.

Adding a data plane: its name in :data:`cganalysis.testbed.spec.config.PlaneName`, its
bottleneck class (apply, verify, counters, dump, start_stats/stop_stats, remove) and its
entry here; its host check in ``resolve.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cganalysis.testbed.dataplane.bottleneck import (
    AnyBottleneck,
    EmulatorBottleneck,
    KernelBottleneck,
)
from cganalysis.testbed.dataplane.mmlog import MahimahiBottleneck
from cganalysis.testbed.shared.delays import DelayPlacement
from cganalysis.testbed.shared.topology import Topology
from cganalysis.testbed.spec.config import Backend, Bottleneck, Monitor, PlaneName

#: Installs the plane's bottleneck on a testbed that is up: (topology, configuration,
#: monitoring, the run's folder, the calibration a run was given or None).
Install = Callable[[Topology, Bottleneck, Monitor, Path, "dict[str, Any] | None"], AnyBottleneck]


@dataclass(frozen=True)
class DataPlane:
    #: As run files (``bottleneck.backend``), meta.json (``bottleneck_backend``) and
    #: calibration.json (``backend``) name it; published datasets hold these strings.
    name: PlaneName
    #: Where its per-interval statistics (``qdisc-stats.jsonl``) come from.
    statistics: str
    install: Install
    #: Its packets stay in the router's kernel: offloads keep their super-packets
    #: (``offloads: kernel``), and a testbed whose router is a kernel of its own (uml) runs it.
    in_kernel: bool
    #: The router bridges frames into it (no IP addresses on the router: cga-emu reads both
    #: interfaces).
    bridges_router: bool
    #: Why calibration skips it (meta.json's ``calibration.skipped``); None: its constant
    #: rate can be calibrated.
    uncalibrated_because: str | None
    #: The testbed starts it between router and client (mahimahi's shell): only a testbed
    #: type that can (``TestbedType.mahimahi``) runs it.
    testbed_starts_it: bool


def _kernel(
    topo: Topology, b: Bottleneck, monitor: Monitor, _: Path, calibration: dict[str, Any] | None
) -> AnyBottleneck:
    bn = KernelBottleneck(topo, b, monitor)
    # A given calibration may have swapped HTB for TBF (dataplane/calibration.py).
    if calibration and calibration.get("shaper") in ("htb", "tbf"):
        bn = bn.with_forward(replace(b.forward, shaper=calibration["shaper"]))
    return bn


def _emulator(
    topo: Topology, b: Bottleneck, monitor: Monitor, workdir: Path, _: dict[str, Any] | None
) -> AnyBottleneck:
    return EmulatorBottleneck(topo, b, monitor, workdir)


def _mahimahi(
    topo: Topology, b: Bottleneck, monitor: Monitor, workdir: Path, _: dict[str, Any] | None
) -> AnyBottleneck:
    return MahimahiBottleneck(topo, b, monitor, workdir)


KERNEL = DataPlane(
    name="kernel",
    statistics="tc -s on the router, polled by dataplane/poller.py",
    install=_kernel,
    in_kernel=True,
    bridges_router=False,
    uncalibrated_because=None,
    testbed_starts_it=False,
)
EMULATOR = DataPlane(
    name="emulator",
    statistics="cga-emu's own statistics file (emu-stats.jsonl)",
    install=_emulator,
    in_kernel=False,
    bridges_router=True,
    uncalibrated_because=None,
    testbed_starts_it=False,
)
MAHIMAHI = DataPlane(
    name="mahimahi",
    statistics="mm-link's downlink log, counted by dataplane/mmlog.py",
    install=_mahimahi,
    in_kernel=False,
    bridges_router=False,
    uncalibrated_because="mahimahi link: its rate is a constant trace, not calibrated",
    testbed_starts_it=True,
)

PLANES: dict[PlaneName, DataPlane] = {p.name: p for p in (KERNEL, EMULATOR, MAHIMAHI)}


def chosen(backend: Backend) -> DataPlane | None:
    """The plane a run file's ``bottleneck.backend`` names; None for ``auto`` (the host
    decides: :func:`cganalysis.testbed.dataplane.resolve.resolve`)."""
    return None if backend == "auto" else PLANES[backend]


@dataclass(frozen=True)
class Resolution:
    """The plane a run's bottleneck uses on its host, where its delay sits, and why."""

    bottleneck: DataPlane
    delay: DelayPlacement
    reason: str
