"""Queue disciplines of a bottleneck: one schema, spelt like ``tc`` (and like ``cga-emu``).

A leaf discipline is a :class:`Qdisc` (kind + parameters); HTB with classes is an
:class:`Htb`. Parameter names are the kernel's, with the unit appended where ``tc`` takes
a unit (``target_ms``), so the same mapping renders to ``tc`` words (:func:`tc_words`) and
to the link emulator's JSON (see ``emuconf.py``) without translation tables elsewhere.
Only the parameters a configuration gives are rendered; the kernel (or the emulator)
applies its defaults for the rest, and the registry's ``DEFAULTS`` documents them for the
metadata. The kinds and their parameters are declared in ``qdisc_kinds.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from cganalysis.testbed.spec.qdisc_kinds import (
    ALL_KINDS,
    DEFAULTS,
    EMULATOR_ONLY,
    LEAF_PARAMS,
    Param,
    ParamKind,
)
from cganalysis.testbed.spec.validate import Section

#: Typical packet size used to turn a ``limit_bdp`` factor into packets or bytes.
MTU_BYTES = 1500


@dataclass(frozen=True)
class Qdisc:
    """A classless discipline and the parameters the configuration gave."""

    kind: str
    params: Mapping[str, int | float | bool] = field(default_factory=dict)
    #: When the limit came from a multiple of the bandwidth-delay product, that factor.
    limit_bdp: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, **self.params}
        if self.limit_bdp is not None:
            out["limit_bdp"] = self.limit_bdp
        return out


@dataclass(frozen=True)
class Match:
    """How packets are sorted into an HTB class (u32 on IPv4)."""

    proto: Literal["tcp", "udp"] | None = None
    port: int | None = None  # either side
    sport: int | None = None
    dport: int | None = None
    dscp: int | None = None
    ecn: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class HtbClass:
    classid: str  # hexadecimal minor, as tc spells it (``10`` is 0x10)
    rate_mbit: float
    ceil_mbit: float
    prio: int | None
    leaf: Qdisc
    match: Match | None = None
    quantum: int = 1514
    burst_bytes: int | None = None
    cburst_bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "classid": self.classid,
            "rate_mbit": self.rate_mbit,
            "ceil_mbit": self.ceil_mbit,
            "quantum": self.quantum,
            "leaf": self.leaf.to_dict(),
        }
        for key in ("prio", "burst_bytes", "cburst_bytes"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.match is not None:
            out["match"] = self.match.to_dict()
        return out


@dataclass(frozen=True)
class Htb:
    """HTB with classes under one root class whose rate is the link rate."""

    default: str
    classes: tuple[HtbClass, ...]
    kind: str = "htb"

    def class_of(self, proto: str, dport: int) -> HtbClass:
        """The class a flow to ``dport`` from a port of the kernel's choosing, DSCP and
        ECN 0, enters: the first class whose match is sure to take it, else the default."""
        for c in self.classes:
            m = c.match
            if (
                m is not None
                and m.proto in (None, proto)
                and m.port in (None, dport)
                and m.dport in (None, dport)
                and m.sport is None
                and m.dscp in (None, 0)
                and m.ecn in (None, 0)
            ):
                return c
        return next(c for c in self.classes if c.classid == self.default)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "htb",
            "default": self.default,
            "classes": [c.to_dict() for c in self.classes],
        }


AnyQdisc = Qdisc | Htb


def parse_leaf(sec: Section, bdp_bytes: float | None) -> Qdisc:
    """A classless discipline; ``limit_bdp`` needs the link's BDP (rate x RTT) in bytes."""
    kind = sec.choice("kind", ALL_KINDS)
    if kind == "htb":
        raise sec.error("kind", "htb cannot be a leaf here; give HTB classes at the top level")
    specs = LEAF_PARAMS[kind]
    params: dict[str, int | float | bool] = {}
    for name, spec in specs.items():
        if not sec.has(name):
            continue
        if spec.kind == "int":
            params[name] = sec.integer(name, minimum=int(spec.minimum), maximum=_imax(spec))
        elif spec.kind == "bool":
            params[name] = sec.boolean(name)
        else:
            params[name] = sec.number(name, minimum=spec.minimum, maximum=spec.maximum)
    limit_bdp = sec.opt_number("limit_bdp", minimum=0.0, exclusive_minimum=True)
    if limit_bdp is not None:
        if "limit" in params:
            raise sec.error("limit_bdp", "give limit or limit_bdp, not both")
        if kind not in ("pfifo", "bfifo"):
            raise sec.error("limit_bdp", "only pfifo and bfifo take a limit in BDP multiples")
        if not bdp_bytes:
            raise sec.error(
                "limit_bdp",
                "needs a rate (bottleneck.rate_mbit) and a round-trip time "
                "(propagation.forward_ms + reverse_ms, or bottleneck.bdp_rtt_ms)",
            )
        size = limit_bdp * bdp_bytes
        params["limit"] = max(1, math.ceil(size / MTU_BYTES if kind == "pfifo" else size))
    if "step_thresh_ms" in params and "step_thresh_packets" in params:
        raise sec.error("step_thresh_packets", "give step_thresh_ms or step_thresh_packets")
    if params.get("typical_rtt_ms", 0) > params.get("max_rtt_ms", float("inf")):
        raise sec.error("typical_rtt_ms", "must be <= max_rtt_ms (tc refuses it)")
    sec.finish()
    return Qdisc(kind, params, limit_bdp)


def _imax(spec: Param) -> int | None:
    return None if math.isinf(spec.maximum) else int(spec.maximum)


