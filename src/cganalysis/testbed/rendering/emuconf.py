"""The link emulator's configuration (``cga-emu --config EMU.json``; docs/emulator.md).

Two uses: the bottleneck itself (rate + discipline, no delay: the router's captures must
measure only the queue) between the router's two interfaces, and a delay-only hop (the
propagation delay) between the server and the router. The file's one schema is the
emulator's own: :func:`cganalysis.testbed.dataplane.bottleneck.start_emulator` has
``cga-emu --check`` read what is written here before an emulator starts.
"""

from __future__ import annotations

from typing import Any

from cganalysis.testbed.spec.config import Direction, Propagation
from cganalysis.testbed.spec.qdisc import AnyQdisc, Htb, Qdisc
from cganalysis.testbed.spec.qdisc_kinds import DECLARED

#: Options only the kernel has (declared ``"emulator": false``: split_gso means nothing to
#: a userspace emulator, which never sees GSO super-packets).
_TC_ONLY = frozenset(
    name for params in DECLARED.values() for name, d in params.items() if d.get("emulator") is False
)


def emu_qdisc(q: AnyQdisc) -> dict[str, Any]:
    if isinstance(q, Htb):
        return {
            "kind": "htb",
            "default": q.default,
            "classes": [
                {
                    "classid": c.classid,
                    "rate_mbit": c.rate_mbit,
                    "ceil_mbit": c.ceil_mbit,
                    **({"prio": c.prio} if c.prio is not None else {}),
                    "quantum": c.quantum,
                    **({"burst_bytes": c.burst_bytes} if c.burst_bytes is not None else {}),
                    **({"cburst_bytes": c.cburst_bytes} if c.cburst_bytes is not None else {}),
                    "leaf": emu_qdisc(c.leaf),
                    **({"match": c.match.to_dict()} if c.match is not None else {}),
                }
                for c in q.classes
            ],
        }
    assert isinstance(q, Qdisc)
    return {"kind": q.kind, **{k: v for k, v in q.params.items() if k not in _TC_ONLY}}


def emu_rate(d: Direction, trace_path: str | None = None) -> dict[str, Any] | None:
    """``trace_path``: where the trace is on the emulator's host (default: ``d.trace``)."""
    if d.trace is not None:
        return {"trace": trace_path or d.trace, "scale": d.trace_scale}
    return None if d.rate_mbit is None else {"mbit": d.rate_mbit}


def bottleneck_pipeline(d: Direction, trace_path: str | None = None) -> dict[str, Any]:
    return {
        "rate": emu_rate(d, trace_path),
        "qdisc": emu_qdisc(d.qdisc),
        "delay_ms": 0.0,
        "jitter_ms": 0.0,
        "loss": 0.0,
    }


def bottleneck_config(
    a: str,
    b: str,
    forward: Direction,
    reverse: Direction | None,
    stats_path: str,
    interval_ms: float,
    traces: dict[str, str] | None = None,
) -> dict[str, Any]:
    """a: the router's server-side interface, b: its client-side one (a_to_b = forward).

    ``traces`` maps a direction's trace path to where it is on the emulator's host.
    """
    where = traces or {}
    fwd_trace = where.get(forward.trace or "")
    rev_trace = None if reverse is None else where.get(reverse.trace or "")
    return {
        "interfaces": {"a": a, "b": b},
        "a_to_b": bottleneck_pipeline(forward, fwd_trace),
        "b_to_a": None if reverse is None else bottleneck_pipeline(reverse, rev_trace),
        "stats": {"path": stats_path, "interval_ms": interval_ms},
        "events": None,
        "busy_poll": False,
    }


def delay_config(a: str, b: str, p: Propagation) -> dict[str, Any]:
    """a faces the server, b the router. Loss and jitter apply to the forward direction."""

    def pipe(delay_ms: float, jitter_ms: float, loss: float) -> dict[str, Any] | None:
        if delay_ms == 0 and jitter_ms == 0 and loss == 0:
            return None
        return {
            "rate": None,
            "qdisc": None,
            "delay_ms": delay_ms,
            "jitter_ms": jitter_ms,
            "loss": loss,
        }

    return {
        "interfaces": {"a": a, "b": b},
        "a_to_b": pipe(p.forward_ms, p.jitter_ms, p.loss),
        "b_to_a": pipe(p.reverse_ms, 0.0, 0.0),
        "stats": None,
        "events": None,
        "busy_poll": False,
    }
