"""Queue disciplines of a bottleneck: one schema, spelt like ``tc`` (and like ``cga-emu``).

A leaf discipline is a :class:`Qdisc` (kind + parameters); HTB with classes is an
:class:`Htb`. Parameter names are the kernel's, with the unit appended where ``tc`` takes
a unit (``target_ms``), so the same mapping renders to ``tc`` words (:func:`tc_words`) and
to the link emulator's JSON (see ``emuconf.py``) without translation tables elsewhere.
Only the parameters a configuration gives are rendered; the kernel (or the emulator)
applies its defaults for the rest, and :data:`DEFAULTS` documents them for the metadata.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

from cganalysis.testbed.validate import Section

ParamKind = Literal["int", "float", "ms", "bool"]


@dataclass(frozen=True)
class Param:
    """One parameter: its type, range, and how ``tc`` spells it."""

    kind: ParamKind
    minimum: float = 0.0
    maximum: float = math.inf
    #: ``tc`` keyword; for booleans a (true, false) pair of flag words, "" meaning none.
    word: str | tuple[str, str] = ""
    #: Suffix that ``tc`` needs after the number (``%``, ``p``).
    suffix: str = ""


#: The parameters' types and ranges: one declaration, which cga-emu embeds and checks too
#: (native/emulator/src/ranges.rs), so a run file and the emulator never disagree.
DECLARED: dict[str, dict[str, dict[str, Any]]] = {
    kind: params
    for kind, params in json.loads(
        resources.files("cganalysis.emulator")
        .joinpath("qdisc_params.json")
        .read_text(encoding="utf-8")
    ).items()
    if not kind.startswith("_")
}


def _p(kind: str, name: str, word: str | tuple[str, str], suffix: str = "") -> Param:
    d = DECLARED[kind][name]
    hi = d.get("max")
    return Param(d["type"], float(d.get("min", 0.0)), math.inf if hi is None else hi, word, suffix)


#: How ``tc`` spells each parameter (a word, or a pair of flag words for a boolean), in
#: the order it receives them; every one is declared in :data:`DECLARED`.
_TC_WORDS: dict[str, dict[str, tuple[str | tuple[str, str], str]]] = {
    "pfifo": {"limit": ("limit", "")},
    "bfifo": {"limit": ("limit", "")},
    "sfq": {
        "limit": ("limit", ""),
        "perturb": ("perturb", ""),
        "quantum": ("quantum", ""),
        "divisor": ("divisor", ""),
        "flows": ("flows", ""),
        "depth": ("depth", ""),
        "headdrop": (("headdrop", ""), ""),
    },
    "dualpi2": {
        "limit": ("limit", ""),
        "memlimit": ("memlimit", ""),
        "target_ms": ("target", ""),
        "tupdate_ms": ("tupdate", ""),
        "alpha": ("alpha", ""),
        "beta": ("beta", ""),
        "coupling_factor": ("coupling_factor", ""),
        "step_thresh_ms": ("step_thresh", ""),
        "step_thresh_packets": ("step_thresh", "p"),
        "min_qlen_step": ("min_qlen_step", ""),
        "drop_on_overload": (("drop_on_overload", "overflow"), ""),
        "drop_enqueue": (("drop_enqueue", "drop_dequeue"), ""),
        "l4s_ect": (("l4s_ect", "any_ect"), ""),
        "classic_protection": ("classic_protection", "%"),
        "max_rtt_ms": ("max_rtt", ""),
        "typical_rtt_ms": ("typical_rtt", ""),
        "split_gso": (("split_gso", "no_split_gso"), ""),
    },
    "codel": {
        "limit": ("limit", ""),
        "target_ms": ("target", ""),
        "interval_ms": ("interval", ""),
        "ce_threshold_ms": ("ce_threshold", ""),
        "ecn": (("ecn", "noecn"), ""),
    },
    "fq_codel": {
        "limit": ("limit", ""),
        "flows": ("flows", ""),
        "target_ms": ("target", ""),
        "interval_ms": ("interval", ""),
        "quantum": ("quantum", ""),
        "ce_threshold_ms": ("ce_threshold", ""),
        "memory_limit": ("memory_limit", ""),
        "drop_batch": ("drop_batch", ""),
        "ecn": (("ecn", "noecn"), ""),
    },
    "pie": {
        "limit": ("limit", ""),
        "target_ms": ("target", ""),
        "tupdate_ms": ("tupdate", ""),
        "alpha": ("alpha", ""),
        "beta": ("beta", ""),
        "ecn": (("ecn", "noecn"), ""),
        "bytemode": (("bytemode", "nobytemode"), ""),
        "dq_rate_estimator": (("dq_rate_estimator", "no_dq_rate_estimator"), ""),
    },
    # Emulator-only (EMULATOR_ONLY below): never rendered for tc.
    "sqf": {"limit": ("limit", ""), "flows": ("flows", "")},
    "drr": {"limit": ("limit", ""), "quantum": ("quantum", ""), "flows": ("flows", "")},
}

#: Parameters of each leaf discipline, in the order ``tc`` receives them.
LEAF_PARAMS: dict[str, dict[str, Param]] = {
    kind: {name: _p(kind, name, word, suffix) for name, (word, suffix) in words.items()}
    for kind, words in _TC_WORDS.items()
}

#: Disciplines only the link emulator has: the kernel has no SQF, and Linux's ``drr`` is
#: classful (filters pick classes) whereas cga-emu's hashes flows into buckets, as the SQF
#: paper's DRR does. Backend auto runs them in cga-emu; backend kernel is refused.
EMULATOR_ONLY: frozenset[str] = frozenset({"sqf", "drr"})

#: Kernel (and RFC) defaults, recorded in the metadata next to what was configured.
DEFAULTS: dict[str, dict[str, Any]] = {
    "pfifo": {"limit": "txqueuelen (1000)"},
    "bfifo": {"limit": "txqueuelen x MTU"},
    "sfq": {"limit": 127, "perturb": 0, "quantum": "MTU", "divisor": 1024, "depth": 127},
    # RFC 9332 / Linux sch_dualpi2's defaults.
    "dualpi2": {
        "limit": 10000,
        "memlimit": "limit x 2 x (MTU + L2 header)",
        "target_ms": 15.0,
        "tupdate_ms": 16.0,
        "alpha": 0.16,
        "beta": 3.2,
        "coupling_factor": 2,
        "step_thresh_ms": 1.0,
        "min_qlen_step": 0,
        "drop_on_overload": True,
        "drop_enqueue": False,
        "l4s_ect": True,
        "classic_protection": 10,
        "split_gso": True,
    },
    "codel": {"limit": 1000, "target_ms": 5.0, "interval_ms": 100.0, "ecn": False},
    "fq_codel": {
        "limit": 10240,
        "flows": 1024,
        "target_ms": 5.0,
        "interval_ms": 100.0,
        "quantum": 1514,
        "memory_limit": 33554432,
        "ecn": True,
    },
    "pie": {"limit": 1000, "target_ms": 15.0, "tupdate_ms": 15.0, "alpha": 2, "beta": 20},
    "htb": {"quantum": 1514, "r2q": 10},
    # cga-emu's defaults (docs/emulator.md).
    "sqf": {"limit": 1000, "flows": 128},
    "drr": {"limit": 1000, "quantum": "MTU + 14", "flows": 1024},
}

#: The disciplines ``tc`` can install (each has a golden tc rendering).
KINDS: tuple[str, ...] = (*(k for k in LEAF_PARAMS if k not in EMULATOR_ONLY), "htb")

#: Every discipline a configuration may name.
ALL_KINDS: tuple[str, ...] = (*LEAF_PARAMS, "htb")

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
