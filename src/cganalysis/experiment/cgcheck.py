"""Flags about the CG source of a run, read from its files after the run (meta.json).

- Ericsson's SCReAM (``scream-reference``): whether the build is the overflow-capped one
  (detectable by its extended log), and a flag when a run outlives an unpatched build's
  ~100 s (its window then collapses to the minimum; docs/cg.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cganalysis.cg import reference
from cganalysis.experiment.config import RunConfig


def cg_flags(cfg: RunConfig, info: dict[str, Any], workdir: Path) -> list[str]:
    """Flags for meta.json; fills ``info`` (meta.json's ``cg_source``) with what it read."""
    flags: list[str] = []
    if cfg.cg.source == "scream-reference":
        flags += _reference(info, workdir)
    return flags


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
