"""Reading ``tc -s`` statistics into one record per poll (the ``qdisc-stats.jsonl`` lines).

``tc -s -j qdisc show`` gives JSON; ``tc -s -j class show`` prints text for HTB classes on
iproute2 6.1 (a known gap) and JSON on newer ones, so classes are read from either form
into the same dicts (rates as tc prints them, e.g. ``50Mbit``). The record mirrors the
link emulator's statistics lines (docs/emulator.md), so the analysis reads kernel and
emulator runs alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

_CLASS = re.compile(
    r"^class\s+(?P<kind>\S+)\s+(?P<classid>[0-9a-f]+:[0-9a-f]*)\s+(?P<rest>.*)$", re.MULTILINE
)
_SENT = re.compile(
    r"Sent (?P<bytes>\d+) bytes (?P<pkts>\d+) pkt \(dropped (?P<dropped>\d+), "
    r"overlimits (?P<over>\d+) requeues (?P<req>\d+)\)"
)
_BACKLOG = re.compile(r"backlog (?P<b>\d+)(?P<bu>[KMG]?)b (?P<p>\d+)p")
# iproute2 prints exact multiples of 1024 with a unit (sprint_size).
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
#: DualPI2 keys as `tc -s -j` spells them -> our names (with units).
_DUALPI2 = {
    "prob": "prob",
    "delay-c": "delay_c_us",
    "delay-l": "delay_l_us",
    "pkts-in-c": "pkts_in_c",
    "pkts-in-l": "pkts_in_l",
    "maxq": "maxq",
    "ecn-mark": "ecn_mark",
    "step-mark": "step_mark",
}
_MARK_KEYS = ("ecn_mark", "ecn-mark", "step-mark", "ce_mark")


def _rate_text(bytes_per_s: object) -> str | None:
    """tc's JSON rate (bytes/s) as its text form prints it (SI units: ``50Mbit``)."""
    if not isinstance(bytes_per_s, int | float):
        return None
    bits = float(bytes_per_s) * 8
    for unit, scale in (("Gbit", 1e9), ("Mbit", 1e6), ("Kbit", 1e3)):
        if bits >= scale:
            return f"{bits / scale:g}{unit}"
    return f"{bits:g}bit"


def _classes_from_json(data: object) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for c in data if isinstance(data, list) else []:
        if not isinstance(c, dict):
            continue
        cls: dict[str, Any] = {"kind": c.get("class"), "classid": c.get("handle")}
        for key in ("rate", "ceil"):
            if (text := _rate_text(c.get(key))) is not None:
                cls[key] = text
        for key in ("prio", "parent"):
            if key in c:
                cls[key] = str(c[key])
        if "leaf" in c:  # "0x10" -> "10:", as the text form prints it
            cls["leaf"] = f"{int(str(c['leaf']), 16):x}:"
        stats = c.get("stats")
        st: dict[str, Any] = stats if isinstance(stats, dict) else c
        if "bytes" in st:
            cls.update(
                sent_bytes=int(st["bytes"]),
                sent_packets=int(st.get("packets", 0)),
                dropped=int(st.get("drops", 0)),
                overlimits=int(st.get("overlimits", 0)),
            )
        if "backlog" in st:
            cls["backlog_bytes"] = int(st["backlog"])
            cls["backlog_packets"] = int(st.get("qlen", 0))
        out.append(cls)
    return out


def parse_class_text(text: str) -> list[dict[str, Any]]:
    """``tc -s class show`` text (or its JSON form) -> one dict per class (HTB's
    ``lended``/``tokens`` skipped)."""
    if text.lstrip().startswith("["):
        try:
            return _classes_from_json(json.loads(text))
        except ValueError:
            return []
    out: list[dict[str, Any]] = []
    starts = list(_CLASS.finditer(text))
    for i, m in enumerate(starts):
        block = text[m.start() : starts[i + 1].start() if i + 1 < len(starts) else len(text)]
        cls: dict[str, Any] = {"kind": m.group("kind"), "classid": m.group("classid")}
        rest = m.group("rest")
        for key in ("rate", "ceil", "prio", "leaf", "parent"):
            km = re.search(rf"\b{key} (\S+)", rest)
            if km:
                cls[key] = km.group(1)
        sm = _SENT.search(block)
        if sm:
            cls.update(
                sent_bytes=int(sm.group("bytes")),
                sent_packets=int(sm.group("pkts")),
                dropped=int(sm.group("dropped")),
                overlimits=int(sm.group("over")),
            )
        bm = _BACKLOG.search(block)
        if bm:
            cls["backlog_bytes"] = int(bm.group("b")) * _UNITS[bm.group("bu")]
            cls["backlog_packets"] = int(bm.group("p"))
        out.append(cls)
    return out


def parse_qdisc_json(text: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(text or "[]")
    except ValueError:
        return []
    return [q for q in data if isinstance(q, dict)] if isinstance(data, list) else []


def root_of(qdiscs: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    return next((q for q in qdiscs if q.get("root")), None)


def record(
    t_ns: int,
    direction: str,
    dev: str,
    qdiscs: Sequence[Mapping[str, Any]],
    classes: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """One statistics line: the root's counters (which include its children's), marks
    summed over every discipline, DualPI2's state when present, per-qdisc and per-class
    detail."""
    root = root_of(qdiscs) or {}
    rec: dict[str, Any] = {
        "t_ns": t_ns,
        "direction": direction,
        "dev": dev,
        "qdisc": root.get("kind"),
        "sent_bytes": root.get("bytes"),
        "sent_packets": root.get("packets"),
        "dropped": root.get("drops"),
        "overlimits": root.get("overlimits"),
        "requeues": root.get("requeues"),
        "backlog_bytes": root.get("backlog"),
        "backlog_packets": root.get("qlen"),
        "marked": sum(int(q.get(k, 0) or 0) for q in qdiscs for k in _MARK_KEYS),
    }
    for q in qdiscs:
        if q.get("kind") == "dualpi2":
            rec.update({ours: q[theirs] for theirs, ours in _DUALPI2.items() if theirs in q})
    rec["qdiscs"] = [
        {
            "kind": q.get("kind"),
            "handle": q.get("handle"),
            "parent": q.get("parent", "root" if q.get("root") else None),
            "sent_bytes": q.get("bytes"),
            "sent_packets": q.get("packets"),
            "dropped": q.get("drops"),
            "backlog_bytes": q.get("backlog"),
            "backlog_packets": q.get("qlen"),
        }
        for q in qdiscs
    ]
    if classes:
        rec["classes"] = list(classes)
    return rec
