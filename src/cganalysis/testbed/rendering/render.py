"""A bottleneck direction and a propagation delay as exact ``tc`` command lines.

The output is a list of argument vectors, run as they are (no shell) on the router (or
shown by ``cganalysis testbed render``); golden files in ``tests/golden/tc/`` pin them.

Layouts (TMA 2024's handles; docs/testbed.md, Queue disciplines):
- no rate: the discipline is the root (``handle 1:``);
- a rate with the ``htb`` shaper: ``htb default 1``, link class ``1:1`` (rate = ceil,
  quantum 1514 so that HTB does not warn), the discipline as leaf ``10:``;
- a rate with the ``tbf`` shaper: ``tbf`` at the root, the discipline as its child ``10:``
  (TBF with a burst of ~10 ms of traffic delivers its rate where HTB does not;
  docs/testbed.md, Calibration);
- HTB with classes: link class ``1:1`` at the link rate, one class per entry, each with its
  leaf (handle = its minor id) and u32 filters for its match.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from cganalysis.testbed.spec.config import Direction, Propagation
from cganalysis.testbed.spec.qdisc import Htb, HtbClass, Match, Qdisc, fmt_num, tc_words

Argv = list[str]

#: Smallest TBF burst; below ~32 KB TBF loses rate on this machine kind (docs/testbed.md,
#: Calibration).
TBF_MIN_BURST_BYTES = 32 * 1024
#: TBF burst when none is given: this much time of traffic at the configured rate.
TBF_BURST_S = 0.010
IP_PROTO = {"tcp": 6, "udp": 17}


def mbit(rate: float) -> str:
    return f"{fmt_num(rate)}mbit"


def tbf_burst_bytes(rate_mbit: float, burst_bytes: int | None) -> int:
    if burst_bytes is not None:
        return burst_bytes
    return max(TBF_MIN_BURST_BYTES, round(rate_mbit * 1e6 / 8 * TBF_BURST_S))


def _tc(*words: str) -> Argv:
    return ["tc", *words]


def _leaf(dev: str, parent: str, handle: str, q: Qdisc) -> Argv:
    return _tc("qdisc", "add", "dev", dev, "parent", parent, "handle", handle, *tc_words(q))


def _htb_class(
    dev: str,
    parent: str,
    classid: str,
    rate: float,
    ceil: float,
    prio: int | None,
    quantum: int,
    burst: int | None,
    cburst: int | None,
) -> Argv:
    words = ["class", "add", "dev", dev, "parent", parent, "classid", classid, "htb"]
    words += ["rate", mbit(rate), "ceil", mbit(ceil)]
    if prio is not None:
        words += ["prio", str(prio)]
    words += ["quantum", str(quantum)]
    if burst is not None:
        words += ["burst", str(burst)]
    if cburst is not None:
        words += ["cburst", str(cburst)]
    return _tc(*words)


def _u32_keys(m: Match, port_side: str | None) -> list[list[str]]:
    keys: list[list[str]] = []
    if m.proto is not None:
        keys.append(["ip", "protocol", str(IP_PROTO[m.proto]), "0xff"])
    for side, port in (("sport", m.sport), ("dport", m.dport)):
        if port is not None:
            keys.append(["ip", side, str(port), "0xffff"])
    if port_side is not None and m.port is not None:
        keys.append(["ip", port_side, str(m.port), "0xffff"])
    # DSCP is the upper six bits of the old ToS byte: mask 0xfc so ECN bits do not matter.
    if m.dscp is not None:
        keys.append(["ip", "dsfield", f"{m.dscp << 2:#04x}", "0xfc"])
    if m.ecn is not None:
        keys.append(["ip", "dsfield", f"{m.ecn:#04x}", "0x03"])
    return keys


def _filters(dev: str, classes: Sequence[HtbClass]) -> list[Argv]:
    out: list[Argv] = []
    prio = 1
    for c in classes:
        if c.match is None:
            continue
        # `port` means either side: one filter per side, so replies classify too.
        sides: tuple[str | None, ...] = ("sport", "dport") if c.match.port is not None else (None,)
        for side in sides:
            words = ["filter", "add", "dev", dev, "parent", "1:", "protocol", "ip"]
            words += ["prio", str(prio), "u32"]
            for key in _u32_keys(c.match, side):
                words += ["match", *key]
            words += ["flowid", f"1:{c.classid}"]
            out.append(_tc(*words))
            prio += 1
    return out


def render_direction(dev: str, d: Direction) -> list[Argv]:
    """The commands that install ``d`` as the root of ``dev`` (replacing what was there)."""
    if isinstance(d.qdisc, Htb):
        assert d.rate_mbit is not None  # parse_htb refuses HTB without a rate
        h = d.qdisc
        cmds = [
            _tc("qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", h.default)
        ]
        cmds.append(
            _htb_class(
                dev, "1:", "1:1", d.rate_mbit, d.rate_mbit, None, 1514, d.burst_bytes, d.burst_bytes
            )
        )
        cmds += [
            _htb_class(
                dev,
                "1:1",
                f"1:{c.classid}",
                c.rate_mbit,
                c.ceil_mbit,
                c.prio,
                c.quantum,
                c.burst_bytes,
                c.cburst_bytes,
            )
            for c in h.classes
        ]
        cmds += [_leaf(dev, f"1:{c.classid}", f"{c.classid}:", c.leaf) for c in h.classes]
        return cmds + _filters(dev, h.classes)
    if d.rate_mbit is None:
        return [_tc("qdisc", "replace", "dev", dev, "root", "handle", "1:", *tc_words(d.qdisc))]
    if d.shaper == "htb":
        return [
            _tc("qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "1"),
            _htb_class(
                dev, "1:", "1:1", d.rate_mbit, d.rate_mbit, None, 1514, d.burst_bytes, d.burst_bytes
            ),
            _leaf(dev, "1:1", "10:", d.qdisc),
        ]
    burst = tbf_burst_bytes(d.rate_mbit, d.burst_bytes)
    # TBF's own limit only sizes the default child that the leaf below replaces.
    return [
        _tc(
            "qdisc",
            "replace",
            "dev",
            dev,
            "root",
            "handle",
            "1:",
            "tbf",
            "rate",
            mbit(d.rate_mbit),
            "burst",
            str(burst),
            "limit",
            str(burst),
        ),
        _leaf(dev, "1:1", "10:", d.qdisc),
    ]


def render_netem(dev: str, delay_ms: float, p: Propagation) -> Argv:
    """Delay (and jitter, loss) for one direction, on an interface off the bottleneck.

    netem's ``limit`` counts packets that are only being delayed, so it is set far above
    any bottleneck buffer.
    """
    words = ["qdisc", "replace", "dev", dev, "root", "netem", "limit", "100000"]
    words += ["delay", f"{fmt_num(delay_ms)}ms"]
    if p.jitter_ms > 0:
        words.append(f"{fmt_num(p.jitter_ms)}ms")
    if p.loss > 0:
        words += ["loss", f"{fmt_num(p.loss * 100)}%"]
    return _tc(*words)


def render_delete(dev: str) -> Argv:
    return _tc("qdisc", "del", "dev", dev, "root")


def as_text(cmds: Sequence[Argv]) -> str:
    """Command lines as a shell would show them, one per line."""
    return "".join(shlex.join(c) + "\n" for c in cmds)