def parse_match(sec: Section) -> Match:
    proto = sec.raw("proto")
    if proto is not None and proto not in ("tcp", "udp"):
        raise sec.error("proto", f"{proto!r} is not tcp or udp")
    ports = {k: sec.opt_integer(k, minimum=1, maximum=65535) for k in ("port", "sport", "dport")}
    m = Match(
        proto=proto,
        dscp=sec.opt_integer("dscp", minimum=0, maximum=63),
        ecn=sec.opt_integer("ecn", minimum=0, maximum=3),
        **ports,
    )
    if not any(v is not None for v in m.__dict__.values()):
        raise sec.error(
            "proto", "a match needs at least one of proto, port, sport, dport, dscp, ecn"
        )
    if m.port is not None and (m.sport is not None or m.dport is not None):
        raise sec.error("port", "port matches either side; do not combine it with sport/dport")
    sec.finish()
    return m


def _classid(sec: Section, name: str) -> str:
    text = sec.string(name).lower()
    if not (1 <= len(text) <= 4 and all(c in "0123456789abcdef" for c in text)):
        raise sec.error(name, f"{text!r}: an HTB minor id is 1-4 hexadecimal digits, e.g. '10'")
    if int(text, 16) in (0, 1):
        raise sec.error(name, "minor ids 0 and 1 are taken by the root and the link class")
    return text


def parse_htb(
    sec: Section, rate_mbit: float | None, bdp_bytes: float | None, trace_link: bool = False
) -> Htb:
    """``rate_mbit``: the link rate (the root class's). Over a trace link (``trace_link``)
    the trace paces the tree and the classes keep the rates and ceils they are given, as an
    operator's HTB provisioned for a nominal rate in front of a cellular link would."""
    if rate_mbit is None and not trace_link:
        raise sec.error("kind", "htb needs bottleneck.rate_mbit (the rate of its root class)")
    classes: list[HtbClass] = []
    for i, raw in enumerate(sec.items("classes")):
        c = Section(raw, sec.where, sec.key(f"classes[{i}]"))
        leaf_sec = c.opt_sub("leaf")
        leaf = parse_leaf(leaf_sec, bdp_bytes) if leaf_sec else Qdisc("pfifo", {"limit": 1000})
        match_sec = c.opt_sub("match")
        cls = HtbClass(
            classid=_classid(c, "classid"),
            rate_mbit=c.number("rate_mbit", minimum=0.0, exclusive_minimum=True),
            ceil_mbit=c.number("ceil_mbit", rate_mbit, minimum=0.0, exclusive_minimum=True),
            prio=c.opt_integer("prio", minimum=0, maximum=7),
            leaf=leaf,
            match=parse_match(match_sec) if match_sec else None,
            quantum=c.integer("quantum", 1514, minimum=1),
            burst_bytes=c.opt_integer("burst_bytes", minimum=1),
            cburst_bytes=c.opt_integer("cburst_bytes", minimum=1),
        )
        if cls.ceil_mbit < cls.rate_mbit:
            raise c.error("ceil_mbit", "must be >= rate_mbit")
        if rate_mbit is not None and cls.ceil_mbit > rate_mbit:
            raise c.error("ceil_mbit", f"must be <= the link rate {rate_mbit:g} Mbit/s")
        c.finish()
        classes.append(cls)
    if not classes:
        raise sec.error("classes", "htb needs at least one class")
    ids = [c.classid for c in classes]
    if len(set(ids)) != len(ids):
        raise sec.error("classes", f"class ids {ids} must be distinct")
    default = _classid(sec, "default") if sec.has("default") else ids[-1]
    if default not in ids:
        raise sec.error("default", f"{default!r} is not one of the classes {ids}")
    # Over a trace the nominal rate is the largest ceil (what the classes may use at most).
    nominal = rate_mbit if rate_mbit is not None else max(c.ceil_mbit for c in classes)
    if sum(c.rate_mbit for c in classes) > nominal * 1.0001:
        what = "the link rate" if rate_mbit is not None else "the largest ceil: a trace link"
        raise sec.error(
            "classes", f"the class rates add up to more than {nominal:g} Mbit/s ({what})"
        )
    sec.finish()
    return Htb(default, tuple(classes))


def parse_qdisc(
    sec: Section, rate_mbit: float | None, bdp_bytes: float | None, trace_link: bool = False
) -> AnyQdisc:
    if sec.raw("kind") == "htb":
        return parse_htb(sec, rate_mbit, bdp_bytes, trace_link)
    return parse_leaf(sec, bdp_bytes)


def fmt_num(value: float) -> str:
    """Numbers as tc reads them: no trailing zeros, no exponent."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.6f}".rstrip("0").rstrip(".")


def tc_words(q: Qdisc) -> list[str]:
    """The words after ``tc qdisc add ... handle H:`` for a leaf: kind and parameters."""
    if q.kind in EMULATOR_ONLY:
        raise ValueError(f"{q.kind} has no tc rendering: it runs only in cga-emu")
    words = [q.kind]
    render: dict[ParamKind, Callable[[Param, Any], list[str]]] = {
        "int": lambda s, v: [str(s.word), f"{int(v)}{s.suffix}"],
        "float": lambda s, v: [str(s.word), fmt_num(v)],
        "ms": lambda s, v: [str(s.word), f"{fmt_num(v)}ms"],
        "bool": lambda s, v: [w for w in (s.word[0] if v else s.word[1],) if w],
    }
    for name, spec in LEAF_PARAMS[q.kind].items():
        if name in q.params:
            words += render[spec.kind](spec, q.params[name])
    return words


def with_defaults(q: AnyQdisc) -> dict[str, Any]:
    """The configured parameters over the documented defaults, for the metadata."""
    return {"configured": q.to_dict(), "defaults": DEFAULTS.get(q.kind, {})}
