"""The uml testbed's pure parts: the router's set-up script, its loss counters, its
options and kernel lookup, the refusals decided before a kernel is probed, and tc's two
forms of class statistics (text on iproute2 6.1, JSON on the router's newer tc)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cganalysis.errors import ConfigError
from cganalysis.testbed.dataplane.resolve import resolve_in_router_kernel
from cganalysis.testbed.rendering import tcparse
from cganalysis.testbed.shared.hosts import Result
from cganalysis.testbed.shared.hosts import TestbedError as Refused
from cganalysis.testbed.spec.config import Bottleneck, Propagation, parse_direction
from cganalysis.testbed.spec.validate import Section
from cganalysis.testbed.uml import config as umlconf
from cganalysis.testbed.uml.testbed import router_script, socket_drops


def test_router_script_without_delay_routes_between_two_interfaces() -> None:
    script = router_script(delay=False)
    assert "ip link set vec0 name rtr0" in script and "ip link set vec1 name rtr1" in script
    assert "vec2" not in script and "netns" not in script
    assert "ip addr add 10.201.2.2/24 dev rtr1" in script
    assert "net.ipv4.ip_forward=1" in script
    # GRO merged TCP bursts before the qdisc (a pfifo then held twice the bytes).
    for dev in ("rtr0", "rtr1"):
        assert f"ethtool -K {dev} tso off gso off gro off" in script


def test_router_script_with_super_packets_keeps_the_kernels_offloads() -> None:
    """`offloads: kernel`: no interface's offloads are turned off and TSO is turned on (the
    vector driver starts without it and would segment what it forwards), so GSO
    super-packets cross whole; the tx coalescing stays off either way."""
    script = router_script(delay=True, super_packets=True)
    assert " off" not in script.replace("tx-usecs 0", "")
    for dev in ("rtr0", "rtr1", "rtr2", "rtr3"):
        assert f"ethtool -K {dev} tso on" in script
        assert f"ethtool -C {dev} tx-usecs 0" in script


def test_router_script_with_delay_puts_the_hop_after_the_bottleneck() -> None:
    script = router_script(delay=True)
    lines = script.splitlines()
    assert "ip link set rtr2 netns dly" in lines and "ip link set rtr3 netns dly" in lines
    # The router reaches the client through the hop, the hop reaches the server back.
    assert "ip route add 10.201.2.0/24 via 10.201.3.2" in lines
    assert "ip netns exec dly ip route add 10.201.1.0/24 via 10.201.3.1" in lines
    assert "ip netns exec dly ethtool -K rtr3 tso off gso off gro off tx off rx off " \
        "2>/dev/null || true" in lines  # fmt: skip
    assert lines[0] == "set -e"


SS = """\
Netid Recv-Q Send-Q Local Address:Port Peer Address:PortProcess
p_raw 0 0 *:rtr0 * users:(("linux-7.3.4",pid=29,fd=27)) skmem:(r0,rb212992,t0,tb212992,f0,w0,o0,bl0,d7)
p_raw 0 0 [2048]:rtr0 * users:(("linux-7.3.4",pid=29,fd=34)) skmem:(r0,rb212992,t0,tb212992,f0,w0,o0,bl0,d12973)
p_raw 0 0 *:rtr1 * users:(("linux-7.3.4",pid=29,fd=28)) skmem:(r0,rb212992,t0,tb212992,f0,w0,o0,bl0,d0)
"""  # noqa: E501 - ss's own lines


def test_socket_drops_count_the_receiving_sockets_only() -> None:
    # The kernel's sending socket ([2048]) never reads: its drops are not losses.
    assert socket_drops(SS) == {"rtr0": 7, "rtr1": 0}
    assert socket_drops("") == {}


def test_uml_options_and_their_refusals() -> None:
    opts = umlconf.parse_options({"backend": "uml", "uml": {"memory_mb": 512}}, "bed.yaml")
    assert opts == umlconf.UmlOptions(kernel="auto", memory_mb=512, boot_timeout_s=60.0)
    assert umlconf.parse_options({"backend": "uml"}, "bed.yaml") == umlconf.UmlOptions()
    with pytest.raises(ConfigError, match=r"bed.yaml.*uml.memroy_mb"):
        umlconf.parse_options({"backend": "uml", "uml": {"memroy_mb": 512}}, "bed.yaml")
    with pytest.raises(ConfigError, match=r"uml.memory_mb"):
        umlconf.parse_options({"backend": "uml", "uml": {"memory_mb": 1}}, "bed.yaml")
    normal = {"backend": "uml", "uml": {"realtime_priority": 0}}
    assert umlconf.parse_options(normal, "bed.yaml").realtime_priority == 0
    assert umlconf.UmlOptions().realtime_priority == 20
    with pytest.raises(ConfigError, match=r"uml.realtime_priority"):
        umlconf.parse_options({"backend": "uml", "uml": {"realtime_priority": 100}}, "bed.yaml")


def test_kernel_lookup_names_what_to_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CGA_UML_KERNEL", raising=False)
    monkeypatch.setattr(umlconf, "BUILT", tmp_path / "built")
    monkeypatch.setattr(umlconf, "DEBIAN", tmp_path / "linux.uml")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(Refused, match=r"scripts/build-uml.sh") as e:
        umlconf.find_kernel(umlconf.UmlOptions(kernel="built"))
    assert "\n" not in str(e.value)
    with pytest.raises(Refused, match=r"user-mode-linux.*install.sh"):
        umlconf.find_kernel(umlconf.UmlOptions())
    (tmp_path / "linux.uml").write_text("")
    assert umlconf.find_kernel(umlconf.UmlOptions()).origin == "debian"
    built = tmp_path / "built"
    built.mkdir()
    (built / "linux-7.3.4").write_text("")
    (built / "linux-7.3.4.info").write_text("release 7.3.4\nkey abc\n")
    (built / "linux").symlink_to("linux-7.3.4")
    k = umlconf.find_kernel(umlconf.UmlOptions())
    assert (k.origin, k.path.name, k.info["release"]) == ("built", "linux-7.3.4", "7.3.4")
    assert umlconf.find_kernel(umlconf.UmlOptions(kernel="debian")).origin == "debian"
    with pytest.raises(Refused, match=r"uml.kernel /nowhere: not a kernel name.*CGA_UML_KERNEL"):
        umlconf.find_kernel(umlconf.UmlOptions(kernel="/nowhere"))


class _NoProbe:
    """A host that fails the test if anything reaches it."""

    name = "no probe"
    remote = False

    def run(self, argv: list[str], **_: object) -> Result:
        raise AssertionError(f"probed: {argv}")


def _bottleneck(backend: str, qdisc: dict[str, object]) -> Bottleneck:
    d = parse_direction(Section({"rate_mbit": 10, "qdisc": qdisc}, "test"), 0.0)
    return Bottleneck(backend, d)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("b", "p", "says"),
    [
        (_bottleneck("emulator", {"kind": "pfifo"}), Propagation(), "backend emulator"),
        (_bottleneck("auto", {"kind": "sqf"}), Propagation(), "qdisc sqf"),
        (
            _bottleneck("auto", {"kind": "pfifo"}),
            Propagation(forward_ms=15, via="emulator"),
            "propagation.via emulator",
        ),
    ],
)
def test_what_only_the_emulator_runs_is_refused_before_a_probe(
    b: Bottleneck, p: Propagation, says: str
) -> None:
    with pytest.raises(Refused) as e:
        resolve_in_router_kernel(b, p, _NoProbe(), "uml")  # type: ignore[arg-type]
    assert says in str(e.value) and "\n" not in str(e.value)


def test_class_statistics_read_alike_from_text_and_json() -> None:
    text = (
        "class htb 1:10 parent 1:1 leaf 10: prio 0 rate 2Mbit ceil 8Mbit burst 1600b "
        "cburst 1600b \n Sent 151400 bytes 100 pkt (dropped 3, overlimits 7 requeues 0) \n"
        " backlog 3028b 2p requeues 0\n lended: 0 borrowed: 0 giants: 0\n"
    )
    as_json = json.dumps(
        [
            {
                "class": "htb",
                "handle": "1:10",
                "parent": "1:1",
                "leaf": "0x10",
                "prio": 0,
                "rate": 250000,
                "ceil": 1000000,
                "burst": 1600,
                "cburst": 1600,
                "stats": {
                    "bytes": 151400,
                    "packets": 100,
                    "drops": 3,
                    "overlimits": 7,
                    "requeues": 0,
                    "backlog": 3028,
                    "qlen": 2,
                    "lended": 0,
                },
            }
        ]
    )
    assert tcparse.parse_class_text(as_json) == tcparse.parse_class_text(text)
    assert tcparse.parse_class_text("[]") == []
    assert tcparse.parse_class_text("[not json") == []
