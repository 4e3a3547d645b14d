"""The registry of queue disciplines: every kind a run may name, its parameters (types and
ranges from ``cganalysis/emulator/qdisc_params.json``, the one declaration cga-emu checks
too), how ``tc`` spells them, the kernel's defaults, which kinds only the link emulator
has, the order of Table II's columns and what the probe tries on a host.

Adding a discipline: its parameters in the JSON (and cga-emu's ``ranges.rs``), its ``tc``
words in :data:`_TC_WORDS`, its defaults in :data:`DEFAULTS` (docs/architecture.md).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

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


#: Table II's column order: the paper's three (TMA 2024), then the emulator's own kinds in
#: their order above; others follow, sorted (report/tables.py).
PAPER_QDISCS: tuple[str, ...] = ("pfifo", "htb", "dualpi2")
TABLE_ORDER: tuple[str, ...] = (*PAPER_QDISCS, *(k for k in LEAF_PARAMS if k in EMULATOR_ONLY))

#: What a host's kernel may offer besides the kinds a bottleneck names: the shapers and the
#: propagation delay runs use (tbf, netem), Linux's classful drr (the runs' drr is the
#: emulator's), and kinds the probe reports for the record (prio, fq, cake, red). Each
#: with what ``tc qdisc add ... root KIND`` needs to be valid.
KERNEL_EXTRAS: dict[str, tuple[str, ...]] = {
    "tbf": ("rate", "1mbit", "burst", "32k", "limit", "32k"),
    "netem": (),
    "drr": (),
    "prio": (),
    "fq": (),
    "cake": (),
    "red": ("limit", "400000", "min", "30000", "max", "90000", "avpkt", "1000", "burst", "55"),
}

#: What the probe installs on a scratch veth, kind -> the arguments it needs.
PROBE_ARGS: dict[str, tuple[str, ...]] = {**dict.fromkeys(KINDS, ()), **KERNEL_EXTRAS}
