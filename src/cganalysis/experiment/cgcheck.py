"""Flags about the CG source of a run, read from its files after the run (meta.json).

- ``cga-cg``: a sender that fell behind its pacing schedule (timer stalls on a loaded
  host) is flagged: such a run under-reports what the controller would do (an L4S run lost
  a third of its rate with ~2,300 slips in a minute, where quiet runs of the same length
  count 25-500).
- Ericsson's SCReAM (``scream-reference``): whether the build is the overflow-capped one
  (detectable by its extended log), and a flag when a run outlives an unpatched build's
  ~100 s (its window then collapses to the minimum; docs/cg.md).
- eCGP's proxy (``ecgp-proxy``): a run whose game server did not finish, and one in which
  its SCReAM read an impossible queue delay (its client's feedback-clock race; docs/cg.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cganalysis.cg import ecgp, reference
from cganalysis.experiment.config import RunConfig


def cg_flags(cfg: RunConfig, info: dict[str, Any], workdir: Path) -> list[str]:
    """Flags for meta.json; fills ``info`` (meta.json's ``cg_source``) with what it read."""
    flags: list[str] = []
    if cfg.cg.source == "scream-reference":
        flags += _reference(info, workdir)
    if cfg.cg.source == "ecgp-proxy":
        failed = ecgp.game_failure(workdir)
        flags += [failed] if failed else []
        flags += _ecgp(info, workdir / ecgp.SERVER_LOG_NAME)
    if cfg.cg.source == "cga-cg":
        flags += _pacing(info, workdir / "cg-sender" / "sender_summary.json")
    return flags


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


def _pacing(info: dict[str, Any], summary: Path) -> list[str]:
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


def _reference(info: dict[str, Any], workdir: Path) -> list[str]:
    log = workdir / reference.LOG_NAME
    extended = reference.log_is_extended(log) if log.exists() else None
    # The instrumented build (nine extra log columns) is the one with the cap; another
    # build may be fixed too, but nothing in its output tells.
    info["overflow_fix"] = "yes (extended log columns)" if extended else "unknown"
    duration = float(info.get("duration_s") or 0.0)
    if not extended and duration > reference.OVERFLOW_AFTER_S:
        return [
            f"scream-reference ran {duration:.0f} s with a build not known to cap "
            "maxPolicedCwnd: past ~100 s an unpatched build pins its window to the minimum "
            "(docs/cg.md)"
        ]
    return []


def _ecgp(info: dict[str, Any], server_log: Path) -> list[str]:
    if not server_log.exists():
        return []
    summaries = ecgp.read_summaries(server_log)
    info["rtp_queue_discarded_packets"] = ecgp.count_discarded(server_log)
    if not summaries.is_empty():
        info["qdelay_avg_max_ms"] = summaries["qdelay_avg_ms"].max()
    flag = ecgp.race_flag(summaries)
    return [] if flag is None else [flag]
