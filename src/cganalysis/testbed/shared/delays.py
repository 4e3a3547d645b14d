"""Where a run's propagation delay sits: nowhere, netem, a delay-only ``cga-emu`` hop, or
mahimahi's ``mm-delay``. Each entry says what the testbeds, the bottleneck and the plan ask
of a placement (does it need a host of its own? is it netem? do its packets stay in a
kernel?), so that no caller compares placement names. Which one a run gets on a host is
decided in :mod:`cganalysis.testbed.dataplane.resolve`.

Adding a placement: its name in :data:`DelayPlace`, its entry here, where it is chosen in
``resolve.py``, and what installs it (``dataplane/bottleneck.py``'s ``Delay``, or the
testbed that starts it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: As meta.json's ``delay_via`` names a placement; published datasets hold these strings.
DelayPlace = Literal["none", "netem", "emulator", "mahimahi"]


@dataclass(frozen=True)
class DelayPlacement:
    name: DelayPlace
    #: netem qdiscs hold the delay: on the endpoints' interfaces, or on a delay hop of the
    #: router's kernel where the testbed has one (uml).
    netem: bool
    #: A delay-only ``cga-emu`` hop on a host of its own between router and client (netns:
    #: the namespace ``dly``); a testbed that cannot add such a host (uml, ssh) refuses it.
    emulator_hop: bool
    #: Its packets stay in a kernel: offloads keep their super-packets through it (a
    #: userspace hop reads frames of the interface's MTU).
    in_kernel: bool

    def __str__(self) -> str:
        return self.name


NO_DELAY = DelayPlacement("none", netem=False, emulator_hop=False, in_kernel=True)
NETEM = DelayPlacement("netem", netem=True, emulator_hop=False, in_kernel=True)
EMULATOR_HOP = DelayPlacement("emulator", netem=False, emulator_hop=True, in_kernel=False)
#: mm-delay, in the mahimahi shell the testbed starts (netns/mahimahi.py).
MM_DELAY = DelayPlacement("mahimahi", netem=False, emulator_hop=False, in_kernel=False)

DELAYS: dict[DelayPlace, DelayPlacement] = {
    d.name: d for d in (NO_DELAY, NETEM, EMULATOR_HOP, MM_DELAY)
}
