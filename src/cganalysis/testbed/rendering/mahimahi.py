"""A run's bottleneck as a mahimahi link: which ``mm-link`` / ``mm-delay`` command it is.

``backend: mahimahi`` takes the run's own bottleneck keys: each direction's ``trace`` (or
``rate_mbit``, as a constant-rate trace; a direction without a bottleneck is a 1 Gbit/s
trace, mahimahi wanting one per direction) and its ``qdisc`` as mahimahi's queue:

| qdisc | mahimahi queue |
|---|---|
| ``pfifo`` (``limit`` packets, default 1000) | ``droptail`` ``packets=N`` |
| ``bfifo`` (``limit`` bytes) | ``droptail`` ``bytes=N`` |
| ``codel`` (``limit``, ``target_ms``, ``interval_ms``) | ``codel`` ``packets=,target=,interval=`` |
| ``pie`` (``limit``, ``target_ms``) | ``pie`` ``packets=,qdelay_ref=,max_burst=150`` |

The propagation delay is ``mm-delay MS`` inside the link's shell (after the link, so off
the capture span), the same each way as mahimahi's delay is: ``forward_ms`` must equal
``reverse_ms``, in whole milliseconds, without jitter or loss. Pure: nothing on the host
is looked at here (``netns/mahimahi.py`` runs it).
"""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass
from pathlib import Path

from cganalysis.errors import ConfigError
from cganalysis.testbed.spec.config import Bottleneck, Direction, Propagation
from cganalysis.testbed.spec.qdisc import Htb

PROGRAMS = ("mm-link", "mm-delay")
#: The unprivileged user mahimahi's setuid tools are started as (they refuse root).
USER_ENV = "CGA_MAHIMAHI_USER"
#: A direction without a bottleneck: 84 opportunities per millisecond, ~1 Gbit/s.
LINE_RATE_MBPS = 1000.0


@dataclass(frozen=True)
class MahimahiLink:
    """What ``mm-link`` is given for a run; traces are None for a constant rate."""

    down_trace: str | None
    down_rate_mbps: float | None
    up_trace: str | None
    up_rate_mbps: float | None
    down_queue: tuple[str, str]  # (kind, args)
    up_queue: tuple[str, str]
    delay_ms: int

    def argv(self, down: str, up: str, down_log: str, up_log: str, inner: list[str]) -> list[str]:
        """``down`` / ``up``: the trace files as mm-link will read them; ``inner``: what
        runs in its shell (with a delay, ``mm-delay MS ...``)."""
        link = ["mm-link", up, down]
        for name, (kind, args) in (("downlink", self.down_queue), ("uplink", self.up_queue)):
            link.append(f"--{name}-queue={kind}")
            if args:
                link.append(f"--{name}-queue-args={args}")
        return [*link, f"--downlink-log={down_log}", f"--uplink-log={up_log}", "--", *inner]


def queue_of(d: Direction | None, where: str) -> tuple[str, str]:
    if d is None:
        return ("infinite", "")
    q = d.qdisc
    if isinstance(q, Htb):
        raise ConfigError(f"{where}.qdisc: htb has no mahimahi queue (one queue per direction)")
    p = q.params
    limit = p.get("limit")
    if q.kind == "pfifo":
        return ("droptail", f"packets={int(limit or 1000)}")
    if q.kind == "bfifo":
        if limit is None:
            raise ConfigError(f"{where}.qdisc: bfifo needs limit (bytes) for mahimahi")
        return ("droptail", f"bytes={int(limit)}")
    if q.kind == "codel":
        target, interval = p.get("target_ms", 5), p.get("interval_ms", 100)
        return (
            "codel",
            f"packets={int(limit or 1000)},target={_ms(target, where)},"
            f"interval={_ms(interval, where)}",
        )
    if q.kind == "pie":
        target = p.get("target_ms", 15)
        return (
            "pie",
            f"packets={int(limit or 1000)},qdelay_ref={_ms(target, where)},max_burst=150",
        )
    raise ConfigError(
        f"{where}.qdisc: {q.kind} has no mahimahi queue; mahimahi offers droptail (pfifo, "
        "bfifo), codel and pie (docs/testbed.md, mahimahi)"
    )


def _ms(value: object, where: str) -> int:
    v = float(value)  # type: ignore[arg-type]
    if v != int(v):
        raise ConfigError(f"{where}.qdisc: mahimahi takes whole milliseconds, not {v:g}")
    return int(v)


def link_of(b: Bottleneck, p: Propagation) -> MahimahiLink:
    """The mahimahi link of a run, or a ConfigError naming the key mahimahi cannot do."""
    for key, d in (("bottleneck", b.forward), ("bottleneck.reverse", b.reverse)):
        if d is not None and d.trace is not None and d.trace_scale != 1.0:
            raise ConfigError(
                f"{key}.trace_scale: mahimahi replays a trace as it is; give 1, or a trace "
                "with the capacity you want (`cganalysis trace generate`)"
            )
    if p.jitter_ms or p.loss:
        raise ConfigError("propagation: mahimahi's mm-delay has no jitter or loss; give 0")
    if p.forward_ms != p.reverse_ms or p.forward_ms != int(p.forward_ms):
        raise ConfigError(
            f"propagation: mm-delay delays both ways by the same whole milliseconds; "
            f"forward_ms {p.forward_ms:g} and reverse_ms {p.reverse_ms:g} must be equal integers"
        )
    rev = b.reverse
    return MahimahiLink(
        down_trace=b.forward.trace,
        down_rate_mbps=None if b.forward.trace else (b.forward.rate_mbit or LINE_RATE_MBPS),
        up_trace=None if rev is None else rev.trace,
        up_rate_mbps=None
        if rev is not None and rev.trace
        else ((rev.rate_mbit if rev else None) or LINE_RATE_MBPS),
        down_queue=queue_of(b.forward, "bottleneck"),
        up_queue=queue_of(rev, "bottleneck.reverse"),
        delay_ms=int(p.forward_ms),
    )


def unprivileged_user() -> str:
    """``$CGA_MAHIMAHI_USER``, else the user who ran sudo, else ``nobody``; it must exist
    and not be root (mahimahi's tools refuse to start as root)."""
    sudo = os.environ.get("SUDO_USER")
    name = os.environ.get(USER_ENV) or (sudo if sudo and sudo != "root" else "nobody")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise ConfigError(
            f"${USER_ENV}: no user {name!r} on this host; name an unprivileged user"
        ) from None
    if entry.pw_uid == 0:
        raise ConfigError(f"${USER_ENV}: {name} is root; mahimahi refuses to run as root")
    return name


def render_for_docs(link: MahimahiLink, workdir: Path) -> list[str]:
    """The command as ``cganalysis testbed render`` shows it (files in ``workdir``)."""
    return link.argv(
        link.down_trace or str(workdir / "mm-down.trace"),
        link.up_trace or str(workdir / "mm-up.trace"),
        str(workdir / "mm-downlink.log"),
        str(workdir / "mm-uplink.log"),
        (["mm-delay", str(link.delay_ms)] if link.delay_ms else []) + ["CMD"],
    )
