"""Flags about the CG source of a run, read from its files after the run (meta.json);
each source's ``post_run_flags`` (experiment/sources.py) calls the reader for its files.

- ``cga-cg``: a sender that fell behind its pacing schedule (timer stalls on a loaded
  host) is flagged: such a run under-reports what the controller would do (an L4S run lost
  a third of its rate with ~2,300 slips in a minute, where quiet runs of the same length
  count 25-500).
- Ericsson's SCReAM (``scream-reference``): whether the build is the overflow-capped one
  (detectable by its extended log), and a flag when a run outlives an unpatched build's
  ~100 s (its window then collapses to the minimum; docs/cg.md); none for a program of
  2023 (its version line), whose code has no ``maxPolicedCwnd``.
- eCGP's proxy (``ecgp-proxy``): a run whose game server did not finish, and one in which
  SCReAM read more than 0.5 s of queue delay (the proxy client's feedback-clock race).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cganalysis.cg import ecgp, reference

#: A run is flagged when its sender slipped this often per second of sending on average
#: and at least SLIPS_MIN times (a slip: a wake-up later than one microburst window).
SLIPS_PER_S = 20.0
SLIPS_MIN = 1000


def pacing_flag(slips: int, duration_s: float, max_us: float | None) -> str | None:
    """The flag for a sender's pacing slips, or None when they are within a quiet host's."""
    if slips < SLIPS_MIN or slips < SLIPS_PER_S * max(duration_s, 1e-9):
        return None
    longest = "" if max_us is None else f", the longest {max_us / 1e3:.1f} ms"
    return (
        f"CG sender fell behind its pacing schedule {slips} times in {duration_s:.0f} s"
        f"{longest} (timer stalls: a loaded host); its rate and delay are not the controller's"
    )


def pacing_flags(info: dict[str, Any], summary: Path) -> list[str]:
    """cga-cg: a flag when the sender's summary counts too many pacing slips."""
    if not summary.exists():
        return []
    try:
        s = json.loads(summary.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    slips = s.get("pacing_slips")
    if not isinstance(slips, int):
        return []
    duration = float(s.get("duration_s") or 0.0)
    max_us = s.get("pacing_slip_max_us")
    info.update(pacing_slips=slips, pacing_slip_max_us=max_us, sender_duration_s=duration)
    flag = pacing_flag(slips, duration, max_us)
    return [] if flag is None else [flag]


def reference_flags(info: dict[str, Any], workdir: Path) -> list[str]:
    """scream-reference: which build ran, and a flag when an unpatched one ran too long."""
    log = workdir / reference.LOG_NAME
    extended = reference.log_is_extended(log) if log.exists() else None
    if extended is None:
        # No feedback logged: the sender refused its options or died (it exits with status
        # 0 either way); its own words, printable ASCII only, say why.
        out = workdir / "cg-reference-tx.out"
        text = out.read_text(encoding="utf-8", errors="replace") if out.exists() else ""
        said = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        said = "".join(c for c in said[:120] if " " <= c <= "~") or "nothing"
        return [f"scream-reference: its sender logged no feedback (it said: {said})"]
    # The instrumented build (nine extra log columns) is the one with the cap; another
    # build may be fixed too, but nothing in its output tells.
    info["overflow_fix"] = "yes (extended log columns)" if extended else "unknown"
    version = info.get("program_version")
    # ISO dates order as text; "unknown" and absent versions are not old ones.
    old = isinstance(version, str) and version[:1].isdigit()
    if old and str(version) <= reference.NO_POLICED_CWND_UNTIL:
        info["overflow_fix"] = f"not needed (version {version}: no maxPolicedCwnd)"
        return []
    duration = float(info.get("duration_s") or 0.0)
    if not extended and duration > reference.OVERFLOW_AFTER_S:
        return [
            f"scream-reference ran {duration:.0f} s with a build not known to cap "
            "maxPolicedCwnd: past ~100 s an unpatched build pins its window to the minimum "
            "(docs/cg.md)"
        ]
    return []


def ecgp_flags(info: dict[str, Any], workdir: Path) -> list[str]:
    """ecgp-proxy: a game server that did not finish, the proxy client's race."""
    failed = ecgp.game_failure(workdir)
    flags = [failed] if failed else []
    server_log = workdir / ecgp.SERVER_LOG_NAME
    if not server_log.exists():
        return flags
    summaries = ecgp.read_summaries(server_log)
    info["rtp_queue_discarded_packets"] = ecgp.count_discarded(server_log)
    if not summaries.is_empty():
        info["qdelay_avg_max_ms"] = summaries["qdelay_avg_ms"].max()
    flag = ecgp.race_flag(summaries)
    return flags + ([] if flag is None else [flag])
