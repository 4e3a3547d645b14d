"""The registry of queue disciplines, read from their one declaration ``qdiscs.json``
(beside this module; cga-emu embeds the same file): every kind a run may name, where it
runs (kernel, emulator or both), its parameters with types, ranges, defaults and how
``tc`` spells them; derived here: which kinds only one data plane has, the order of Table
II's columns and what the probe tries on a host.

Adding a discipline: its entry in ``qdiscs.json`` (docs/architecture.md lists the rest).
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


Runs = Literal["kernel", "emulator"]

#: The declaration (``qdiscs.json`` beside this module), which cga-emu embeds and checks
#: too (native/emulator/src/ranges.rs), so a run file and the emulator never disagree.
_DECLARATION: dict[str, dict[str, Any]] = {
    kind: entry
    for kind, entry in json.loads(
        resources.files("cganalysis.testbed.spec").joinpath("qdiscs.json").read_text("utf-8")
    ).items()
    if not kind.startswith("_")
}

#: kind -> parameter -> its declaration (type, range, default, tc spelling).
DECLARED: dict[str, dict[str, dict[str, Any]]] = {
    kind: entry["params"] for kind, entry in _DECLARATION.items()
}

#: Where each kind runs: the kernel (``tc``), the link emulator, or both.
RUNS_IN: dict[str, frozenset[Runs]] = {
    kind: frozenset(entry["runs_in"]) for kind, entry in _DECLARATION.items()
}


def _param(d: dict[str, Any]) -> Param:
    hi = d.get("max")
    word = d.get("tc", "")
    return Param(
        d["type"],
        float(d.get("min", 0.0)),
        math.inf if hi is None else hi,
        tuple(word) if isinstance(word, list) else word,
        d.get("tc_suffix", ""),
    )


#: Parameters of each leaf discipline, in the order ``tc`` receives them.
LEAF_PARAMS: dict[str, dict[str, Param]] = {
    kind: {name: _param(d) for name, d in params.items()} for kind, params in DECLARED.items()
}

#: Disciplines only the link emulator has: the kernel has no SQF, and Linux's ``drr`` is
#: classful (filters pick classes) whereas cga-emu's hashes flows into buckets, as the SQF
#: paper's DRR does. Backend auto runs them in cga-emu; backend kernel is refused.
EMULATOR_ONLY: frozenset[str] = frozenset(k for k, runs in RUNS_IN.items() if "kernel" not in runs)
#: Disciplines only the kernel has: backend auto runs them in the kernel; backend
#: emulator is refused.
KERNEL_ONLY: frozenset[str] = frozenset(k for k, runs in RUNS_IN.items() if "emulator" not in runs)

#: The defaults the kernel and cga-emu apply (a text where derived at run time).
DEFAULTS: dict[str, dict[str, Any]] = {
    **{
        kind: {name: d["default"] for name, d in params.items() if "default" in d}
        for kind, params in DECLARED.items()
    },
    "htb": {"quantum": 1514, "r2q": 10},
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
