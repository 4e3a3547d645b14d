"""What a testbed backend hands to the experiment: three hosts and the router's interfaces.

Roles (issue 4): the server sends (CG sender, iperf3 client), the client receives, the
router holds the bottleneck on its client-side interface (``router_out``) and is where
both captures run: ``-Q in`` on ``router_in`` (the server side) and ``-Q out`` on
``router_out``, one clock for both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from cganalysis.testbed.shared.delays import NO_DELAY, DelayPlacement
from cganalysis.testbed.shared.hosts import Host

if TYPE_CHECKING:
    from cganalysis.testbed.rendering.mahimahi import MahimahiLink


@dataclass
class Topology:
    server: Host
    router: Host
    client: Host
    server_ip: str
    client_ip: str
    router_in: str  # router interface facing the server: ingress capture
    router_out: str  # router interface facing the client: bottleneck, egress capture
    server_dev: str
    client_dev: str
    #: Where its propagation delay sits (shared/delays.py).
    delay: DelayPlacement = NO_DELAY
    #: Hosts that hold a delay-only emulator hop (netns: its own namespace).
    delay_host: Host | None = None
    delay_devs: tuple[str, str] | None = None
    details: dict[str, Any] = field(default_factory=dict)
    #: Where the captures run when not on the router itself: the uml testbed's router is
    #: a kernel of its own, its taps are on this machine's ends of its interfaces (the
    #: same names), so that both keep this machine's clock.
    tap_host: Host | None = None
    #: Where the egress capture runs when not where the ingress one does (mahimahi: in its
    #: shell, ``-Q in`` on the device mm-link writes to; one kernel, one clock).
    egress_host: Host | None = None
    egress_direction: str = "out"
    #: Packets the router dropped on input before its qdisc saw them, a running count
    #: (uml: this machine's raw socket feeding the router's kernel overflowed). Read at
    #: both ends of the capture: such a packet is captured at ingress and never at egress.
    input_drops: Callable[[], int] | None = None

    @property
    def taps(self) -> Host:
        """The host whose ``router_in`` / ``router_out`` the captures run on."""
        return self.tap_host if self.tap_host is not None else self.router

    def hosts(self) -> dict[str, Host]:
        out = {"server": self.server, "router": self.router, "client": self.client}
        if self.delay_host is not None:
            out["delay"] = self.delay_host
        if self.tap_host is not None:
            out["taps"] = self.tap_host
        return out


@dataclass(frozen=True)
class Layout:
    """What the topology must look like, decided before anything is created."""

    #: The bottleneck runs in the emulator: the router bridges frames (no IPs on it).
    l2_router: bool
    delay: DelayPlacement
    cca: str
    ecn: int  # net.ipv4.tcp_ecn on the endpoints
    #: The bottleneck is a mahimahi link between router and client (netns only; netns/mahimahi.py).
    mahimahi: MahimahiLink | None = None
    #: Keep the kernel's offloads on the veths of server, router and client (run file
    #: `offloads: kernel`); otherwise every offload off.
    kernel_offloads: bool = False


class Testbed(Protocol):
    kind: str

    def up(self) -> Topology: ...

    def down(self) -> None:
        """Removes everything up() created; safe to call twice and after a partial up()."""

    def describe(self) -> dict[str, Any]: ...
